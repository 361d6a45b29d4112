"""What the `signoff-bot verify` tests share: the fake GitHub with workflow tokens, and the command run in-process
through real HTTP against it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from app import cli
from app.fake_github import FakeGitHub
from app.github.render import MARKER_PREFIX

E2E_WORLD = Path(__file__).resolve().parent / "worlds" / "e2e"
REPO = "demo-org/InferenceX-demo"
PR = 42
TOKEN = "workflow-token"  # a workflow's GITHUB_TOKEN with the example workflow's permissions
NO_CHECKS = "no-checks-token"  # the same without checks: write
TOKENS = (TOKEN, f"{NO_CHECKS}:statuses,issues,pull_requests")
ENVIRONMENT = ("GITHUB_TOKEN", "GH_TOKEN", "SIGNOFF_BOT_APP_ID", "SIGNOFF_BOT_PRIVATE_KEY",
               "SIGNOFF_BOT_PRIVATE_KEY_FILE", "SIGNOFF_BOT_LOGIN", "SIGNOFF_BOT_CHECKS_APP_ID", "GITHUB_EVENT_NAME",
               "GITHUB_REPOSITORY", "GITHUB_OUTPUT", "SIGNOFF_BOT_GITHUB_URL")


@dataclass
class Ran:
    code: int
    out: str
    err: str


def run_verify(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, fake: FakeGitHub | None,
               *argv: str, **env: str) -> Ran:
    """`signoff-bot verify ARGV` with only `env` of the variables it reads set (and the fake as the API)."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    if fake is not None:
        monkeypatch.setenv("SIGNOFF_BOT_GITHUB_URL", fake.url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(["verify", *argv])
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def as_user(fake: FakeGitHub, login: str, method: str, path: str, body: dict) -> dict:
    """A write to the fake as a person of the world."""
    r = httpx.request(method, f"{fake.url}{path}", json=body, headers={"Authorization": f"token user:{login}"},
                      timeout=30, trust_env=False)
    assert r.status_code < 300, r.text
    return r.json()


def sticky_comments(fake: FakeGitHub, pr: int = PR) -> list[dict]:
    """The verdict comments on the PR (found by their hidden marker)."""
    repo = fake.state.repo(*REPO.split("/"))
    return [c for c in repo.comments_on(pr) if str(c.get("body", "")).startswith(MARKER_PREFIX)]


def writes(fake: FakeGitHub) -> list[str]:
    """Every write the fake took, as its route ("POST /repos/{owner}/{repo}/check-runs")."""
    return [w.route for w in fake.state.ledger.writes]
