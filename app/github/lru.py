"""A bounded cache: entries weigh what the caller says, the least recently used go first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLru(Generic[K, V]):
    """key -> value, at most `max_bytes` in all; an entry heavier than that is not kept."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def get(self, key: K) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def put(self, key: K, value: V, size: int) -> None:
        self.discard(key)
        if size > self.max_bytes:
            return
        self._items[key] = (value, size)
        self.size += size
        while self.size > self.max_bytes:
            _key, (_value, dropped) = self._items.popitem(last=False)
            self.size -= dropped

    def discard(self, key: K) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.size -= item[1]
