"""Derived facts, computed once and shared by every check, across the evidence rounds of one PR.

A `Context` wraps the `Snapshot` and lazily derives what several checks
need: the repository policy, the sign-off, the parsed master configs, the
changed config entries, the added lines of each file, and each recipe and
script read once. Checks read evidence beyond the first snapshot through
`ctx.need` (`Need`): what the snapshot does not hold yet comes back as
`MISSING` and is recorded (`ctx.missing`), for the app to fetch.

One Context serves every round (`advance` gives it the fuller snapshot), so
a round does not parse again what an earlier one parsed. The rule that keeps
that honest: an entry of `once` records whether anything it read (itself or
through the entries it used) was missing, or came from `volatile` (a fact of
the evidence held so far, such as the directories fetched files show);
`advance` drops the entries that read something missing, and those whose
volatile facts changed. Everything else it holds is a pure function of what
never changes between rounds: the first snapshot, and evidence once known.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from . import progress
from .evidence import MISSING, Missing, UpstreamTarget, Wanted
from .facts import bash, masterconfig, signoff
from .facts.yamlload import YamlProblem, load
from .policy import Policy
from .snapshot import ArtifactFiles, ChangedFile, Snapshot, UpstreamDoc, WorkflowRun

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
T = TypeVar("T")


@dataclass
class _Reads:
    """What one cached computation read beyond what never changes."""

    missing: bool = False  # evidence the snapshot did not hold
    volatile: set[Callable[[Context], Any]] = field(default_factory=set)  # the `volatile` facts it used

    def add(self, other: "_Reads") -> None:
        self.missing = self.missing or other.missing
        self.volatile |= other.volatile


class Context:
    def __init__(self, snap: Snapshot):
        self.snap = snap
        self.need = Need(self)
        self._asked = _Asked(Wanted())
        self._missing: dict[str, set[Any]] = {}
        self._frames: list[_Reads] = []
        self._derived: dict[Hashable, tuple[Any, _Reads]] = {}
        self._volatile: dict[Callable[[Context], Any], Any] = {}

    # --- the cache --------------------------------------------------------

    def once(self, derive: Callable[..., T], *args: Hashable) -> T:
        """`derive(self, *args)`, computed the first time any check asks (`derive` must be a pure function
        of the context and `args`)."""
        return self.memo((derive, args) if args else derive, lambda: derive(self, *args))

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, once per `key` (which must name everything the pure computation depends on beyond
        the context)."""
        hit = self._derived.get(key)
        if hit is None:
            self._frames.append(_Reads())
            try:
                value = compute()
            finally:
                reads = self._frames.pop()
                self._note(reads)
            self._derived[key] = hit = (value, reads)
        else:
            self._note(hit[1])
        return hit[0]

    def volatile(self, derive: Callable[["Context"], T]) -> T:
        """`derive(self)`, a fact of the evidence held so far (it reads the snapshot, not `need`): computed
        once per round; entries that used it are kept by `advance` only while it stays the same."""
        if derive not in self._volatile:
            self._volatile[derive] = derive(self)
        self._note(_Reads(volatile={derive}))
        return self._volatile[derive]  # type: ignore[no-any-return]  # what `derive` returned, T by its key

    def _note(self, reads: _Reads) -> None:
        if self._frames and (reads.missing or reads.volatile):
            self._frames[-1].add(reads)

    def _missed(self, kind: str, item: Any) -> Missing:
        self._missing.setdefault(kind, set()).add(item)
        self._note(_Reads(missing=True))
        return MISSING

    def missing_files(self, at: str = "head") -> frozenset[str]:
        """The files at `at` the checks found missing so far in this round; a computation that reads a
        non-empty answer has read missing evidence."""
        sha = self.snap.sha_of(at)
        found = frozenset(p for s, p in self._missing.get("files", ()) if s == sha)
        if found:
            self._note(_Reads(missing=True))
        return found

    @property
    def missing(self) -> Wanted:
        """What the checks asked for since the last `advance` and the snapshot does not hold."""
        return Wanted(**{kind: tuple(sorted(items)) for kind, items in self._missing.items()})

    def advance(self, snap: Snapshot, asked: Wanted) -> None:
        """Go on with `snap`, the snapshot completed with what was `asked` for (everything asked so far).
        Entries that read missing evidence, or a volatile fact that changed, are computed again."""
        self.snap = snap
        self._asked = _Asked(asked)
        self._missing = {}
        old, self._volatile = self._volatile, {}
        changed = {d for d, value in old.items() if self.volatile(d) != value}
        self._derived = {k: v for k, v in self._derived.items()
                         if not v[1].missing and not (v[1].volatile & changed)}

    def yaml(self, text: str) -> Any:
        """`yamlload.load(text)` (raising its YamlProblem), parsed once: a recipe is read by several checks
        and lint rules. The result is shared, so it is read, never changed."""
        parsed = self.memo(("yaml", text), lambda: _load(text))
        if isinstance(parsed, YamlProblem):
            raise parsed
        return parsed

    def script(self, text: str) -> bash.Script:
        """`bash.Script(text)`, lexed and parsed once: a benchmark script is read by checks 3 and 8-11."""
        return self.memo(("script", text), lambda: _script(text))

    # What the first snapshot decides (the policy file, the comments, the master configs), derived through
    # `once` as every other fact: `advance` keeps them, as it keeps any entry that read nothing missing.

    @property
    def policy(self) -> Policy:
        return self.once(_policy)[0]

    @property
    def policy_problems(self) -> tuple[str, ...]:
        """What in `.github/signoff-bot.yml` was ignored and why (the verdict notes it)."""
        return self.once(_policy)[1]

    @property
    def signoff(self) -> signoff.SignOff | None:
        return self.once(_signoff)

    @property
    def base_configs(self) -> dict[str, masterconfig.MasterConfig]:
        return self.once(_base_configs)

    @property
    def head_configs(self) -> dict[str, masterconfig.MasterConfig]:
        return self.once(_head_configs)

    @property
    def changed_entries(self) -> list[masterconfig.EntryChange]:
        return self.once(_changed_entries)

    def policy_file(self, *paths: str) -> tuple[str, str] | None:
        """(path, text) of the first of `paths` present on the base branch tip."""
        for path in paths:
            text = self.snap.policy.get(path)
            if text is not None:
                return path, text
        return None

    def added_lines(self, f: ChangedFile) -> tuple[tuple[int, str], ...]:
        """(line at head, text) of every line the PR adds to `f`; every line of an added file."""
        return self.memo(("added", f.path), lambda: _added_lines(f))

    @property
    def changed_files(self) -> tuple[ChangedFile, ...]:
        """Files that exist at head (added, modified, renamed)."""
        return tuple(f for f in self.snap.files if f.status != "removed")


def _load(text: str) -> Any | YamlProblem:
    try:
        return load(text)
    except YamlProblem as problem:
        return problem


def _script(text: str) -> bash.Script:
    progress.reading(text)
    script = bash.Script(text)
    progress.reading(None)
    return script


def _policy(ctx: Context) -> tuple[Policy, tuple[str, ...]]:
    return Policy.from_yaml(ctx.snap.policy.get(ctx.snap.config_path), ctx.snap.config_path)


def _signoff(ctx: Context) -> signoff.SignOff | None:
    found = signoff.find(ctx.snap.comments, ctx.policy.signoff_phrase, ctx.snap.bot_login)
    if found is not None:
        progress.signed(found.author)
    return found


def _base_configs(ctx: Context) -> dict[str, masterconfig.MasterConfig]:
    return masterconfig.configs(ctx.snap, "base")


def _head_configs(ctx: Context) -> dict[str, masterconfig.MasterConfig]:
    return masterconfig.configs(ctx.snap, "head", ctx.base_configs)


def _changed_entries(ctx: Context) -> list[masterconfig.EntryChange]:
    return masterconfig.changed_entries(ctx.base_configs, ctx.head_configs)


def _added_lines(f: ChangedFile) -> tuple[tuple[int, str], ...]:
    if f.head_text is None:
        return ()
    if f.base_text is None:
        return tuple(enumerate(f.head_text.splitlines(), 1))
    if f.patch:
        return tuple(_from_patch(f.patch))
    head = f.head_text.splitlines()
    matcher = difflib.SequenceMatcher(None, f.base_text.splitlines(), head, autojunk=False)
    out: list[tuple[int, str]] = []
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("insert", "replace"):
            out.extend((j + 1, head[j]) for j in range(j1, j2))
    return tuple(out)


def _from_patch(patch: str) -> Iterator[tuple[int, str]]:
    line = 0
    for raw in patch.splitlines():
        m = _HUNK.match(raw)
        if m:
            line = int(m.group(1))
            continue
        if raw.startswith("+"):
            yield line, raw[1:]
            line += 1
        elif raw.startswith("-") or raw.startswith("\\"):
            continue
        else:
            line += 1


class _Asked:
    """What the app was asked to fetch so far, for the evidence a snapshot cannot show was fetched."""

    def __init__(self, asked: Wanted):
        self.runs = frozenset(asked.runs)
        self.teams = frozenset(asked.teams)
        self.golden = frozenset(asked.golden)


class Need:
    """Evidence beyond the first snapshot, as a check asks for it: the snapshot's answer, or `MISSING`
    (recorded on the context) while the snapshot does not hold it yet."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def file(self, at: str, path: str) -> str | None | Missing:
        """Text of `path` at "head", "base" or a commit SHA; None when absent or not text there."""
        snap = self._ctx.snap
        if not snap.knows(path, at):
            return self._ctx._missed("files", (snap.sha_of(at), path))
        return snap.read(path, at)

    def exists(self, at: str, path: str) -> bool | Missing:
        """Whether the repository holds `path` (as text) at `at`."""
        text = self.file(at, path)
        return text if isinstance(text, Missing) else text is not None

    def run(self, run_id: int) -> WorkflowRun | Missing:
        """The workflow run's record; MISSING while GitHub has not been asked (or does not know it)."""
        run = self._ctx.snap.run(run_id)
        return run if run is not None else self._ctx._missed("runs", run_id)

    def artifacts(self, run_id: int) -> tuple[ArtifactFiles, ...]:
        """The run's eval and benchmark artifacts, unpacked (its record then lists all its artifacts)."""
        held = self._ctx.snap.artifacts_of(run_id)
        if not held and run_id not in self._ctx._asked.runs:
            self._ctx._missed("runs", run_id)
        return held

    def member(self, team: str, login: str) -> bool | None | Missing:
        """Whether `login` is in team "org/slug"; None when GitHub would not tell."""
        teams = self._ctx.snap.teams
        key = team if team in teams else next((k for k in teams if k.lower() == team.lower()), None)
        if key is not None:
            return login.lower() in {m.lower() for m in teams[key]}
        if (team, login) in self._ctx._asked.teams:
            return None
        return self._ctx._missed("teams", (team, login))

    def permission(self, login: str) -> str | Missing:
        """`login`'s permission on the repository (none, read, triage, write, maintain, admin)."""
        known = self._ctx.snap.collaborators
        permission = known.get(login) or known.get(login.lower())
        return permission if permission is not None else self._ctx._missed("permissions", login)

    def upstream(self, target: UpstreamTarget) -> UpstreamDoc | Missing:
        """The upstream document a recipe link names."""
        doc = next((d for d in self._ctx.snap.upstream if d.url == target.url), None)
        return doc if doc is not None else self._ctx._missed("upstream", target)

    def golden(self, stem: str) -> tuple[tuple[str, str], ...]:
        """(path, text) of the golden AL curves of `stem` on the base branch tip (`Policy.is_golden_curve`)."""
        ctx = self._ctx
        directory = ctx.policy.golden_al_dir + "/"
        curves = tuple(sorted((p, t) for p, t in ctx.snap.policy.items() if p.startswith(directory)
                              and p.endswith(".yaml") and (p[len(directory):] == stem + ".yaml"
                                                           or p[len(directory):].startswith(stem + "_"))))
        if not curves and stem not in ctx._asked.golden:
            ctx._missed("golden", stem)
        return curves
