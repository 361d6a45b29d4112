"""master-recipe-parity: a master-config point must describe the recipe it runs.

For multi-node configs the master config only labels the run (worker counts,
TP, EP, DP-attention, image: what the results page shows), while the srt-slurm
recipe named by `CONFIG_FILE=` decides what actually runs. When the two
disagree, the published numbers are filed under a topology that never ran.
The image matters twice: the runner registers the master `image` as the
container alias srt-slurm resolves the recipe's `model.container` through,
so a recipe container that differs from the master image runs a different
engine build than the one reported.

For every search-space point whose `CONFIG_FILE=recipes/<path>` names a file
of this repository (`<recipe_root>/<path>`), for each of prefill and decode:

- `num-worker` equals `resources.<role>_workers`;
- the recipe is self-consistent: `<role>_workers x gpus_per_<role>` equals
  `<role>_nodes x gpus_per_node` (decode on 0 nodes shares the prefill nodes);
- for SGLang recipes, `tp`, `ep` and `dp-attn` equal the role's
  `tensor-parallel-size` (SGLang default 1), `expert-parallel-size` (only
  when the recipe sets it: SGLang derives it for some MoE back ends) and
  `enable-dp-attention` (default false);

and the entry's `image` equals the recipe's `model.container`.

Points that select a variant (`CONFIG_FILE=...yaml:override_x`) are skipped:
their values depend on the override. The finding sits on the recipe's line
when the PR changes the recipe, else on the master config's line.

Passes:

    # configs/nvidia-master.yaml
    decode: {num-worker: 1, tp: 8, ep: 1, dp-attn: false}
    # the recipe
    resources: {gpus_per_node: 4, decode_nodes: 2, decode_workers: 1, gpus_per_decode: 8}
    backend: {sglang_config: {decode: {tensor-parallel-size: 8}}}

Fails (the master says 2 decode workers, the recipe runs 1):

    decode: {num-worker: 2, tp: 8, ep: 1, dp-attn: false}
"""

from __future__ import annotations

from typing import Any, Iterator

from ..context import Context
from ..evidence import Wanted
from ..result import Finding, Severity
from ..yamlload import LineDict
from .recipes import PointRef, Recipe, as_int, is_changed, linked_points, option, recipe, wanted_recipes

ID = "master-recipe-parity"
SEVERITY = Severity.ERROR

_ROLES = ("prefill", "decode")


def check(ctx: Context) -> Iterator[Finding]:
    # (anchor path, line, problem, fix) -> the lines on the other side, so one
    # recipe line named by several points is reported once.
    grouped: dict[tuple[str, int, str, str], list[str]] = {}
    for p in linked_points(ctx):
        rec = recipe(ctx, p.recipe_path)
        if p.selector or rec is None or not rec.flat:
            continue
        on_recipe = is_changed(ctx, rec.path)
        for recipe_line, master_line, problem, fix in _mismatches(p, rec):
            if on_recipe:
                key = (rec.path, recipe_line, problem, fix)
                other = f"{p.config_path}:{master_line} ({p.key})"
            else:
                key = (p.config_path, master_line, problem, fix)
                other = f"{rec.path}:{recipe_line}"
            refs = grouped.setdefault(key, [])
            if other not in refs:
                refs.append(other)
    for (path, line, problem, fix), refs in grouped.items():
        yield Finding(path, line, ID, SEVERITY, f"{problem} (see {', '.join(refs)}); {fix}")


def wants(ctx: Context) -> Wanted:
    """The recipes that changed master entries name but the PR does not change."""
    return wanted_recipes(ctx)


def _mismatches(p: PointRef, rec: Recipe) -> Iterator[tuple[int, int, str, str]]:
    """(recipe line, master line, what disagrees, how to fix it) for one point and its recipe."""
    image, container = p.entry.get("image"), (rec.section("model") or {}).get("container")
    if isinstance(image, str) and image.strip() != str(container or "").strip():
        yield (rec.line_of("model", "container"), p.entry.line_of("image"),
               f"recipe model.container {container!r} differs from the master image {image!r}",
               "set the recipe's model.container to the master entry's image")
    resources = rec.section("resources")
    for role in _ROLES:
        master = p.point.get(role)
        if not isinstance(master, LineDict):
            continue
        if resources is not None:
            yield from _resources(p, rec, resources, role, master)
        if rec.backend_type == "sglang":
            yield from _engine(rec, role, master)


def _resources(p: PointRef, rec: Recipe, resources: LineDict, role: str,
               master: LineDict) -> Iterator[tuple[int, int, str, str]]:
    workers = as_int(resources.get(f"{role}_workers"))
    wanted = as_int(master.get("num-worker"))
    if wanted is not None and workers != wanted:
        yield (rec.line_of("resources", f"{role}_workers"), master.line_of("num-worker"),
               f"{role} num-worker {wanted} in the master config but {role}_workers {workers} in the recipe",
               "make the worker counts agree")
    nodes, gpn = as_int(resources.get(f"{role}_nodes")), rec.gpus_per_node
    explicit = as_int(resources.get(f"gpus_per_{role}"))
    if not (workers and nodes and gpn):
        return
    per_worker = explicit if explicit is not None else nodes * gpn // workers
    if workers * per_worker != nodes * gpn:
        anchor = f"gpus_per_{role}" if explicit is not None else f"{role}_nodes"
        yield (rec.line_of("resources", anchor), p.line,
               f"recipe {role}: {workers} workers x {per_worker} GPUs != {nodes} nodes x {gpn} GPUs per node",
               f"fix {role}_nodes, {role}_workers or gpus_per_{role} so workers x GPUs per worker fills the nodes")


def _engine(rec: Recipe, role: str, master: LineDict) -> Iterator[tuple[int, int, str, str]]:
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
            yield (line, master.line_of(master_key),
                   f"{role} {master_key} {want!r} in the master config but {key} {value!r} in the recipe",
                   f"make {role} {master_key} and the recipe's {key} agree")


def _flag(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"
