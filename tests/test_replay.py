"""The whole pipeline over real HTTP: gather → checks → publish against the fake GitHub.

- gathering through githubkit yields exactly the snapshot built straight from
  the world's files (so the engine's acceptance results carry over);
- `signoff-bot replay --json` agrees with each world's expected.yaml;
- publishing is idempotent: a second verification edits the one verdict
  comment and posts no inline finding twice.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from app.fake_github import FakeGitHub
from app.github.client import CallStats, installation_client
from app.github.gather import Gatherer
from app.jobs.pipeline import verify
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, replay, throwaway_key
from app.offline.snapshot import snapshot_from_world
from app.offline.world import World

from .conftest import world_params
from .test_acceptance_engine import assert_agrees

KEY = throwaway_key()


def gathered(world_dir) -> tuple:
    world = World.load(world_dir)
    repo, pr = world.pull_repo()
    with FakeGitHub(world_dir) as fake:
        gh = installation_client(REPLAY_APP_ID, KEY, repo.installation_id, fake.url, CallStats())
        snap = asyncio.run(Gatherer(gh, repo.full_name).snapshot(pr["number"], world.now))
    return snap, snapshot_from_world(world)


def assert_same_snapshot(over_http, offline) -> None:
    for field in over_http.__dataclass_fields__:
        a, b = getattr(over_http, field), getattr(offline, field)
        if field in ("policy", "master_base", "master_head", "teams", "collaborators"):
            a, b = dict(a), dict(b)
        if field == "extra_files":
            a, b = {k: dict(v) for k, v in a.items()}, {k: dict(v) for k, v in b.items()}
        if field in ("artifacts", "upstream"):
            a, b = [(x, dict(x.files)) for x in a], [(x, dict(x.files)) for x in b]
        assert a == b, f"snapshot field {field!r} differs between HTTP gather and the world's files"


def test_demo_snapshot_over_http_equals_the_worlds_files():
    assert_same_snapshot(*gathered(DEMO_WORLD))


@pytest.mark.parametrize("world_dir", world_params())
def test_shared_snapshot_over_http_equals_the_worlds_files(world_dir):
    assert_same_snapshot(*gathered(world_dir))


@pytest.mark.parametrize("world_dir", world_params())
def test_replay_agrees_with_expected(world_dir):
    assert_agrees(world_dir, replay(world_dir).outcome.verdict)


def test_demo_replay_posts_one_comment_a_check_run_a_status_and_inline_findings():
    world = World.load(DEMO_WORLD)
    repo, pr = world.pull_repo()
    with FakeGitHub(DEMO_WORLD) as fake:
        gh = installation_client(REPLAY_APP_ID, KEY, repo.installation_id, fake.url, CallStats())
        first = asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
        second = asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
        writes = fake.state.ledger.writes
    assert first.verdict.label == "REJECTED"
    assert first.published.comment_action == "created"
    assert second.published.comment_action == "unchanged"
    assert second.published.comment_id == first.published.comment_id
    assert first.published.inline_comments == 1 and second.published.inline_comments == 0
    routes = [w.route for w in writes]
    assert routes.count("POST /repos/{owner}/{repo}/issues/{number}/comments") == 1
    assert routes.count("POST /repos/{owner}/{repo}/check-runs") == 1  # the second run updates it
    assert routes.count("POST /repos/{owner}/{repo}/pulls/{number}/reviews") == 1


def test_a_verification_with_nothing_changed_only_sets_the_status_and_revalidates_what_may_change():
    world = World.load(DEMO_WORLD)
    repo, pr = world.pull_repo()
    with FakeGitHub(DEMO_WORLD) as fake:
        gh = installation_client(REPLAY_APP_ID, KEY, repo.installation_id, fake.url, CallStats())
        for _ in range(2):  # the second one sees the first one's writes
            asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
        before = len(fake.state.ledger.writes)
        fake.state.ledger.reset_stats()
        third = asyncio.run(verify(gh, repo.full_name, pr["number"], world.now))
    writes = fake.state.ledger.writes[before:]  # the third verification's
    stats = fake.state.ledger.stats()
    assert [w.route for w in writes] == ["POST /repos/{owner}/{repo}/statuses/{sha}"]
    assert third.published.writes == ["commit status failure"]
    assert third.published.comment_action == "unchanged" and third.published.check_run_id is not None
    assert stats["not_modified"] > stats["rate_limited"]
    kept = [r for r in stats["by_route"] if "/git/blobs/" in r or "/artifacts/" in r]  # never change: kept
    assert kept == []


def test_cli_replay_json_of_the_demo():
    out = subprocess.run([sys.executable, "-m", "app.cli", "replay", "--json"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["verdict"] == "REJECTED"
    assert result["checks"]["4"]["status"] == "FAIL"
    assert set(result["checks"]) == {str(n) for n in range(13)}
    assert {"path", "line", "rule", "severity", "message"} <= set(result["findings"][0])
    assert result["comment"].startswith("<!-- codeowner-signoff-verify sha=")
    assert result["api_calls"] > 0


def test_cli_replay_of_a_missing_world_fails_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "app.cli", "replay", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert len(out.stderr.strip().splitlines()) == 1
