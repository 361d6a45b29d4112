"""The GitHub App end to end: `signoff-bot serve` and the fake GitHub as real processes on loopback.

Each test drives the App the way GitHub would (signed webhooks from the fake,
users writing comments, pushes, a sweep finishing) and observes what the App
posted on the fake: the verdict comment, check runs, reactions and replies.
"""

from __future__ import annotations

import json

import pytest

from app.store.sql import SqliteStore

from .apphost import REPO, Stack
from .variants import e2e_variant, repo_of

pytestmark = pytest.mark.slow

HEAD, SAME, FIXED, LATE = "b2" * 20, "c3" * 20, "d4" * 20, "e5" * 20
SIGNOFF_ID = 5001


@pytest.fixture
def stack(tmp_path):
    with Stack(tmp_path) as s:
        yield s
        print(s.logs())


def check_line(comment: str, number: int) -> str:
    return next(line for line in comment.splitlines() if line.startswith(("✅", "❌", "➖")) and
                f"Check {number} (" in line)


def verdict_for(stack: Stack, pr: int, sha: str) -> dict:
    def found():
        comments = stack.verdict_comments(pr)
        return comments[0] if comments and f"sha={sha}" in comments[0]["body"] else None
    return stack.wait(found, 60, f"a verdict comment for {sha[:8]} on #{pr}")


def test_a_sign_off_gets_one_verdict_comment_check_run_and_status(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    comment = verdict_for(stack, 42, HEAD)["body"]
    assert "**REJECTED**" in comment and "@nv-owner" in comment
    assert check_line(comment, 4).startswith("❌")  # no /reuse-sweep-run yet
    assert check_line(comment, 1).startswith("✅")
    runs = stack.wait(lambda: stack.check_runs(HEAD), 30, "the check run")
    assert runs[0]["conclusion"] == "failure"
    assert any(w["route"].startswith("POST /repos/{owner}/{repo}/statuses") for w in stack.writes())


def test_an_edited_sign_off_is_verified_again_in_the_same_comment(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    first = verdict_for(stack, 42, HEAD)
    body = next(c for c in stack.issue_comments(42) if c["id"] == SIGNOFF_ID)["body"]
    stack.edit_comment("nv-owner", SIGNOFF_ID, body.replace("- [x] Verified that this PR passes evals",
                                                            "- [ ] Verified that this PR passes evals"))
    stack.wait(lambda: "❌" in check_line(stack.verdict_comments(42)[0]["body"], 5), 60, "check 5 to fail")
    assert [c["id"] for c in stack.verdict_comments(42)] == [first["id"]]


def test_reuse_from_an_authorized_maintainer_is_acknowledged_and_turns_check_4_green(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    verdict_for(stack, 42, HEAD)
    cmd = stack.comment("core-maintainer", 42, "/reuse-sweep-run 9001")
    stack.wait(lambda: stack.reactions(cmd["id"]) == ["+1"], 60, "a +1 reaction")
    replies = stack.wait(lambda: [c["body"] for c in stack.issue_comments(42) if "accepted" in c["body"]], 30, "a reply")
    assert replies and "9001" in replies[0]
    stack.wait(lambda: check_line(stack.verdict_comments(42)[0]["body"], 4).startswith("✅"), 60, "check 4 PASS")
    assert len(stack.verdict_comments(42)) == 1


def test_reuse_from_a_stranger_is_refused_with_a_reason(stack):
    cmd = stack.comment("random-user", 42, "/reuse-sweep-run 9001")
    stack.wait(lambda: stack.reactions(cmd["id"]) == ["-1"], 60, "a -1 reaction")
    reply = stack.wait(lambda: [c["body"] for c in stack.issue_comments(42) if "refused" in c["body"]], 30, "a reply")
    assert "random-user" in reply[0] and "not authorized" in reply[0]


def test_reuse_of_a_run_still_running_is_refused(stack):
    cmd = stack.comment("core-maintainer", 42, "/reuse-sweep-run 9003")
    stack.wait(lambda: stack.reactions(cmd["id"]) == ["-1"], 60, "a -1 reaction")
    reply = stack.wait(lambda: [c["body"] for c in stack.issue_comments(42) if "refused" in c["body"]], 30, "a reply")
    assert reply[0].startswith("`/reuse-sweep-run 9003` refused: run 9003 has not completed (it is in_progress).")


# Green sweeps with eval artifacts that the reuse path must still refuse, each for one reason only
# (`checks.facts.commands.run_problem`): were the App to skip that rule, it would accept the run.
REFUSED_RUNS = {
    9004: ({"head_sha": LATE, "head_branch": "contributor/late-sweep", "pull_requests": [43]},
           "ran on commit e5e5e5e5, not a commit of this PR"),
    9005: ({"path": ".github/workflows/dry-run-sweep.yml"},
           "is a run of .github/workflows/dry-run-sweep.yml, not of .github/workflows/run-sweep.yml"),
    9006: ({"conclusion": "skipped"}, "concluded skipped, not success, failure or cancelled"),
}


def refusable_runs(data: dict) -> None:
    runs = repo_of(data)["workflow_runs"]
    green = next(r for r in runs if r["id"] == 9001)
    for n, (run_id, (change, _why)) in enumerate(sorted(REFUSED_RUNS.items())):
        runs.append({**green, "id": run_id, **change,
                     "artifacts": [{"id": 80 + 2 * n, "name": "eval_results_all"},
                                   {"id": 81 + 2 * n, "name": "results_bmk"}]})


def test_reuse_of_a_run_the_reuse_path_would_not_take_is_refused_saying_why(tmp_path):
    with Stack(tmp_path, e2e_variant(tmp_path, refusable_runs)) as stack:
        for run_id in REFUSED_RUNS:
            stack.comment("core-maintainer", 42, f"/reuse-sweep-run {run_id}")

        def replies() -> list[str] | None:
            acks = [c["body"].split("\n\n")[0] for c in stack.issue_comments(42) if "signoff-bot ack" in c["body"]]
            return sorted(acks) if len(acks) == len(REFUSED_RUNS) else None

        replies = stack.wait(replies, 90, "a reply to each command")
        assert replies == [f"`/reuse-sweep-run {run_id}` refused: run {run_id} {why}."
                           for run_id, (_change, why) in sorted(REFUSED_RUNS.items())]


def test_a_mistyped_setting_leaves_the_others_in_force_and_the_verdict_says_so(tmp_path):
    """The base's .github/signoff-bot.yml renames the reuse command beside a typo: the App still answers the
    renamed command (the file is not dropped for the typo) and the verdict notes what it ignored."""
    world = e2e_variant(tmp_path, lambda data: None)
    (world / "trees" / "base" / ".github" / "signoff-bot.yml").write_text("reuse_command: /reuse-run\nadvisroy: true\n")
    with Stack(tmp_path, world) as stack:
        cmd = stack.comment("core-maintainer", 42, "/reuse-run 9001")
        stack.wait(lambda: stack.reactions(cmd["id"]) == ["+1"], 60, "a +1 reaction")
        # the reply is posted after the reaction: waited for, not read at once
        stack.wait(lambda: any(c["body"].startswith("`/reuse-run` accepted: run 9001") for c in stack.issue_comments(42)),
                   60, "the reply")
        comment = verdict_for(stack, 42, HEAD)["body"]
        assert ("Repository configuration, not part of the sign-off:\n- .github/signoff-bot.yml:2: unknown setting "
                "'advisroy' (did you mean advisory?); ignored\n") in comment


@pytest.mark.parametrize("body", [
    "    As a PR reviewer and CODEOWNER, I have reviewed this and have:\n    - [x] Verified it",  # a code block
    "Please post the checklist that starts with As a PR reviewer and CODEOWNER, I have reviewed this",
])
def test_a_comment_that_is_no_sign_off_queues_no_verification(stack, body):
    """Whether a comment is a sign-off is `signoff.is_signoff`, for the App as for the checks."""
    cmd = stack.comment("nv-owner", 42, body)
    stack.wait(lambda: [j for j in stack.store().jobs() if j["kind"] == "comment" and j["state"] == "done"], 60,
               "the comment job")
    assert [j for j in stack.store().jobs() if j["kind"] == "verify"
            and json.loads(j["payload"]).get("reason") == f"sign-off issue_comment {cmd['id']}"] == []


def test_recheck_by_a_maintainer_verifies_and_by_a_stranger_is_refused(stack):
    stack.comment("core-maintainer", 42, "/signoff-recheck")
    verdict_for(stack, 42, HEAD)
    stranger = stack.comment("random-user", 42, "/signoff-recheck")
    stack.wait(lambda: stack.reactions(stranger["id"]) == ["-1"], 60, "a -1 reaction")
    stack.wait(lambda: any("refused" in c["body"] and "random-user" in c["body"] for c in stack.issue_comments(42)),
               30, "a refusal reply")


def test_a_push_with_the_same_diff_is_verified_again(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    verdict_for(stack, 42, HEAD)
    stack.admin("push", number=42, sha=SAME)
    verdict_for(stack, 42, SAME)
    assert len(stack.verdict_comments(42)) == 1


def test_a_push_that_changes_the_diff_asks_for_a_fresh_sign_off(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    verdict_for(stack, 42, HEAD)  # maybe the start-up reconcile's: the sign-off's own verification may still be due
    stack.wait(lambda: not _busy(stack), 60, "the queue to drain")
    stack.admin("push", number=42, sha=FIXED)
    runs = stack.wait(lambda: stack.check_runs(FIXED), 60, "a check run on the new head")
    assert runs[0]["conclusion"] == "action_required"
    assert f"sha={HEAD}" in stack.verdict_comments(42)[0]["body"]  # the old verdict stays for the old head


def test_a_sweep_that_finishes_after_the_sign_off_turns_check_1_green(stack):
    stack.deliver("issue_comment", 6002)
    comment = verdict_for(stack, 43, LATE)["body"]
    assert check_line(comment, 1).startswith("❌")
    stack.admin("complete-run", id=9003, conclusion="success")
    stack.wait(lambda: check_line(stack.verdict_comments(43)[0]["body"], 1).startswith("✅"), 60, "check 1 PASS")
    assert len(stack.verdict_comments(43)) == 1


def test_a_redelivered_webhook_is_processed_once(stack):
    first = stack.deliver("issue_comment", SIGNOFF_ID, delivery="fixed-guid")
    again = stack.deliver("issue_comment", SIGNOFF_ID, delivery="fixed-guid")
    assert first["status"] == again["status"] == 202
    verdict_for(stack, 42, HEAD)
    assert len(stack.verdict_comments(42)) == 1


def test_a_burst_of_50_deliveries_yields_one_comment_and_few_verifications(stack):
    for n in range(50):
        stack.deliver("issue_comment", SIGNOFF_ID, delivery=f"burst-{n}")
    verdict_for(stack, 42, HEAD)
    stack.wait(lambda: not _busy(stack), 60, "the queue to drain")
    assert len(stack.verdict_comments(42)) == 1
    check_run_writes = [w for w in stack.writes() if "check-runs" in w["route"] and w["method"] in ("POST", "PATCH")]
    assert len(check_run_writes) <= 5  # one verification, plus at most a handful coalesced


def test_killed_with_jobs_queued_every_job_completes_exactly_once(stack):
    stack.deliver("issue_comment", 6002)
    stack.deliver("issue_comment", SIGNOFF_ID)
    stack.kill_app()
    stack.start_app()
    verdict_for(stack, 42, HEAD)
    verdict_for(stack, 43, LATE)
    stack.wait(lambda: not _busy(stack), 60, "the queue to drain")
    assert len(stack.verdict_comments(42)) == 1 and len(stack.verdict_comments(43)) == 1


def _busy(stack: Stack) -> bool:
    import httpx

    return httpx.get(f"{stack.app_url}/readyz", timeout=5).json().get("queue_depth", 1) > 0


RECIPE = "benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/8k1k/disagg-gb300-1p1d-tp8-tp8-mtp.yaml"


def test_recipe_lint_runs_on_pull_request_events_and_resolves_fixed_findings(stack):
    stack.deliver("pull_request", 42, "opened")
    lint = stack.wait(lambda: stack.check_runs(HEAD, "signoff-bot lint"), 60, "the lint check run")[0]
    assert lint["conclusion"] == "neutral"  # advice: lint never blocks unless the repository says so
    awaiting = stack.wait(lambda: stack.check_runs(HEAD), 30, "the sign-off check run")[0]
    # Queued by the `opened` job, unless the start-up reconcile verified this signed-off PR first.
    assert awaiting["status"] == "queued" or awaiting["output"]["title"].startswith("Sign-off ")

    def inline():
        import httpx

        r = httpx.get(f"{stack.fake_url}/repos/{REPO}/pulls/42/comments", timeout=30).json()
        return [c for c in r if "car-v2-multinode-decode" in c["body"]]

    posted = stack.wait(inline, 30, "an inline finding")
    assert posted[0]["path"] == RECIPE and posted[0]["line"] == 29
    stack.admin("push", number=42, sha=FIXED)
    fixed = stack.wait(lambda: stack.check_runs(FIXED, "signoff-bot lint"), 60, "lint on the new head")[0]
    assert fixed["conclusion"] == "success"
    stack.wait(lambda: inline()[0]["body"].startswith("Resolved"), 30, "the fixed finding marked resolved")
    assert len(inline()) == 1  # never posted twice


def test_reconcile_heals_a_lost_delivery(tmp_path):
    with Stack(tmp_path, env={"SIGNOFF_BOT_RECONCILE_SECONDS": "1"}) as stack:
        # No webhook at all: GitHub never redelivers a failed one. The reconcile pass finds the signed-off PR.
        comment = verdict_for(stack, 42, HEAD)["body"]
        assert "@nv-owner" in comment
        records = stack.wait(lambda: SqliteStore(stack.db).audit(pr=42), 30, "an audit record")
        assert records[0]["published"] and records[0]["verdict"] == "REJECTED"


def test_a_sign_off_vouches_only_for_the_content_it_was_given_on(stack):
    stack.deliver("issue_comment", SIGNOFF_ID)
    verdict_for(stack, 42, HEAD)
    stack.admin("push", number=42, sha=FIXED)
    stack.wait(lambda: stack.check_runs(FIXED), 60, "a check run on the new head")
    stack.comment("core-maintainer", 42, "/signoff-recheck")  # a later trigger re-verifies with the old sign-off
    stack.wait(lambda: not _busy(stack), 60, "the queue to drain")
    assert stack.check_runs(FIXED)[0]["conclusion"] == "action_required"
    assert f"sha={HEAD}" in stack.verdict_comments(42)[0]["body"]
    body = next(c for c in stack.issue_comments(42) if c["id"] == SIGNOFF_ID)["body"]
    stack.edit_comment("nv-owner", SIGNOFF_ID, body + "\n\nRe-checked on the fixed recipe.")  # a fresh sign-off
    verdict_for(stack, 42, FIXED)
