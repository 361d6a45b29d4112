"""`signoff-bot verify --event FILE --publish` on GitHub's own payload examples, as a workflow receives them.

Each example of ../shared/fixtures/webhooks/octokit/ that an Action's trigger delivers is rewritten to
the e2e world (as tests/test_octokit_deliveries.py rewrites them, then without the `installation`
a workflow's event lacks) and names a comment, review or review comment of the world; the command
does what the App's router and jobs do with it. Skipped when ../shared is absent, except in CI.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from app.action.event import jobs_of
from app.action.verify import CannotRun
from app.fake_github import FakeGitHub
from app.settings import CHECK_NAME

from .conftest import present
from .test_octokit_deliveries import OCTOKIT, load, rewritten
from .variants import e2e_variant, pull_of
from .verifyhost import PR, REPO, TOKEN, TOKENS, as_user, run_verify, sticky_comments, writes

SIGNOFF_ID, REVIEW_ID, REVIEW_COMMENT_ID = 5001, 7001, 7002
HEAD, FORCED = "b2" * 20, "e5" * 20  # PR #42's head; a commit on main's tip instead: a force push
SWEEP = ".github/workflows/run-sweep.yml"


def with_review_signoffs(data: dict[str, Any]) -> None:
    """The sign-off of comment 5001 posted again as a review and as a review comment."""
    pr = pull_of(data)
    body = pr["issue_comments"][0]["body"]
    pr["reviews"] = [{"id": REVIEW_ID, "user": "nv-owner", "author_association": "COLLABORATOR",
                      "state": "COMMENTED", "submitted_at": "2026-09-02T10:30:00Z", "body": body}]
    pr["review_comments"] = [{"id": REVIEW_COMMENT_ID, "user": "nv-owner", "author_association": "COLLABORATOR",
                              "path": "configs/nvidia-master.yaml", "line": 1, "created_at": "2026-09-02T10:40:00Z",
                              "body": body}]


@pytest.fixture
def fake(tmp_path):
    with FakeGitHub(e2e_variant(tmp_path, with_review_signoffs), tokens=TOKENS) as f:
        yield f


def as_workflow_gets_it(example: str, change: Callable[[dict[str, Any]], None] = lambda _d: None) -> dict:
    """The example rewritten to the e2e world, without the App's installation, then `change`d."""
    data = rewritten(load(present(OCTOKIT / example if OCTOKIT.is_dir() else None, OCTOKIT)))
    data.pop("installation", None)
    change(data)
    return data


def set_id(key: str, value: int) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data[key]["id"] = value
    return change


def sweep_path(data: dict[str, Any]) -> None:
    data["workflow_run"]["path"] = SWEEP


def event_file(tmp_path: Path, payload: dict) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


VERIFYING = [
    ("issue_comment", "issue_comment/created.payload.json", set_id("comment", SIGNOFF_ID)),
    ("issue_comment", "issue_comment/edited.payload.json", set_id("comment", SIGNOFF_ID)),
    ("pull_request_review", "pull_request_review/submitted.payload.json", set_id("review", REVIEW_ID)),
    ("pull_request_review_comment", "pull_request_review_comment/created.payload.json",
     set_id("comment", REVIEW_COMMENT_ID)),
    ("pull_request_review_comment", "pull_request_review_comment/edited.payload.json",
     set_id("comment", REVIEW_COMMENT_ID)),
    ("workflow_run", "workflow_run/completed.with-pull-requests.payload.json", sweep_path),
    ("workflow_run", "workflow_run/completed.payload.json", sweep_path),  # no PR named: found by its head
]


@pytest.mark.parametrize("event,example,change", VERIFYING, ids=[v[1] for v in VERIFYING])
def test_a_trigger_verifies_and_publishes_once(event, example, change, fake, tmp_path, monkeypatch, capsys):
    path = event_file(tmp_path, as_workflow_gets_it(example, change))
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_NAME": event, "GITHUB_REPOSITORY": REPO}
    ran = run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", **env)
    assert ran.code == 1, ran.out + ran.err  # REJECTED: no /reuse-sweep-run yet
    assert "verdict comment created" in ran.out
    api = [c for c in fake.state.ledger.calls if not c.path.startswith("/_fake/")]  # not the artifact storage
    assert len(api) <= 45  # a workflow token may make 1,000 an hour per repository
    again = run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", **env)
    assert again.code == 1 and "verdict comment created" not in again.out
    assert len(sticky_comments(fake)) == 1


NOT_VERIFYING = [
    ("workflow_run", "workflow_run/completed.with-pull-requests.payload.json", "",
     "no job it caused verified a pull request"),  # .github/workflows/test.yml is not the sweep
    ("issue_comment", "issue_comment/deleted.payload.json", "", "issue_comment deleted is not a trigger"),
    ("pull_request_target", "pull_request/closed.payload.json", "", "pull_request closed is not a trigger"),
    ("check_run", "check_run/rerequested.payload.json", "", "check_run is not a sign-off trigger"),
    ("pull_request_review", "pull_request_review/dismissed.payload.json", "", "is not a trigger"),
]


@pytest.mark.parametrize("event,example,_unused,why", NOT_VERIFYING, ids=[v[1] for v in NOT_VERIFYING])
def test_anything_else_is_nothing_to_verify(event, example, _unused, why, fake, tmp_path, monkeypatch, capsys):
    path = event_file(tmp_path, as_workflow_gets_it(example))
    ran = run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", GITHUB_TOKEN=TOKEN,
                     GITHUB_EVENT_NAME=event, GITHUB_REPOSITORY=REPO)
    assert ran.code == 0, ran.err
    assert ran.out.startswith("nothing to verify: ") and why in ran.out and len(ran.out.splitlines()) == 1
    assert sticky_comments(fake) == []


def maintainer_command(fake, tmp_path, monkeypatch, capsys, body: str):
    """A maintainer's comment `body` on the PR, through `verify --event --publish` as its workflow gets it."""
    posted = as_user(fake, "core-maintainer", "POST", f"/repos/{REPO}/issues/{PR}/comments", {"body": body})
    path = event_file(tmp_path, as_workflow_gets_it("issue_comment/created.payload.json",
                                                    set_id("comment", posted["id"])))
    return run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", GITHUB_TOKEN=TOKEN,
                      GITHUB_EVENT_NAME="issue_comment", GITHUB_REPOSITORY=REPO)


def test_reuse_sweep_run_is_validated_and_acknowledged(fake, tmp_path, monkeypatch, capsys):
    ran = maintainer_command(fake, tmp_path, monkeypatch, capsys, "/reuse-sweep-run 9001")
    assert ran.code == 0, ran.out + ran.err  # accepted, so the verification that follows passes
    made = writes(fake)
    assert "POST /repos/{owner}/{repo}/{kind}/comments/{comment_id}/reactions" in made
    repo = fake.state.repo(*REPO.split("/"))
    replies = [c["body"] for c in repo.comments_on(PR) if "`/reuse-sweep-run` accepted: run 9001" in c["body"]]
    assert len(replies) == 1 and "**Verdict: PASS**" in sticky_comments(fake)[0]["body"]


def test_signoff_recheck_verifies(fake, tmp_path, monkeypatch, capsys):
    ran = maintainer_command(fake, tmp_path, monkeypatch, capsys, "/signoff-recheck")
    assert ran.code == 1 and "verdict comment created" in ran.out
    assert "POST /repos/{owner}/{repo}/{kind}/comments/{comment_id}/reactions" in writes(fake)


@pytest.mark.parametrize("anchor", [f"issuecomment-{SIGNOFF_ID}", f"pullrequestreview-{REVIEW_ID}",
                                    f"discussion_r{REVIEW_COMMENT_ID}"])
def test_workflow_dispatch_verifies_the_comment_its_url_links(anchor, fake, tmp_path, monkeypatch, capsys):
    payload = {"inputs": {"comment_url": f"https://github.com/{REPO}/pull/{PR}#{anchor}"},
               "ref": "refs/heads/main", "repository": {"full_name": REPO}, "sender": {"login": "core-maintainer"},
               "workflow": ".github/workflows/signoff-verify.yml"}
    ran = run_verify(monkeypatch, capsys, fake, "--event", event_file(tmp_path, payload), "--publish",
                     GITHUB_TOKEN=TOKEN, GITHUB_EVENT_NAME="workflow_dispatch", GITHUB_REPOSITORY=REPO)
    assert ran.code == 1 and "verdict comment created" in ran.out, ran.err


def test_a_dispatch_without_a_comment_url_or_with_a_wrong_one():
    assert jobs_of("workflow_dispatch", {"inputs": {}}, REPO, "github-actions[bot]") == \
        "workflow_dispatch without a comment_url input"
    for url in ("https://github.com/other/repo/pull/1#issuecomment-1", f"https://github.com/{REPO}/issues/1"):
        with pytest.raises(CannotRun, match="comment_url"):
            jobs_of("workflow_dispatch", {"inputs": {"comment_url": url}}, REPO, "github-actions[bot]")


def test_an_event_the_command_cannot_use_is_named(fake, tmp_path, monkeypatch, capsys):
    broken = copy.deepcopy(as_workflow_gets_it("issue_comment/created.payload.json"))
    del broken["comment"]["id"]
    ran = run_verify(monkeypatch, capsys, fake, "--event", event_file(tmp_path, broken), "--publish",
                     GITHUB_TOKEN=TOKEN, GITHUB_EVENT_NAME="issue_comment", GITHUB_REPOSITORY=REPO)
    assert ran.code == 2 and ran.err.strip() == ("signoff-bot verify: the issue_comment event cannot be used: "
                                                 "comment.id is missing")
    ran = run_verify(monkeypatch, capsys, fake, "--event", str(tmp_path / "absent.json"), GITHUB_TOKEN=TOKEN,
                     GITHUB_EVENT_NAME="issue_comment", GITHUB_REPOSITORY=REPO)
    assert ran.code == 2 and "cannot read the event file" in ran.err


def test_a_dry_run_of_an_event_writes_nothing(fake, tmp_path, monkeypatch, capsys):
    path = event_file(tmp_path, as_workflow_gets_it("issue_comment/created.payload.json",
                                                    set_id("comment", SIGNOFF_ID)))
    ran = run_verify(monkeypatch, capsys, fake, "--event", path, GITHUB_TOKEN=TOKEN,
                     GITHUB_EVENT_NAME="issue_comment", GITHUB_REPOSITORY=REPO)
    assert ran.code == 1 and "Dry run: nothing posted" in ran.out
    assert fake.state.ledger.writes == []


def test_an_opened_pull_request_gets_its_check_run_awaiting_a_signoff(fake, tmp_path, monkeypatch, capsys):
    path = event_file(tmp_path, as_workflow_gets_it("pull_request/opened.payload.json"))
    ran = run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", GITHUB_TOKEN=TOKEN,
                     GITHUB_EVENT_NAME="pull_request_target", GITHUB_REPOSITORY=REPO)
    assert ran.code == 0 and ran.out.startswith("nothing to verify: "), ran.err
    repo = fake.state.repo(*REPO.split("/"))
    [run] = [c for c in repo.check_runs.values() if c["name"] == CHECK_NAME]
    assert (run["head_sha"], run["status"], run["output"]["title"]) == (HEAD, "queued", "Awaiting a CODEOWNER sign-off")
    assert "POST /repos/{owner}/{repo}/check-runs" in writes(fake) and sticky_comments(fake) == []


def test_a_force_push_after_the_signoff_needs_a_fresh_one(fake, tmp_path, monkeypatch, capsys):
    """The push's event names the head it replaced, whose check run holds the record; without it, the
    commits that carried the record are no longer the PR's and nothing would say what was signed."""
    env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPO}
    assert run_verify(monkeypatch, capsys, fake, f"{REPO}#{PR}", "--publish", **env).code == 1  # pinned to b2
    as_user(fake, "core-maintainer", "POST", "/_fake/push", {"repo": REPO, "number": PR, "sha": FORCED})

    def pushed(data: dict[str, Any]) -> None:
        data.update(before=HEAD, after=FORCED)

    path = event_file(tmp_path, as_workflow_gets_it("pull_request/synchronize.payload.json", pushed))
    ran = run_verify(monkeypatch, capsys, fake, "--event", path, "--publish", GITHUB_EVENT_NAME="pull_request_target",
                     **env)
    assert ran.code == 1 and "a fresh sign-off is needed" in ran.out, ran.out + ran.err
    repo = fake.state.repo(*REPO.split("/"))
    [run] = [c for c in repo.check_runs.values() if c["name"] == CHECK_NAME and c["head_sha"] == FORCED]
    assert run["conclusion"] == "action_required"
    # and so it stays: the record moved to the new head's check run
    again = event_file(tmp_path, as_workflow_gets_it("issue_comment/edited.payload.json", set_id("comment", SIGNOFF_ID)))
    ran = run_verify(monkeypatch, capsys, fake, "--event", again, "--publish", GITHUB_EVENT_NAME="issue_comment",
                     **env)
    assert ran.code == 1 and "a fresh sign-off is needed" in ran.out
