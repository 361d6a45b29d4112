"""`signoff-bot replay`: run the whole pipeline for a world's PR against the fake GitHub, over real HTTP.

The fake server starts on a free loopback port; the bot authenticates as a
GitHub App (a throwaway RSA key signs the JWT, exchanged for an installation
token), gathers, evaluates and publishes exactly as in production, and the
result is what the fake recorded.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.github import render
from app.github.client import CallStats, installation_client
from app.jobs.pipeline import Outcome, verify
from app.judge import IN_THREAD, Checks

from .world import World

DEMO_WORLD = Path(__file__).resolve().parent.parent / "demo_world"
REPLAY_APP_ID = 1


@dataclass
class Replay:
    outcome: Outcome
    api_calls: int

    def to_json(self) -> dict:
        v = self.outcome.verdict
        return {
            "verdict": v.label,
            "head_sha": v.head_sha,
            "checks": {str(r.number): {"status": r.status.value, "reason": r.reason} for r in v.results},
            "extra": {r.name: {"status": r.status.value, "reason": r.reason} for r in v.extra},
            "findings": [f.to_json() for f in v.findings],
            "comment": render.comment(v),
            "api_calls": self.api_calls,
        }

    def to_text(self) -> str:
        p = self.outcome.published
        lines = [render.comment(self.outcome.verdict).rstrip(), "", "Posted:"]
        lines += [f"  - {w}" for w in p.writes]
        lines.append(f"({self.api_calls} GitHub API calls)")
        return "\n".join(lines)


def throwaway_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def replay(world_dir: str | Path | None = None, number: int | None = None, checks: Checks = IN_THREAD) -> Replay:
    """The world's PR verified end to end; `checks`: where its checks run (`signoff-bot replay` runs them as the
    App does, in a checks' process within the budget)."""
    world_dir = Path(world_dir) if world_dir else DEMO_WORLD
    from app.fake_github import FakeGitHub  # here: `verify` prints with Replay and serves no fake (fastapi, ~0.3 s)

    world = World.load(world_dir)
    repo, pr = world.pull_repo(number)
    with FakeGitHub(world_dir) as fake:
        stats = CallStats()
        gh = installation_client(REPLAY_APP_ID, throwaway_key(), repo.installation_id, fake.url, stats)
        outcome = asyncio.run(verify(gh, repo.full_name, pr["number"], world.now, checks=checks))
    return Replay(outcome, stats.requests)
