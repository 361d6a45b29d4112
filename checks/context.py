"""Per-evaluation derived facts, computed once and shared by every check.

A `Context` wraps one immutable `Snapshot` and lazily derives what several
checks need: the repository policy, the sign-off, the parsed master configs,
the changed config entries, the added lines of each file, and each recipe
and script read once. It holds no state beyond caches of pure functions of
the snapshot.
"""

from __future__ import annotations

import difflib
import re
from functools import cached_property
from typing import Any, Callable, TypeVar

from . import masterconfig, shell, signoff
from .policy import CONFIG_PATH, Policy
from .snapshot import ChangedFile, Snapshot
from .yamlload import YamlProblem, load

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
T = TypeVar("T")


class Context:
    def __init__(self, snap: Snapshot):
        self.snap = snap
        self._added: dict[str, tuple[tuple[int, str], ...]] = {}
        self._derived: dict[Callable[[Context], Any], Any] = {}
        self._yaml: dict[str, Any | YamlProblem] = {}
        self._scripts: dict[str, shell.Script] = {}

    def once(self, derive: Callable[["Context"], T]) -> T:
        """`derive(self)`, computed the first time any check asks (`derive` must be a pure function)."""
        if derive not in self._derived:
            self._derived[derive] = derive(self)
        return self._derived[derive]

    def yaml(self, text: str) -> Any:
        """`yamlload.load(text)` (raising its YamlProblem), parsed once: a recipe is read by several checks
        and lint rules. The result is shared, so it is read, never changed."""
        if text not in self._yaml:
            try:
                self._yaml[text] = load(text)
            except YamlProblem as problem:
                self._yaml[text] = problem
        parsed = self._yaml[text]
        if isinstance(parsed, YamlProblem):
            raise parsed
        return parsed

    def script(self, text: str) -> shell.Script:
        """`shell.Script(text)`, lexed and parsed once: a benchmark script is read by checks 3 and 8-11."""
        if text not in self._scripts:
            self._scripts[text] = shell.Script(text)
        return self._scripts[text]

    @cached_property
    def _policy(self) -> tuple[Policy, tuple[str, ...]]:
        return Policy.from_yaml(self.snap.policy.get(CONFIG_PATH))

    @property
    def policy(self) -> Policy:
        return self._policy[0]

    @property
    def policy_problems(self) -> tuple[str, ...]:
        """What in `.github/signoff-bot.yml` was ignored and why (the verdict notes it)."""
        return self._policy[1]

    @cached_property
    def signoff(self) -> signoff.SignOff | None:
        return signoff.find(self.snap.comments, self.policy.signoff_phrase, self.snap.bot_login)

    @cached_property
    def base_configs(self) -> dict[str, masterconfig.MasterConfig]:
        return masterconfig.configs(self.snap, "base")

    @cached_property
    def head_configs(self) -> dict[str, masterconfig.MasterConfig]:
        return masterconfig.configs(self.snap, "head")

    @cached_property
    def changed_entries(self) -> list[masterconfig.EntryChange]:
        return masterconfig.changed_entries(self.base_configs, self.head_configs)

    def policy_file(self, *paths: str) -> tuple[str, str] | None:
        """(path, text) of the first of `paths` present on the base branch tip."""
        for path in paths:
            text = self.snap.policy.get(path)
            if text is not None:
                return path, text
        return None

    def added_lines(self, f: ChangedFile) -> tuple[tuple[int, str], ...]:
        """(line at head, text) of every line the PR adds to `f`; every line of an added file."""
        if f.path not in self._added:
            self._added[f.path] = _added_lines(f)
        return self._added[f.path]

    @property
    def changed_files(self) -> tuple[ChangedFile, ...]:
        """Files that exist at head (added, modified, renamed)."""
        return tuple(f for f in self.snap.files if f.status != "removed")


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


def _from_patch(patch: str):
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
