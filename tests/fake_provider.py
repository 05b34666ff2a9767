"""A provider that rations capacity, in front of any `FakeOpenAI` reply: token buckets of requests and of tokens per
minute, refilled continuously, with the headers OpenAI sends on every answer (`x-ratelimit-*`) and `Retry-After`
on a 429; an outage (HTTP 503 to everything for a while); latency. Counts what it served, refused and received
during the outage, so tests and the benchmark read exact figures from the server's side.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fake_openai import Fault, Reply

__all__ = ["Bucket", "Rationed", "openai_duration"]


def openai_duration(seconds: float) -> str:
    """How OpenAI writes a reset: `20ms`, `1.5s`, `6m0s`."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


@dataclass
class Bucket:
    """`per_minute` refilled continuously, holding at most `capacity` (default: a minute's worth), `level` at the
    start (default: full)."""

    per_minute: float
    capacity: float | None = None
    level: float | None = None

    def __post_init__(self) -> None:
        self.capacity = self.per_minute if self.capacity is None else self.capacity
        self.level = self.capacity if self.level is None else self.level
        self._stamp = time.monotonic()

    def refill(self, now: float) -> float:
        assert self.capacity is not None and self.level is not None
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.per_minute / 60)
        self._stamp = now
        return self.level

    def headers(self, kind: str, now: float) -> dict[str, str]:
        level = self.refill(now)
        assert self.capacity is not None
        full_in = (self.capacity - level) * 60 / self.per_minute
        return {
            f"x-ratelimit-limit-{kind}": str(int(self.per_minute)),
            f"x-ratelimit-remaining-{kind}": str(max(0, math.floor(level))),
            f"x-ratelimit-reset-{kind}": openai_duration(full_in),
        }


class Rationed:
    """`reply` behind a provider's rationing. A request is refused (429, with `Retry-After` in whole seconds as
    OpenAI sends it) when either bucket lacks room for it; a request costs one from `requests` and its tokens (as
    `tokens_of` counts them) from `tokens`. During `outage` (start and length in
    seconds from the first request) every request is answered 503 after `latency_s`. `headers=False`: a provider that
    states nothing but its 429s."""

    def __init__(
        self,
        reply: Reply,
        *,
        requests: Bucket | None = None,
        tokens: Bucket | None = None,
        latency_s: float = 0.0,
        outage: tuple[float, float] | None = None,
        headers: bool = True,
        tokens_of: Callable[[dict[str, Any]], int] = lambda request: 110,
    ) -> None:
        self.reply, self.requests, self.tokens = reply, requests, tokens
        self.latency_s, self.outage, self.states, self.tokens_of = latency_s, outage, headers, tokens_of
        self.served = self.refused = self.unavailable = 0
        self.into_outage = 0
        """Requests received while the outage lasted."""
        self.in_flight = self.most_in_flight = 0
        self._first: float | None = None
        self._lock = threading.Lock()

    def _stated(self, now: float) -> dict[str, str]:
        if not self.states:
            return {}
        stated: dict[str, str] = {}
        for bucket, kind in ((self.requests, "requests"), (self.tokens, "tokens")):
            if bucket is not None:
                stated.update(bucket.headers(kind, now))
        return stated

    def __call__(self, request: dict[str, Any]) -> Fault:
        now = time.monotonic()
        cost = self.tokens_of(request)
        with self._lock:
            self._first = self._first if self._first is not None else now
            if self.outage is not None and 0 <= now - self._first - self.outage[0] < self.outage[1]:
                self.into_outage += 1
                self.unavailable += 1
                body = {"error": {"message": "the service is unavailable", "type": "server_error"}}
                return Fault(503, body, delay_s=self.latency_s)
            short = [
                (need - bucket.refill(now)) * 60 / bucket.per_minute
                for bucket, need in ((self.requests, 1.0), (self.tokens, float(cost)))
                if bucket is not None and bucket.refill(now) < need
            ]
            if short:
                self.refused += 1
                stated = {**self._stated(now), "retry-after": str(max(1, math.ceil(max(short))))}
                body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
                return Fault(429, body, headers=stated)
            for bucket, need in ((self.requests, 1.0), (self.tokens, float(cost))):
                if bucket is not None:
                    bucket.level = (bucket.level or 0.0) - need
            self.served += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            stated = self._stated(now)
        try:
            answer = self.reply(request)
        finally:
            time.sleep(self.latency_s)
            with self._lock:
                self.in_flight -= 1
        if isinstance(answer, Fault):
            return answer
        body = answer[1] if isinstance(answer, tuple) else answer
        return Fault(200, body, headers=stated)
