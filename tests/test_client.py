"""The githubkit client a verification runs on (app/github/client.py), over real HTTP against the fake GitHub:
one token however many first requests need one, the App's check run to update taken from what the
gatherer listed, and a process warmed up at start importing nothing of githubkit's while verifying."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from app.fake_github import FakeGitHub
from app.github.client import CallStats, installation_client
from app.jobs.pipeline import verify
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, throwaway_key
from app.offline.world import World

ROOT = Path(__file__).resolve().parent.parent
TOKEN_ROUTE = "POST /app/installations/{installation_id}/access_tokens"
CHECK_RUNS_ROUTE = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"


def test_a_cold_verification_asks_for_one_token_and_lists_each_commits_check_runs_once() -> None:
    world = World.load(DEMO_WORLD)
    repo, pr = world.pull_repo()
    with FakeGitHub(DEMO_WORLD) as fake:
        gh = installation_client(REPLAY_APP_ID, throwaway_key(), repo.installation_id, fake.url, CallStats())
        outcome = asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
        routes = fake.state.ledger.by_route
        assert routes[TOKEN_ROUTE] == 1  # the first wave's requests all waited for the one token
        # the publish updates the check run the gatherer listed, without listing it again
        assert routes[CHECK_RUNS_ROUTE] == len(outcome.snapshot.commits)
        assert outcome.published.check_run_id is not None


WARMED = """
import asyncio, json, sys
from app.fake_github import FakeGitHub
from app.github.client import installation_client, warm_up
from app.jobs.pipeline import verify
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, throwaway_key
from app.offline.world import World

world = World.load(DEMO_WORLD)
repo, pr = world.pull_repo()
warm_up()
with FakeGitHub(DEMO_WORLD) as fake:
    gh = installation_client(REPLAY_APP_ID, throwaway_key(), repo.installation_id, fake.url)
    before = set(sys.modules)
    asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("githubkit"))))
"""


def test_after_warm_up_a_verification_imports_nothing_of_githubkit() -> None:
    """In a fresh interpreter (this one has imported whatever other tests needed)."""
    proc = subprocess.run([sys.executable, "-c", WARMED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == []
