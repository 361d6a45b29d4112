"""GitHub as it is, end to end: where real GitHub differs from a naive picture of it.

`signoff-bot serve` and the fake GitHub run as real processes on loopback
(tests/apphost.py). Each test is one way GitHub behaves that the App must
meet: "Re-run all checks" (check_suite.rerequested), a fork's PR (its runs
name no PR), another app's check run of the same name, more than a page of
open PRs or comments, and artifact downloads redirected to another host.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.store.sql import SqliteStore

from .apphost import E2E_WORLD, REPO, Stack
from .test_app_e2e import HEAD, LATE, SIGNOFF_ID, check_line, verdict_for
from .test_reliability import BOT, CHECK, all_check_runs, calls, idle, jobs, running
from .variants import e2e_variant, repo_of
from .worldgen import Pull, build_world

pytestmark = pytest.mark.slow

FORK = "contributor/InferenceX-demo"
FOREIGN_APP = 4242


def audit(stack: Stack, pr: int) -> list[dict[str, Any]]:
    store = SqliteStore(stack.db)
    try:
        return [{**r, "published": json.loads(r["published"])} for r in store.audit(pr=pr)]
    finally:
        store.close()


def test_re_run_all_checks_verifies_the_suites_head_again(tmp_path: Path) -> None:
    """GitHub's "Re-run all checks" sends the App check_suite.rerequested for its own suite."""
    with running(tmp_path, E2E_WORLD) as stack:
        verdict_for(stack, 42, HEAD)  # the start-up reconcile verifies the signed-off PR
        stack.wait(lambda: idle(stack), 60, "the queue to drain")
        ours = stack.check_runs(HEAD)[0]
        answer = stack.deliver("check_suite", ours["id"], "rerequested")
        assert answer["status"] == 202
        rerun = stack.wait(lambda: [r for r in audit(stack, 42) if r["published"]["reason"] == "check suite re-run"],
                           60, "a verification for the re-run")
        assert rerun[0]["head_sha"] == HEAD and rerun[0]["verdict"] == "REJECTED"


def test_a_fork_pr_is_verified_again_when_its_sweep_completes(tmp_path: Path) -> None:
    """PR #43's head branch is in a fork: GitHub's workflow_run delivery names no PR, so the App finds
    the open PRs whose head is the run's commit."""
    def fork(data: dict[str, Any]) -> None:
        pr = next(p for p in repo_of(data)["pulls"] if p["number"] == 43)
        pr["head"]["repo"] = FORK

    with running(tmp_path, e2e_variant(tmp_path, fork)) as stack:
        stack.deliver("issue_comment", 6002)
        comment = verdict_for(stack, 43, LATE)["body"]
        assert check_line(comment, 1).startswith("❌")  # the sweep is still running
        stack.wait(lambda: idle(stack), 60, "the queue to drain")
        run = httpx.get(f"{stack.fake_url}/repos/{REPO}/actions/runs/9003", timeout=30).json()
        assert run["pull_requests"] == [] and run["head_repository"]["full_name"] == FORK
        stack.admin("complete-run", id=9003, conclusion="success")
        stack.wait(lambda: check_line(stack.verdict_comments(43)[0]["body"], 1).startswith("✅"), 60, "check 1 PASS")
        lookups = [j for j in jobs(stack) if j["kind"] == "commit"]
        assert [(j["pr"], json.loads(j["payload"])["head_sha"], j["state"]) for j in lookups] == [(0, LATE, "done")]
        assert len(stack.verdict_comments(43)) == 1


def test_another_apps_check_run_of_the_same_name_is_left_alone_and_ours_carries_the_verdict(tmp_path: Path) -> None:
    """A green `codeowner-signoff-verify` of another app (or a workflow job) on the head: the App never
    updates it (GitHub would answer 403) and publishes its own beside it."""
    def foreign(data: dict[str, Any]) -> None:
        repo_of(data)["check_runs"].append({
            "id": 7001, "head_sha": HEAD, "name": CHECK, "app_id": FOREIGN_APP, "status": "completed",
            "conclusion": "success", "started_at": "2026-09-02T10:30:00Z", "completed_at": "2026-09-02T10:31:00Z"})

    with running(tmp_path, e2e_variant(tmp_path, foreign)) as stack:
        mark = len(calls(stack))
        stack.deliver("issue_comment", SIGNOFF_ID)
        verdict_for(stack, 42, HEAD)
        stack.wait(lambda: idle(stack), 60, "the queue to drain")
        runs = {r["app"]["id"]: r for r in all_check_runs(stack, HEAD)}
        assert set(runs) == {1, FOREIGN_APP}
        assert (runs[FOREIGN_APP]["id"], runs[FOREIGN_APP]["conclusion"]) == (7001, "success")  # untouched
        assert runs[1]["conclusion"] == "failure" and runs[1]["output"]["title"].startswith("Sign-off REJECTED")
        touched = [c for c in calls(stack, mark) if c["actor"] == BOT and c["path"].endswith("/check-runs/7001")]
        assert touched == []
        assert [j for j in jobs(stack) if j["state"] == "failed"] == []


def test_artifacts_are_downloaded_from_the_storage_host_without_the_token(tmp_path: Path) -> None:
    """GitHub answers an artifact download with a redirect to blob storage on another host, which must
    not be sent the installation token (the fake's storage host refuses it)."""
    with running(tmp_path, E2E_WORLD) as stack:
        stack.deliver("issue_comment", SIGNOFF_ID)
        comment = verdict_for(stack, 42, HEAD)["body"]
        assert check_line(comment, 2).startswith("✅")  # the eval scores were read from the artifact
        log = calls(stack)
        asked = [c for c in log if c["route"].endswith("/actions/artifacts/{artifact_id}/{archive_format}")]
        fetched = [c for c in log if c["route"] == "GET /_fake/download/{token}"]
        assert asked and all((c["actor"], c["status"]) == (BOT, 302) for c in asked)
        assert fetched and all((c["actor"], c["status"]) == ("anonymous", 200) for c in fetched)


def test_reconcile_reads_every_page_of_open_prs(tmp_path: Path) -> None:
    """131 open PRs: more than GitHub's largest page (100). The start-up reconcile pass queues a
    verification for every one (it once stopped at 100, and 31 were never reconciled)."""
    prs = list(range(1001, 1132))
    world = build_world(tmp_path / "world", prs, signed_off=False)
    with running(tmp_path, world) as stack:
        def reconciled() -> set[int]:
            return {j["pr"] for j in jobs(stack) if j["kind"] == "verify"
                    and json.loads(j["payload"]).get("reason") == "reconcile"}

        stack.wait(lambda: reconciled() == set(prs), 120, "a reconcile verification of each of the 131 PRs")
        listed = [c for c in calls(stack) if c["actor"] == BOT and c["route"] == "GET /repos/{owner}/{repo}/pulls"]
        assert len(listed) >= 2  # two pages


def test_a_retried_command_finds_its_reply_past_the_first_100_comments(tmp_path: Path) -> None:
    """The App's reply to `/reuse-sweep-run` is the 124th comment: the same command delivered again
    (a retry, a redelivery under a new GUID) must find it there and not reply twice."""
    pr = 701
    p = Pull(pr)
    world = build_world(tmp_path / "world", [pr], filler_comments=120)
    with running(tmp_path, world) as stack:
        stack.deliver("issue_comment", p.reuse, delivery="reuse-first")
        def replies() -> list[dict[str, Any]]:
            return [c for c in stack.issue_comments(pr) if c["user"]["login"] == BOT
                    and f"<!-- signoff-bot ack {p.reuse} -->" in c["body"]]
        stack.wait(lambda: replies(), 60, "the reply to the command")
        assert len(stack.issue_comments(pr)) > 120
        stack.wait(lambda: idle(stack), 60, "the queue to drain")
        stack.deliver("issue_comment", p.reuse, delivery="reuse-again")
        stack.wait(lambda: idle(stack) and any(json.loads(j["payload"]).get("delivery") == "reuse-again"
                                               for j in jobs(stack) if j["kind"] == "comment"), 60,
                   "the command's job to run again")
        assert len(replies()) == 1
        assert stack.reactions(p.reuse) == ["+1"]
