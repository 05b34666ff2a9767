"""How a run is driven and watched from outside, and what may end it early: the `RunControl` a caller hands
`evaluate()` and `run()` (never stored), its budgets (cost, requests) and its stop state (Ctrl-C, a budget spent, the
provider's silence). The pacer that gates each request is a third (`typed_eval.providers.flow.Pacer`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from typed_eval.contracts import SampleRecord
from typed_eval.core.errors import InputError
from typed_eval.core.run_config import RunConfig
from typed_eval.providers.flow import Pacer
from typed_eval.providers.transport import TrafficMeter

if TYPE_CHECKING:  # workers.py imports this module
    from typed_eval.engine.workers import WorkerProcesses, WorkerShare

__all__ = ["Budget", "RunControl", "StopForced", "StopState", "control_of"]


class StopForced(KeyboardInterrupt):
    """A stop signal the event loop could not take (a scorer or a check blocked it), raised where the run was: it
    ends as Ctrl-C ends it, what is written kept. A `KeyboardInterrupt`, so asyncio lets it through at once."""

    def __init__(self, reason: str, exit_code: int) -> None:
        super().__init__(reason)
        self.reason, self.exit_code = reason, exit_code


@dataclass(frozen=True)
class Budget:
    """How much a run may spend: no sample starts once the known cost reaches `max_cost` USD, or once `max_requests`
    model requests were made. None: no limit."""

    max_cost: float | None = None
    max_requests: int | None = None
    named: tuple[float | None, int | None] | None = None
    """The whole run's (max_cost, max_requests) when this is one part's share of them (`--workers`): what a stop's
    reason names, since the user set those."""

    @classmethod
    def of(cls, config: RunConfig) -> Budget:
        return cls(max_cost=config.max_cost, max_requests=config.max_requests)

    @property
    def limited(self) -> bool:
        return self.max_cost is not None or self.max_requests is not None

    @property
    def named_cost(self) -> float | None:
        return (self.named or (self.max_cost, self.max_requests))[0]

    @property
    def named_requests(self) -> int | None:
        return (self.named or (self.max_cost, self.max_requests))[1]

    def share(self, parts: int) -> Budget:
        """One of `parts` parts' share, each part gating its samples as a whole run does, so the run overshoots by at
        most about one sample per part."""
        requests = -(-self.max_requests // parts) if self.max_requests is not None else None
        cost = self.max_cost / parts if self.max_cost is not None else None
        return Budget(cost, requests, named=(self.named_cost, self.named_requests))


@dataclass
class StopState:
    """Stops a run cleanly, from outside (Ctrl-C) or from inside (a budget spent): no new sample starts, those in
    flight get `grace_s` seconds to finish and are then cancelled (unrecorded, so a resume poses them again)."""

    grace_s: float = 10.0
    reason: str | None = None
    """Why the run was stopped; None while it runs."""
    _event: asyncio.Event | None = field(default=None, repr=False)

    def stop(self, reason: str) -> None:
        """Stop with `reason`; the first reason given is kept."""
        if self.reason is None:
            self.reason = reason
            if self._event is not None:
                self._event.set()

    @property
    def stopping(self) -> bool:
        return self.reason is not None

    async def stopped(self) -> None:
        self._event = self._event or asyncio.Event()
        if self.reason is None:
            await self._event.wait()


@dataclass(frozen=True)
class RunControl:
    """How the calling process drives and watches a run: objects of this process (a stop state, callbacks, a pacer
    shared between runs, worker processes), never stored and never part of what the run is (its `RunConfig`), so a
    resumed run needs none of them. Every field is optional; `RunControl()` is a run left to itself."""

    stop: StopState | None = None
    """Stops the run early from outside (Ctrl-C): no new sample starts, those in flight get its grace period."""
    on_record: Callable[[SampleRecord], None] | None = None
    """Called with each sample's record as it finishes (`run()`: once it is on disk)."""
    on_start: Callable[[int, Path], None] | None = None
    """`run()` only: called with the number of samples to pose and the run folder, before the first request."""
    pacer: Pacer | None = None
    """Paces every request (`rpm`, `tpm`, `max_wait_s`); runs handed one pacer share its pace. None: the run makes its
    own from its config's `rpm`, `tpm` and `max_wait_s`."""
    traffic: TrafficMeter | None = None
    """Gauges the run's transport as it goes (for a progress display)."""
    keep_records: bool = True
    """`evaluate()` only: False keeps memory flat on huge runs (records then reach only `on_record`); `run()` keeps
    its records on disk, never in memory."""
    workers: WorkerProcesses | WorkerShare | None = None
    """`run()` only: the processes that pose the run's samples with this one (see `typed_eval.engine.workers`)."""


def control_of(control: RunControl | None, *, stores: bool) -> RunControl:
    """`control` checked (None: a run left to itself). `stores`: for `run()`; `evaluate()` poses in this process and
    has no run folder, so a control with `workers` or `on_start` is refused there rather than ignored."""
    if control is None:
        return RunControl()
    if not isinstance(control, RunControl):
        raise InputError(f"must be a RunControl, got {type(control).__name__}", parameter="control")
    if not stores:
        for name in ("workers", "on_start"):
            if getattr(control, name) is not None:
                raise InputError("is run()'s: evaluate() poses in this process and stores no run", parameter=name)
    return control
