"""`/signoff-accept` as the checks read it (`checks.acceptance`) and the verdict's three outcomes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from checks import acceptance
from checks.context import Context
from checks.result import CheckResult, Finding, Outcome, Severity, Status, Verdict

from .builders import SIGNOFF_HEAD, comment, snapshot

UNDECIDED_ROW = CheckResult.undecided(8, "no architecture hacks", "x.sh:3 `--hf-overrides $HF` cannot be read")


def verdict(*rows: CheckResult, signer: str | None = "owner") -> Verdict:
    return Verdict("h" * 40, signer, None, tuple(rows))


def commands(*comments, permissions: dict[str, str] | None = None) -> tuple[acceptance.Acceptance, ...]:
    sign = comment(f"{SIGNOFF_HEAD}\n- [x] item", author="owner", cid=1)
    ctx = Context(snapshot(comments=(sign, *comments), collaborators=permissions or {}))
    return acceptance.commands(ctx)


def test_outcomes():
    ok = CheckResult(0, "CODEOWNER", Status.PASS, "owner")
    failed = CheckResult(3, "recipe link", Status.FAIL, "x")
    assert verdict(ok).outcome is Outcome.PASS and verdict(ok).conclusion == "success"
    assert verdict(ok, UNDECIDED_ROW).outcome is Outcome.NEEDS_MAINTAINER
    assert verdict(ok, UNDECIDED_ROW).conclusion == "action_required"
    assert verdict(ok, UNDECIDED_ROW).commit_state == "pending"
    assert verdict(ok, UNDECIDED_ROW, failed).outcome is Outcome.REJECTED
    assert verdict(ok, UNDECIDED_ROW, signer=None).outcome is Outcome.REJECTED  # no sign-off: nothing to confirm
    assert not verdict(ok, UNDECIDED_ROW).passed and verdict(ok, UNDECIDED_ROW).label == "NEEDS A MAINTAINER"


def test_a_row_whose_findings_are_all_undecided_is_undecided():
    undecided = Finding("a.sh", 3, "r", Severity.ERROR, "cannot decide: $X", undecided=True)
    violation = Finding("a.sh", 9, "r", Severity.ERROR, "patches vllm")
    assert CheckResult.failed(10, "n", [undecided]).status is Status.UNDECIDED
    mixed = CheckResult.failed(10, "n", [undecided, violation])
    assert mixed.status is Status.FAIL and mixed.reason.startswith("a.sh:9 patches vllm")


@pytest.mark.parametrize("author, permission, problem", [
    ("maintainer", "write", ""),
    ("maintainer", "admin", ""),
    ("contributor", "admin", "the PR's author"),
    ("owner", "admin", "the signer"),
    ("reader", "read", "needs write permission"),
    ("stranger", "none", "needs write permission"),
])
def test_who_may_accept(author, permission, problem):
    (a,) = commands(comment("/signoff-accept 8 checked the launch by hand", author=author, cid=2),
                    permissions={author: permission})
    assert a.row == 8 and a.reason == "checked the launch by hand"
    assert (problem in a.problem) if problem else a.problem == ""


@pytest.mark.parametrize("body, row", [
    ("/signoff-accept check 11 the AL is exported by lib.sh", 11),
    ("LGTM\n  /signoff-accept #11 the AL is exported by lib.sh", 11),
    ("/signoff-accept 3 the linked page serves it", 3),
])
def test_spellings_of_the_command(body, row):
    (a,) = commands(comment(body, author="maintainer", cid=2), permissions={"maintainer": "write"})
    assert a.row == row and not a.problem


@pytest.mark.parametrize("body", ["please /signoff-accept 8 x y", "`/signoff-accept 8 x y`", "/signoff-accepted 8 x y",
                                  "/SIGNOFF-ACCEPT 8 x y", "/signoff-accept eight x y"])
def test_what_is_no_command(body):
    assert commands(comment(body, author="maintainer", cid=2), permissions={"maintainer": "write"}) == ()


def test_a_reason_is_required_and_bots_never_accept():
    (a,) = commands(comment("/signoff-accept 8", author="maintainer", cid=2), permissions={"maintainer": "write"})
    assert "no reason" in a.problem
    assert commands(comment("/signoff-accept 8 a b", author="x[bot]", cid=3, bot=True)) == ()


def test_an_unknown_permission_is_asked_for():
    sign = comment(f"{SIGNOFF_HEAD}\n- [x] item", author="owner", cid=1)
    ctx = Context(snapshot(comments=(sign, comment("/signoff-accept 8 a b", author="maintainer", cid=2))))
    (a,) = acceptance.commands(ctx)
    assert a.problem and ctx.missing.permissions == ("maintainer",)


def test_apply_turns_only_an_undecided_row_pass_naming_who_and_why():
    failed = CheckResult(3, "recipe link", Status.FAIL, "x")
    (a,) = commands(comment("/signoff-accept 8 OVERRIDES is never set", author="maintainer", cid=2),
                    permissions={"maintainer": "write"})
    (b,) = commands(comment("/signoff-accept 3 it is fine really", author="maintainer", cid=3),
                    permissions={"maintainer": "write"})
    v = acceptance.apply(verdict(UNDECIDED_ROW, failed), [a, b])
    row8, row3 = v.results
    assert row8.status is Status.PASS and row8.accepted_by == "maintainer"
    assert row8.reason.startswith("accepted by @maintainer: OVERRIDES is never set (https://")
    assert row8.reason.endswith(f"was: {UNDECIDED_ROW.reason})")
    assert row3 == failed and v.outcome is Outcome.REJECTED  # a FAIL is never accepted away
    assert acceptance.apply(verdict(UNDECIDED_ROW), [replace(a, problem="the signer")]).outcome \
        is Outcome.NEEDS_MAINTAINER
