"""`signoff-bot verify PR` through real HTTP against the fake GitHub, with a workflow's token.

The dry run writes nothing; --publish posts what the App posts, once (a second run edits the one
comment in place); exit codes say PASS, REJECTED, or why it could not run; with no database, a push
after the sign-off is caught from the verifier's own check-run records; a token that cannot read
team membership leaves a team-only owner undecided, saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from app.action.verify import EXIT, CannotRun, parse_pr
from app.fake_github import FakeGitHub
from app.fake_github.payloads import ACTIONS_APP_ID
from app.offline.replay import DEMO_WORLD, replay, throwaway_key
from app.settings import CHECK_NAME

from .variants import e2e_variant, green_world, pull_of
from .verifyhost import (
    E2E_WORLD,
    ENVIRONMENT,
    NO_CHECKS,
    PR,
    REPO,
    TOKEN,
    TOKENS,
    as_user,
    run_verify,
    sticky_comments,
    writes,
)

TARGET = f"{REPO}#{PR}"


@pytest.fixture
def fake():
    with FakeGitHub(E2E_WORLD, tokens=TOKENS) as f:
        yield f


def checks_of(fake: FakeGitHub, sha: str) -> list[dict]:
    """The sign-off check runs on `sha`, oldest first."""
    repo = fake.state.repo(*REPO.split("/"))
    return sorted((c for c in repo.check_runs.values() if c["head_sha"] == sha and c["name"] == CHECK_NAME),
                  key=lambda c: c["id"])


def test_a_pull_request_is_named_by_url_or_reference():
    assert parse_pr("https://github.com/demo-org/InferenceX-demo/pull/42") == (REPO, 42)
    assert parse_pr("https://github.example.com/o/r/pull/7/files") == ("o/r", 7)
    assert parse_pr("o/r#7") == ("o/r", 7)
    for wrong in ("o/r", "42", "https://github.com/o/r/issues/7", "o/r#0"):
        with pytest.raises(CannotRun, match="is not a pull request"):
            parse_pr(wrong)


def test_the_dry_run_prints_the_verdict_and_writes_nothing(fake, monkeypatch, capsys):
    ran = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN)
    assert ran.code == 1, ran.err  # REJECTED: no /reuse-sweep-run yet
    assert "**REJECTED**" in ran.out and "blocking: Check 4 (reuse command)" in ran.out
    assert "Dry run: nothing posted" in ran.out
    assert fake.state.ledger.writes == []


def test_json_is_replays_object(fake, monkeypatch, capsys):
    ran = run_verify(monkeypatch, capsys, fake, f"https://github.com/{REPO}/pull/{PR}", "--json", GH_TOKEN=TOKEN)
    shown = json.loads(ran.out)
    assert set(shown) == {"verdict", "head_sha", "checks", "extra", "findings", "comment", "api_calls"}
    assert shown["verdict"] == "REJECTED" and shown["checks"]["4"]["status"] == "FAIL"
    # nv-owner is named in CODEOWNERS for the changed paths: check 0 passes without reading any team
    assert shown["checks"]["0"]["status"] == "PASS"
    assert 0 < shown["api_calls"] <= 45


def test_publish_twice_leaves_one_comment_edited_in_place(fake, monkeypatch, capsys):
    first = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)
    assert first.code == 1, first.err
    assert "verdict comment created" in first.out and f"check run {CHECK_NAME}: failure" in first.out
    [comment] = sticky_comments(fake)
    assert comment["user"] == "github-actions[bot]"
    [run] = checks_of(fake, "b2" * 20)
    assert run["app_id"] == ACTIONS_APP_ID and run["conclusion"] == "failure"

    as_user(fake, "core-maintainer", "POST", f"/repos/{REPO}/issues/{PR}/comments", {"body": "/reuse-sweep-run 9001"})
    second = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)
    assert second.code == 0, second.out + second.err  # PASS now
    assert "verdict comment updated" in second.out
    [edited] = sticky_comments(fake)
    assert edited["id"] == comment["id"] and "**Verdict: PASS**" in edited["body"]
    [run] = checks_of(fake, "b2" * 20)  # the same check run, updated
    assert run["conclusion"] == "success"
    made = writes(fake)
    assert made.count("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}") == 1
    assert made.count("POST /repos/{owner}/{repo}/check-runs") == 1


def test_exit_codes_name_why_it_could_not_run(fake, monkeypatch, capsys):
    ran = run_verify(monkeypatch, capsys, fake, TARGET)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err.startswith("signoff-bot verify: no credentials: set GITHUB_TOKEN or GH_TOKEN")
    ran = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN="not-a-token")
    assert ran.code == 2 and "GitHub refused GITHUB_TOKEN (401 Bad credentials)" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, f"{REPO}#99", GITHUB_TOKEN=TOKEN)
    assert ran.code == 2 and f"no such pull request {REPO}#99: GitHub answered 404" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, "not-a-pr", GITHUB_TOKEN=TOKEN)
    assert ran.code == 2 and "is not a pull request" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN, SIGNOFF_BOT_CHECKS_APP_ID="actions")
    assert ran.code == 2 and "SIGNOFF_BOT_CHECKS_APP_ID must be a number" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, TARGET, "--event", "event.json", GITHUB_TOKEN=TOKEN)
    assert ran.code == 2 and "not both" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, GITHUB_TOKEN=TOKEN)
    assert ran.code == 2 and "give a pull request" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, TARGET, SIGNOFF_BOT_APP_ID="1", SIGNOFF_BOT_PRIVATE_KEY="not a key")
    assert ran.code == 2 and "the private key is not PEM text" in ran.err
    ran = run_verify(monkeypatch, capsys, fake, "someone/else#1", SIGNOFF_BOT_APP_ID="1",
                     SIGNOFF_BOT_PRIVATE_KEY=throwaway_key())
    assert ran.code == 2 and "the App (id 1) is not installed on someone/else" in ran.err
    assert all(len(line.splitlines()) == 1 for line in (ran.err,))
    assert fake.state.ledger.writes == []


def test_a_token_without_checks_write_is_named(fake, monkeypatch, capsys):
    ran = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=NO_CHECKS)
    assert ran.code == 2
    assert ran.err.strip() == ("signoff-bot verify: GITHUB_TOKEN lacks the checks: write permission: GitHub answered "
                               "403 to \"create check run\"; grant it in the workflow's permissions (a personal "
                               "token can never write check runs), or use the App")
    assert checks_of(fake, "b2" * 20) == []


def test_a_passing_pull_request_exits_0(tmp_path, monkeypatch, capsys):
    with FakeGitHub(green_world(tmp_path), tokens=TOKENS) as fake:
        ran = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN)
    assert ran.code == 0, ran.out
    assert "**Verdict: PASS**" in ran.out


def test_with_no_database_a_push_after_the_signoff_is_caught_from_the_check_run_records(fake, monkeypatch, capsys):
    assert run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN).code == 1
    # another process, another day: the same diff under a new commit is still vouched for
    as_user(fake, "core-maintainer", "POST", "/_fake/push", {"repo": REPO, "number": PR, "sha": "c3" * 20})
    same = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)
    assert same.code == 1 and "fresh sign-off" not in same.out
    assert checks_of(fake, "c3" * 20)[-1]["conclusion"] == "failure"  # the verdict, REJECTED as before
    # a changed diff is not
    as_user(fake, "core-maintainer", "POST", "/_fake/push", {"repo": REPO, "number": PR, "sha": "d4" * 20})
    dry = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN)  # the dry run reads the records too
    assert dry.code == 1
    assert f"{REPO}#{PR}: a fresh sign-off is needed (check run action_required): The pull request's content " \
           "changed since nv-owner's sign-off was verified at b2b2b2b2" in dry.out
    changed = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)
    assert changed.code == 1
    assert "a fresh sign-off is needed" in changed.out
    [run] = checks_of(fake, "d4" * 20)
    assert run["conclusion"] == "action_required"


def test_a_token_that_cannot_read_team_membership_leaves_a_team_only_owner_undecided(tmp_path, monkeypatch, capsys):
    def signed_by_a_team_member(data: dict) -> None:
        pull_of(data)["issue_comments"][0]["user"] = "core-maintainer"  # in @demo-org/core, named nowhere

    world = e2e_variant(tmp_path, signed_by_a_team_member)
    app = replay(world, PR).outcome.verdict  # the App reads the team: a member owns the paths
    assert app.results[0].status.value == "PASS", app.results[0].reason
    with FakeGitHub(world, tokens=TOKENS) as fake:
        as_app = run_verify(monkeypatch, capsys, fake, TARGET, "--json", SIGNOFF_BOT_APP_ID="1",
                            SIGNOFF_BOT_PRIVATE_KEY=throwaway_key())
        assert json.loads(as_app.out)["checks"]["0"]["status"] == "PASS"  # verify with the App's credentials
        fake.state.ledger.reset_stats()
        ran = run_verify(monkeypatch, capsys, fake, TARGET, "--json", GITHUB_TOKEN=TOKEN)
        asked = [c for c in fake.state.ledger.calls if "/teams/" in c.path]
    row = json.loads(ran.out)["checks"]["0"]
    assert asked and all(c.status == 404 for c in asked)  # GitHub hides the organisation's teams from the token
    assert row["status"] == "UNDECIDED"
    assert row["reason"].startswith("cannot decide: whether core-maintainer owns ")
    assert "@demo-org/core: GitHub does not tell these credentials (reading team membership needs the " \
           "organisation's members: read, which a workflow's GITHUB_TOKEN never has; the App has it)" in row["reason"]


def test_output_for_a_workflow_step(fake, monkeypatch, capsys, tmp_path: Path):
    output = tmp_path / "github_output"
    ran = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN, GITHUB_OUTPUT=str(output))
    assert ran.code == 1
    assert output.read_text() == "verdict=REJECTED\n"
    run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)  # the sign-off vouches for b2
    as_user(fake, "core-maintainer", "POST", "/_fake/push", {"repo": REPO, "number": PR, "sha": "d4" * 20})
    output.write_text("")
    ran = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN, GITHUB_OUTPUT=str(output))
    assert (ran.code, output.read_text()) == (1, "verdict=STALE\n"), ran.out


def test_the_fake_takes_a_worlds_plain_tokens_within_their_permissions(tmp_path):
    def tokens(data: dict) -> None:
        data["tokens"] = ["reader:", "teams:members"]

    world = e2e_variant(tmp_path, tokens)
    with FakeGitHub(world) as fake:
        def call(token: str, method: str, path: str, body: dict | None = None) -> httpx.Response:
            return httpx.request(method, fake.url + path, json=body, headers={"Authorization": f"token {token}"},
                                 trust_env=False, timeout=30)

        assert call("wrong", "GET", f"/repos/{REPO}/pulls/{PR}").status_code == 401
        assert call("reader", "GET", f"/repos/{REPO}/pulls/{PR}").status_code == 200
        refused = call("reader", "POST", f"/repos/{REPO}/issues/{PR}/comments", {"body": "x"})
        assert (refused.status_code, refused.json()["message"]) == (403, "Resource not accessible by integration")
        member = "/orgs/demo-org/teams/core/memberships/core-maintainer"
        assert call("reader", "GET", member).status_code == 404  # hidden from a token without members
        assert call("teams", "GET", member).status_code == 200
        assert fake.state.ledger.writes == []


def test_verify_on_a_world_served_by_fake_github_prints_the_verdict_replay_prints():
    """docs/development.md's two commands: `fake-github` serving the demo world as a process, `verify` against it."""
    fake = subprocess.Popen([sys.executable, "-m", "app.cli", "fake-github", str(DEMO_WORLD), "--port", "0",
                             "--token", "demo-token"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = fake.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
        verified = subprocess.run([sys.executable, "-m", "app.cli", "verify", f"{REPO}#{PR}", "--json"],
                                  env={**env, "SIGNOFF_BOT_GITHUB_URL": url, "GITHUB_TOKEN": "demo-token"},
                                  capture_output=True, text=True, timeout=300)
    finally:
        fake.terminate()
        fake.wait(30)
    replayed = subprocess.run([sys.executable, "-m", "app.cli", "replay", "--json"], env=env, capture_output=True,
                              text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stderr
    ours, theirs = json.loads(verified.stdout), json.loads(replayed.stdout)
    assert verified.returncode == EXIT[theirs["verdict"]]

    def verdict(shown: dict) -> dict:
        # the reasons may name the review date: verify's is today, replay's the world's `now`
        return {"verdict": shown["verdict"], "head_sha": shown["head_sha"], "findings": shown["findings"],
                "checks": {n: c["status"] for n, c in shown["checks"].items()},
                "extra": {n: c["status"] for n, c in shown["extra"].items()}}

    assert verdict(ours) == verdict(theirs)


def test_a_pull_request_without_a_signoff_waits_for_one(tmp_path, monkeypatch, capsys):
    def unsigned(data: dict) -> None:
        pull_of(data)["issue_comments"] = []

    with FakeGitHub(e2e_variant(tmp_path, unsigned), tokens=TOKENS) as fake:
        dry = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN)
        published = run_verify(monkeypatch, capsys, fake, TARGET, "--publish", GITHUB_TOKEN=TOKEN)
        runs = checks_of(fake, "b2" * 20)
    for ran in (dry, published):
        assert ran.code == 0, ran.out + ran.err
        assert f"{REPO}#{PR}: no CODEOWNER sign-off yet; nothing to verify until one is posted" in ran.out
    assert [(r["status"], r["output"]["title"]) for r in runs] == [("queued", "Awaiting a CODEOWNER sign-off")]
    assert sticky_comments(fake) == []


def test_config_names_the_policy_file_and_the_verdict_names_it_back(tmp_path, monkeypatch, capsys):
    """`--config ci/signoff.yml` is the policy read at the base branch tip, in place of .github/signoff-bot.yml
    (tests/test_action.py: its settings apply); what it gets wrong is noted on the verdict under its own name."""
    world = e2e_variant(tmp_path, lambda data: None)
    (world / "trees" / "base" / "ci").mkdir()
    (world / "trees" / "base" / "ci" / "signoff.yml").write_text("lint: advice\nlnit: advice\n", encoding="utf-8")
    with FakeGitHub(world, tokens=TOKENS) as fake:
        ran = run_verify(monkeypatch, capsys, fake, TARGET, "--config", "ci/signoff.yml", GITHUB_TOKEN=TOKEN)
        default = run_verify(monkeypatch, capsys, fake, TARGET, GITHUB_TOKEN=TOKEN)
        assert fake.state.ledger.writes == []
    assert "- ci/signoff.yml:2: unknown setting 'lnit' (did you mean lint?); ignored" in ran.out, ran.err
    assert "ci/signoff.yml" not in default.out and "Repository configuration" not in default.out
    refused = run_verify(monkeypatch, capsys, None, TARGET, "--config", "/etc/passwd", GITHUB_TOKEN=TOKEN)
    assert refused.code == 2 and "is not a path in the repository" in refused.err
