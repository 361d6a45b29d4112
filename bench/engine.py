"""Engine CPU per world: `checks.engine.evaluate` alone, and where its time goes.

For every shared world (or the ones named), the snapshot `app.offline.snapshot_from_world`
builds is evaluated several times, each on a fresh Context; the median
`time.process_time()` is printed beside the goal (≤ 50 ms). The figure is COLD:
before each run the process-wide caches of `checks` (readings keyed by content,
`clear_caches`) are emptied, so it is what a verification costs when nothing it
reads was read before; the warm median (those caches kept, as a long-running
server keeps them for base-branch files that repeat across PRs) is shown beside
it. The garbage collector runs as in the checks' process of `serve`
(app/scheduling.py `collect_less`, once everything is imported), as in
bench/run.py. With `--profile` each world is also run once cold under cProfile and its own
time (tottime) is summed per source file, so the table says which module holds
the rest.

    .venv/bin/python bench/engine.py [world-dir ...] [--runs N] [--profile [--top K]]

Not a timed test: the goal is checked by reading the output.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.offline import snapshot_from_world  # noqa: E402
from app.scheduling import collect_less  # noqa: E402
from app.world import World  # noqa: E402
from checks.engine import evaluate  # noqa: E402
from checks.snapshot import Snapshot  # noqa: E402

WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
GOAL_MS = 50.0


def clear_caches() -> int:
    """Empty every `functools` cache of a `checks` module that is keyed by its arguments (readings of a text,
    compiled patterns); a cache of a function without parameters is set-up, not a reading. Returns how many."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if name != "checks" and not name.startswith("checks."):
            continue
        for value in vars(module).values():
            wrapped = getattr(value, "__wrapped__", None)
            if (hasattr(value, "cache_clear") and getattr(value, "__module__", None) == name
                    and wrapped is not None and wrapped.__code__.co_argcount):
                value.cache_clear()
                cleared += 1
    return cleared


def median_ms(snap: Snapshot, runs: int, cold: bool = True) -> float:
    times = []
    for _ in range(runs):
        if cold:
            clear_caches()
        start = time.process_time()
        evaluate(snap)
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times)


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
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also show own time per source file")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    worlds = args.worlds or (sorted(p for p in WORLDS.iterdir() if (p / "world.yaml").exists())
                             if WORLDS.is_dir() else [])
    if not worlds:
        print(f"no worlds under {WORLDS}; name world directories")
        return 1
    collect_less()
    worst = 0.0
    for world_dir in worlds:
        snap = snapshot_from_world(World.load(world_dir))
        evaluate(snap)  # imports are not the engine's per-verification cost
        ms = median_ms(snap, args.runs)
        warm = median_ms(snap, args.runs, cold=False)
        worst = max(worst, ms)
        print(f"{world_dir.name:55} {ms:7.1f} ms {'✓' if ms <= GOAL_MS else '✗'}   (warm {warm:5.1f} ms)")
        if args.profile:
            by_file = own_time_by_file(snap)
            total = sum(by_file.values())
            for name, seconds in sorted(by_file.items(), key=lambda kv: -kv[1])[:args.top]:
                print(f"    {seconds / total:6.1%}  {name}")
    print(f"{'worst':55} {worst:7.1f} ms (goal ≤ {GOAL_MS:.0f} ms, cold)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
