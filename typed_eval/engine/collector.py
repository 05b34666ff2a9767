"""Where each finished sample goes: scored, kept if asked, handed on, and weighed against the run's budgets."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pydantic_ai import ModelHTTPError

from typed_eval.contracts import SampleRecord
from typed_eval.core.counted_score import LEFT_OUT_STATUSES
from typed_eval.core.errors import CaseProblem
from typed_eval.core.scoring import ScoreBook
from typed_eval.core.tasks import Task
from typed_eval.engine.control import Budget, StopState

__all__ = ["COST_UNENFORCEABLE", "CREDENTIALS_REFUSED", "NOTHING_POSABLE", "Collector"]

COST_UNENFORCEABLE = "stopped: max_cost cannot be enforced without usage"
"""The start of a run's reason when an answer came with no usage that can be read (its cost is unknown)."""

CREDENTIALS_REFUSED = "stopped: the server refused the credentials mid-run"
"""The start of a run's reason when a 401 or 403 came after the first case (the run is `partial`)."""

NOTHING_POSABLE = "no case could be posed"
"""The start of the reason of a run whose every case failed before its request (each a `CaseProblem`): its data,
not its model."""


def _refused_credentials(exc: BaseException | None) -> bool:
    """A key revoked or refused mid-run: every later request would fail the same way."""
    return isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403)


class Collector:
    """Takes each finished sample: scores it, keeps it if asked, reports it, and stops the run when a budget is spent.

    The cost budget also gates each new sample: one starts only if the spend so far plus what the samples
    in flight and it are likely to cost (the mean cost of a sample so far) stays within `max_cost`, so a
    run at high concurrency overshoots by at most about one sample's cost, not by all those in flight.
    """

    def __init__(
        self,
        task: Task[Any],
        *,
        keep: bool,
        on_record: Callable[[SampleRecord], None] | None,
        budget: Budget,
        stop: StopState,
    ) -> None:
        self.book = ScoreBook(aggregate=task.aggregate, metrics=task.metrics)
        self.records: list[tuple[int, SampleRecord]] | None = [] if keep else None
        self._on_record = on_record
        self._budget = budget
        self._stop = stop
        self._in_flight = 0
        self._settled = asyncio.Event()
        self.first_error: str | None = None
        """The error of the first sample recorded, which says why a run where every sample failed is `dnf`."""
        self.unposable = 0
        """Samples whose case could not be posed (`CaseProblem`): when they are all, the run says so."""

    def add(self, index: int, record: SampleRecord, exception: BaseException | None = None) -> None:
        if not self.book.samples:
            self.first_error = record.error
        if isinstance(exception, CaseProblem):
            self.unposable += 1
        self.book.add(record, index)
        if self.records is not None:
            self.records.append((index, record))
        if self._on_record is not None:
            self._on_record(record)
        budget, stop = self._budget, self._stop
        if _refused_credentials(exception):
            stop.stop(f"{CREDENTIALS_REFUSED}: {record.error}")
        if budget.max_requests is not None and self.book.requests >= budget.max_requests:
            stop.stop(f"max_requests {budget.named_requests} reached")
        if budget.max_cost is not None and record.cost.usd is None and record.status not in LEFT_OUT_STATUSES:
            case = record.case_id
            if record.usage.input_tokens is None or record.usage.output_tokens is None:  # none sent, or untrue
                stop.stop(
                    f"{COST_UNENFORCEABLE} (${budget.named_cost:g}): the answer to case {case!r} came with no usage "
                    "that can be read, so its cost is unknown"
                )
            else:
                stop.stop(f"max_cost ${budget.named_cost:g} cannot be kept: the cost of case {case!r} is unknown")
        spent = self.book.cost_usd
        if budget.max_cost is not None and spent is not None and spent >= budget.max_cost:
            stop.stop(f"max_cost ${budget.named_cost:g} reached")

    def halt(self, case_cost: float | None, case_requests: int) -> str | None:
        """Why a sample that asks several times may not send its next request (the run is stopping, or what it spent
        so far would take the run past a budget), or None: it may."""
        budget, stop = self._budget, self._stop
        requests, spent = self.book.requests + case_requests, (self.book.cost_usd or 0.0) + (case_cost or 0.0)
        if budget.max_requests is not None and requests >= budget.max_requests:
            stop.stop(f"max_requests {budget.named_requests} reached")
        if budget.max_cost is not None and spent >= budget.max_cost:
            stop.stop(f"max_cost ${budget.named_cost:g} reached")
        return stop.reason

    async def admit(self) -> bool:
        """Wait until one more sample fits the budgets beside those in flight; False once none may start."""
        budget, stop = self._budget, self._stop
        while not stop.stopping:
            each = self.book.cost_per_sample
            spent = self.book.cost_usd or 0.0
            if budget.max_cost is None or each is None or spent + (self._in_flight + 1) * each <= budget.max_cost:
                self._in_flight += 1
                return True
            if not self._in_flight:
                stop.stop(f"max_cost ${budget.named_cost:g} reached: the next sample would pass it")
                return False
            settled = self._settled
            await settled.wait()
        return False

    def release(self) -> None:
        """A sample admitted by `admit` is done (recorded or not): wake those waiting for room."""
        self._in_flight -= 1
        self._settled.set()
        self._settled = asyncio.Event()
