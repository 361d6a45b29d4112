"""Engine CPU per world: `checks.engine.evaluate` alone, and where its time goes.

For every shared world (or the ones named), the snapshot `app.offline.snapshot.snapshot_from_world`
builds is evaluated several times, each on a fresh Context; the median
`time.process_time()` is printed beside the goal (≤ 50 ms), the minimum beside
it. The runs are taken in ROUNDS passes over all the worlds, RUNS in a row
each (`interleaved`): a burst of other load on this shared machine then falls
on a few runs of many worlds, not on every run of one. The figure is COLD:
before each run the process-wide caches of `checks` (readings keyed by content,
`checks.memo`) are emptied, so it is what a verification costs when nothing it
reads was read before; the warm median (those caches kept, as a long-running
server keeps them for base-branch files that repeat across PRs) is shown beside
it. The garbage collector runs with CPython's thresholds, as in the checks'
process of `serve`. With `--profile` each world is also run once cold under cProfile and its own
time (tottime) is summed per source file, so the table says which module holds
the rest.

    .venv/bin/python bench/engine.py [world-dir ...] [--rounds N] [--runs N] [--json] [--profile [--top K]]

Not a timed test: the goal is checked by reading the output.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.offline.snapshot import snapshot_from_world  # noqa: E402
from app.offline.world import World  # noqa: E402
from checks import memo  # noqa: E402
from checks.engine import evaluate  # noqa: E402
from checks.snapshot import Snapshot  # noqa: E402

WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
GOAL_MS = 50.0
ROUNDS = 5  # passes over all the worlds
RUNS = 3  # cold runs of a world in a row, in each pass


def clear_caches() -> int:
    """Empty the process-wide caches of `checks` (readings keyed by content, `checks.memo`). Returns how many."""
    return memo.clear()


def cpu_ms(snap: Snapshot, cold: bool = True) -> float:
    """CPU time of one `evaluate` of `snap`; cold: the caches of `checks` emptied first."""
    if cold:
        clear_caches()
    start = time.process_time()
    evaluate(snap)
    return (time.process_time() - start) * 1000


def interleaved(snaps: dict[str, Snapshot], rounds: int = ROUNDS, runs: int = RUNS,
                cold: bool = True) -> dict[str, list[float]]:
    """Each world's run times (ms), taken in `rounds` passes over all the worlds, `runs` in a row each."""
    times: dict[str, list[float]] = {name: [] for name in snaps}
    for _ in range(rounds):
        for name, snap in snaps.items():
            times[name] += [cpu_ms(snap, cold) for _ in range(runs)]
    return times


def own_time_by_file(snap: Snapshot) -> dict[str, float]:
    """Seconds of tottime per source file (relative to the repository or site-packages) in one evaluate()."""
    clear_caches()
    profile = cProfile.Profile()
    profile.runcall(evaluate, snap)
    by_file: dict[str, float] = defaultdict(float)
    for (filename, _line, _func), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(profile).stats.items():
        name = filename
        for prefix in (str(ROOT) + "/", "site-packages/"):
            if prefix in name:
                name = name.split(prefix, 1)[1]
        by_file[name] += tottime
    return by_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("worlds", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="passes over all the worlds")
    parser.add_argument("--runs", type=int, default=RUNS, help="runs of a world in a row in each pass")
    parser.add_argument("--json", action="store_true", help="print {world: {engine_cpu_ms, ...}} as JSON")
    parser.add_argument("--profile", action="store_true", help="also show own time per source file")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    worlds = args.worlds or (sorted(p for p in WORLDS.iterdir() if (p / "world.yaml").exists())
                             if WORLDS.is_dir() else [])
    if not worlds:
        print(f"no worlds under {WORLDS}; name world directories")
        return 1
    for world_dir in worlds:
        evaluate(snapshot_from_world(World.load(world_dir)))  # imports and set-up are not a verification's cost
    snaps = {w.name: snapshot_from_world(World.load(w)) for w in worlds}  # made after set-up, as the checks' get them
    cold = interleaved(snaps, args.rounds, args.runs)
    warm = interleaved(snaps, args.rounds, args.runs, cold=False)
    figures = {name: {"engine_cpu_ms": round(statistics.median(cold[name]), 1),
                      "engine_cpu_min_ms": round(min(cold[name]), 1),
                      "engine_warm_ms": round(statistics.median(warm[name]), 1)} for name in snaps}
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    for name, f in figures.items():
        ms = f["engine_cpu_ms"]
        print(f"{name:55} {ms:7.1f} ms {'✓' if ms <= GOAL_MS else '✗'}   (min {f['engine_cpu_min_ms']:5.1f}, "
              f"warm {f['engine_warm_ms']:5.1f} ms)")
        if args.profile:
            by_file = own_time_by_file(snaps[name])
            total = sum(by_file.values())
            for file, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:args.top]:
                print(f"    {seconds / total:6.1%}  {file}")
    worst = max(f["engine_cpu_ms"] for f in figures.values())
    print(f"{'worst':55} {worst:7.1f} ms (goal ≤ {GOAL_MS:.0f} ms, cold median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
