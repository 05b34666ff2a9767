"""Samples set aside: a failure that may be the first of an outage is not recorded at once.

The pacer tells an outage from one sample's fault by the failures of several samples in a row with no answer
between them (`providers/flow.py`). With requests in flight side by side those come at once; one request at a time
(`--concurrency 1`), the first samples an outage meets would spend their transport retries and be recorded as
errors before the samples after them made it one. So a sample that failed as the provider fails (5xx, a timeout, a
lost connection) with nothing answered since it started is set aside, unrecorded: the samples after it make the
outage, which is waited out, and it is posed again once something has been answered (or nothing else is left). It
is set aside once: failing again, after an answer, it is its own error.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import TypeVar

from pydantic_ai import ModelConnectionError, ModelHTTPError
from pydantic_ai.exceptions import ModelRequestTimeout

from typed_eval.providers.flow import Pacer
from typed_eval.providers.transport import REFUSED_HEADER

__all__ = ["SetAside", "provider_failure"]

Item = TypeVar("Item", bound=tuple[int, object, int])


def provider_failure(exc: BaseException | None) -> bool:
    """A failure an outage gives (a 5xx or 408, a timeout, a refused or lost connection), not an answer."""
    if isinstance(exc, ModelHTTPError):
        marked = REFUSED_HEADER in {name.lower() for name in (exc.headers or {})}  # refused here: an answer
        return (exc.status_code >= 500 or exc.status_code == 408) and not marked
    return isinstance(exc, ModelConnectionError | ModelRequestTimeout)


class SetAside(Iterator[Item]):
    """The samples to pose, numbered, with those set aside given back once something was answered after they were
    set aside, or once no other is left."""

    def __init__(self, pending: Iterator[Item], pacer: Pacer | None) -> None:
        self._pending = pending
        self._pacer = pacer
        self._held: deque[tuple[Item, float]] = deque()
        self._once: set[int] = set()
        self._exhausted = False

    def __next__(self) -> Item:
        if self._held and (self._exhausted or self._answered_since(self._held[0][1])):
            return self._held.popleft()[0]
        if not self._exhausted:
            item = next(self._pending, None)
            if item is not None:
                return item
            self._exhausted = True
        if self._held:
            return self._held.popleft()[0]
        raise StopIteration

    def hold(self, item: Item, started: float, exception: BaseException | None) -> bool:
        """Set `item` aside if its failure, begun at `started` (`time.monotonic()`), may be an outage's first:
        True, and it is not to be recorded."""
        if self._pacer is None or item[0] in self._once or not provider_failure(exception):
            return False
        if not self._pacer.failing_since(started):  # answered since, or failed elsewhere than through the gate
            return False
        self._once.add(item[0])
        self._held.append((item, time.monotonic()))
        return True

    def _answered_since(self, moment: float) -> bool:
        return self._pacer is not None and self._pacer.answered_since(moment)
