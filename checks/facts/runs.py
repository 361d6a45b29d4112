"""What a master-config entry runs: one resolver for every check and lint rule.

A search-space point of a master entry is run by the sweep workflow, which
exports the point's variables (MODEL, FRAMEWORK, SPEC_DECODING, the
`additional-settings` items, ...) and runs the launcher of the runner it
lands on, `runners/launch_<machine>.sh` (`launch_${RUNNER_NAME%%_*}.sh`; the
machines of a runner label are listed in `configs/runners.yaml`). What the
point runs is decided here, once:

- `CONFIG_FILE=<path>[:<selector>]`: an srt-slurm recipe. The path is relative
  to srt-slurm's `recipes/` folder, into which the launchers copy the
  repository's `Policy.recipe_root` (`recipes/sglang/x.yaml` is
  `<recipe_root>/sglang/x.yaml`), or relative to the repository
  (`benchmarks/multi_node/srt-slurm-recipes/sglang/x.yaml`). A recipe the
  repository does not hold is srt-slurm's own.
- `EVAL_CONFIG_FILE=<path>`: a recipe run only for evals; it is not a
  benchmark config, and no benchmark rule applies to it.
- Neither: the benchmark script the launcher picks. The launcher is run by
  `checks.facts.bash.Script.trace` with the point's variables (its parallelism
  and sequence lengths left out: they size a run, they do not pick its
  script); the scripts it runs under `benchmarks/` are the targets (its
  `[ -f "$SCRIPT" ]` fallbacks are answered from the repository at head).
  Without a launcher file in the repository (absent, or a symbolic link,
  which is never followed), the script is the one InferenceX names after the
  entry: `benchmarks/single_node/<fixed_seq_len|agentic>/<model-prefix>_<precision>_<sku>_<framework>[_mtp].sh`,
  falling back to the name without the framework (`_trt` / `_atom` kept), or a
  script the PR changes named `<model-prefix>_<precision>_<sku>_<framework>*`.

How a script is traced and followed is `checks.facts.tracing`; which entries name a
recipe is `checks.facts.recipe_index`; which lines the submitted configs run is
`checks.facts.reachability`. Files the snapshot does not hold are evidence to fetch:
the resolver reads the repository through `ctx.need`, which records them.

API (all cached per Context; a point is resolved only when asked about):
    points(entry)                -> the entry's search points, with their settings and lines
    head_points(ctx, path, key, entry) -> the same for an entry at head, once per Context
    point_env(entry, point)      -> the variables the workflow gives the launcher for a point
    runs(ctx, change)            -> one PointRun per point of a changed entry: recipes, scripts (each with
                                    the variables it runs with), eval recipes, launchers, env, problem
    run_of / entry_runs          -> the same for one point / any entry at head
    iter_changed_runs(ctx, select) -> (change, PointRun) of the changed points `select` keeps
    recipe_target(ctx, value)    -> (recipe path, selector) of a CONFIG_FILE value
    launchers(ctx, runner)       -> the launchers the machines of a runner label run
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from checks.context import Context

from . import hardware
from .bash import UNKNOWN
from .masterconfig import EntryChange, iter_points
from .tracing import HeadReader, head_reader, known_env, no_watch, repo_paths
from .yamlload import LineList, YamlProblem

# --------------------------------------------------------------------------
# Points and their variables
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One `NAME=value` item of an `additional-settings` list (of the point, its group, prefill or decode)."""

    name: str
    value: str
    line: int
    role: str  # "" | "prefill" | "decode"


@dataclass(frozen=True)
class Point:
    """One search-space point: the group's keys and its own (as `masterconfig.search_points` merges them),
    the mapping as written (for key lines), and its settings."""

    scenario: str
    values: Mapping[str, Any]
    node: Mapping[str, Any]
    line: int
    settings: tuple[Setting, ...]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def setting(self, name: str) -> Setting | None:
        """The last item naming `name` (a later export wins)."""
        found = [s for s in self.settings if s.name == name]
        return found[-1] if found else None

    @property
    def spec_decoding(self) -> str:
        value = self.values.get("spec-decoding")
        return "none" if value in (None, False, "", "None", "null", "false") else str(value)


def points(entry: Mapping[str, Any]) -> tuple[Point, ...]:
    """Every search-space point of `entry`, with the `additional-settings` items that apply to it."""
    out = []
    for scenario, group, node, line in iter_points(entry):
        settings: list[Setting] = []
        for role, holder in (("", group), ("", node), ("prefill", node.get("prefill")), ("decode", node.get("decode"))):
            items = holder.get("additional-settings") if isinstance(holder, dict) else None
            for i, item in enumerate(items if isinstance(items, list) else ()):
                if isinstance(item, str) and "=" in item:
                    name, _, value = item.partition("=")
                    at = items.line_of(i) if isinstance(items, LineList) else line
                    settings.append(Setting(name.strip(), value.strip(), at, role))
        shared = {k: v for k, v in group.items() if k != "search-space"}
        values = {**shared, **node, "scenario": scenario, "isl": group.get("isl"), "osl": group.get("osl"),
                  "line": line}
        out.append(Point(str(scenario), values, node, line, tuple(settings)))
    return tuple(out)


def head_points(ctx: Context, config_path: str, key: str, entry: Mapping[str, Any]) -> tuple[Point, ...]:
    """`points` of the entry `key` of a master config at head, read once per Context (each recipe an entry
    names asks for them)."""
    return ctx.memo(("runs.points", config_path, key), lambda: points(entry))


def _flag(value: Any) -> str:
    return "true" if value is True else "false" if value in (False, None) else str(value)


def point_env(entry: Mapping[str, Any], point: Point) -> dict[str, str]:
    """The variables the sweep workflow gives the launcher for one point (`benchmark-tmpl.yml`,
    `benchmark-multinode-tmpl.yml`), and the point's `additional-settings`. EXP_NAME starts with the model
    prefix (`<model-prefix>_<scenario>`; the rest is not known here)."""
    prefix = str(entry.get("model-prefix") or "")
    agentic = "agentic" in point.scenario
    env = {
        "MODEL": str(entry.get("model") or ""), "MODEL_PREFIX": prefix, "PRECISION": str(entry.get("precision") or ""),
        "FRAMEWORK": str(entry.get("framework") or ""), "RUNNER_TYPE": str(entry.get("runner") or ""),
        "IMAGE": str(entry.get("image") or ""), "EXP_NAME": f"{prefix}_{UNKNOWN}",
        "SPEC_DECODING": point.spec_decoding, "DISAGG": _flag(entry.get("disagg") or False),
        "EVAL_ONLY": "false", "SCENARIO_TYPE": point.scenario, "IS_AGENTIC": "1" if agentic else "0",
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/",
        "IS_MULTINODE": "true" if entry.get("multinode") is True else "",
    }
    for key, var in (("isl", "ISL"), ("osl", "OSL"), ("kv-offloading", "KV_OFFLOADING"), ("pp", "PP_SIZE"),
                     ("dcp-size", "DCP_SIZE"), ("pcp-size", "PCP_SIZE")):
        if point.get(key) is not None:
            env[var] = str(point.get(key))
    backend = point.get("kv-offload-backend")
    if isinstance(backend, dict) and backend.get("name"):
        env["KV_OFFLOAD_BACKEND"] = str(backend["name"])
    roles = [("PREFILL_", point.get("prefill")), ("DECODE_", point.get("decode"))] if entry.get("multinode") else []
    for pre, role in roles if all(isinstance(r, dict) for _p, r in roles) else ():
        for key, var in (("num-worker", "NUM_WORKERS"), ("tp", "TP"), ("ep", "EP"), ("dp-attn", "DP_ATTN")):
            if key in role:
                env[pre + var] = _flag(role[key])
    if not entry.get("multinode"):
        if point.get("tp") is not None:
            env["TP"] = str(point.get("tp"))
        env["EP_SIZE"] = str(point.get("ep") or 1)
        env["DP_ATTENTION"] = "true" if point.get("dp-attn") is True else "false"
    for s in point.settings:
        env[s.name] = s.value
    return {k: v for k, v in env.items() if v is not None}


# --------------------------------------------------------------------------
# What a point runs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A recipe or script a point runs."""

    path: str
    selector: str  # a recipe's `:override...` ("" when none)
    line: int  # the line naming it: its CONFIG_FILE item, or the point's
    how: str  # CONFIG_FILE | EVAL_CONFIG_FILE | "runners/launch_x.sh:<line>" | "named after the entry"
    present: bool | None  # whether the repository holds it at head (None: not known yet)
    env: tuple[tuple[str, str], ...] = ()  # a script's variables: the point's, and what its launcher exports


@dataclass(frozen=True)
class PointRun:
    """What one search-space point of a master entry runs."""

    config_path: str
    key: str
    point: Point
    env: Mapping[str, str]
    recipes: tuple[Target, ...]  # benchmark recipes (CONFIG_FILE)
    scripts: tuple[Target, ...]  # benchmark scripts the launcher runs
    eval_recipes: tuple[Target, ...]  # EVAL_CONFIG_FILE: eval-only, not benchmark configs
    launchers: tuple[str, ...]
    looked_for: tuple[str, ...]  # what was looked for when nothing was found
    problem: str  # why what the point runs cannot be decided; "" when it can

    @property
    def targets(self) -> tuple[Target, ...]:
        return self.recipes + self.scripts


def recipe_target(ctx: Context, value: str) -> tuple[str, str] | None:
    """(repository path, selector) of a CONFIG_FILE value: `recipes/<rel>[:sel]` is srt-slurm's folder, into
    which the launchers copy the repository's recipe root; any other path is the repository's own (a
    path the repository does not hold is srt-slurm's). None for an empty value."""
    path, _, selector = value.strip().strip("\"'").partition(":")
    path = posixpath.normpath(path) if path else ""
    if not path or path in (".", "..") or path.startswith(("/", "../")):
        return None
    root = ctx.policy.recipe_root
    if path.startswith("recipes/"):
        return f"{root}/{path[len('recipes/'):]}", selector
    return path, selector


def runs(ctx: Context, change: EntryChange) -> tuple[PointRun, ...]:
    """What each point of a changed entry runs at head (() when it has no head or does not parse)."""
    entry = change.head if change.error is None else None
    return entry_runs(ctx, change.path, change.key, entry) if entry is not None else ()


def entry_runs(ctx: Context, config_path: str, key: str, entry: Mapping[str, Any]) -> tuple[PointRun, ...]:
    """`runs` for any entry at head (the PR may not change it)."""
    return tuple(run_of(ctx, config_path, key, entry, p) for p in head_points(ctx, config_path, key, entry))


def run_of(ctx: Context, config_path: str, key: str, entry: Mapping[str, Any], point: Point) -> PointRun:
    """What one point of an entry runs (resolved on first use: launchers are read only for points asked about)."""
    return ctx.memo(("runs.run_of", config_path, key, point.line),
                    lambda: _point_run(ctx, head_reader(ctx), config_path, key, entry, point))


# The point's parallelism and sequence lengths: they size the run, they do not pick its script.
SIZING = frozenset({"TP", "EP_SIZE", "DP_ATTENTION", "ISL", "OSL", "PREFILL_NUM_WORKERS", "PREFILL_TP", "PREFILL_EP",
                     "PREFILL_DP_ATTN", "DECODE_NUM_WORKERS", "DECODE_TP", "DECODE_EP", "DECODE_DP_ATTN"})


def _point_run(ctx: Context, cache: HeadReader, config_path: str, key: str, entry: Mapping[str, Any], point: Point) -> PointRun:
    env = point_env(entry, point)
    recipes: list[Target] = []
    evals: list[Target] = []
    for s in point.settings:
        if s.name in ("CONFIG_FILE", "EVAL_CONFIG_FILE"):
            found = recipe_target(ctx, s.value)
            if found is not None:
                present = cache.exists(found[0]) if s.name == "CONFIG_FILE" else None  # eval recipes: not read
                target = Target(found[0], found[1], s.line, s.name, present)
                (recipes if s.name == "CONFIG_FILE" else evals).append(target)
    if recipes or evals:
        return PointRun(config_path, key, point, env, tuple(recipes), (), tuple(evals), (), (), "")
    launchers = _launchers(ctx, cache, str(entry.get("runner") or ""))
    named = _named_scripts(entry, point)
    for c in named:  # asked for up front: the launcher most likely picks one of them
        cache.exists(c)
    scripts: list[Target] = []
    held = [lp for lp in launchers if cache.exists(lp)]
    picking = {k: v for k, v in env.items() if k not in SIZING}
    for launcher in held:
        trace = cache.trace(launcher, cache.read(launcher) or "", picking, no_watch, f"./{launcher}")
        for run in trace.runs:
            if run.how == "source":
                continue
            cwd = run.cwd.values[0] if run.cwd is not None and len(run.cwd.values) == 1 else None
            for value in run.path.values:
                paths = repo_paths(ctx, value, "", cwd)
                if paths and paths[0].startswith("benchmarks/"):
                    present = cache.exists(paths[0])
                    if present is not False:
                        run_env = {**env, **known_env(run)}
                        scripts.append(Target(paths[0], "", point.line, f"{launcher}:{run.line}", present,
                                              tuple(sorted(run_env.items()))))
    if not held and not any(cache.exists(lp) is None for lp in launchers):
        for c in named + _changed_named(ctx, entry):
            present = cache.exists(c)
            if present is not False:
                scripts.append(Target(c, "", point.line, "named after the entry", present, tuple(sorted(env.items()))))
                if present:
                    break
    scripts = list({t.path: t for t in scripts}.values())
    problem = ""
    if not scripts:
        if any(cache.exists(lp) is None for lp in launchers) or any(cache.exists(c) is None for c in named):
            problem = "not known yet"
        elif held:
            problem = f"{', '.join(held)} runs no benchmark script for this point"
        else:
            problem = "no launcher for its runner and no script named after it in the repository"
    return PointRun(config_path, key, point, env, (), tuple(scripts), (), tuple(launchers),
                    tuple(held) + tuple(named), problem)


def launchers(ctx: Context, runner: str) -> tuple[str, ...]:
    """The launchers the machines of runner label `runner` run (runners files it needs are noted missing)."""
    return _launchers(ctx, head_reader(ctx), runner)


def _launchers(ctx: Context, cache: HeadReader, runner: str) -> tuple[str, ...]:
    """The launchers of a runner label: one per machine the runners config lists for it (the workflow runs
    `runners/launch_${RUNNER_NAME%%_*}.sh`), else the one named after the label."""
    if not runner:
        return ()
    machines: list[str] = []
    for path in ctx.policy.runners_configs:
        text = cache.read(path)
        if text is None:
            continue
        try:
            doc = ctx.yaml(text)
        except YamlProblem:
            continue
        labels = _runner_labels(doc)
        listed = labels.get(runner) if labels is not None else None
        if isinstance(listed, list):
            machines = [str(m) for m in listed if isinstance(m, (str, int))]
        break
    names = [m.split("_", 1)[0] for m in machines] or [runner.split(":", 1)[-1]]
    return tuple(dict.fromkeys(ctx.policy.launcher.format(machine=n) for n in names if n))


def _runner_labels(doc: object) -> dict[str, Any] | None:
    """The label -> machines map of a runners file, in either of the shapes InferenceX has used: today's
    `labels: {b200: [b200-nb_0, ...]}`, and the labels at the top (`b200: [b200-nb_0, ...]`) of
    `.github/configs/runners.yaml` before it moved to `configs/`."""
    if not isinstance(doc, dict):
        return None
    labels = doc.get("labels")
    return labels if isinstance(labels, dict) else doc


def _named_scripts(entry: Mapping[str, Any], point: Point) -> tuple[str, ...]:
    """The single-node script InferenceX names after an entry, and its legacy fallback."""
    if entry.get("multinode"):
        return ()
    prefix = str(entry.get("model-prefix") or "")
    precision = str(entry.get("precision") or "")
    sku = hardware.sku(entry.get("runner"))
    framework = str(entry.get("framework") or "")
    subdir = {"fixed-seq-len": "fixed_seq_len", "agentic-coding": "agentic"}.get(
        point.scenario, point.scenario.replace("-", "_"))
    suffix = "_mtp" if point.spec_decoding.lower() == "mtp" else ""
    legacy = {"trt": "_trt", "trtllm": "_trt", "atom": "_atom"}.get(framework, "")
    if not (prefix and precision and sku):
        return ()
    base = f"benchmarks/single_node/{subdir}/{prefix}_{precision}_{sku}"
    return tuple(dict.fromkeys((f"{base}_{framework}{suffix}.sh", f"{base}{legacy}{suffix}.sh")))


_PRECISION = re.compile(r"(?:fp|bf|int|mxfp|nvfp)\d+|w\d+a\d+", re.I)
_FRAMEWORKS = frozenset({"vllm", "sglang", "trt", "trtllm", "atom"})
_SUBDIRS = {"agentic": ("agentic-coding", "1", "agentic/"), "fixed_seq_len": ("fixed-seq-len", "0", "fixed_seq_len/")}


def named_env(path: str) -> dict[str, str]:
    """The variables a single-node script's name says its configs run it with (the naming `_named_scripts`
    follows: `benchmarks/single_node/<scenario>/[deprecated/]<model-prefix>_<precision>_<sku>[_<framework>][_mtp].sh`):
    MODEL_PREFIX, PRECISION, FRAMEWORK, SPEC_DECODING and the scenario's, where the name holds them."""
    parts = path.split("/")
    if len(parts) < 4 or parts[:2] != ["benchmarks", "single_node"] or not parts[-1].endswith(".sh"):
        return {}
    fields = parts[-1][:-3].split("_")
    if len(fields) < 3 or not _PRECISION.fullmatch(fields[1]):
        return {}
    env = {"MODEL_PREFIX": fields[0], "PRECISION": fields[1]}
    if len(fields) > 3 and fields[3] in _FRAMEWORKS:
        env["FRAMEWORK"] = fields[3]
    if fields[-1] == "mtp":
        env["SPEC_DECODING"] = "mtp"
    if parts[2] in _SUBDIRS:
        env["SCENARIO_TYPE"], env["IS_AGENTIC"], env["SCENARIO_SUBDIR"] = _SUBDIRS[parts[2]]
    return env


def _changed_named(ctx: Context, entry: Mapping[str, Any]) -> tuple[str, ...]:
    """Benchmark scripts the PR changes that are named after the entry (`<model-prefix>_<precision>_<sku>_
    <framework>...`), for a runner whose launcher the repository does not hold as a file."""
    sku = hardware.sku(entry.get("runner"))
    stem = "_".join(str(entry.get(k) or "") for k in ("model-prefix", "precision")) + f"_{sku}_{entry.get('framework')}"
    return tuple(f.path for f in ctx.changed_files if f.path.startswith("benchmarks/") and f.path.endswith(".sh")
                 and posixpath.basename(f.path).startswith(stem))


def iter_changed_runs(ctx: Context, select: Callable[[EntryChange, Point], bool] = lambda change, point: True
                      ) -> Iterator[tuple[EntryChange, PointRun]]:
    """(change, point run) of every point of every entry the PR adds or changes that `select` keeps (the
    others are not resolved)."""
    for change in ctx.changed_entries:
        entry = change.head if change.error is None else None
        if entry is None:
            continue
        for point in head_points(ctx, change.path, change.key, entry):
            if select(change, point):
                yield change, run_of(ctx, change.path, change.key, entry, point)
