"""Value records as cheap to build as a tuple, compared as a frozen dataclass compares.

A script of 1,500 lines builds a `ShellLine` per line and a `Token` per field it expands; a frozen
dataclass's `__init__` sets each field through `object.__setattr__` (~0.8 µs a record), a NamedTuple
builds one tuple (~0.2 µs). `record` gives a NamedTuple class the comparisons of a frozen dataclass: equal
only to a record of its own class with equal fields (never to a plain tuple or another record of the same
fields), unordered, and hashed as the dataclass hashes (the tuple of its fields).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, TypeVar

T = TypeVar("T", bound=type)
R = TypeVar("R", bound=tuple[object, ...])


def record(cls: T) -> T:
    # A tuple is answered here (False), not left to tuple's comparison, which would compare the fields.
    def __eq__(self: tuple[object, ...], other: object) -> bool:  # noqa: N807
        if other.__class__ is self.__class__:
            return tuple.__eq__(self, other)
        return False if isinstance(other, tuple) else NotImplemented

    def __ne__(self: tuple[object, ...], other: object) -> bool:  # noqa: N807
        if other.__class__ is self.__class__:
            return tuple.__ne__(self, other)
        return True if isinstance(other, tuple) else NotImplemented

    def unordered(self: tuple[object, ...], other: object) -> object:
        return NotImplemented

    cls.__eq__, cls.__ne__, cls.__hash__ = __eq__, __ne__, tuple.__hash__  # type: ignore[method-assign,assignment]  # (the point of `record`)
    cls.__lt__ = cls.__le__ = cls.__gt__ = cls.__ge__ = unordered  # type: ignore[operator]  # (as above)
    return cls


def builder(cls: type[R]) -> Callable[[tuple[object, ...]], R]:
    """A function building a `cls` record from the tuple of all its fields, in order: `cls(*fields)` without
    the NamedTuple's `__new__`, a Python function that is half the cost of building a small record (for the
    records built by the thousand: a script's lines)."""
    return partial(tuple.__new__, cls)
