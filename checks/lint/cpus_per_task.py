"""recipe-cpus-per-task: `sbatch_directives.cpus-per-task` must fit the runner's CPU.

## What it enforces

A recipe's `sbatch_directives.cpus-per-task` is at most the number of CPU
cores of its runner's host. A warning, because a cluster may count hardware
threads.

## Why

Recipes are often copied from a Grace-based GB200/GB300 recipe, whose
compute tray has 2 x 72 = 144 Arm cores, to an x86 SKU with fewer cores (a
DGX B200 has 112). Asking Slurm for more CPUs per task than a node has
either leaves the job pending forever or, where Slurm counts hyperthreads,
silently packs the engine's CPU threads onto shared cores; both cost
benchmark runs.

## How it decides

The runner SKU comes from the `runner` of the master entries that name the
recipe (`b200-nscale` -> b200), else from the recipe's `resources.gpu_type`;
SKUs whose host CPU is not fixed (AMD Instinct platforms) are not checked.
Core counts and their sources are in `checks.facts.hardware.CPU_CORES`.

## Passing example

GB200, 144 cores:

    resources: {gpu_type: gb200}
    sbatch_directives: {cpus-per-task: "144"}

## Failing example

B200, 112 cores:

    resources: {gpu_type: b200}
    sbatch_directives: {cpus-per-task: "144"}   # <- warning here
"""

from __future__ import annotations

from typing import Iterator

from checks.facts.hardware import CPU_CORES, GRACE_SKUS, known_sku
from checks.facts.yamlload import LineDict

from ..context import Context
from ..result import Finding, Severity
from .recipes import Recipe, as_int, changed_recipes, entries_naming, option

ID = "recipe-cpus-per-task"
SEVERITY = Severity.WARNING


def check(ctx: Context) -> Iterator[Finding]:
    for rec in changed_recipes(ctx):
        if not rec.flat:
            continue
        sbatch = rec.section("sbatch_directives")
        found = option(sbatch, "cpus-per-task")
        requested = as_int(found[1]) if found else None
        if requested is None or found is None or sbatch is None:  # (`found` in `sbatch`, when it is a number)
            continue
        known = [(CPU_CORES[sku], sku, source) for sku, source in _skus(ctx, rec) if sku in CPU_CORES]
        if not known:
            continue
        cores, sku, source = min(known)
        if requested > cores:
            arch = "Grace" if sku in GRACE_SKUS else "x86"
            yield Finding(rec.path, sbatch.line_of(found[0]), ID, SEVERITY,
                          f"cpus-per-task {requested} exceeds the {cores} cores of a {sku} node ({arch}, {source}); "
                          f"request at most {cores}")


def _skus(ctx: Context, rec: Recipe) -> list[tuple[str, str]]:
    """(SKU, where it comes from) for the recipe: its master entries' runners, else its gpu_type."""
    out: list[tuple[str, str]] = []
    for cfg_path, key, _changed in entries_naming(ctx, rec.path):
        runner = ctx.head_configs[cfg_path].fields(key).get("runner")
        sku = known_sku(runner)
        if sku:
            out.append((sku, f"runner {runner} of {key}"))
    if not out:
        sku = known_sku((rec.section("resources") or LineDict()).get("gpu_type"))
        if sku:
            out.append((sku, f"resources.gpu_type {sku}"))
    return out
