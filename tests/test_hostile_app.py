"""Hostile PR content at the App's edge (issue 28): what a PR's text puts in a URL never makes a request that
cannot be made (answered as a GitHub 502 and retried); a verdict too long for GitHub is cut to its limits."""

from __future__ import annotations

import asyncio

import pytest

from app.fake_github import FakeGitHub
from app.github.client import CallStats, installation_client, is_name, url_path
from app.github.gather import Gatherer
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, throwaway_key
from app.offline.world import World


@pytest.mark.parametrize("name, ok", [
    ("SemiAnalysisAI", True), ("vllm-project", True), ("signoff-bot[bot]", True), ("a.b_c-1", True),
    ("gb300\x01x", False), ("a/b", False), ("a?b", False), ("", False), ("..", False), ("x" * 101, False),
])
def test_only_names_github_can_have_reach_a_url(name, ok):
    assert is_name(name) is ok


def test_a_repository_path_is_one_part_of_a_url_whatever_it_holds():
    assert url_path("runners/launch_b200.sh") == "runners/launch_b200.sh"
    assert url_path("a b/é%41;=") == "a%20b/%C3%A9%2541%3B%3D"
    assert url_path("runners/launch_gb300\x01x.sh") is None and url_path("") is None
    assert url_path("runners/launch_x?ref=main.sh") is None and url_path("runners/x#.sh") is None


@pytest.mark.parametrize("path, repo", [
    ("runners/launch_gb300\x01x.sh", None),  # a control character: an invalid URL, sent as written
    ("runners/launch_x?ref=main#.sh", None),  # a query and a fragment, had it been sent as written
    ("models/a/b.yaml", "vllm-project/reci\x01pes"),  # a repository name read from a link
])
def test_a_path_or_repository_read_from_a_pr_is_absent_not_a_github_error(path, repo):
    world = World.load(DEMO_WORLD)
    site, _pr = world.pull_repo(None)

    async def read():
        gh = installation_client(REPLAY_APP_ID, throwaway_key(), site.installation_id, fake.url, CallStats())
        gather = Gatherer(gh, site.full_name)
        return await gather._read_contents(path, "main", repo or site.full_name)

    with FakeGitHub(DEMO_WORLD) as fake:
        assert asyncio.run(read()) is None


# --- a verdict too long for GitHub -------------------------------------------------------------------------

def _long_verdict():
    from checks.result import CheckResult, Finding, Severity, Status, Verdict

    findings = tuple(Finding(f"benchmarks/x{i}.sh", i, "rule", Severity.ERROR, "m" * 200) for i in range(1, 400))
    rows = tuple(CheckResult(n, f"check {n}", Status.FAIL, "r" * 20_000, findings) for n in range(13))
    return Verdict("h" * 40, "owner", "https://x/1", rows, findings=findings)


def test_a_verdict_comment_too_long_for_github_is_cut_and_points_to_the_check_run():
    from app.github import publish, render
    from tests.builders import snapshot

    verdict = _long_verdict()
    assert len(render.comment(verdict)) > publish.COMMENT_LIMIT
    body = publish._comment(snapshot(), verdict)
    assert len(body) <= publish.COMMENT_LIMIT and render.marker_sha(body) == "h" * 40
    assert body.endswith("every row and finding is in [the `codeowner-signoff-verify` check run]"
                         "(https://github.com/SemiAnalysisAI/InferenceX/pull/100/checks)\n")
    assert render.fit("short", 10, "x") == "short"
    assert len(render.fit("y" * 100, 60, "x")) <= 60  # one line longer than the room: cut where it ends
