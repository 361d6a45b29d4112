"""One world's verification, measured in a process of its own (bench/run.py starts one per world).

The fake GitHub runs in the parent (bench/run.py), so this process holds only
the bot: its peak RSS is the bot's. Here:

1. a cold verification: a new installation client (the token request counts,
   the HTTP cache is empty) runs `app.pipeline.verify` (gather → evaluate →
   publish) exactly as `signoff-bot replay` does; wall time from the call to
   the last publish write answered;
2. a warm re-verification with the same client, nothing changed in the world
   but what the cold run published; the fake's ledger tells how many of its
   requests counted against the rate limit (a 304 does not);
3. peak RSS (`ru_maxrss` of this process) after both;
4. engine CPU: `time.process_time()` around `checks.engine.evaluate` on the
   snapshot `app.offline.snapshot_from_world` builds (median of several runs;
   `evaluate` builds a fresh Context each time; building the snapshot is not timed).

Depth is the longest chain of requests in which each one started after the
previous one's response had arrived (client-side timestamps from httpx's
event hooks): the number of round trips the verification waited for one
after another, whether a chain is forced by data dependencies or by the code
awaiting one call before the next. With a fixed latency L per request, wall
time ≥ depth × L; `wall_s / latency` is printed beside it as a cross-check.

    python bench/verification.py '<spec JSON>'    (bench/run.py builds the spec)
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.github import CallStats, installation_client  # noqa: E402
from app.offline import snapshot_from_world  # noqa: E402
from app.pipeline import verify  # noqa: E402
from app.replay import REPLAY_APP_ID, throwaway_key  # noqa: E402
from app.world import World  # noqa: E402
from checks.engine import evaluate  # noqa: E402

ENGINE_RUNS = 7


class TimedStats(CallStats):
    """CallStats that also keeps each request's (start, response) times for the depth."""

    def __init__(self) -> None:
        super().__init__()
        self.intervals: list[tuple[float, float]] = []
        self._started: dict[int, float] = {}

    async def on_request(self, request: httpx.Request) -> None:
        await super().on_request(request)
        self._started[id(request)] = time.perf_counter()

    async def on_response(self, response: httpx.Response) -> None:
        await super().on_response(response)
        start = self._started.pop(id(response.request), None)
        if start is not None:
            self.intervals.append((start, time.perf_counter()))


def depth(intervals: list[tuple[float, float]]) -> int:
    """The longest chain of intervals each starting at or after the previous one's end."""
    ordered = sorted(intervals)
    chain: list[int] = []
    for start, _end in ordered:
        chain.append(1 + max((c for c, (_s, e) in zip(chain, ordered) if e <= start), default=0))
    return max(chain, default=0)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def fake_stats(admin: httpx.AsyncClient, reset: bool = False) -> dict[str, Any]:
    """The fake's request counters (admin routes are not counted themselves)."""
    response = await (admin.delete("/_fake/stats") if reset else admin.get("/_fake/stats"))
    response.raise_for_status()
    return response.json()


async def timed_verifications(spec: dict[str, Any]) -> dict[str, Any]:
    """A cold verification with a new client, then a warm one with the same client."""
    stats = TimedStats()
    gh = installation_client(REPLAY_APP_ID, throwaway_key(), spec["installation_id"], spec["url"], stats)
    out: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=spec["url"], trust_env=False) as admin:
        for phase in ("cold", "warm"):
            await fake_stats(admin, reset=True)
            stats.intervals.clear()
            start = time.perf_counter()
            outcome = await verify(gh, spec["repo"], spec["number"], spec["now"])
            wall = time.perf_counter() - start
            counted = await fake_stats(admin)
            out[phase] = {"wall_s": wall, "requests": counted["requests"], "rate_limited": counted["rate_limited"],
                          "not_modified": counted["not_modified"], "depth": depth(stats.intervals),
                          "verdict": outcome.verdict.label}
    return out


def engine_cpu_ms(world_dir: str) -> tuple[float, int]:
    """Median CPU time of `evaluate` over ENGINE_RUNS, and the snapshot's size in text characters."""
    snap = snapshot_from_world(World.load(world_dir))
    times = []
    for _ in range(ENGINE_RUNS):
        start = time.process_time()
        evaluate(snap)
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times), snapshot_chars(snap)


def snapshot_chars(snap) -> int:
    """How much text a snapshot holds: the measure of a world's size."""
    texts = [t for f in snap.files for t in (f.base_text, f.head_text) if t]
    texts += list(snap.policy.values()) + list(snap.master_base.values()) + list(snap.master_head.values())
    texts += [t for files in snap.extra_files.values() for t in files.values() if t]
    texts += [t for a in snap.artifacts for t in a.files.values()]
    return sum(len(t) for t in texts)


def main() -> int:
    spec = json.loads(sys.argv[1])
    idle = peak_rss_mb()
    runs = asyncio.run(timed_verifications(spec))
    peak = peak_rss_mb()
    engine_ms, chars = engine_cpu_ms(spec["world_dir"])
    cold, warm = runs["cold"], runs["warm"]
    print(json.dumps({
        "wall_s": round(cold["wall_s"], 3),
        "requests": cold["requests"],
        "rate_limited_requests_warm": warm["rate_limited"],
        "depth": cold["depth"],
        "engine_cpu_ms": round(engine_ms, 1),
        "peak_rss_mb": round(peak, 1),
        "rate_limited_requests": cold["rate_limited"],
        "warm_wall_s": round(warm["wall_s"], 3),
        "warm_requests": warm["requests"],
        "warm_not_modified": warm["not_modified"],
        "warm_depth": warm["depth"],
        "idle_rss_mb": round(idle, 1),
        "verdict": cold["verdict"],
        "snapshot_chars": chars,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
