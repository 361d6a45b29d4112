"""The process's one kind of cache: a pure reading of a text, kept by that text, up to a bound.

Two kinds of memory serve a verification. What one verification derives is
memoised on its `Context` (`ctx.once`, `ctx.memo`), and evidence beyond the
first snapshot is read through `ctx.need` only: that memory lives and dies
with the verification, and `Context.advance` drops what a new round changes.
What outlives a verification is kept here, and only this: the reading of a
text (a parse, a compiled pattern, a script's statements), a pure function
of its arguments, whose value is immutable and so may be shared by every
verification and every thread (a base-branch library or launcher repeats
across PRs and evidence rounds, and parsing it is most of reading it).

`reading(maxsize)` wraps the function in `functools.lru_cache` (bounded,
least recently used out first, safe to call from any thread: two threads
asking at once may both compute, and get equal values) and registers it, so
that `clear()` empties every such cache: the benchmark's cold runs do, with
no search of the modules for caches.

A `cached_property` is left only on an object built from one text (a
`MasterConfig`, a `bash.Script`, a `Source`): what it derives is a reading of
that text, which the object never changes. Nothing on the `Context` is one:
what it derives goes through `once`, which `advance` keeps or drops.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_READINGS: list[Any] = []  # every cache `reading` made, for `clear`


def reading(maxsize: int) -> Callable[[F], F]:
    """Decorate a pure function of hashable arguments whose value is immutable: its results are kept, up to
    `maxsize` of them, for the life of the process (until `clear`)."""
    if maxsize <= 0:
        raise ValueError("a reading's cache is bounded: maxsize must be positive")

    def wrap(fn: F) -> F:
        cached = lru_cache(maxsize=maxsize)(fn)
        _READINGS.append(cached)
        return cached  # type: ignore[return-value]

    return wrap


def clear() -> int:
    """Empty every cache `reading` made; returns how many there are."""
    for cached in _READINGS:
        cached.cache_clear()
    return len(_READINGS)
