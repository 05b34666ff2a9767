"""A bounded memory of made things: the most recently used kept, the least recently used dropped past the bound."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Recent", "RecentAgain"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


class Recent(Generic[K, V]):
    """The values of the `size` keys most recently asked for (each made once while it is kept)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for `key`, else `make()`'s (kept unless it raises); either way now the most recent."""
        value = self._kept.pop(key) if key in self._kept else make()
        self._kept[key] = value
        if len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return value


class RecentAgain(Generic[T, V]):
    """Values made for objects (by identity, and a tag), kept for the `size` objects most recently asked for again: an
    object asked for the first time gets a value that is not kept (one made per use, as a task made for each case,
    would fill the memory with values never asked for again); it is remembered, while something else holds it, so
    the next time its value is made and kept (with the object, so that its identity is not reused)."""

    def __init__(self, size: int) -> None:
        self._kept: Recent[tuple[int, Hashable], tuple[T, V]] = Recent(size)
        self._met: weakref.WeakValueDictionary[tuple[int, Hashable], T] = weakref.WeakValueDictionary()

    def get(self, owner: T, tag: Hashable, make: Callable[[], V]) -> V:
        key = (id(owner), tag)
        if self._met.get(key) is not owner:
            self._met[key] = owner
            return make()
        return self._kept.get(key, lambda: (owner, make()))[1]
