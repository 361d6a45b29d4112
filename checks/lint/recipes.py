"""What the lint rules share: recipes parsed once, the master points that name them, SKU facts, the changelog diff.

A recipe is a YAML file under `Policy.recipe_root`; a master-config point
names one with `CONFIG_FILE=` in an `additional-settings` list. Which file a
value names is `checks.facts.runs` (the one resolver every check uses:
`recipes/<path>` is srt-slurm's folder the launchers copy the repository's
recipes into, a repository path is itself; `EVAL_CONFIG_FILE=` recipes are
eval-only, not benchmark configs, and are not linked here). Everything here
is derived from the snapshot and cached on the `Context` (`Context.once`),
so rules that look at the same recipe or master entry parse it once.

Only the flat srt-slurm job format (`model`, `resources`, `backend`,
`benchmark` at top level) is read. Files in the schema-2 format (`base:`
plus `override_*` variants) are parsed for syntax but not linted: their
effective values depend on the override a master point selects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from checks.facts import changelog, runs
from checks.facts.hardware import GPUS_PER_NODE, known_sku
from checks.facts.masterconfig import MasterConfig
from checks.facts.recipe_index import recipe_index
from checks.facts.yamlload import LineDict, LineList, YamlProblem

from ..context import Context
from ..evidence import Missing


def as_int(value: Any) -> int | None:
    """An integer written as a YAML int or a digit string ("144"); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 18:  # ("²" is a digit to `isdigit`, not to `int`)
        return int(text)
    return None


def option(section: Any, *names: str) -> tuple[str, Any] | None:
    """(key as written, value) of the first of `names` set in a CLI-args mapping.

    srt-slurm turns `snake_case` keys into `--kebab-case` flags, so both spellings count.
    """
    if not isinstance(section, dict):
        return None
    by_flag = {str(k).replace("_", "-"): k for k in section}
    for name in names:
        key = by_flag.get(name)
        if key is not None:
            return key, section[key]
    return None


def span(node: Any, start: int) -> tuple[int, int]:
    """(first, last) line a YAML collection occupies, from its key line `start`."""
    last = start
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, LineDict):
            last = max([last, *item.key_lines.values()])
            stack.extend(item.values())
        elif isinstance(item, LineList):
            last = max([last, *item.item_lines])
            stack.extend(item)
    return start, last


def comments(text: str) -> Iterator[tuple[int, str]]:
    """(line, text after '#') of every YAML comment; a '#' inside quotes or a word is not one."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if "#" not in line:
            continue
        quote = ""
        for i, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = ""
            elif ch in "'\"" and (i == 0 or line[i - 1] in " \t:[{,-"):
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                yield lineno, line[i + 1:].strip()
                break


@dataclass(frozen=True)
class Recipe:
    """One recipe file at head; `data` is None when it does not parse (`problem` says where)."""

    path: str
    text: str
    data: Any
    problem: YamlProblem | None

    @property
    def flat(self) -> bool:
        """A flat srt-slurm job config, the only format the rules read."""
        return isinstance(self.data, LineDict) and "base" not in self.data and (
            "resources" in self.data or "backend" in self.data)

    def section(self, *keys: str) -> LineDict | None:
        node = self.data
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node if isinstance(node, LineDict) else None

    def line_of(self, *keys: str) -> int:
        """Line of the deepest of `keys` present: the key itself, or the parent block it is missing from."""
        node, line = self.data, getattr(self.data, "line", 1) or 1
        for key in keys:
            if not isinstance(node, LineDict) or key not in node:
                return line
            line = node.line_of(key)
            node = node[key]
        return line

    @property
    def backend_type(self) -> str:
        """srt-slurm's backend (`sglang` when `backend` or its `type` is left out, as srt-slurm defaults)."""
        backend = self.section("backend")
        return str(backend.get("type", "sglang")) if backend is not None else "sglang"

    @property
    def gpus_per_node(self) -> int | None:
        """`resources.gpus_per_node`, else the SKU's from `gpu_type`; None when neither is known."""
        resources = self.section("resources") or LineDict()
        return as_int(resources.get("gpus_per_node")) or GPUS_PER_NODE.get(known_sku(resources.get("gpu_type")) or "")

    def gpus_per_worker(self, role: str) -> int | None:
        """GPUs of one `role` (prefill|decode) worker, as srt-slurm computes it when not explicit."""
        resources = self.section("resources") or LineDict()
        explicit = as_int(resources.get(f"gpus_per_{role}"))
        if explicit is not None:
            return explicit
        nodes = as_int(resources.get(f"{role}_nodes"))
        workers = as_int(resources.get(f"{role}_workers"))
        gpn = self.gpus_per_node
        if nodes and workers and gpn:
            return nodes * gpn // workers
        return None

    def engine_args(self, role: str) -> LineDict | None:
        """The engine CLI arguments of `role` (sglang_config / vllm_config / trtllm_config)."""
        backend = self.section("backend")
        if backend is None:
            return None
        for name in ("sglang_config", "vllm_config", "trtllm_config"):
            section = backend.get(name)
            if isinstance(section, LineDict) and isinstance(args := section.get(role), LineDict):
                return args
        return None


@dataclass(frozen=True)
class PointRef:
    """A master-config search-space point whose CONFIG_FILE names a recipe of this repository."""

    config_path: str
    key: str
    entry: LineDict
    point: LineDict
    recipe_path: str
    selector: str  # the ":override..." after the file name, "" when none
    line: int  # line of the CONFIG_FILE= item
    entry_changed: bool


def _recipe(ctx: Context, path: str) -> Recipe | None:
    text = ctx.need.file("head", path)
    if text is None or isinstance(text, Missing):
        return None
    try:
        return Recipe(path, text, ctx.yaml(text), None)
    except YamlProblem as exc:
        return Recipe(path, text, None, exc)


def _changed_recipes(ctx: Context) -> tuple[Recipe, ...]:
    out = []
    for f in ctx.changed_files:
        if ctx.policy.is_recipe(f.path) and f.head_text is not None:
            found = recipe(ctx, f.path)
            if found is not None:
                out.append(found)
    return tuple(out)


def _naming(ctx: Context) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    """`entries_naming` of the recipes changed entries name and of the recipes the PR changes: the points
    the rules judge (`linked_points` parses only entries whose recipes exist)."""
    paths = recipe_index(ctx).named_by_changes() + tuple(r.path for r in changed_recipes(ctx))
    return {path: refs for path in dict.fromkeys(paths) if (refs := entries_naming(ctx, path))}


def named_by_changes(ctx: Context) -> tuple[str, ...]:
    """Recipe paths named by changed master entries (whether or not the snapshot holds them)."""
    return tuple(sorted(path for path, refs in ctx.once(_naming).items() if any(c for _p, _k, c in refs)))


def _linked_points(ctx: Context) -> tuple[PointRef, ...]:
    """Points naming an existing recipe, in entries the PR changes or naming recipes the PR changes."""
    changed = {r.path for r in changed_recipes(ctx)}
    wanted: dict[tuple[str, str], bool] = {}
    for recipe_path, refs in ctx.once(_naming).items():
        relevant = [(p, k, c) for p, k, c in refs if c or recipe_path in changed]
        # A recipe the snapshot does not hold is not in this repository (srt-slurm's own) or not fetched.
        if relevant and recipe(ctx, recipe_path) is not None:
            wanted.update(((cfg_path, key), entry_changed) for cfg_path, key, entry_changed in relevant)
    out: list[PointRef] = []
    for (cfg_path, key), entry_changed in sorted(wanted.items()):
        entry = _entry(ctx.head_configs[cfg_path], key)
        if entry is None:
            continue
        for point, setting, line in _points(ctx, cfg_path, key, entry):
            resolved = runs.recipe_target(ctx, setting)
            if resolved is None:
                continue
            recipe_path, selector = resolved
            if (entry_changed or recipe_path in changed) and recipe(ctx, recipe_path) is not None:
                out.append(PointRef(cfg_path, key, entry, point, recipe_path, selector, line, entry_changed))
    return tuple(out)


def _changelog_diff(ctx: Context) -> changelog.ChangelogDiff | None:
    path = ctx.policy.changelog
    f = ctx.snap.changed(path)
    if f is None or f.head_text is None:
        return None
    return changelog.diff_texts(path, f.base_text, f.head_text)


def _entry(cfg: MasterConfig, key: str) -> LineDict | None:
    try:
        return cfg.entry(key)
    except YamlProblem:
        return None  # a malformed entry is the master-config checks' finding, not a recipe's


def _points(ctx: Context, cfg_path: str, key: str, entry: LineDict) -> Iterator[tuple[LineDict, str, int]]:
    """(point, CONFIG_FILE value, line of the setting) of every search-space point of the head entry `key`
    (`runs.head_points`, keeping each point's own mapping, whose key lines the findings need)."""
    for point in runs.head_points(ctx, cfg_path, key, entry):
        if isinstance(point.node, LineDict):
            for setting in point.settings:
                if setting.name == "CONFIG_FILE":
                    yield point.node, setting.value, setting.line


def changed_recipes(ctx: Context) -> tuple[Recipe, ...]:
    """Recipes the PR adds or modifies (parsed, or with their YAML problem)."""
    return ctx.once(_changed_recipes)


def recipe(ctx: Context, path: str) -> Recipe | None:
    """The recipe at `path` at head; None when the snapshot does not hold it."""
    return ctx.once(_recipe, path)


def linked_points(ctx: Context) -> tuple[PointRef, ...]:
    return ctx.once(_linked_points)


def entries_naming(ctx: Context, path: str) -> tuple[tuple[str, str, bool], ...]:
    """(master config path, key, entry changed) of every master entry whose points name recipe `path`."""
    return tuple((n.config_path, n.key, n.changed) for n in recipe_index(ctx).get(path) if not n.eval_only)


def changelog_diff(ctx: Context) -> changelog.ChangelogDiff | None:
    """How the PR changes perf-changelog.yaml (`checks.facts.changelog`); None when it does not touch it."""
    return ctx.once(_changelog_diff)


def is_changed(ctx: Context, path: str) -> bool:
    f = ctx.snap.changed(path)
    return f is not None and f.status != "removed"
