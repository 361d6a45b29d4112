"""Where the checks are, for whoever must stop them: the rule running and the text being parsed.

The checks process (app/judge.py) is killed when a verification outruns its
budget; what it was doing then is the evidence the verdict of the overrun
names (`checks.budget`). The rules call `rule`, `reading` and `signed` as they
go; nothing listens unless a process set a `Watcher` (`watch`), so in the
thread, the CLI and the tests each call costs one test of a global. Nothing
the checks decide depends on it.
"""

from __future__ import annotations

from typing import Protocol


class Watcher(Protocol):
    def note(self, what: str, value: str) -> None: ...


_WATCHER: Watcher | None = None


def watch(watcher: Watcher | None) -> None:
    """Send every note to `watcher` (None: to nobody) from now on, in this process."""
    global _WATCHER
    _WATCHER = watcher


def rule(rule_id: str) -> None:
    """A rule starts."""
    if _WATCHER is not None:
        _WATCHER.note("rule", rule_id)


def reading(text: str | None) -> None:
    """A reader starts parsing `text` (None: it is done), known by its `fingerprint`."""
    if _WATCHER is not None:
        _WATCHER.note("text", "" if text is None else fingerprint(text))


def reading_again(mark: str) -> None:
    """A reader goes back to a text it parsed before, known by its `fingerprint` `mark`."""
    if _WATCHER is not None:
        _WATCHER.note("text", mark)


def signed(login: str) -> None:
    """The sign-off was found: `login` posted it."""
    if _WATCHER is not None:
        _WATCHER.note("signer", login)


FINGERPRINT_CHARS = 40


def fingerprint(text: str) -> str:
    """A text's length and first characters: enough to find which file of the snapshot it is (or holds it),
    at a cost that does not grow with the text."""
    return f"{len(text)}:{text[:FINGERPRINT_CHARS]}"
