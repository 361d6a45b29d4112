"""CPU time of the recipe lint over every recipe and master config of the largest shared world.

The worst case for the rules: the world's PR as it is, plus every srt-slurm
recipe and master config of its head tree treated as added (so every master
entry is "changed", every CONFIG_FILE point is resolved and every recipe is
linted). Evidence the rules ask for is gathered from the world first, as the
app would; the timed part is the lint rules' `evaluate` on a fresh Context, parsing included.

    .venv/bin/python bench/lint_bench.py [world-dir] [--repeat N]

Not a timed test: the budget (200 ms) is checked by reading the output.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.files import decode_text  # noqa: E402
from app.offline.snapshot import snapshot_from_world  # noqa: E402
from app.offline.world import World  # noqa: E402
from checks.context import Context  # noqa: E402
from checks.engine import evaluate  # noqa: E402
from checks.policy import Policy  # noqa: E402
from checks.registry import LINT  # noqa: E402
from checks.snapshot import ChangedFile, Snapshot, frozen_map  # noqa: E402

WORLDS = ROOT.parent / "shared" / "fixtures" / "worlds"
BUDGET_MS = 200.0


def lintable(world: World) -> dict[str, str]:
    """path -> text of every recipe and master config at the head of the world's PR."""
    repo, pr = world.pull_repo()
    policy = Policy()
    out = {}
    for path, data in repo.commits[pr["head"]["sha"]].files.items():
        recipe = path.startswith(policy.recipe_root + "/") and path.endswith((".yaml", ".yml"))
        if recipe or policy.is_master_config(path):
            text, _err = decode_text(data)
            if text is not None:
                out[path] = text
    return out


def largest(worlds: list[Path]) -> Path:
    return max(worlds, key=lambda w: (sum(len(t) for t in lintable(World.load(w)).values()), w.name))


def worst_case(world_dir: Path) -> Snapshot:
    world = World.load(world_dir)
    snap = snapshot_from_world(world, rules=LINT)
    files = lintable(world)
    extra = [ChangedFile(path, "added", None, None, None, text)
             for path, text in files.items() if snap.changed(path) is None]
    masters = {p: t for p, t in files.items() if Policy().is_master_config(p)}
    snap = replace(snap, files=snap.files + tuple(extra), master_base=frozen_map({}),
                   master_head=frozen_map(masters))
    repo, _pr = world.pull_repo()
    head = repo.commits[snap.pr.head_sha].files
    ctx = Context(snap)
    evaluate(ctx, LINT)
    more = ctx.missing.files
    found = {path: decode_text(head[path])[0] if path in head else None for _sha, path in more}
    return replace(snap, extra_files=frozen_map({snap.pr.head_sha: frozen_map(found)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("world", nargs="?", type=Path, help="a world directory (default: the largest shared world)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    worlds = sorted(p for p in WORLDS.iterdir() if (p / "world.yaml").exists()) if WORLDS.is_dir() else []
    world_dir = args.world or (largest(worlds) if worlds else None)
    if world_dir is None:
        print(f"no worlds under {WORLDS}", file=sys.stderr)
        return 2
    snap = worst_case(world_dir)
    recipes = sum(1 for f in snap.files if f.path.startswith(Policy().recipe_root + "/"))
    entries = sum(len(Context(snap).head_configs[p].blocks) for p in snap.master_head)
    times, findings = [], []
    for _ in range(args.repeat):
        ctx = Context(snap)
        start = time.process_time()
        findings = evaluate(ctx, LINT).lint_findings
        times.append((time.process_time() - start) * 1000)
    print(f"world {world_dir.name}: {recipes} recipes, {len(snap.master_head)} master configs "
          f"({entries} entries), {len(findings)} findings")
    print(f"lint CPU time over {args.repeat} runs: min {min(times):.1f} ms, "
          f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms (budget {BUDGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
