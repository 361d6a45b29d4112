"""One world's verification, measured in a process of its own (bench/run.py starts one per world).

The fake GitHub runs in the parent (bench/run.py), so this process holds only
the bot: its peak RSS is the bot's. Here:

1. a cold verification: a new installation client (the token request counts,
   the HTTP cache is empty) runs `app.jobs.pipeline.verify` (gather → evaluate →
   publish) exactly as `signoff-bot replay` does; wall time from the call to
   the last publish write answered. The process has started as `serve` starts
   (`app.github.client.warm_up`: githubkit's lazily imported models are loaded), so
   the figure is a running App's, not a process's first seconds;
2. a warm re-verification with the same client, nothing changed in the world
   but what the cold run published; the fake's ledger tells how many of its
   requests counted against the rate limit (a 304 does not);
3. peak RSS (`ru_maxrss` of this process) after both;
4. the size of the world's offline snapshot (`snapshot_chars`), which names the
   largest world. Engine CPU is measured apart, for all worlds in one process
   (bench/engine.py `interleaved`).

Depth is the longest chain of requests in which each one started after the
previous one's response had arrived (client-side timestamps from httpx's
event hooks): the number of round trips the verification waited for one
after another, whether a chain is forced by data dependencies or by the code
awaiting one call before the next. With a fixed latency L per request, wall
time ≥ depth × L; `wall_s / latency` is printed beside it as a cross-check.
The chain itself is the critical path (`critical_path`): each request of it
with when it was sent and answered, and the gap since the answer it waited
on (the bot's own CPU or awaiting between the two); where several chains are
as long, the one whose every link waited on the latest answer is shown.

    python bench/verification.py '<spec JSON>'    (bench/run.py builds the spec)
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.github.client import CallStats, installation_client, warm_up  # noqa: E402
from app.jobs.pipeline import verify  # noqa: E402
from app.offline.replay import REPLAY_APP_ID, throwaway_key  # noqa: E402
from app.offline.snapshot import snapshot_from_world  # noqa: E402
from app.offline.world import World  # noqa: E402


@dataclass(frozen=True, order=True)
class Span:
    """One request as the client saw it: sent at `start`, answered at `end` (perf_counter seconds)."""

    start: float
    end: float
    what: str  # "GET /repos/o/r/pulls/1"


class TimedStats(CallStats):
    """CallStats that also keeps each request's span for the depth and the critical path."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[Span] = []
        self._started: dict[int, float] = {}

    async def on_request(self, request: httpx.Request) -> None:
        await super().on_request(request)
        self._started[id(request)] = time.perf_counter()

    async def on_response(self, response: httpx.Response) -> None:
        await super().on_response(response)
        start = self._started.pop(id(response.request), None)
        if start is not None:
            request = response.request
            self.spans.append(Span(start, time.perf_counter(), f"{request.method} {request.url.path}"))


def critical_path(spans: list[Span]) -> list[Span]:
    """The longest chain of spans each sent at or after the previous one's answer (ties: the latest answer)."""
    ordered = sorted(spans)
    length: list[int] = []
    previous: list[int | None] = []
    for span in ordered:
        before = [j for j, s in enumerate(ordered[:len(length)]) if s.end <= span.start]
        best = max(before, key=lambda j: (length[j], ordered[j].end), default=None)
        length.append(1 + (length[best] if best is not None else 0))
        previous.append(best)
    if not ordered:
        return []
    at: int | None = max(range(len(ordered)), key=lambda i: (length[i], ordered[i].end))
    chain = []
    while at is not None:
        chain.append(ordered[at])
        at = previous[at]
    return chain[::-1]


def path_report(chain: list[Span], start: float) -> list[dict[str, Any]]:
    """The critical path as JSON: each request, when it was sent and answered (ms from the verification's
    start), and how long after the answer it waited on it was sent."""
    out = []
    for i, span in enumerate(chain):
        waited = start if i == 0 else chain[i - 1].end
        out.append({"request": span.what, "sent_ms": round((span.start - start) * 1000, 1),
                    "answered_ms": round((span.end - start) * 1000, 1),
                    "gap_ms": round((span.start - waited) * 1000, 1)})
    return out


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
            stats.spans.clear()
            start = time.perf_counter()
            outcome = await verify(gh, spec["repo"], spec["number"], spec["now"])
            end = time.perf_counter()
            counted = await fake_stats(admin)
            chain = critical_path(stats.spans)
            out[phase] = {"wall_s": end - start, "requests": counted["requests"],
                          "rate_limited": counted["rate_limited"], "not_modified": counted["not_modified"],
                          "depth": len(chain), "verdict": outcome.verdict.label,
                          "critical_path": path_report(chain, start),
                          "after_path_ms": round((end - (chain[-1].end if chain else start)) * 1000, 1)}
    return out


def snapshot_chars(snap) -> int:
    """How much text a snapshot holds: the measure of a world's size."""
    texts = [t for f in snap.files for t in (f.base_text, f.head_text) if t]
    texts += list(snap.policy.values()) + list(snap.master_base.values()) + list(snap.master_head.values())
    texts += [t for files in snap.extra_files.values() for t in files.values() if t]
    texts += [t for a in snap.artifacts for t in a.files.values()]
    return sum(len(t) for t in texts)


def start_as_serve_does() -> None:
    """The process as `serve` starts it: githubkit's models loaded."""
    warm_up()


def main() -> int:
    spec = json.loads(sys.argv[1])
    start_as_serve_does()
    idle = peak_rss_mb()
    runs = asyncio.run(timed_verifications(spec))
    peak = peak_rss_mb()
    chars = snapshot_chars(snapshot_from_world(World.load(spec["world_dir"])))
    cold, warm = runs["cold"], runs["warm"]
    print(json.dumps({
        "wall_s": round(cold["wall_s"], 3),
        "requests": cold["requests"],
        "rate_limited_requests_warm": warm["rate_limited"],
        "depth": cold["depth"],
        "peak_rss_mb": round(peak, 1),
        "rate_limited_requests": cold["rate_limited"],
        "warm_wall_s": round(warm["wall_s"], 3),
        "warm_requests": warm["requests"],
        "warm_not_modified": warm["not_modified"],
        "warm_depth": warm["depth"],
        "critical_path": cold["critical_path"],
        "after_path_ms": cold["after_path_ms"],
        "idle_rss_mb": round(idle, 1),
        "verdict": cold["verdict"],
        "snapshot_chars": chars,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
