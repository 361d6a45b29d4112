"""master-recipe-parity: a master-config point must describe the recipe it runs.

## What it enforces

For every search-space point whose `CONFIG_FILE=recipes/<path>` names a file
of this repository (`<recipe_root>/<path>`), the master config's worker
counts, TP, EP, DP-attention and image agree with the srt-slurm recipe it
runs, and the recipe agrees with itself.

## Why

For multi-node configs the master config only labels the run (worker counts,
TP, EP, DP-attention, image: what the results page shows), while the srt-slurm
recipe named by `CONFIG_FILE=` decides what actually runs. When the two
disagree, the published numbers are filed under a topology that never ran.

## How it decides

For each worker pool:

- `num-worker` equals the pool's `resources.<pool>_workers`;
- the recipe is self-consistent: `<pool>_workers x gpus_per_<pool>` equals
  `<pool>_nodes x gpus_per_node` (decode on 0 nodes shares the prefill nodes);
- for SGLang recipes, `tp`, `ep` and `dp-attn` equal the pool's
  `tensor-parallel-size` (SGLang default 1), `expert-parallel-size` (only
  when the recipe sets it: SGLang derives it for some MoE back ends) and
  `enable-dp-attention` (default false).

The pools are srt-slurm's: a disaggregated recipe has `prefill` and `decode`
(`prefill_workers`, `sglang_config.prefill`, ...), which the master's
`prefill` and `decode` blocks describe. An aggregated recipe has one pool,
`agg` (`agg_nodes`, `agg_workers`, `gpus_per_agg`, engine args under
`aggregated`), which InferenceX describes with the master's `prefill` block
and a `decode` block of `num-worker: 0` (no separate allocation). There the
master's `num-worker` may count srt-slurm workers or their data-parallel
engine replicas (`agg_workers x data-parallel-size`), and a decode block
with workers is a topology that never ran.

The image matters too: the runner registers the master `image` for the
recipe's `model.container` to resolve through, so the two must agree. A
container equal to the image passes (`#` read as `/`, as registries are
written either way); so does an alias that every launcher of the entry's
runner maps to the master image in the srtslurm.yaml it writes
(`checks.facts.launchers`: `dynamo-sglang: ${SQUASH_FILE}` next to
`"${IMAGE}": ${SQUASH_FILE}`). A launcher that maps it elsewhere, or not at
all, is an error naming the launcher; when no launcher can be read (no
runners file, an unknown label, launchers that write no container map) a
warning says it cannot decide.

Points that select a variant (`CONFIG_FILE=...yaml:override_x`) are skipped:
their values depend on the override. The finding sits on the recipe's line
when the PR changes the recipe, else on the master config's line.

## Passing example

    # configs/nvidia-master.yaml
    decode: {num-worker: 1, tp: 8, ep: 1, dp-attn: false}
    # the recipe
    resources: {gpus_per_node: 4, decode_nodes: 2, decode_workers: 1, gpus_per_decode: 8}
    backend: {sglang_config: {decode: {tensor-parallel-size: 8}}}

Aggregated; `container: dynamo-sglang`, which launch_gb300-nv.sh maps to the
master image:

    prefill: {num-worker: 1, tp: 4}
    decode: {num-worker: 0, tp: 4}
    resources: {gpus_per_node: 4, agg_nodes: 1, agg_workers: 1, gpus_per_agg: 4}
    backend: {sglang_config: {aggregated: {tensor-parallel-size: 4}}}

## Failing example

The master says 2 decode workers, the recipe runs 1:

    decode: {num-worker: 2, tp: 8, ep: 1, dp-attn: false}
"""

from __future__ import annotations

from typing import Any, Iterator

from checks.facts import launchers, runs
from checks.facts.yamlload import LineDict

from ..context import Context
from ..evidence import Missing
from ..result import Finding, Severity
from .recipes import PointRef, Recipe, as_int, is_changed, linked_points, named_by_changes, option, recipe

ID = "master-recipe-parity"
SEVERITY = Severity.ERROR

# (master block, recipe pool, engine-args role) of a disaggregated and of an aggregated recipe.
_DISAGG = (("prefill", "prefill", "prefill"), ("decode", "decode", "decode"))
_AGG = (("prefill", "agg", "aggregated"),)


def check(ctx: Context) -> Iterator[Finding]:
    # (anchor path, line, problem, fix) -> the lines on the other side, so one
    # recipe line named by several points is reported once.
    grouped: dict[tuple[str, int, Severity, str, str], list[str]] = {}
    if any(isinstance(ctx.need.file("head", path), Missing) for path in named_by_changes(ctx)):
        for path in ctx.policy.runners_configs:  # a recipe still to read may alias its container: ask now
            ctx.need.file("head", path)
    for p in linked_points(ctx):
        rec = recipe(ctx, p.recipe_path)
        if p.selector or rec is None or not rec.flat:
            continue
        on_recipe = is_changed(ctx, rec.path)
        for recipe_line, master_line, problem, fix, severity in _mismatches(ctx, p, rec):
            if on_recipe:
                key = (rec.path, recipe_line, severity, problem, fix)
                other = f"{p.config_path}:{master_line} ({p.key})"
            else:
                key = (p.config_path, master_line, severity, problem, fix)
                other = f"{rec.path}:{recipe_line}"
            refs = grouped.setdefault(key, [])
            if other not in refs:
                refs.append(other)
    for (path, line, severity, problem, fix), refs in grouped.items():
        yield Finding(path, line, ID, severity, f"{problem} (see {', '.join(refs)}); {fix}")


_Mismatch = tuple[int, int, str, str, Severity]  # recipe line, master line, what disagrees, the fix, severity


def _mismatches(ctx: Context, p: PointRef, rec: Recipe) -> Iterator[_Mismatch]:
    """(recipe line, master line, what disagrees, how to fix it, severity) for one point and its recipe."""
    found = _container(ctx, p, rec)
    if found is not None:
        yield found
    resources = rec.section("resources")
    aggregated = resources is not None and _is_aggregated(resources)
    for block, pool, role in _AGG if aggregated else _DISAGG:
        master = p.point.get(block)
        if not isinstance(master, LineDict):
            continue
        if resources is not None:
            yield from _resources(p, rec, resources, pool, master, role if aggregated else "")
        if rec.backend_type == "sglang":
            yield from _engine(rec, block, role, master)
    decode = p.point.get("decode")
    workers = as_int(decode.get("num-worker")) if aggregated and isinstance(decode, LineDict) else None
    if workers and isinstance(decode, LineDict):
        yield (rec.line_of("resources", "agg_workers"), decode.line_of("num-worker"),
               f"decode num-worker {workers} in the master config, but the recipe is aggregated (agg_workers, no "
               f"decode pool)", "set the master's decode num-worker to 0 (the aggregated workers also decode)",
               SEVERITY)


def _is_aggregated(resources: LineDict) -> bool:
    """srt-slurm's aggregated mode: an `agg` pool and no prefill/decode pool."""
    keys = {str(k) for k in resources}
    return bool(keys & {"agg_nodes", "agg_workers", "gpus_per_agg"}) and not keys & {
        "prefill_workers", "decode_workers", "prefill_nodes", "decode_nodes"}


def _alias(p: PointRef, rec: Recipe) -> tuple[str, str] | None:
    """(recipe container, master image) when they differ, else None (`#` and `/` are one registry separator)."""
    image, container = p.entry.get("image"), (rec.section("model") or LineDict()).get("container")
    if not isinstance(image, str):
        return None
    image, container = image.strip(), str(container or "").strip()
    return None if image.replace("#", "/") == container.replace("#", "/") else (container, image)


def _container(ctx: Context, p: PointRef, rec: Recipe) -> _Mismatch | None:
    """The recipe container against the master image, through the container map of the entry's launchers."""
    alias = _alias(p, rec)
    if alias is None:
        return None
    container, image = alias
    lines = (rec.line_of("model", "container"), p.entry.line_of("image"))
    fix = "set the recipe's model.container to the master entry's image"
    runner = str(p.entry.get("runner") or "")
    maps = [m for m in (launchers.container_map(ctx, path) for path in runs.launchers(ctx, runner))
            if m is not None]
    if not maps:
        return (*lines, f"cannot decide: recipe model.container {container!r} is not the master image {image!r}, "
                        f"and no launcher of runner {runner!r} could be read to see what it maps the name to", fix,
                Severity.WARNING)
    wrong = [(m, m.resolve(container, image)) for m in maps]
    wrong = [(m, target) for m, target in wrong if target != "master"]
    if not wrong:
        return None
    m, target = wrong[0]
    how = (f"{m.launcher}:{m.line} maps it to {target}, not to the master image's container" if target
           else f"{m.launcher}:{m.line} does not map that name")
    return (*lines, f"recipe model.container {container!r} is not the master image {image!r}, and {how}", fix,
            SEVERITY)


def _resources(p: PointRef, rec: Recipe, resources: LineDict, pool: str, master: LineDict,
               aggregated_role: str) -> Iterator[_Mismatch]:
    workers = as_int(resources.get(f"{pool}_workers"))
    wanted = as_int(master.get("num-worker"))
    accepted = {workers}
    if aggregated_role and workers:  # the master may count data-parallel engine replicas as workers
        dp = option(rec.engine_args(aggregated_role), "data-parallel-size", "dp-size", "dp")
        if dp and (size := as_int(dp[1])):
            accepted.add(workers * size)
    if wanted is not None and wanted not in accepted:
        replicas = f" (or {max(a for a in accepted if a is not None)} data-parallel replicas)" \
            if len(accepted) > 1 else ""
        yield (rec.line_of("resources", f"{pool}_workers"), master.line_of("num-worker"),
               f"{'prefill' if aggregated_role else pool} num-worker {wanted} in the master config but "
               f"{pool}_workers {workers}{replicas} in the recipe", "make the worker counts agree", SEVERITY)
    nodes, gpn = as_int(resources.get(f"{pool}_nodes")), rec.gpus_per_node
    explicit = as_int(resources.get(f"gpus_per_{pool}"))
    if not (workers and nodes and gpn):
        return
    per_worker = explicit if explicit is not None else nodes * gpn // workers
    if workers * per_worker != nodes * gpn:
        anchor = f"gpus_per_{pool}" if explicit is not None else f"{pool}_nodes"
        yield (rec.line_of("resources", anchor), p.line,
               f"recipe {pool}: {workers} workers x {per_worker} GPUs != {nodes} nodes x {gpn} GPUs per node",
               f"fix {pool}_nodes, {pool}_workers or gpus_per_{pool} so workers x GPUs per worker fills the nodes",
               SEVERITY)


def _engine(rec: Recipe, block: str, role: str, master: LineDict) -> Iterator[_Mismatch]:
    args = rec.section("backend", "sglang_config", role)
    if args is None:
        return
    role_line = rec.line_of("backend", "sglang_config", role)
    comparisons: list[tuple[str, tuple[str, ...], Any, bool]] = [
        ("tp", ("tensor-parallel-size", "tp-size", "tp"), 1, True),
        ("ep", ("expert-parallel-size", "ep-size", "ep"), None, True),
        ("dp-attn", ("enable-dp-attention",), False, False),
    ]
    for master_key, names, default, numeric in comparisons:
        if master_key not in master:
            continue
        found = option(args, *names)
        if found is None and default is None:
            continue
        key, value = found if found else (names[0], default)
        line = args.line_of(key) if found else role_line
        want = master[master_key]
        same = as_int(value) == as_int(want) if numeric else _flag(value) == _flag(want)
        if not same:
            where = role if role == block else f"{block} (the {role} workers)"
            yield (line, master.line_of(master_key),
                   f"{where} {master_key} {want!r} in the master config but {key} {value!r} in the recipe",
                   f"make {block} {master_key} and the recipe's {key} agree", SEVERITY)


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"
