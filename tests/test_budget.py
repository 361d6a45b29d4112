"""The verdict of checks stopped at their budget (checks/budget.py): every row UNDECIDED, naming the file being
read; never a PASS. And the budget's settings."""

from __future__ import annotations

import pytest

from app.settings import ConfigError, Settings
from checks import progress
from checks.budget import Overrun, overrun_verdict, reading_paths
from checks.registry import CHECKS, LINT, RULES
from checks.result import Outcome, Status

from .builders import SIGNOFF_HEAD, changed, comment, snapshot

SCRIPT = "benchmarks/single_node/x.sh"
TEXT = "#!/bin/bash\n" + "echo ((((\n" * 100


SIGNOFF = comment(f"{SIGNOFF_HEAD}\n- [x] item\n\nSigned: `owner`", author="owner")


def _snap():
    return snapshot(files=[changed(SCRIPT, None, TEXT), changed("README.md", "a\n", "a\n" + TEXT)],
                    comments=[SIGNOFF])


def test_the_file_being_read_is_found_by_its_fingerprint_and_else_the_files_holding_its_start():
    snap = _snap()
    assert reading_paths(snap, progress.fingerprint(TEXT)) == (SCRIPT,)
    assert reading_paths(snap, progress.fingerprint(TEXT[:50])) == (SCRIPT, "README.md")  # a part of them
    assert reading_paths(snap, progress.fingerprint("not in any file")) == ()
    assert reading_paths(snap, None) == ()


def test_an_overrun_is_undecided_on_every_row_naming_the_rule_and_the_file():
    overrun = Overrun("10 s of CPU time", "engine-patches", progress.fingerprint(TEXT), "owner")
    verdict = overrun_verdict(_snap(), RULES, overrun)
    assert [r.number for r in verdict.results] == [r.row for r in CHECKS]
    assert {r.status for r in verdict.results} == {Status.UNDECIDED}
    assert verdict.results[3].reason == (
        f"cannot decide: could not be read within the budget (10 s of CPU time) while check 10 (no engine patches) "
        f"was reading {SCRIPT}; nothing of this row was decided")
    assert verdict.lint.status is Status.UNDECIDED
    assert [(f.path, f.line, f.undecided) for f in verdict.findings] == [(SCRIPT, 1, True)]
    assert verdict.outcome is Outcome.NEEDS_MAINTAINER and verdict.signer == "owner"
    assert verdict.signoff.comment == SIGNOFF and verdict.signoff_url == SIGNOFF.url  # found again: the job needs it


def test_an_overrun_before_the_sign_off_was_read_is_never_a_pass():
    verdict = overrun_verdict(_snap(), LINT, Overrun("512 MB of memory"))
    assert verdict.results == () and verdict.lint.status is Status.UNDECIDED
    assert verdict.signoff is None  # not noted before the overrun: not read again outside its budget
    assert verdict.lint.reason == ("cannot decide: could not be read within the budget (512 MB of memory); "
                                   "nothing of this row was decided")
    assert not verdict.passed


def test_the_budget_is_set_from_the_environment():
    env = {"SIGNOFF_BOT_APP_ID": "1", "SIGNOFF_BOT_PRIVATE_KEY": "-----BEGIN", "SIGNOFF_BOT_WEBHOOK_SECRET": "s"}
    assert (Settings.from_env(env).check_cpu_seconds, Settings.from_env(env).check_memory_mb) == (10.0, 512)
    tuned = Settings.from_env({**env, "SIGNOFF_BOT_CHECK_CPU_SECONDS": "2.5", "SIGNOFF_BOT_CHECK_MEMORY_MB": "64"})
    assert (tuned.check_cpu_seconds, tuned.check_memory_mb) == (2.5, 64)
    with pytest.raises(ConfigError, match="SIGNOFF_BOT_CHECK_MEMORY_MB must be a positive number"):
        Settings.from_env({**env, "SIGNOFF_BOT_CHECK_MEMORY_MB": "0"})
