"""Shared facts for checks 9 and 11: which configs the PR adds or changes run speculative decoding, and how.

Checks 9 (chat template) and 11 (golden acceptance length) read the same
benchmark scripts, srt-slurm recipes and master-config entries. What a master
entry runs is `checks.facts.runs` (the one resolver); scripts are read by
`checks.facts.bash.Script`; the speculative settings of a script, a launch or a
recipe are read by `checks.facts.spec_settings` (through `checks.facts.engines`). This module finds the configs;
`checks.facts.specmodel` is what checks 9 and 11 read.

The configs (`inventory`), each a `SpecUnit`:
- a recipe the PR changes, or one a changed spec-decode point runs
  (`CONFIG_FILE`), read as srt-slurm reads it (`checks.facts.srtslurm`: `base:`
  with override variants). Its speculative settings are the decode side's
  (and an aggregated worker's): in a disaggregated recipe the prefill
  worker's draft settings do not decide what is accepted.
- a per-config benchmark script the PR changes (`benchmarks/single_node/**`:
  one script per config, named after it); when no changed point runs it, it
  is read with the variables its name says (`runs.named_env`: model prefix,
  precision, framework).
- not a config: an eval-only recipe (an `*-eval*` twin, or one the master
  configs name by EVAL_CONFIG_FILE only, that no point runs as CONFIG_FILE).
- the script a changed spec-decode point runs (the launcher picks it), with
  everything it runs in turn (`tracing.reach`): its `chain`. A shared script
  (a launcher helper such as `multi_node/amd_utils/server_sglang.sh`, or
  `benchmark_lib.sh`) is a config only through such a chain: speculative
  flags in it count only when a config the PR adds or changes reaches them.
  A point whose `spec-decoding` is `none` is not a spec-decode config, so
  flags behind a guard every changed config sets off are dormant.

A script is read for the variables its config gives it (`runs.point_env`,
what its launcher exports; `EVAL_ONLY=false`, as the benchmark run): each
script of its chain is run by the speculative-decoding reader
(`script_run`: `bash.Script.run_every_engine`), which records the launches of
every engine (vLLM, SGLang, TRT-LLM, ATOM) with their arguments and
environment, runs the files a script sources in place (their lines numbered
from n * LIBRARY_LINES, so evidence names the library), and notes the files
a script writes from heredocs (an options file the launch reads,
`_options`). So a value set per branch, in a library, in a table, through
`printf` or arithmetic, or behind a guard is read as the run reads it. A
script none of whose launches the reader reaches is read line by line,
outside the lines only an eval-only run reaches (`eval_only_lines`).
`checks.facts.specmodel` derives the model of each config from these units.

Agentic configs: under an `agentic/` or `agentx*` directory, a script or
recipe whose name says agentic / agentx, run by an agentic master point
(key or scenario), or replaying traces through `build_replay_cmd`.

Benchmark clients (`is_client`, what check 9 judges): `run_benchmark_serving`,
`build_replay_cmd` (the agentic aiperf replay), `benchmark_serving.py`,
`vllm bench serve`, `python -m sglang.bench_serving`, `aiperf profile`,
`genai-perf`, and a python program the script writes from a heredoc that
imports one of those clients (`cat > "$DRIVER" <<EOF ... from vllm.benchmarks.serve import ...`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from checks.context import Context
from checks.policy import Policy

from . import engines
from . import runs as resolver
from .bash import Launch, Script, Token, reads_first_field
from .bash.interpreter import NOT_GIVEN, Write
from .bash.reading import statements
from .bash.syntax import Statement
from .masterconfig import EntryChange
from .recipe_index import points_running, recipe_index
from .spec_settings import (
    THROUGHPUT_ENV,
    Simulation,
    SpecConfig,
    launch_settings,
    options_file,
    options_settings,
    recipe_engine,
    recipe_settings,
    script_engine,
    script_settings,
    thinking_mode,
)
from .srtslurm import variants
from .tracing import Reached, head_reader, reach, repo_paths
from .yamlload import LineDict, YamlProblem

# --------------------------------------------------------------------------
# Which files are which
# --------------------------------------------------------------------------


def is_benchmark_script(path: str) -> bool:
    return path.startswith("benchmarks/") and path.endswith(".sh") and posixpath.basename(path) != "benchmark_lib.sh"


def is_config_script(path: str) -> bool:
    """A per-config benchmark script (`benchmarks/single_node/**`): one config, named after it. Other
    scripts are shared by configs and count only through the configs that run them."""
    return path.startswith("benchmarks/single_node/") and is_benchmark_script(path)


def is_recipe(policy: Policy, path: str) -> bool:
    return path.startswith(policy.recipe_root.rstrip("/") + "/") and path.endswith((".yaml", ".yml"))


_AGENTIC_WORD = re.compile(r"agentic|agentx", re.I)


def is_agentic_path(path: str) -> bool:
    """Under an `agentic/` or `agentx*` directory, or named agentic / agentx (`agentic_srt.sh`)."""
    *dirs, name = path.split("/")
    return any(d == "agentic" or d.lower().startswith("agentx") for d in dirs) or bool(_AGENTIC_WORD.search(name))


def script_prefix(path: str) -> str:
    """The model prefix a benchmark script is named after (`glm5.2_fp4_mi355x_mtp.sh` -> `glm5.2`)."""
    return posixpath.basename(path).split("_", 1)[0]


# --------------------------------------------------------------------------
# Benchmark clients
# --------------------------------------------------------------------------

CLIENT_FUNCTIONS = frozenset({"run_benchmark_serving", "build_replay_cmd"})
_CLIENT_PROGRAM = re.compile(r"python[\d.]*|vllm|aiperf|genai-perf")
_CLIENT_MODULE = re.compile(r"^[ \t]*+(?:from|import)[ \t]++(?:vllm\.benchmarks\.serve|sglang\.bench_serving|"
                            r"benchmark_serving)\b", re.M)
_SEGMENT = re.compile(r"[;&|]")
_TARGET = re.compile(r"[^\s<>|;&]++")


def heredoc_target(line: str) -> str | None:
    """The file `cat > FILE <<EOF` / `tee FILE <<EOF` on a line writes (read segment by segment with string
    operations, in time linear in the line), or None."""
    for segment in _SEGMENT.split(line):
        words = segment.split(None, 1)
        if len(words) < 2 or words[0] not in ("cat", "tee") or "<<" not in words[1]:
            continue
        rest = words[1]
        at = rest.find(">")
        if at < 0 or at > rest.find("<<"):
            continue
        found = _TARGET.match(rest[at + 1:].lstrip())
        if found:
            return found.group(0)
    return None


@reads_first_field
def is_client_candidate(values: list[str | None]) -> bool:
    """The commands a trace records for check 9: client functions, python programs and client CLIs."""
    head = (values[0] or "").rsplit("/", 1)[-1] if values else ""
    return head in CLIENT_FUNCTIONS or _CLIENT_PROGRAM.fullmatch(head) is not None


def client_programs(script: Script) -> frozenset[str]:
    """Basenames of the python programs a script writes from a heredoc that imports a benchmark client."""
    bodies: dict[int, list[str]] = {}
    for ln in script.lines:
        if ln.heredoc is not None:
            bodies.setdefault(ln.heredoc.start, []).append(ln.text)
    out = set()
    for ln in script.lines:
        if ln.number in bodies and _CLIENT_MODULE.search("\n".join(bodies[ln.number])):
            target = heredoc_target(ln.expanded)
            if target:
                out.add(posixpath.basename(target.strip("\"'")))
    return frozenset(out)


# --------------------------------------------------------------------------
# The inventory of speculative-decoding configs the PR adds or changes
# --------------------------------------------------------------------------

BASE_ENV: Mapping[str, str] = {"EVAL_ONLY": "false"}  # a benchmark run, when no config says more


@dataclass(frozen=True)
class MasterRef:
    """A master-config search point that runs a file."""

    key: str
    agentic: bool
    model_prefix: str
    simulations: tuple[Simulation, ...]  # SYNTHETIC_ACCEPTANCE_LENGTH of that point
    selector: str = ""  # the recipe variant it selects


@dataclass(frozen=True)
class SpecUnit:
    """A benchmark script or recipe that runs speculative decoding, with everything checks 9 and 11 need."""

    path: str
    kind: str  # script | recipe
    text: str
    changed: bool  # False when only a changed master entry runs it
    agentic: bool
    engine: str
    model_prefix: str
    thinking: str
    configs: tuple[SpecConfig, ...]
    simulations: tuple[Simulation, ...]  # including SYNTHETIC_ACCEPTANCE_LENGTH of master points that run it
    refs: tuple[MasterRef, ...] = ()
    error: str | None = None  # a recipe that does not parse: "line N: message"
    error_line: int = 0
    env: Mapping[str, str] = field(default_factory=lambda: dict(BASE_ENV))  # the variables it runs with
    chain: tuple[Reached, ...] = ()  # a script and what it runs (a recipe: its benchmark command's)
    declared: str = ""  # the master point declaring spec-decoding when the files show no speculative flag

    @property
    def anchor(self) -> int:
        """The line findings about the unit point at: its first throughput spec config."""
        live = [c.line for c in self.configs if not c.eval_only and c.line]
        return live[0] if live else (self.configs[0].line if self.configs and self.configs[0].line else 1)


@dataclass(frozen=True)
class Unlocated:
    """A changed spec-decode master point whose script or recipe cannot be found or read."""

    path: str
    key: str
    line: int
    agentic: bool
    candidates: tuple[str, ...]
    why: str = ""


@dataclass(frozen=True)
class Inventory:
    units: tuple[SpecUnit, ...]
    unlocated: tuple[Unlocated, ...]
    dormant: tuple[str, ...] = ()  # changed shared scripts with speculative flags no changed config reaches

    def na_reason(self, what: str) -> str:
        """Why a check finds nothing to judge, naming the dormant flags it leaves alone."""
        if not self.dormant:
            return what
        return (f"{what}: the speculative flags in {', '.join(self.dormant)} are dormant (no config the PR adds "
                "or changes turns them on)")


_EVAL_NAME = re.compile(r"(?:^|[-_.])evals?(?:[-_.]|$)", re.I)


def eval_twin(path: str) -> bool:
    """A recipe or script named as an eval-only twin of a throughput one (`disagg-mtp-eval.yaml`,
    `x_mtp_eval.sh`): run for accuracy, with real verification, not a benchmark config (unless a master point
    runs it as its CONFIG_FILE, which the callers check)."""
    return _EVAL_NAME.search(posixpath.basename(path)) is not None


def eval_only_recipe(ctx: Context, path: str) -> bool:
    """A recipe no master point runs as its CONFIG_FILE that is an eval twin by name, or that the master configs
    name by EVAL_CONFIG_FILE only."""
    namings = recipe_index(ctx).get(path, ())
    return eval_twin(path) or bool(namings) and all(n.eval_only for n in namings)


def benchmarked(ctx: Context, path: str) -> bool:
    """Whether a recipe is a benchmark config: a master point runs it as its CONFIG_FILE, or it is no
    eval-only recipe (`eval_only_recipe`)."""
    return bool(points_running(ctx, path)) or not eval_only_recipe(ctx, path)


def point_is_spec(key: str, point: resolver.Point) -> bool:
    """A point runs speculative decoding: its `spec-decoding:` is not none (an entry named `-mtp` whose point
    says none is not)."""
    if "spec-decoding" in point.values:
        return point.spec_decoding != "none"
    return engines.spec_entry_name(key)


def entry_is_agentic(key: str, entry: Mapping[str, Any]) -> bool:
    scenarios = entry.get("scenarios")
    return bool(_AGENTIC_WORD.search(key)) or (isinstance(scenarios, dict) and any("agentic" in str(s) for s in scenarios))


def _point_simulations(point: resolver.Point, master_path: str) -> tuple[Simulation, ...]:
    """A master point's synthetic acceptance: SYNTHETIC_ACCEPTANCE_LENGTH (unless SYNTHETIC_ACCEPTANCE is off),
    or SYNTHETIC_ACCEPTANCE=true alone (the injector then reads the golden curve itself)."""
    enabled = next((f for n in engines.names("master", "setting", "switch") if (f := point.setting(n))), None)
    length = next((f for n in engines.names("master", "setting", *engines.TARGETS) if (f := point.setting(n))), None)
    off = enabled is not None and enabled.value.lower() in ("false", "0", "no", "")
    if length is not None and not off:
        return (Simulation(length.name, length.value, length.line, master_path,
                           means=engines.meaning("master", "setting", length.name)),)
    if enabled is not None and enabled.value.lower() == "true":
        return (Simulation(enabled.name, enabled.value, enabled.line, master_path, means="switch"),)
    return ()


def _ref(run: resolver.PointRun, entry_agentic: bool, prefix: str, selector: str = "") -> MasterRef:
    return MasterRef(run.key, entry_agentic or "agentic" in run.point.scenario, prefix,
                     _point_simulations(run.point, run.config_path), selector)


def inventory(ctx: Context) -> Inventory:
    """Speculative-decoding configs the PR adds or changes (worked out once per Context: several checks ask)."""
    return ctx.once(_inventory)


class _Builder:
    """The units found so far, by path (a file reached twice is one unit), and the points not located."""

    def __init__(self) -> None:
        self.units: dict[str, SpecUnit] = {}
        self.unlocated: list[Unlocated] = []

    def add(self, unit: SpecUnit | None) -> None:
        if unit is None:
            return
        old = self.units.get(unit.path)
        if old is None:
            self.units[unit.path] = unit
            return
        # The same file reached again (another point): keep the first reading, widen what points say.
        self.units[unit.path] = replace(
            old, changed=old.changed or unit.changed, agentic=old.agentic or unit.agentic,
            refs=tuple(dict.fromkeys(old.refs + unit.refs)),
            simulations=tuple(dict.fromkeys(old.simulations + unit.simulations)),
            model_prefix=old.model_prefix or unit.model_prefix)


def _inventory(ctx: Context) -> Inventory:
    b = _Builder()
    for f in ctx.changed_files:
        if f.head_text is not None and is_recipe(ctx.policy, f.path):
            points = points_running(ctx, f.path)
            if not points and eval_only_recipe(ctx, f.path):
                continue  # run for accuracy only: no benchmark config
            b.add(_recipe_unit(ctx, f.path, f.head_text, True, points))
    scripts: dict[str, list[_Use]] = {}
    for change, run in resolver.iter_changed_runs(ctx, lambda change, point: point_is_spec(change.key, point)):
        entry = change.head or LineDict()  # (`iter_changed_runs`: an entry that parses)
        agentic = entry_is_agentic(change.key, entry) or "agentic" in run.point.scenario
        prefix = str(entry.get("model-prefix") or "")
        if not run.targets and run.eval_recipes:
            continue  # an eval-only point: no benchmark config
        if not run.targets:
            b.unlocated.append(Unlocated(change.path, change.key, run.point.line, agentic, run.looked_for,
                                         run.problem))
            continue
        for t in run.recipes:
            if t.path in b.units:  # a changed recipe, read already with every point that runs it
                continue
            text = ctx.snap.read(t.path, "head") if t.present else None
            if text is None:
                why = ("not known yet" if t.present is None else
                       "not in this repository (srt-slurm's own recipe, or a wrong path)")
                b.unlocated.append(Unlocated(change.path, change.key, t.line, agentic, (t.path,), why))
                continue
            # The point declares spec decoding: its recipe is a spec-decode config whatever flags it shows.
            b.add(_recipe_unit(ctx, t.path, text, ctx.snap.changed(t.path) is not None,
                               points_running(ctx, t.path), run.env, force=True))
        for t in run.scripts:
            text = ctx.snap.read(t.path, "head") if t.present else None
            if text is None:
                b.unlocated.append(Unlocated(change.path, change.key, run.point.line, agentic, (t.path,),
                                             "not known yet"))
                continue
            scripts.setdefault(t.path, []).append(_Use(text, run, agentic, prefix, change, dict(t.env or run.env)))
    for path, uses in scripts.items():
        b.add(_entry_script_unit(ctx, path, uses))
    for f in ctx.changed_files:  # a changed script no changed point runs: read with the variables its name says
        if f.head_text is not None and is_config_script(f.path) and f.path not in b.units and not eval_twin(f.path):
            b.add(_script_unit(ctx, f.path, f.head_text, True, {**resolver.named_env(f.path), **BASE_ENV}))
    reached = {x.path for u in b.units.values() for x in u.chain} | set(b.units)
    dormant = tuple(f.path for f in ctx.changed_files
                    if f.head_text is not None and is_benchmark_script(f.path) and not is_config_script(f.path)
                    and f.path not in reached and script_settings(ctx.script(f.head_text), f.path, evals=False)[0])
    return Inventory(tuple(b.units[p] for p in sorted(b.units)), tuple(b.unlocated), dormant)


MAX_ENVS = 4  # distinct point variables a script is read with


@dataclass(frozen=True)
class _Use:
    """A changed spec-decode point running a script, with the variables it runs it with."""

    text: str
    run: resolver.PointRun
    agentic: bool
    prefix: str
    change: EntryChange
    env: Mapping[str, str]


def _entry_script_unit(ctx: Context, path: str, uses: list[_Use]) -> SpecUnit | None:
    """The unit of a script changed spec-decode points run: read with each distinct set of variables they
    give it (at most MAX_ENVS), its settings the union of what each run reaches."""
    first = uses[0]
    text, run, agentic, prefix, change = first.text, first.run, first.agentic, first.prefix, first.change
    refs = tuple(dict.fromkeys(_ref(u.run, u.agentic, u.prefix) for u in uses))
    declared = f"{change.key} (spec-decoding: {run.point.spec_decoding}, {change.path}:{run.point.line})"
    unit = None
    envs = list(dict.fromkeys(tuple(sorted(u.env.items())) for u in uses))[:MAX_ENVS]
    for env in envs:
        one = _script_unit(ctx, path, text, ctx.snap.changed(path) is not None, dict(env), refs, declared)
        if one is None:
            continue
        if unit is None:
            unit = one
        else:
            unit = replace(unit, configs=tuple(dict.fromkeys(unit.configs + one.configs)),
                           simulations=tuple(dict.fromkeys(unit.simulations + one.simulations)),
                           chain=unit.chain + tuple(x for x in one.chain if x not in unit.chain),
                           agentic=unit.agentic or one.agentic)
    if unit is not None:
        agentic = any(u.agentic for u in uses)
        unit = replace(unit, agentic=unit.agentic or agentic, model_prefix=prefix or unit.model_prefix)
    return unit


def _recipe_unit(ctx: Context, path: str, text: str, changed: bool, points: tuple[resolver.PointRun, ...],
                 env: Mapping[str, str] | None = None, force: bool = False) -> SpecUnit | None:
    """The spec unit of a recipe; None when it runs no speculative decoding."""
    name_spec = engines.spec_file_name(posixpath.basename(path))
    refs = []
    for run in points:
        entry_agentic = bool(_AGENTIC_WORD.search(run.key))
        for t in run.recipes:
            if t.path == path:
                refs.append(_ref(run, entry_agentic, "", t.selector))
    prefixes = [str(r.env.get("MODEL_PREFIX") or "") for r in points]
    declared = any(point_is_spec(r.key, r.point) for r in points)
    try:
        doc = ctx.yaml(text)
    except YamlProblem as exc:
        if not (name_spec or force or declared) and not re.search(r"speculative|SIMULATE_ACC", text):
            return None
        return SpecUnit(path, "recipe", text, changed, is_agentic_path(path), "", "", "thinking_on", (), (),
                        tuple(refs), exc.message, exc.line)
    configs, sims = recipe_settings(doc, path)
    sims = sims + tuple(s for r in refs for s in r.simulations)
    if not (configs or sims or name_spec or force):
        return None
    prefix = next((p for p in prefixes if p), "") or _prefix_beside(ctx, path)
    run_env = dict(env or (points[0].env if points else BASE_ENV))
    chain = _benchmark_chain(ctx, path, doc, run_env)
    agentic = (is_agentic_path(path) or any(r.agentic for r in refs)
               or any(is_agentic_path(x.path) for x in chain[1:]) or _replays(chain))
    return SpecUnit(path, "recipe", text, changed, agentic, recipe_engine(doc), prefix, thinking_mode(text),
                    configs, sims, tuple(refs), env=run_env, chain=chain)


def _prefix_beside(ctx: Context, path: str) -> str:
    """The model prefix of the entries running the other recipes of a recipe's directory, when they agree (a
    recipe no entry runs yet)."""
    found = set()
    for naming in recipe_index(ctx).beside(path):
        cfg = ctx.head_configs.get(naming.config_path)
        prefix = cfg.fields(naming.key).get("model-prefix") if cfg is not None else None
        if prefix:
            found.add(prefix)
    return found.pop() if len(found) == 1 else ""


def benchmark_commands(doc: object) -> list[tuple[str, str, int, dict[Any, Any]]]:
    """(variant, command, line, benchmark block) of every variant's custom `benchmark.command`."""
    out: list[tuple[str, str, int, dict[Any, Any]]] = []
    for name, config in variants(doc):
        bench = config.get("benchmark") if isinstance(config, dict) else None
        if isinstance(bench, dict) and isinstance(command := bench.get("command"), str):
            line = bench.line_of("command") if isinstance(bench, LineDict) else 1
            out.append((name, command, line, bench))
    return out


def _benchmark_chain(ctx: Context, path: str, doc: object, env: Mapping[str, str]) -> tuple[Reached, ...]:
    """What a recipe's custom benchmark command runs: the command (as a script at the recipe's path) and
    the repository scripts it runs, with the variables of its `benchmark.env`."""
    chain: list[Reached] = []
    seen: set[str] = set()
    for _name, command, line, bench in benchmark_commands(doc):
        if command in seen:
            continue
        seen.add(command)
        bench_env = bench.get("env")
        command_env = {**env, **{str(k): str(v) for k, v in bench_env.items() if not isinstance(v, (dict, list))}} \
            if isinstance(bench_env, dict) else dict(env)
        text = "\n" * (line - 1) + command  # findings on the command point at its line
        chain += [r for r in reach(ctx, path, command_env, is_client_candidate, text=text)
                  if r not in chain]
    return tuple(chain)


def _replays(chain: tuple[Reached, ...]) -> bool:
    """Some script of the chain replays agentic traces (`build_replay_cmd`)."""
    return any(x.trace is not None and any(c.words and "build_replay_cmd" in c.words[0] for c in x.trace.calls)
               for x in chain)


LIBRARY_LINES = 1_000_000  # the lines of the n-th file a script sources are numbered from n * LIBRARY_LINES


@dataclass(frozen=True)
class ScriptRun:
    """A script run as the speculative-decoding reader runs it (`bash.Script.run_every_engine`): the launches it
    reaches, the lines it runs, and the files it sourced in place (lines from n * LIBRARY_LINES are the n-th's)."""

    path: str
    launches: tuple[Launch, ...]
    visited: frozenset[int]
    libraries: tuple[str, ...]
    writes: tuple[Write, ...] = ()  # files written from heredocs (`bash.Write`)

    def where(self, line: int) -> tuple[str, int]:
        """(file, line) of a line of the run."""
        n = line // LIBRARY_LINES
        if 0 < n <= len(self.libraries):
            return self.libraries[n - 1], line - n * LIBRARY_LINES + 1
        return self.path, line


def script_run(ctx: Context, path: str, text: str, env: Mapping[str, str]) -> ScriptRun:
    """`path` (holding `text`) run with `env` by the speculative-decoding reader: every engine's launch, the
    files it sources run in place (read from the repository at head), file tests answered from it. Cached: a
    run whose variables answer what an earlier run of the script asked the same takes its path."""
    runs = ctx.once(_script_runs, path, text)
    for asked, found in runs:
        if all(env.get(k, NOT_GIVEN) == v for k, v in asked.items()):
            return found
    ran, questions = _script_run(ctx, path, text, env)
    if questions is not None:
        runs.append((questions, ran))
    return ran


def _script_runs(ctx: Context, path: str, text: str) -> list[tuple[Mapping[str, object], ScriptRun]]:
    return []


def _script_run(ctx: Context, path: str, text: str, env: Mapping[str, str]
                ) -> tuple[ScriptRun, Mapping[str, object] | None]:
    cache = head_reader(ctx)
    libraries: list[str] = []

    def sources(target: Token) -> tuple[str, tuple[Statement, ...]] | None:
        for value in target.values:
            for candidate in repo_paths(ctx, value, posixpath.dirname(path)):
                lib = cache.read(candidate) if candidate != path else None
                if lib is None:
                    continue
                if candidate not in libraries:
                    libraries.append(candidate)
                base = (libraries.index(candidate) + 1) * LIBRARY_LINES
                return candidate, ctx.once(_library, candidate, lib, base)
        return None

    found = ctx.script(text).run_every_engine(dict(env), f"./{path}", cache._file_test, sources)
    asked = None if found.asked is None else {k: v for k, v in found.asked.items() if k != "0"}
    return ScriptRun(path, found.launches, found.visited, tuple(libraries), found.writes), asked


def _library(ctx: Context, path: str, text: str, base: int) -> tuple[Statement, ...]:
    return statements(text, base)


def _script_unit(ctx: Context, path: str, text: str, changed: bool, env: Mapping[str, str],
                 refs: tuple[MasterRef, ...] = (), declared: str = "") -> SpecUnit | None:
    """The spec unit of a benchmark script and what it runs; None when it runs no speculative decoding (and
    no master point declares it). Each script of its chain but a sourced one (run in place) is run by the
    speculative-decoding reader with its variables: its launches give the settings; a script none of whose
    launches it reaches is read line by line."""
    name_spec = engines.spec_file_name(posixpath.basename(path))
    chain = reach(ctx, path, env, is_client_candidate)
    configs: list[SpecConfig] = []
    sims: list[Simulation] = []
    found_engines: list[str] = []
    for x in chain:
        if x.text is None or x.how == "source":
            continue
        run = script_run(ctx, x.path, x.text, {**THROUGHPUT_ENV, **x.env})
        for launch in run.launches:
            for options in _options(ctx, x, run, launch) or (None,):
                c, s = launch_settings(launch, x.path, run.where, options)
                configs += c
                sims += s
            found_engines.append(launch.engine)
    script = ctx.script(text)
    if not found_engines:  # no launch reached: read the script's lines
        read_configs, read_sims = script_settings(script, path, {**THROUGHPUT_ENV, **env})
        configs, sims = list(read_configs), list(read_sims)
    sims += [s for r in refs for s in r.simulations]
    if not (configs or sims or name_spec or declared):
        return None
    agentic = is_agentic_path(path) or _replays(chain)
    code = "\n".join(ln.code for ln in script.lines)
    configs = list(dict.fromkeys(configs))
    return SpecUnit(path, "script", text, changed, agentic,
                    found_engines[0] if found_engines else script_engine(text, path),
                    script_prefix(path), thinking_mode(code), tuple(sorted(configs, key=lambda c: c.line)),
                    tuple(dict.fromkeys(sims)), refs, env=dict(env), chain=chain,
                    declared="" if configs else declared)


def _options(ctx: Context, x: Reached, run: ScriptRun, launch: Launch) -> list[tuple[str, int, dict[str, str]]]:
    """(file, line, settings) of each options file a launch may read: written by the script (a heredoc or
    `echo`/`printf` the run reaches, expanded with the variables of that moment; one per write a branch the
    variables do not decide makes), else a repository file."""
    token = options_file(launch)
    if token is None:
        return []
    script = ctx.script(x.text or "")  # (a script the chain holds: `_script_unit`)
    out: list[tuple[str, int, dict[str, str]]] = []
    for value in token.values:
        if not value:
            continue
        for write in run.writes:
            if write.line >= LIBRARY_LINES or not any(
                    w == value or w and posixpath.basename(w) == posixpath.basename(value) for w in write.path.values):
                continue
            for body in script.written(write):
                text = "\n" * (body[0][0] - 1) + "\n".join(t for _n, t in body)
                found = _options_doc(ctx, launch.engine, text)
                if found is not None:
                    out.append((x.path, found[0], found[1]))
        if out:
            continue
        for candidate in repo_paths(ctx, value, posixpath.dirname(x.path)):
            held = head_reader(ctx).read(candidate)
            found = _options_doc(ctx, launch.engine, held) if held is not None else None
            if found is not None:
                out.append((candidate, found[0], found[1]))
                break
    unique = dict.fromkeys((f, n, tuple(sorted(d.items()))) for f, n, d in out)
    return [(f, n, dict(d)) for f, n, d in unique]


def _options_doc(ctx: Context, engine: str, text: str) -> tuple[int, dict[str, str]] | None:
    try:
        return options_settings(engine, ctx.yaml(text))
    except YamlProblem:
        return None
