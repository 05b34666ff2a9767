"""A lock for many readers at once, or one writer alone: the case store's queries read a run's tables while a load
of a changed run replaces them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["ReadWriteLock"]


class ReadWriteLock:
    """Many readers at once, or one writer alone; a waiting writer goes before new readers."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writers = 0  # waiting or writing

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writers)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._changed:
            self._writers += 1
            self._changed.wait_for(lambda: not self._readers)
        try:
            yield
        finally:
            with self._changed:
                self._writers -= 1
                self._changed.notify_all()
