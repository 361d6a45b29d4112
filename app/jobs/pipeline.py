"""One verification: gather the snapshot, evaluate the checks, publish the verdict."""

from __future__ import annotations

from dataclasses import dataclass

from githubkit import GitHub

from app.github.gather import Gatherer
from app.github.publish import Published, Publisher
from app.judge import IN_THREAD, Checks
from checks.policy import CONFIG_PATH
from checks.result import Verdict
from checks.snapshot import Snapshot


@dataclass
class Outcome:
    snapshot: Snapshot
    verdict: Verdict
    published: Published


async def verify(gh: GitHub, repo: str, number: int, now: str, bot_login: str = "signoff-bot[bot]",
                 publish: bool = True, checks: Checks = IN_THREAD, config_path: str = CONFIG_PATH) -> Outcome:
    async with gh:  # one HTTP client, keep-alive connections, for the whole verification
        gatherer = Gatherer(gh, repo, bot_login, checks, config_path)
        done = await gatherer.verify(number, now)
        snap, verdict = done.snapshot, done.verdict
        published = Published()
        if publish:
            published = await Publisher(gh, repo, bot_login, gatherer.owned_check_runs).verdict(snap, verdict)
    return Outcome(snap, verdict, published)
