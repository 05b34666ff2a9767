"""A bounded memory of made things: the most recently used kept, the least recently used dropped past the bound."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Recent"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


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
