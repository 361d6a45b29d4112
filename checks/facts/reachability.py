"""Which lines of the changed files the configs the PR submits run (`reached`).

Check rules that judge a changed line only where a config runs it ask here:
the entries the PR adds or changes, and the unchanged entries that run a
script, recipe or launcher it changes, each point traced with its variables
(`checks.facts.runs` for what a point runs, `checks.facts.tracing` for following it). A
point's sizing decides a guard like any variable (an entry run with more than
MAX_SIZINGS sizings is traced without them). A benchmark script whose model
has more entries than are followed is narrowed to the entries its name fits
(`runs.named_env`: precision, framework, SKU); a file run by more entries
than that counts on every line.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Mapping

from checks.context import Context

from . import hardware
from .bash import Script, SimpleCommand, reads_call_names, reads_first_field
from .recipe_index import recipe_index
from .runs import SIZING, PointRun, head_points, iter_changed_runs, launchers, named_env, run_of
from .tracing import head_reader, reach
from .yamlload import LineDict, YamlProblem

MAX_SIZINGS = 4  # sizings of one entry's points traced each with its own; beyond it, traced without them
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


@reads_call_names
@reads_first_field
def _every(values: list[str | None]) -> bool:
    """Every command: its line is run (and its name, a function a library defines, runs that)."""
    return True


def reached(ctx: Context, files: tuple[str, ...]) -> Reachability:
    """`Reachability` of the configs the PR submits, for the lines of `files` (changed files), cached per
    Context: the entries it adds or changes, and those that run one of `files`."""
    return ctx.once(_reached, files)


def _submitted(ctx: Context, files: tuple[str, ...]) -> tuple[list[tuple[str, Mapping[str, Any], PointRun]], set[str]]:
    """(key, entry, point run) of the points the PR submits that matter for `files`, one per entry and set of
    variables (a point's sizing picks no branch), and the files run by too many entries to follow."""
    out: dict[tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...]], tuple[str, Mapping[str, Any], PointRun]] = {}

    def add(config_path: str, key: str, entry: Mapping[str, Any], run: PointRun) -> None:
        env = tuple(sorted(run.env.items()))
        out.setdefault((config_path, key, env, tuple(t.path for t in run.targets)), (key, entry, run))

    for change, run in iter_changed_runs(ctx):
        add(change.path, change.key, change.head or LineDict(), run)  # (`iter_changed_runs`: parsed heads)
    everywhere: set[str] = set()
    for path in files:
        running = _entries_running(ctx, path, MAX_RUNNING + 1)
        if len(running) > MAX_RUNNING:  # too many of the model's entries: those the script's name fits
            running = _entries_running(ctx, path, MAX_RUNNING + 1, by_name=True)
        if len(running) > MAX_RUNNING:
            everywhere.add(path)
            continue
        for config_path, key, entry in running:
            for point in head_points(ctx, config_path, key, entry):
                run = run_of(ctx, config_path, key, entry, point)
                if path in run.launchers or any(t.path == path for t in run.targets):
                    add(config_path, key, entry, run)
    return [out[k] for k in sorted(out)], everywhere


def _entries_running(ctx: Context, path: str, limit: int, by_name: bool = False
                     ) -> list[tuple[str, str, LineDict]]:
    """Head entries that may run `path`: those naming it as a recipe, those whose runner's launcher it is,
    and those a benchmark script is named after (its model prefix; with `by_name`, also its precision and
    framework, as the launchers pick a script by them: `named_env`); the first `limit` that parse (a file
    run by more is not followed, so the rest need not be parsed)."""
    named = named_env(path) if by_name else {}
    name_sku = posixpath.basename(path)[:-3].split("_")[2] if named else ""  # (`named_env`: the third field)
    keys: set[tuple[str, str]] = {(n.config_path, n.key) for n in recipe_index(ctx).get(path, ())}
    name = posixpath.basename(path)
    launcher = path.startswith("runners/")
    script = path.startswith("benchmarks/") and name.endswith(".sh")
    if launcher or script:
        prefix = name.split("_", 1)[0]
        launched: dict[str, bool] = {}  # runner label -> whether `path` is one of its launchers (asked once)
        for config_path, cfg in ctx.head_configs.items():
            for key, block in cfg.blocks.items():
                if script and prefix not in block.text:
                    continue  # its model-prefix, read from this text, cannot be the script's
                fields = cfg.fields(key)
                if script:
                    runs = fields.get("model-prefix") == prefix and all(
                        fields.get(key) == named[var] for key, var in (("precision", "PRECISION"),
                                                                       ("framework", "FRAMEWORK")) if var in named
                    ) and (not name_sku or hardware.sku(fields.get("runner")) == name_sku)
                else:
                    runner = fields.get("runner", "")
                    if runner not in launched:
                        launched[runner] = path in launchers(ctx, runner)
                    runs = launched[runner]
                if runs:
                    keys.add((config_path, key))
    out: list[tuple[str, str, LineDict]] = []
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
    cache = head_reader(ctx)
    lines: dict[str, set[int]] = {}
    sourced: set[str] = set()
    called: set[str] = set()
    undecided = ""
    submitted, everywhere = _submitted(ctx, files)
    sized: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}  # (entry, variables but its sizing) -> how many sizings it is run with
    for key, _entry, run in submitted:
        group = (key, tuple(sorted((k, v) for k, v in run.env.items() if k not in SIZING)))
        sized[group] = sized.get(group, 0) + 1
    traced: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for key, entry, run in submitted:
        # A point's sizing (TP, EP, DP attention, ...) decides a guard as much as any variable; an entry run with
        # more sizings than MAX_SIZINGS is traced without them (a guard on one then runs both ways).
        plain = {k: v for k, v in run.env.items() if k not in SIZING}
        env = dict(run.env) if sized[(key, tuple(sorted(plain.items())))] <= MAX_SIZINGS else plain
        if (key, tuple(sorted(env.items()))) in traced:
            continue
        traced.add((key, tuple(sorted(env.items()))))
        starts = [lp for lp in launchers(ctx, str(entry.get("runner") or "")) if cache.exists(lp)]
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


def _called_lines(script: Script, called: set[str]) -> set[int]:
    """The lines of the functions of `script` that `called` names, and of the functions those call."""
    bodies: dict[str, list[SimpleCommand]] = {}
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
