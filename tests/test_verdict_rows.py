"""The rows that decide a verdict: checks 0-12, an incomplete snapshot; recipe lint as advice unless blocking."""

from __future__ import annotations

import shutil

from app.github import render
from app.offline.replay import DEMO_WORLD, replay
from checks.engine import LINT_NAME, evaluate
from checks.result import Status
from checks.rules.extra14_complete_evidence import NAME as COMPLETENESS_NAME
from checks.snapshot import ChangedFile
from tests.builders import snapshot
from tests.variants import RECIPE, base, green_world, head, verdict


def lint_only_world(tmp_path):
    """The passing world, with the head recipe missing its CAR_V2 setting: a recipe-lint error, nothing more."""
    root = green_world(tmp_path)
    shutil.copy(DEMO_WORLD / "trees" / "head" / RECIPE, head(root) / RECIPE)
    return root


def test_lint_findings_alone_leave_the_verdict_pass_and_show_as_advice(tmp_path):
    v = verdict(lint_only_world(tmp_path))
    assert v.label == "PASS"
    assert v.lint.status is Status.FAIL and not v.lint_blocking and v.advice is v.lint
    assert LINT_NAME not in {r.name for r in v.rows}
    comment = render.comment(v)
    assert comment.splitlines()[1] == "## ✅✅✅ **Verdict: PASS** ✅✅✅"
    assert "Advice, not part of the sign-off: Recipe lint found 1 error(s)" in comment
    assert f"`{RECIPE}:29` [car-v2-multinode-decode]" in comment


def test_lint_blocks_where_the_repository_says_so(tmp_path):
    root = lint_only_world(tmp_path)
    for tree in (base(root), head(root)):
        (tree / ".github" / "signoff-bot.yml").write_text("lint: blocking\n")
    v = verdict(root)
    assert v.label == "REJECTED" and v.lint_blocking and v.advice is None
    assert [r.name for r in v.rows if not r.passed] == [LINT_NAME]
    assert "blocking: Recipe lint" in render.comment(v)


def test_a_clean_pr_has_no_advice(tmp_path):
    v = verdict(green_world(tmp_path))
    assert v.label == "PASS" and v.lint.status is Status.PASS and v.advice is None
    assert "Advice" not in render.comment(v)


def unreadable(path: str) -> ChangedFile:
    return ChangedFile(path, "added", None, None, None, None, "binary file; not read")


def test_an_unreadable_file_no_check_reads_is_nobodys_evidence():
    v = evaluate(snapshot(files=[unreadable("docs/images/curve.png")]))
    assert COMPLETENESS_NAME not in {r.name for r in v.extra}


def test_an_unreadable_benchmark_file_cannot_be_decided():
    v = evaluate(snapshot(files=[unreadable("benchmarks/single_node/x.sh")]))
    [row] = [r for r in v.extra if r.name == COMPLETENESS_NAME]
    assert row.status is Status.UNDECIDED and row.reason.startswith("cannot decide: benchmarks/single_node/x.sh cannot be read")


# --- the repository's configuration -------------------------------------------------------------


def test_a_mistyped_setting_is_noted_on_the_verdict_and_the_others_still_apply(tmp_path):
    """`advisory: true` beside a typo stays advisory; lint stays blocking; the verdict says what it ignored,
    in the comment and the check run, through the whole App (gather over HTTP, publish)."""
    root = lint_only_world(tmp_path)
    (base(root) / ".github" / "signoff-bot.yml").write_text("advisory: true\nlint: blocking\nlnit: advice\n")
    note = ".github/signoff-bot.yml:3: unknown setting 'lnit' (did you mean lint?); ignored"
    v = verdict(root)
    assert v.notes == (note,) and v.policy.advisory and v.lint_blocking
    assert v.label == "REJECTED" and v.conclusion == "neutral"
    assert f"Repository configuration, not part of the sign-off:\n- {note}\n" in render.comment(v)
    outcome = replay(root).outcome
    assert outcome.verdict.notes == (note,) and render.comment(outcome.verdict) == render.comment(v)
    assert "check run codeowner-signoff-verify: neutral" in outcome.published.writes
    assert outcome.published.status_state == "success"


def test_a_valid_configuration_adds_no_note(tmp_path):
    root = green_world(tmp_path)
    (base(root) / ".github" / "signoff-bot.yml").write_text("advisory: true\n")
    v = verdict(root)
    assert v.notes == () and "Repository configuration" not in render.comment(v)
