"""Check 4 — an authorized `/reuse-sweep-run` is on record (checks/rules/check04_reuse_command.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from checks.context import Context
from checks.evidence import Wanted
from checks.facts import commands
from checks.policy import Policy
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check04_reuse_command as reuse_command
from checks.snapshot import Artifact, WorkflowRun
from tests.builders import HEAD, REPO, comment, ctx, needs
from tests.conftest import world_params

RUN = WorkflowRun(id=31451666262, name="Run Sweep", path=".github/workflows/run-sweep.yml", event="pull_request",
                  head_sha=HEAD, status="completed", conclusion="success")
URL = f"https://github.com/{REPO}/pull/100#issuecomment-"


def make(*comments, runs=(RUN,), **kw) -> Context:
    return ctx(comments=list(comments), workflow_runs=list(runs), **kw)


def test_pinned_run_on_in_pr_commit_passes():
    r = reuse_command.check(make(comment("/reuse-sweep-run 31451666262", author="Ankur-singh", cid=9)))
    assert r.status is Status.PASS
    assert r.reason == (f"/reuse-sweep-run 31451666262 posted by Ankur-singh (COLLABORATOR) in {URL}9; "
                        "the run is on in-PR commit hhhhhhhh")
    assert (r.number, r.name) == (4, "reuse command")


def test_bare_command_passes():
    r = reuse_command.check(make(comment("LGTM\n  /reuse-sweep-run\nthanks", association="MEMBER", cid=3)))
    assert r.status is Status.PASS
    assert r.reason == f"/reuse-sweep-run posted by reviewer (MEMBER) in {URL}3"


def test_no_command_fails_with_root_issue():
    r = reuse_command.check(make(comment("please run `/reuse-sweep-run`")))
    assert r.status is Status.FAIL
    assert r.reason == ("No authorized `/reuse-sweep-run` command has been posted on this PR; an authorized "
                        "maintainer must comment `/reuse-sweep-run` before this PR can merge via reuse")


def test_unauthorized_only_names_author_and_association():
    r = reuse_command.check(make(comment("/reuse-sweep-run", author="drive-by", association="CONTRIBUTOR", cid=5)))
    assert r.status is Status.FAIL
    assert r.reason == (f"No authorized `/reuse-sweep-run` command has been posted on this PR: drive-by "
                        f"(CONTRIBUTOR) posted it in {URL}5 but is not authorized (OWNER, MEMBER, COLLABORATOR or "
                        "write permission); an authorized maintainer must comment `/reuse-sweep-run` before this "
                        "PR can merge via reuse")


def test_contributor_with_write_permission_is_authorized():
    c = make(comment("/reuse-sweep-run", author="insider", association="CONTRIBUTOR", cid=5),
             collaborators={"insider": "write"})
    r = reuse_command.check(c)
    assert r.status is Status.PASS
    assert r.reason == f"/reuse-sweep-run posted by insider (CONTRIBUTOR, write permission) in {URL}5"


def test_bot_comments_do_not_count():
    r = reuse_command.check(make(comment("/reuse-sweep-run", author="github-actions[bot]", bot=True)))
    assert r.status is Status.FAIL


def test_review_summaries_do_not_count():
    r = reuse_command.check(make(comment("/reuse-sweep-run", kind="review")))
    assert r.status is Status.FAIL


def test_non_numeric_argument_is_not_a_command():
    r = reuse_command.check(make(comment("/reuse-sweep-run please", cid=4)))
    assert r.status is Status.FAIL
    assert f"`/reuse-sweep-run please` in {URL}4 is not a command (the argument must be a run id)" in r.reason


def test_last_authorized_command_wins():
    c = make(comment("/reuse-sweep-run 31451666262", cid=1, created_at="2026-08-01T10:00:00Z"),
             comment("/reuse-sweep-run 777", cid=2, created_at="2026-08-01T11:00:00Z"),
             comment("/reuse-sweep-run 31451666262", author="x", association="NONE", cid=3,
                     created_at="2026-08-01T12:00:00Z"))
    r = reuse_command.check(c)
    assert r.status is Status.FAIL
    assert r.reason.startswith(f"/reuse-sweep-run 777 posted by reviewer (COLLABORATOR) ({URL}2) pins run 777, "
                               f"which could not be found in {REPO}")


def test_pinned_run_rebased_out_fails():
    old = replace(RUN, head_sha="o" * 40)
    r = reuse_command.check(make(comment("/reuse-sweep-run 31451666262"), runs=(old,)))
    assert r.status is Status.FAIL
    assert "pins run 31451666262, which ran on commit oooooooo, not a commit of this PR" in r.reason
    assert r.reason.endswith("pin a completed sweep run of a commit currently in this PR")


def test_pinned_run_on_older_in_pr_commit_passes():
    older = replace(RUN, head_sha="e" * 40)
    r = reuse_command.check(make(comment("/reuse-sweep-run 31451666262"), runs=(older,), commits=["e" * 40, HEAD]))
    assert r.status is Status.PASS


@pytest.mark.parametrize("change,message", [
    (dict(path=".github/workflows/lint.yml"), "of .github/workflows/lint.yml, not of .github/workflows/run-sweep.yml"),
    (dict(path=".github/workflows/dry-run-sweep.yml"), "is a run of .github/workflows/dry-run-sweep.yml, not of"),
    (dict(event="push"), "a push run, not a pull_request run"),
    (dict(status="in_progress", conclusion=None), "which has not completed (it is in_progress)"),
    (dict(conclusion="timed_out"), "which concluded timed_out, not success, failure or cancelled"),
])
def test_pinned_run_the_reuse_path_would_refuse(change, message):
    r = reuse_command.check(make(comment("/reuse-sweep-run 31451666262"), runs=(replace(RUN, **change),)))
    assert r.status is Status.FAIL
    assert message in r.reason


@pytest.mark.parametrize("conclusion", ["failure", "cancelled"])
def test_pinned_failed_or_cancelled_run_is_an_explicit_choice(conclusion):
    r = reuse_command.check(make(comment("/reuse-sweep-run 31451666262"), runs=(replace(RUN, conclusion=conclusion),)))
    assert r.status is Status.PASS


def test_policy_command_name_and_workflow():
    policy = {".github/signoff-bot.yml": "reuse_command: /use\nsweep_workflow: sweep.yml\n"}
    run = replace(RUN, path=".github/workflows/sweep.yml")
    assert reuse_command.check(make(comment("/use 31451666262"), runs=(run,), policy=policy)).status is Status.PASS
    assert reuse_command.check(make(comment("/reuse-sweep-run"), runs=(run,), policy=policy)).status is Status.FAIL


# --- the rules the App shares (commands.run_problem, artifact_problem, authorized) ------------


def test_a_run_the_reuse_path_takes_has_no_problem():
    assert commands.run_problem(RUN, Policy(), {HEAD}) is None


@pytest.mark.parametrize("change,problem", [
    (dict(path=".github/workflows/dry-run-sweep.yml"),  # its name ends like the sweep's: not the sweep
     "is a run of .github/workflows/dry-run-sweep.yml, not of .github/workflows/run-sweep.yml"),
    (dict(event="workflow_dispatch"), "is a workflow_dispatch run, not a pull_request run"),
    (dict(status="queued", conclusion=None), "has not completed (it is queued)"),
    (dict(conclusion="skipped"), "concluded skipped, not success, failure or cancelled"),
    (dict(head_sha="o" * 40), "ran on commit oooooooo, not a commit of this PR"),
])
def test_each_reason_the_reuse_path_refuses_a_run(change, problem):
    assert commands.run_problem(replace(RUN, **change), Policy(), {HEAD}) == problem


def test_the_sweep_workflow_may_be_named_by_its_path():
    policy = Policy(sweep_workflow=".github/workflows/sweep/run.yml")
    assert commands.run_problem(replace(RUN, path=".github/workflows/sweep/run.yml"), policy, {HEAD}) is None
    assert commands.run_problem(RUN, policy, {HEAD}).startswith("is a run of .github/workflows/run-sweep.yml")


@pytest.mark.parametrize("artifacts,problem", [
    ((Artifact(1, "eval_results_all"), Artifact(2, "results_bmk")), None),
    ((Artifact(2, "results_bmk"),), "has no eval artifacts"),
    ((Artifact(1, "eval_results_all", expired=True),), "has only expired eval artifacts"),
])
def test_a_reused_run_needs_an_eval_artifact_to_read(artifacts, problem):
    assert commands.artifact_problem(artifacts, Policy()) == problem


@pytest.mark.parametrize("association,permission,ok", [
    ("COLLABORATOR", None, True), ("member", None, True), ("CONTRIBUTOR", None, False),
    ("CONTRIBUTOR", "write", True), ("NONE", "maintain", True), ("NONE", "admin", True),
    ("NONE", "triage", False), ("NONE", "read", False), ("NONE", "none", False),
])
def test_who_may_command(association, permission, ok):
    assert commands.authorized(association, permission, Policy().authorized_associations) is ok


# --- evidence asked for ----------------------------------------------------------------------


def test_wants_unknown_pinned_run_and_permissions():
    c = make(comment("/reuse-sweep-run 555", cid=1, created_at="2026-08-01T10:00:00Z"),
             comment("/reuse-sweep-run 666", author="outsider", association="CONTRIBUTOR", cid=2,
                     created_at="2026-08-01T11:00:00Z"))
    assert needs(reuse_command, c) == Wanted(runs=(555,), permissions=("outsider",))


def test_wants_nothing_when_the_run_is_known():
    assert needs(reuse_command, make(comment("/reuse-sweep-run 31451666262"))) == Wanted()
    assert needs(reuse_command, make()) == Wanted()


# --- shared worlds ------------------------------------------------------------------


@pytest.mark.parametrize("world", world_params())
def test_world(world: Path):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World

    expected = yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}
    want = (expected.get("checks") or {}).get(reuse_command.NUMBER)
    if want is None:
        pytest.skip("check 4 not asserted in this world")
    snap = snapshot_from_world(World.load(world), rules=rules_of(reuse_command))
    result = reuse_command.check(Context(snap))
    assert result.status.value == want, result.reason
