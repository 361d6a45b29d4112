"""signoff-bot's performance benchmark: one command, one table (or `--json`).

    python bench/run.py [--json] [--latency-ms 100] [--connections 8] [--seconds 5] [--world NAME]

For the demo world and every shared world (../shared/fixtures/worlds, when
present), the fake GitHub serves the world from this process with a fixed
latency per request, and bench/verification.py measures one verification in
a process of its own (see its docstring for what each column means and how
depth is measured); the table is followed by each world's critical path, the
chain of requests that sets its depth. Then bench/ingest.py compares webhook ingest with a bare
endpoint. The goals are checked here and a missed goal is printed with its
gap; they are not asserted in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import backtest  # noqa: E402
import ingest  # noqa: E402

from app.fake_github import FakeGitHub  # noqa: E402
from app.offline.replay import DEMO_WORLD  # noqa: E402
from app.offline.world import World  # noqa: E402

SHARED_WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
GOAL_WORLD = "pr2554-dsv4-b200-sglang-mtp"
CHILD_TIMEOUT = 600


@dataclass(frozen=True)
class Goal:
    """A bound on one measured value; `applies` picks the worlds it is about."""

    key: str
    limit: float
    label: str
    unit: str
    applies: Callable[[str, bool], bool]  # (world name, is the largest world)
    at_least: bool = False

    def met(self, value: float) -> bool:
        return value >= self.limit if self.at_least else value <= self.limit

    def verdict(self, value: float) -> str:
        if self.met(value):
            return f"✓ {value:g}{self.unit}"
        gap = abs(value - self.limit)
        return f"✗ {value:g}{self.unit}, {gap:.3g}{self.unit} {'short' if self.at_least else 'over'}"


WORLD_GOALS = (
    Goal("wall_s", 1.0, f"{GOAL_WORLD}: wall time ≤ 1 s", " s", lambda name, _big: name == GOAL_WORLD),
    Goal("depth", 7, f"{GOAL_WORLD}: depth ≤ 7 round trips", "", lambda name, _big: name == GOAL_WORLD),
    Goal("depth", 8, "every world: depth ≤ 8 round trips", "", lambda _name, _big: True),
    Goal("requests", 40, f"{GOAL_WORLD}: requests ≤ 40", "", lambda name, _big: name == GOAL_WORLD),
    Goal("rate_limited_requests_warm", 10, "every world: warm re-verification ≤ 10 rate-limited requests", "",
         lambda _name, _big: True),
    Goal("engine_cpu_ms", 50, "every world: engine CPU ≤ 50 ms", " ms", lambda _name, _big: True),
    Goal("peak_rss_mb", 200, "largest world: peak RSS < 200 MB", " MB", lambda _name, big: big),
)
INGEST_GOALS = (
    # GitHub waits 10 s for an answer and sends a few deliveries a second: these leave room to spare.
    Goal("ratio", 0.25, "ingest: at least a quarter of the bare endpoint's deliveries/s", "", lambda *_: True,
         at_least=True),
    Goal("p99_ms", 50, "ingest: p99 acknowledgement ≤ 50 ms, idle", " ms", lambda *_: True),
    Goal("busy_p99_ms", 50, f"ingest: p99 acknowledgement ≤ 50 ms, {ingest.VERIFICATIONS} verifications running",
         " ms", lambda *_: True),
)


def worlds() -> list[Path]:
    shared = sorted(p for p in SHARED_WORLDS.iterdir() if (p / "world.yaml").exists()) if SHARED_WORLDS.is_dir() else []
    return [DEMO_WORLD, *shared]


def measure_world(world_dir: Path, latency_ms: int) -> dict[str, Any]:
    """Serve the world from here; verify it from a child process (bench/verification.py)."""
    world = World.load(world_dir)
    repo, pr = world.pull_repo()
    with FakeGitHub(world_dir, latency_ms=latency_ms) as fake:
        spec = {"url": fake.url, "repo": repo.full_name, "number": pr["number"], "now": world.now,
                "installation_id": repo.installation_id, "world_dir": str(world_dir)}
        proc = subprocess.run([sys.executable, str(BENCH / "verification.py"), json.dumps(spec)],
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{world_dir.name}: bench/verification.py failed:\n{proc.stderr.strip()}")
    return {**json.loads(proc.stdout), "repo": repo.full_name}


def measure_engine(world_dirs: list[Path]) -> dict[str, dict[str, float]]:
    """Engine CPU of every world, measured in one process of its own, the worlds taken in turns
    (bench/engine.py)."""
    proc = subprocess.run([sys.executable, str(BENCH / "engine.py"), "--json", *map(str, world_dirs)],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench/engine.py failed:\n{proc.stderr.strip()}")
    return json.loads(proc.stdout)


def measure_ingest(connections: int, seconds: float) -> dict[str, Any]:
    return ingest.summary(ingest.compare(connections, seconds), connections, seconds, "sqlite")


def largest(results: dict[str, dict[str, Any]]) -> str:
    """The world whose snapshot holds the most text."""
    return max(results, key=lambda name: results[name]["snapshot_chars"])


def goal_lines(results: dict[str, dict[str, Any]], ingest_result: dict[str, Any] | None) -> list[str]:
    """One line per goal: met (with the measured value) or missed (with the gap), per world it applies to."""
    big = largest(results)
    lines = []
    for goal in WORLD_GOALS:
        checked = [(name, r[goal.key]) for name, r in results.items() if goal.applies(name, name == big)]
        if not checked:
            lines.append(f"  - {goal.label}: not measured (world absent)")
        elif len(checked) == 1:
            name, value = checked[0]
            where = f" ({name})" if goal.key in ("engine_cpu_ms", "peak_rss_mb") else ""
            lines.append(f"  - {goal.label}{where}: {goal.verdict(value)}")
        else:
            failed = [f"{name} {goal.verdict(v)}" for name, v in checked if not goal.met(v)]
            worst = max(v for _name, v in checked)
            lines.append(f"  - {goal.label}: " + ("; ".join(failed) if failed else f"{goal.verdict(worst)} at most"))
    for goal in INGEST_GOALS if ingest_result is not None else ():
        value = ingest_result.get(goal.key)
        lines.append(f"  - {goal.label}: {'not measured' if value is None else goal.verdict(value)}")
    return lines


def _cell(goal_key: str, text: str, name: str, big: bool, value: float) -> str:
    """`text`, marked ✓ or ✗ where a goal applies to this world and column."""
    goal = next((g for g in WORLD_GOALS if g.key == goal_key and g.applies(name, big)), None)
    return text if goal is None else f"{text} {'✓' if goal.met(value) else '✗'}"


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            for row in rows]


def world_table(results: dict[str, dict[str, Any]], latency_ms: int) -> list[str]:
    big = largest(results)
    header = ("world", "wall s", "wall/lat", "requests", "depth", "warm RL", "engine ms", "peak RSS MB")
    rows = [header, tuple("-" * len(h) for h in header)]
    for name, r in results.items():
        is_big = name == big
        rows.append((
            name + (" (largest)" if is_big else ""),
            _cell("wall_s", f"{r['wall_s']:.2f}", name, is_big, r["wall_s"]),
            f"{r['wall_s'] * 1000 / latency_ms:.1f}" if latency_ms else "-",
            _cell("requests", str(r["requests"]), name, is_big, r["requests"]),
            _cell("depth", str(r["depth"]), name, is_big, r["depth"]),
            _cell("rate_limited_requests_warm", str(r["rate_limited_requests_warm"]), name, is_big,
                  r["rate_limited_requests_warm"]),
            _cell("engine_cpu_ms", f"{r['engine_cpu_ms']:.1f}", name, is_big, r["engine_cpu_ms"]),
            _cell("peak_rss_mb", f"{r['peak_rss_mb']:.0f}", name, is_big, r["peak_rss_mb"]),
        ))
    return _aligned(rows)


def critical_paths(results: dict[str, dict[str, Any]]) -> list[str]:
    """Each world's critical path: its requests in order, each sent after the answer of the one above it
    (ms from the start of the verification; +gap: how long after that answer it went out)."""
    lines = ["Critical path of each cold verification (sent-answered ms, +gap after the answer above):"]
    for name, r in results.items():
        lines += ["", f"{name}: {r['depth']} round trips, {r['wall_s']:.2f} s"]
        for i, step in enumerate(r["critical_path"], 1):
            what = step["request"].replace(f"/repos/{r['repo']}/", "/…/")
            span = f"{step['sent_ms']:>6.0f}-{step['answered_ms']:>6.0f}"
            lines.append(f"  {i:>2}. {span}  +{step['gap_ms']:<4.0f} {what}")
        lines.append(f"      then {r['after_path_ms']:.0f} ms to the end")
    return lines


LEGEND = (
    "wall s: one cold verification (a new client: its token request counts, nothing cached), gather -> "
    "evaluate -> publish, from the call to the last write answered; wall/lat: that in units of the latency; "
    "requests: the fake GitHub's count; depth: the longest chain of requests each sent after the previous one's "
    "answer; warm RL: requests of a re-verification with the same client that count against the rate limit; "
    "engine ms: CPU time of evaluate(), cold (checks' caches emptied), the median of 15 runs taken in 5 turns "
    "over all the worlds in one process whose garbage collector runs as the checks' process of serve runs it; "
    "peak RSS: the verifying process (max RSS)."
)


def report(results: dict[str, dict[str, Any]], ingest_result: dict[str, Any] | None, args: argparse.Namespace,
           backtest_result: dict[str, Any] | None = None) -> str:
    title = (f"signoff-bot benchmark: fake GitHub latency {args.latency_ms} ms per request; Python "
             f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    lines = [title, "", *world_table(results, args.latency_ms), "", *textwrap.wrap(LEGEND, 110)]
    if args.paths:
        lines += ["", *critical_paths(results)]
    if ingest_result is not None:
        lines += ["", *ingest.table(ingest_result)]
    if not args.no_backtest:
        lines += ["", backtest.line(backtest_result)]
    lines += ["", "Goals:", *goal_lines(results, ingest_result)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="signoff-bot's performance benchmark (see bench/run.py).")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--latency-ms", type=int, default=100, help="latency the fake GitHub adds to every request")
    parser.add_argument("--connections", type=int, default=8, help="concurrent connections of the ingest load")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each ingest run")
    parser.add_argument("--no-ingest", action="store_true", help="skip the webhook ingest comparison")
    parser.add_argument("--no-backtest", action="store_true", help="skip the history backtest")
    parser.add_argument("--no-paths", dest="paths", action="store_false", help="leave out the critical paths")
    parser.add_argument("--world", action="append", default=[], metavar="NAME",
                        help="measure only worlds whose name contains NAME (repeatable)")
    args = parser.parse_args(argv)
    chosen = [w for w in worlds() if not args.world or any(part in w.name for part in args.world)]
    results = {w.name: measure_world(w, args.latency_ms) for w in chosen}
    for name, figures in measure_engine(chosen).items():
        results[name].update(figures)
    ingest_result = None if args.no_ingest else measure_ingest(args.connections, args.seconds)
    backtest_result = None if args.no_backtest else backtest.measure()
    if args.json:
        print(json.dumps({"worlds": results, "ingest": ingest_result, "backtest": backtest_result}, indent=2))
    else:
        print(report(results, ingest_result, args, backtest_result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
