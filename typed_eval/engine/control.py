"""What may end a run early, as two objects: its budgets (cost, requests) and its stop state (Ctrl-C, a budget
spent, the provider's silence). The pacer that gates each request is a third (`typed_eval.providers.flow.Pacer`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from typed_eval.core.run_config import RunConfig

__all__ = ["Budget", "StopState"]


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
