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
  `checks.bash.Script.trace` with the point's variables (its parallelism
  and sequence lengths left out: they size a run, they do not pick its
  script); the scripts it runs under `benchmarks/` are the targets (its
  `[ -f "$SCRIPT" ]` fallbacks are answered from the repository at head).
  Without a launcher file in the repository (absent, or a symbolic link,
  which is never followed), the script is the one InferenceX names after the
  entry: `benchmarks/single_node/<fixed_seq_len|agentic>/<model-prefix>_<precision>_<sku>_<framework>[_mtp].sh`,
  falling back to the name without the framework (`_trt` / `_atom` kept), or a
  script the PR changes named `<model-prefix>_<precision>_<sku>_<framework>*`.

`reach(ctx, path, env)` follows what a script runs in turn (`bash FILE`,
`source FILE`, `sbatch FILE`, `srun`/`docker run --entrypoint=/bin/bash`,
`eval "$CMD"`, `bash -c "..."`), with the variables each run passes on (a
launcher's exports reach the script it picks; an exported value the
interpreter does not know stays set but unknown). A repository script a
script stores in a variable (`RUN_FILE="$WS_PATH/server.sh"`) counts as run
by it: that is how a job file or a container command hands over where the
interpreter cannot follow. It maps the paths a script names to repository
paths: a path in a container or under
`$GITHUB_WORKSPACE` (`/infmax-workspace/benchmarks/x.sh`) is the repository
path from its first component that is a top-level directory of the
repository; a relative path, or one under a directory the script does not
fix (`$WS_PATH/bench.sh`), is relative to the script's PWD, else to its own
directory.

Files the snapshot does not hold are evidence to fetch: the resolver reads
the repository through `ctx.need`, which records them.

API (all cached per Context; a point is resolved only when asked about):
    points(entry)                -> the entry's search points, with their settings and lines
    point_env(entry, point)      -> the variables the workflow gives the launcher for a point
    runs(ctx, change)            -> one PointRun per point of a changed entry: recipes, scripts (each with
                                    the variables it runs with), eval recipes, launchers, env, problem
    run_of / entry_runs          -> the same for one point / any entry at head
    iter_changed_runs(ctx, select) -> (change, PointRun) of the changed points `select` keeps
    recipe_target(ctx, value)    -> (recipe path, selector) of a CONFIG_FILE value
    recipe_index(ctx)            -> recipe path -> the head entries naming it (textual, nothing parsed)
    points_running(ctx, recipe)  -> the head points whose CONFIG_FILE is that recipe
    trace(ctx, path, env, watch) -> one script run with a point's variables (e.g. its launcher)
    reach(ctx, path, env, watch) -> the scripts a script runs, transitively, each traced with its env
    repo_paths(ctx, value, base, cwd) -> where a path a script names is in the repository
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from . import hardware
from .context import Context
from .evidence import MISSING
from .masterconfig import EntryChange, iter_fields, iter_points
from .bash import UNKNOWN, Run, Trace
from .yamlload import LineDict, LineList, YamlProblem

MAX_HOPS = 6  # scripts run by scripts run by ... the first one
MAX_REACHED = 24  # scripts one `reach` follows


def _nothing(values: list[str | None]) -> bool:
    return False


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
    node: LineDict | dict
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


def points(entry: dict) -> tuple[Point, ...]:
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


def _flag(value: Any) -> str:
    return "true" if value is True else "false" if value in (False, None) else str(value)


def point_env(entry: dict, point: Point) -> dict[str, str]:
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
# Paths a script names, as repository paths
# --------------------------------------------------------------------------


def repo_dirs(ctx: Context) -> frozenset[str]:
    """The repository's top-level directories, as far as the snapshot shows them."""
    return ctx.volatile(_repo_dirs)


def _repo_dirs(ctx: Context) -> frozenset[str]:
    snap = ctx.snap
    paths = [f.path for f in snap.files] + list(snap.master_head) + list(snap.policy)
    paths += [p for files in snap.extra_files.values() for p in files]
    paths.append(ctx.policy.recipe_root)
    return frozenset(p.split("/", 1)[0] for p in paths if "/" in p)


def repo_paths(ctx: Context, value: str | None, base: str = "", cwd: str | None = None) -> tuple[str, ...]:
    """Where a path a script names (`value`, as the script computes it) is in the repository, most likely
    first. `base`: the directory of the script naming it; `cwd`: its PWD there, when known.

    From its first component that is a top-level directory of the repository (a container mount or
    `$GITHUB_WORKSPACE` before it); else, under a directory the script does not fix (`$WS/bench.sh`), next
    to the script; else relative to the PWD, or next to the script when the PWD is not known."""
    if not value or len(value) > 4096:
        return ()
    unknown_prefix = UNKNOWN in value
    tail = value.rsplit(UNKNOWN, 1)[-1]
    if cwd and not tail.startswith("/") and not unknown_prefix:
        found = repo_paths(ctx, posixpath.join(cwd, tail), base)
        if found:
            return found
    parts = [p for p in posixpath.normpath(tail).split("/") if p not in ("", ".")]
    top = repo_dirs(ctx)
    for i, part in enumerate(parts):
        if part in top and i + 1 < len(parts) and ".." not in parts[i:]:
            return ("/".join(parts[i:]),)
    if tail.startswith("/") and not unknown_prefix:
        return ()  # a file outside the repository
    joined = posixpath.normpath(posixpath.join(base, tail.lstrip("/")))
    return (joined,) if not joined.startswith(("..", "/")) and joined != "." else ()


# --------------------------------------------------------------------------
# The per-Context cache: traces, resolutions, and what they needed
# --------------------------------------------------------------------------


class _Cache:
    """The resolver's reads of the repository at head, through `ctx.need`, and its traces, through `ctx.once`
    (a trace that met a file the snapshot lacks is traced again once the snapshot holds more)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def read(self, path: str) -> str | None:
        """The text of `path` at head; None when absent or not known yet (then noted as missing)."""
        text = self.ctx.need.file("head", path)
        return None if text is MISSING else text

    def exists(self, path: str) -> bool | None:
        """Whether the repository holds `path` at head; None (and noted as missing) when not known yet."""
        found = self.ctx.need.exists("head", path)
        return None if found is MISSING else found

    def trace(self, path: str, text: str, env: Mapping[str, str], watch: Callable, dollar0: str,
              library: bool = False) -> Trace:
        return self.ctx.once(_trace, path, text, tuple(sorted(env.items())), watch, dollar0, library)

    def _file_test(self, value: str) -> bool | None:
        found = repo_paths(self.ctx, value)
        return self.exists(found[0]) if found else None


def _trace(ctx: Context, path: str, text: str, env: tuple, watch: Callable, dollar0: str, library: bool) -> Trace:
    return ctx.script(text).trace(dict(env), dollar0, watch, _cache(ctx)._file_test, not library, True)


def _cache(ctx: Context) -> _Cache:
    return ctx.once(_Cache)


def trace(ctx: Context, path: str, env: Mapping[str, str], watch: Callable = _nothing) -> Trace | None:
    """`path` at head run with `env` (`Script.trace`, file tests answered from the repository, defaults of
    variables `env` does not give taken), cached; None when the snapshot does not hold it (noted as missing).
    E.g. which launcher branch a changed point reaches: `trace(ctx, launcher, run.env, watch)`."""
    cache = _cache(ctx)
    text = cache.read(path)
    return cache.trace(path, text, env, watch, f"./{path}") if text is not None else None


# --------------------------------------------------------------------------
# Following the scripts a script runs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reached:
    """A script reached from the first one, with the variables it runs with and its trace (None: not held)."""

    path: str
    how: str  # "" for the first script; bash | source | sbatch | named (stored in a variable) for the run here
    env: Mapping[str, str]
    via: tuple[tuple[str, int], ...]  # (script, line) of each run on the way here
    trace: Trace | None
    text: str | None = field(default=None, repr=False)


def _known_env(run: Run) -> dict[str, str]:
    """The variables a run passes on: their value where it is decided, else UNKNOWN (set, value not known)."""
    return {name: t.values[0] if len(t.values) == 1 and isinstance(t.values[0], str) else UNKNOWN
            for name, t in run.env if name != "0"}


def reach(ctx: Context, path: str, env: Mapping[str, str], watch: Callable = _nothing,
          hops: int = MAX_HOPS, text: str | None = None) -> tuple[Reached, ...]:
    """`path` and the scripts it runs, transitively (at most `hops` runs deep, MAX_REACHED scripts), each
    traced with the variables it runs with; scripts the snapshot lacks are noted as missing. `text`: the
    first script's code when it is not the file at `path` (a recipe's benchmark command)."""
    cache = _cache(ctx)
    out: list[Reached] = []
    queue: list[tuple[str, str, Mapping[str, str], tuple, str]] = [(path, "", dict(env), (), path)]
    seen: set[tuple[str, tuple]] = set()
    while queue and len(out) < MAX_REACHED:
        current, how, current_env, via, dollar0 = queue.pop(0)
        key = (current, tuple(sorted(current_env.items())))
        if key in seen:
            continue
        seen.add(key)
        code = text if text is not None and not via else cache.read(current)
        trace = cache.trace(current, code, current_env, watch, dollar0, how == "source") if code is not None else None
        out.append(Reached(current, how, current_env, via, trace, code))
        if trace is None or len(via) >= hops:
            continue
        for run in trace.runs:
            target = _run_target(ctx, cache, run, current)
            if target is None:
                continue
            sub_env = {**current_env, **_known_env(run)} if run.how == "source" else _known_env(run)
            queue.append((target, run.how, sub_env, via + ((current, run.line),),
                          dollar0 if run.how == "source" else target))
        if how != "source":
            for line, target in _named_scripts_of(ctx, cache, current, code):
                queue.append((target, "named", current_env, via + ((current, line),), target))
    return tuple(out)


_SCRIPT_VALUE = re.compile(r"^[^\s;&|<>'\"]+\.(?:sh|slurm|sbatch)$")


def _named_scripts_of(ctx: Context, cache: _Cache, path: str, text: str) -> list[tuple[int, str]]:
    """Repository scripts a script stores in a variable (`RUN_FILE="$WS_PATH/server.sh"`): it runs them where
    the interpreter cannot follow (inside a container or a job it submits), so they count as run by it."""
    out = []
    script = ctx.script(text)
    for a in script.assignments:
        value = script.value_of(a)
        if value is None or not _SCRIPT_VALUE.match(value):
            continue
        value = re.sub(r"^(?:\$\{?\w+\}?)+", UNKNOWN, value)  # a directory the script does not fix
        for candidate in repo_paths(ctx, value, posixpath.dirname(path)):
            if candidate != path and cache.exists(candidate):
                out.append((a.line, candidate))
                break
    return out


def _run_target(ctx: Context, cache: _Cache, run: Run, script: str) -> str | None:
    """The repository file a run names: the first candidate the repository holds (noting unknown ones)."""
    cwd = run.cwd.values[0] if run.cwd is not None and len(run.cwd.values) == 1 else None
    candidates = [c for v in run.path.values for c in repo_paths(ctx, v, posixpath.dirname(script), cwd)]
    for c in dict.fromkeys(candidates):
        present = cache.exists(c)
        if present:
            return c
    return None


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
    root = ctx.policy.recipe_root.rstrip("/")
    if path.startswith("recipes/"):
        return f"{root}/{path[len('recipes/'):]}", selector
    return path, selector


def runs(ctx: Context, change: EntryChange) -> tuple[PointRun, ...]:
    """What each point of a changed entry runs at head (() when it has no head or does not parse)."""
    entry = change.head if change.error is None else None
    return entry_runs(ctx, change.path, change.key, entry) if entry is not None else ()


def entry_runs(ctx: Context, config_path: str, key: str, entry: dict) -> tuple[PointRun, ...]:
    """`runs` for any entry at head (the PR may not change it)."""
    return tuple(run_of(ctx, config_path, key, entry, p) for p in points(entry))


def run_of(ctx: Context, config_path: str, key: str, entry: dict, point: Point) -> PointRun:
    """What one point of an entry runs (resolved on first use: launchers are read only for points asked about)."""
    return ctx.memo(("runs.run_of", config_path, key, point.line),
                    lambda: _point_run(ctx, _cache(ctx), config_path, key, entry, point))


# The point's parallelism and sequence lengths: they size the run, they do not pick its script.
_SIZING = frozenset({"TP", "EP_SIZE", "DP_ATTENTION", "ISL", "OSL", "PREFILL_NUM_WORKERS", "PREFILL_TP", "PREFILL_EP",
                     "PREFILL_DP_ATTN", "DECODE_NUM_WORKERS", "DECODE_TP", "DECODE_EP", "DECODE_DP_ATTN"})


def _point_run(ctx: Context, cache: _Cache, config_path: str, key: str, entry: dict, point: Point) -> PointRun:
    env = point_env(entry, point)
    recipes, evals = [], []
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
    picking = {k: v for k, v in env.items() if k not in _SIZING}
    for launcher in held:
        trace = cache.trace(launcher, cache.read(launcher) or "", picking, _nothing, f"./{launcher}")
        for run in trace.runs:
            if run.how == "source":
                continue
            cwd = run.cwd.values[0] if run.cwd is not None and len(run.cwd.values) == 1 else None
            for value in run.path.values:
                found = repo_paths(ctx, value, "", cwd)
                if found and found[0].startswith("benchmarks/"):
                    present = cache.exists(found[0])
                    if present is not False:
                        run_env = {**env, **_known_env(run)}
                        scripts.append(Target(found[0], "", point.line, f"{launcher}:{run.line}", present,
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
    return _launchers(ctx, _cache(ctx), runner)


def _launchers(ctx: Context, cache: _Cache, runner: str) -> tuple[str, ...]:
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
        labels = doc.get("labels") if isinstance(doc, dict) else None
        listed = labels.get(runner) if isinstance(labels, dict) else None
        if isinstance(listed, list):
            machines = [str(m) for m in listed if isinstance(m, (str, int))]
        break
    names = [m.split("_", 1)[0] for m in machines] or [runner.split(":", 1)[-1]]
    return tuple(dict.fromkeys(ctx.policy.launcher.format(machine=n) for n in names if n))


def _named_scripts(entry: dict, point: Point) -> tuple[str, ...]:
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


def _changed_named(ctx: Context, entry: dict) -> tuple[str, ...]:
    """Benchmark scripts the PR changes that are named after the entry (`<model-prefix>_<precision>_<sku>_
    <framework>...`), for a runner whose launcher the repository does not hold as a file."""
    sku = hardware.sku(entry.get("runner"))
    stem = "_".join(str(entry.get(k) or "") for k in ("model-prefix", "precision")) + f"_{sku}_{entry.get('framework')}"
    return tuple(f.path for f in ctx.changed_files if f.path.startswith("benchmarks/") and f.path.endswith(".sh")
                 and posixpath.basename(f.path).startswith(stem))


_CONFIG_FILE = re.compile(r"""(?<![A-Za-z0-9_])(EVAL_)?CONFIG_FILE=([^\s"',\]}]+)""")


@dataclass(frozen=True)
class Naming:
    """A master entry at head whose points name a recipe (`CONFIG_FILE=` or `EVAL_CONFIG_FILE=`)."""

    config_path: str
    key: str
    changed: bool  # the entry's block differs from base beyond comments and blank lines
    eval_only: bool  # named only by EVAL_CONFIG_FILE


def recipe_index(ctx: Context) -> RecipeIndex:
    """recipe path -> the head entries naming it: a textual scan of the blocks (nothing parsed), so every
    recipe's entries are known without parsing 12,000-line master configs."""
    return ctx.once(RecipeIndex)


class RecipeIndex:
    """Which head entries name a recipe with CONFIG_FILE or EVAL_CONFIG_FILE, read from the blocks' text. A
    recipe's entries are looked for when it is asked about, in the blocks whose text holds its file name
    (a value names its file as written, whatever the folders around it); asked about more than a few, every
    block's values are resolved once. `named_by_changes` reads the blocks that differ from base."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._found: dict[str, tuple[Naming, ...]] = {}
        self._all: dict[str, tuple[Naming, ...]] | None = None
        self._blocks: list[tuple[str, str, str, bool]] = []  # (config path, key, text, changed) naming some file
        self._targets: dict[int, list[tuple[str, bool]]] = {}  # block -> (recipe path, EVAL_) of each value
        for cfg_path, cfg in sorted(ctx.head_configs.items()):
            if "CONFIG_FILE=" not in cfg.text:
                continue
            base = ctx.base_configs.get(cfg_path)
            for key, block in cfg.blocks.items():
                if "CONFIG_FILE=" not in block.text:
                    continue
                old = base.blocks.get(key) if base else None
                changed = old is None or (old.text != block.text and _content(old.text) != _content(block.text))
                self._blocks.append((cfg_path, key, block.text, changed))

    def get(self, path: str, default: tuple[Naming, ...] = ()) -> tuple[Naming, ...]:
        if path not in self._found:
            self._found[path] = self._look_up(path)
        return self._found[path] or default

    def _look_up(self, path: str) -> tuple[Naming, ...]:
        if self._all is None and len(self._found) >= _FEW_RECIPES:
            self._all = self._naming(range(len(self._blocks)))
        if self._all is not None:
            return self._all.get(path, ())
        name = posixpath.basename(path)
        holding = (i for i, (_cfg, _key, text, _changed) in enumerate(self._blocks) if name in text)
        return self._naming(holding, path).get(path, ())

    def __getitem__(self, path: str) -> tuple[Naming, ...]:
        found = self.get(path)
        if not found:
            raise KeyError(path)
        return found

    def named_by_changes(self) -> tuple[str, ...]:
        """The recipe paths the blocks that differ from base name, in file and line order."""
        changed = (i for i, (_c, _k, _t, ch) in enumerate(self._blocks) if ch)
        return tuple(dict.fromkeys(path for i in changed for path, _eval in self._block_targets(i)))

    def _naming(self, blocks: Iterable[int], only: str | None = None) -> dict[str, tuple[Naming, ...]]:
        """recipe path -> the entries naming it among `blocks` (in order), for every path or `only`."""
        index: dict[str, dict[tuple[str, str], Naming]] = {}
        for i in blocks:
            cfg_path, key, _text, changed = self._blocks[i]
            for path, evals in self._block_targets(i):
                if only is not None and path != only:
                    continue
                by_entry = index.setdefault(path, {})
                prior = by_entry.get((cfg_path, key))
                eval_only = evals and (prior is None or prior.eval_only)
                by_entry[(cfg_path, key)] = Naming(cfg_path, key, changed, eval_only)
        return {path: tuple(refs.values()) for path, refs in index.items()}

    def _block_targets(self, i: int) -> list[tuple[str, bool]]:
        if i not in self._targets:
            found = ((recipe_target(self.ctx, m.group(2)), bool(m.group(1)))
                     for m in _CONFIG_FILE.finditer(self._blocks[i][2]))
            self._targets[i] = [(target[0], evals) for target, evals in found if target is not None]
        return self._targets[i]


_FEW_RECIPES = 16  # recipes looked for one by one; asked about more, every block is resolved


def _content(text: str) -> list[str]:
    """A master block's lines that carry YAML content (comments and blank lines dropped)."""
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def points_running(ctx: Context, recipe: str) -> tuple[PointRun, ...]:
    """The points of head entries whose CONFIG_FILE is `recipe` (only the entries naming it are parsed)."""
    out = []
    for naming in recipe_index(ctx).get(recipe, ()):
        cfg = ctx.head_configs.get(naming.config_path)
        try:
            entry = cfg.entry(naming.key) if cfg is not None else None
        except YamlProblem:
            continue
        if entry is None:
            continue
        for point in points(entry):
            if any(st.name == "CONFIG_FILE" for st in point.settings):
                run = run_of(ctx, naming.config_path, naming.key, entry, point)
                if any(t.path == recipe for t in run.recipes):
                    out.append(run)
    return tuple(out)


def iter_changed_runs(ctx: Context, select: Callable[[EntryChange, Point], bool] = lambda change, point: True
                      ) -> Iterator[tuple[EntryChange, PointRun]]:
    """(change, point run) of every point of every entry the PR adds or changes that `select` keeps (the
    others are not resolved)."""
    for change in ctx.changed_entries:
        entry = change.head if change.error is None else None
        for point in points(entry) if entry is not None else ():
            if select(change, point):
                yield change, run_of(ctx, change.path, change.key, entry, point)


# --------------------------------------------------------------------------
# Which lines the changed configs run
# --------------------------------------------------------------------------


MAX_RUNNING = 12  # entries that run one changed file, followed; beyond it every line of the file counts


@dataclass(frozen=True)
class Reachability:
    """The lines of each script that the configs the PR submits run: the entries it adds or changes, and the
    unchanged entries that run a script, recipe or launcher it changes (they run again, on its version).
    Each point's launcher, the scripts it runs and the libraries they source are traced with the point's
    variables: a branch the variables decide against is not run; one they cannot decide is."""

    lines: Mapping[str, frozenset[int]]
    undecided: str = ""  # why what a submitted point runs cannot be followed ("" when it can)
    everywhere: frozenset[str] = frozenset()  # files run by more entries than are followed: every line counts

    def reaches(self, path: str, first: int, last: int) -> bool:
        return path in self.everywhere or any(first <= n <= last for n in self.lines.get(path, ()))


def _every(values: list[str | None]) -> bool:
    return True


def reached(ctx: Context, files: tuple[str, ...]) -> Reachability:
    """`Reachability` of the configs the PR submits, for the lines of `files` (changed files), cached per
    Context: the entries it adds or changes, and those that run one of `files`."""
    return ctx.once(_reached, files)


def _submitted(ctx: Context, files: tuple[str, ...]) -> tuple[list[tuple[str, dict, PointRun]], set[str]]:
    """(key, entry, point run) of the points the PR submits that matter for `files`, one per entry and set of
    variables (a point's sizing picks no branch), and the files run by too many entries to follow."""
    out: dict[tuple, tuple[str, dict, PointRun]] = {}

    def add(config_path: str, key: str, entry: dict, run: PointRun) -> None:
        env = tuple(sorted((k, v) for k, v in run.env.items() if k not in _SIZING))
        out.setdefault((config_path, key, env, tuple(t.path for t in run.targets)), (key, entry, run))

    for change, run in iter_changed_runs(ctx):
        add(change.path, change.key, change.head, run)
    everywhere: set[str] = set()
    for path in files:
        running = _entries_running(ctx, path, MAX_RUNNING + 1)
        if len(running) > MAX_RUNNING:
            everywhere.add(path)
            continue
        for config_path, key, entry in running:
            for point in points(entry):
                run = run_of(ctx, config_path, key, entry, point)
                if path in run.launchers or any(t.path == path for t in run.targets):
                    add(config_path, key, entry, run)
    return [out[k] for k in sorted(out)], everywhere


def _entries_running(ctx: Context, path: str, limit: int) -> list[tuple[str, str, dict]]:
    """Head entries that may run `path`: those naming it as a recipe, those whose runner's launcher it is,
    and those a benchmark script is named after (its model prefix); the first `limit` that parse (a file
    run by more is not followed, so the rest need not be parsed)."""
    keys: set[tuple[str, str]] = {(n.config_path, n.key) for n in recipe_index(ctx).get(path, ())}
    name = posixpath.basename(path)
    launcher = path.startswith("runners/")
    script = path.startswith("benchmarks/") and name.endswith(".sh")
    if launcher or script:
        prefix = name.split("_", 1)[0]
        for config_path, key, fields in iter_fields(ctx.head_configs):
            if (script and fields.get("model-prefix") == prefix) or (
                    launcher and path in launchers(ctx, fields.get("runner", ""))):
                keys.add((config_path, key))
    out = []
    for config_path, key in sorted(keys):
        if len(out) >= limit:
            break
        try:
            entry = ctx.head_configs[config_path].entry(key)
        except YamlProblem:
            continue
        if entry is not None:
            out.append((config_path, key, entry))
    return out


def _reached(ctx: Context, files: tuple[str, ...]) -> Reachability:
    cache = _cache(ctx)
    lines: dict[str, set[int]] = {}
    sourced: set[str] = set()
    called: set[str] = set()
    undecided = ""
    submitted, everywhere = _submitted(ctx, files)
    for key, entry, run in submitted:
        env = {k: v for k, v in run.env.items() if k not in _SIZING}
        starts = [lp for lp in _launchers(ctx, cache, str(entry.get("runner") or "")) if cache.exists(lp)]
        starts = starts or [t.path for t in run.scripts if t.present]
        if not starts:
            undecided = undecided or f"{key}: what its point at line {run.point.line} runs is not known"
            continue
        for start in starts:
            for r in reach(ctx, start, env, _every):
                if r.trace is None:
                    undecided = undecided or f"{r.path}, which {key} runs, was not read"
                    continue
                lines.setdefault(r.path, set()).update(c.line for c in r.trace.calls)
                called.update(w for c in r.trace.calls if c.words for w in c.words[0] if isinstance(w, str))
                if r.how == "source":
                    sourced.add(r.path)
    for path in sourced:  # a library's functions run where a script that sources it calls them
        text = cache.read(path)
        if text is not None:
            lines[path].update(_called_lines(ctx.script(text), called))
    return Reachability({p: frozenset(n) for p, n in sorted(lines.items())}, undecided, frozenset(everywhere))


def _called_lines(script, called: set[str]) -> set[int]:
    """The lines of the functions of `script` that `called` names, and of the functions those call."""
    bodies: dict[str, list] = {}
    for command in script.simple_commands:
        if command.function:
            bodies.setdefault(command.function, []).append(command)
    out: set[int] = set()
    todo = [name for name in bodies if name in called]
    done: set[str] = set()
    while todo:
        name = todo.pop()
        if name in done:
            continue
        done.add(name)
        for command in bodies[name]:
            out.add(command.line)
            if command.name in bodies:
                todo.append(command.name)
    return out
