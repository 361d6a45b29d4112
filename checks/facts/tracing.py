"""How the resolver traces a script and follows the scripts it runs (`checks.facts.runs` decides what a point runs).

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

Files the snapshot does not hold are evidence to fetch: the reads go through
`ctx.need`, which records them; traces are cached per Context (`HeadReader`).

API:
    trace(ctx, path, env, watch) -> one script run with a point's variables (e.g. its launcher)
    reach(ctx, path, env, watch) -> the scripts a script runs, transitively, each traced with its env
    repo_paths(ctx, value, base, cwd) -> where a path a script names is in the repository
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from checks.context import Context
from checks.evidence import Missing

from .bash import UNKNOWN, Run, Trace, reads_first_field

MAX_HOPS = 6  # scripts run by scripts run by ... the first one
MAX_REACHED = 24  # scripts one `reach` follows


Watch = Callable[[list[str | None]], bool]  # a command's words -> whether the trace records it


@reads_first_field
def no_watch(values: list[str | None]) -> bool:
    """The watch that records no command (one function everywhere: traces are cached by their watch)."""
    return False


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


class HeadReader:
    """The resolver's reads of the repository at head, through `ctx.need`, and its traces, through `ctx.once`
    (a trace that met a file the snapshot lacks is traced again once the snapshot holds more)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def read(self, path: str) -> str | None:
        """The text of `path` at head; None when absent or not known yet (then noted as missing)."""
        text = self.ctx.need.file("head", path)
        return None if isinstance(text, Missing) else text

    def exists(self, path: str) -> bool | None:
        """Whether the repository holds `path` at head; None (and noted as missing) when not known yet."""
        found = self.ctx.need.exists("head", path)
        return None if isinstance(found, Missing) else found

    def trace(self, path: str, text: str, env: Mapping[str, str], watch: Watch, dollar0: str,
              library: bool = False) -> Trace:
        return self.ctx.once(_trace, path, text, tuple(sorted(env.items())), watch, dollar0, library)

    def _file_test(self, value: str) -> bool | None:
        found = repo_paths(self.ctx, value)
        return self.exists(found[0]) if found else None


def _trace(ctx: Context, path: str, text: str, env: tuple[tuple[str, str], ...], watch: Watch, dollar0: str, library: bool) -> Trace:
    return ctx.script(text).trace(dict(env), dollar0, watch, head_reader(ctx)._file_test, not library, True)


def head_reader(ctx: Context) -> HeadReader:
    return ctx.once(HeadReader)


def trace(ctx: Context, path: str, env: Mapping[str, str], watch: Watch = no_watch) -> Trace | None:
    """`path` at head run with `env` (`Script.trace`, file tests answered from the repository, defaults of
    variables `env` does not give taken), cached; None when the snapshot does not hold it (noted as missing).
    E.g. which launcher branch a changed point reaches: `trace(ctx, launcher, run.env, watch)`."""
    cache = head_reader(ctx)
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


def known_env(run: Run) -> dict[str, str]:
    """The variables a run passes on: their value where it is decided, else UNKNOWN (set, value not known)."""
    return {name: t.values[0] if len(t.values) == 1 and isinstance(t.values[0], str) else UNKNOWN
            for name, t in run.env if name != "0"}


def reach(ctx: Context, path: str, env: Mapping[str, str], watch: Watch = no_watch,
          hops: int = MAX_HOPS, text: str | None = None) -> tuple[Reached, ...]:
    """`path` and the scripts it runs, transitively (at most `hops` runs deep, MAX_REACHED scripts), each
    traced with the variables it runs with; scripts the snapshot lacks are noted as missing. `text`: the
    first script's code when it is not the file at `path` (a recipe's benchmark command)."""
    cache = head_reader(ctx)
    out: list[Reached] = []
    queue: list[tuple[str, str, Mapping[str, str], tuple[tuple[str, int], ...], str]] = [(path, "", dict(env), (), path)]
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
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
            sub_env = {**current_env, **known_env(run)} if run.how == "source" else known_env(run)
            queue.append((target, run.how, sub_env, via + ((current, run.line),),
                          dollar0 if run.how == "source" else target))
        if how != "source":
            for line, target in ctx.once(_named_scripts_of, current, code):
                queue.append((target, "named", current_env, via + ((current, line),), target))
    return tuple(out)


_SCRIPT_VALUE = re.compile(r"^[^\s;&|<>'\"]+\.(?:sh|slurm|sbatch)$")


def _named_scripts_of(ctx: Context, path: str, text: str) -> tuple[tuple[int, str], ...]:
    """Repository scripts a script stores in a variable (`RUN_FILE="$WS_PATH/server.sh"`): it runs them where
    the interpreter cannot follow (inside a container or a job it submits), so they count as run by it. (Read
    once per script, through `ctx.once`: a script reached with several sets of variables names the same.)"""
    cache = head_reader(ctx)
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
    return tuple(out)


def _run_target(ctx: Context, cache: HeadReader, run: Run, script: str) -> str | None:
    """The repository file a run names: the first candidate the repository holds (noting unknown ones)."""
    cwd = run.cwd.values[0] if run.cwd is not None and len(run.cwd.values) == 1 else None
    candidates = [c for v in run.path.values for c in repo_paths(ctx, v, posixpath.dirname(script), cwd)]
    for c in dict.fromkeys(candidates):
        present = cache.exists(c)
        if present:
            return c
    return None
