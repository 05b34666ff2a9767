"""Flow control: one gate for every request of a run, paced to the limits the provider states, adapting where it
states none, and holding requests through an outage instead of spending the samples' retries on it.

A `Pacer` is one run's (or the runs' a caller hands the same one to). Its state is a small C structure, kept in
memory that forked processes share when it is made `shared`, so the parts of a `--workers` run keep one pace: one
count of requests in flight, one request and token budget, one outage. Every process waits by polling that state
(one waiter per process at a time, the others queued behind it), so no process needs to wake another.

- Stated limits (OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`) keep a mirror of the provider's
  token bucket: each answer resets it to what the provider says is left, less what was sent since; a request goes
  only when the mirror has room for it. `rpm`/`tpm` add buckets of the caller's own.
- Where nothing is stated: additive increase of the requests in flight while answers come back, halving on a 429 or
  on a latency blow-up (once per round trip), the run's concurrency being the ceiling; a 429 with no hint pauses
  every request for a backoff that doubles; `Retry-After` pauses every request that long, but one shorter than the
  first backoff is backed off from as from none (a stated wait of a millisecond would resend at once).
- A 429 is resent here, never handed to the SDK: waiting for capacity spends no transport retry. Failures (5xx,
  timeouts, refused connections) of several samples in a row with no answer between are an outage: from then on
  requests are held, one probe at a time goes out (backing off to a cap), and all go again once one is answered.
  A failure outside an outage goes back to the SDK, whose retries are the sample's own.
- Nothing answered for `max_wait_s` while requests wait: every waiting request raises `WaitedTooLong`, and the run
  stops as partial (its unrecorded samples are posed again by a resume).
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import mmap
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Literal

from typed_eval.core.errors import EvaluatorError
from typed_eval.providers.pace_state import NOTES, Bucket, PaceState, SharedLock, lack, reserve
from typed_eval.providers.rate_headers import http_date, number, stated_limits, states_limits

__all__ = ["DEFAULT_MAX_WAIT_S", "WAITED_TOO_LONG", "PaceReport", "Pacer", "WaitedTooLong"]

DEFAULT_MAX_WAIT_S = 600.0
"""How long requests may wait, with nothing answered, before a run stops as partial (`--max-wait`)."""

WAITED_TOO_LONG = "stopped: the provider gave no capacity"
"""The start of a run's reason when it stopped because requests waited past the max wait."""
_POLL_S = 0.005
"""How often a request waiting for room in flight (freed by any process) looks again."""
_OUTAGE_SAMPLES = 3
"""Samples that failed in a row, with no answer between them, that make an outage (one sample's own retries never
do: a prompt the server cannot answer is that sample's error)."""
_PROBE_FIRST_S = 0.5
_PROBE_CAP_S = 4.0
_BACKOFF_FIRST_S = 0.5
_BACKOFF_CAP_S = 30.0
_BLOW_UP = (8.0, 30.0)
"""A latency above both `8 x` the typical one (a moving mean) and that plus 30 s is the provider queueing: fewer in
flight. Answers that are merely long (a long output) pull the typical latency up with them."""
_MOST_TOKENS = 10_000_000.0
"""More tokens than any request uses: a usage past it teaches nothing of what a request costs."""


class WaitedTooLong(BaseException):
    """A request waited for capacity (or for an outage to end) past the run's `max_wait_s` with nothing answered.

    A BaseException, so the SDKs and the agent pass it through untouched instead of recording the sample as an
    error: the engine catches it, leaves the sample unrecorded, and stops the run as partial."""


@dataclass(frozen=True)
class PaceReport:
    """What flow control did in a run, for its summary."""

    rate_limited: int
    """Responses answered HTTP 429 (each resent, none a sample's failure)."""
    waits: int
    """Requests that waited for capacity or for an outage to end before going out."""
    wait_s: float
    """Their waits added up (requests waiting side by side each count)."""
    outages: int
    outage_s: float
    sent_into_outage: int
    """Requests that failed in an outage or made one (probes included)."""
    stated_rpm: float | None
    stated_tpm: float | None
    notes: tuple[str, ...]

    def since(self, earlier: PaceReport) -> PaceReport:
        """What happened after `earlier` was taken (a pacer that runs before this one used too)."""
        return replace(
            self,
            rate_limited=self.rate_limited - earlier.rate_limited,
            waits=self.waits - earlier.waits,
            wait_s=round(self.wait_s - earlier.wait_s, 3),
            outages=self.outages - earlier.outages,
            outage_s=round(self.outage_s - earlier.outage_s, 3),
            sent_into_outage=self.sent_into_outage - earlier.sent_into_outage,
        )


@dataclass(frozen=True)
class _Ticket:
    sent: int
    """The request's place in the run's sending order."""
    tokens_sent: float
    """Tokens sent before it (estimated): what the provider's count had not seen when it stated its remaining."""
    at: float
    probe: bool
    cost: float


Verdict = Literal["answered", "throttled", "failed"]


class Pacer:
    """One gate for a run's requests (see the module's docstring). `rpm` / `tpm` cap the run from the start; the
    limits the provider states apply as they are read. `concurrency` is the most requests in flight (None: as many
    as the runs pose at once). `shared`: the state lives in memory that processes forked after this share (make it
    before forking, as `--workers` does). `max_wait_s`: how long requests may wait with nothing answered."""

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        concurrency: int | None = None,
        shared: bool = False,
    ) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm), ("max_wait_s", max_wait_s)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise EvaluatorError(f"must be a finite number above 0, got {value}", parameter=name)
        if concurrency is not None and concurrency < 1:
            raise EvaluatorError(f"must be at least 1, got {concurrency}", parameter="concurrency")
        self.rpm, self.tpm, self.max_wait_s, self.concurrency = rpm, tpm, max_wait_s, concurrency
        size = ctypes.sizeof(PaceState)
        self._memory: mmap.mmap | bytearray = mmap.mmap(-1, size) if shared else bytearray(size)
        self._guard: AbstractContextManager[object] = SharedLock() if shared else threading.Lock()
        self._state = PaceState.from_buffer(self._memory)
        self._turns: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._seen: tuple[float, int] = (time.monotonic(), 0)
        self._pace = 0.0
        self.reset()

    def reset(self) -> None:
        """Start afresh (a new run on a shared pacer: the owner resets it before any part sends)."""
        with self._guard:
            ctypes.memset(ctypes.addressof(self._state), 0, ctypes.sizeof(PaceState))
            state, now = self._state, time.monotonic()
            state.ceiling = state.window = float(self.concurrency or 1 << 20)
            state.progress_at = now
            state.max_wait_s = self.max_wait_s
            state.gave_up_at = -1.0
            for bucket, per_minute in ((state.own_requests, self.rpm), (state.own_tokens, self.tpm)):
                if per_minute is not None:  # at most about the cap in any minute: a second's worth of burst
                    bucket.rate = per_minute / 60
                    bucket.cap = bucket.level = max(1.0, bucket.rate)
                    bucket.stamp = now

    async def send(
        self, key: str, cost: float, send: Callable[[], Awaitable[tuple[Verdict, Mapping[str, str], float | None]]]
    ) -> float:
        """Send one request through the gate, again while the provider is out of capacity or out of service:
        `send()` makes it and says how it went, with the response headers and the tokens it used (if known). Returns
        when `send` was answered, or failed outside an outage (the caller hands that to the SDK); the seconds it
        waited. `key` names the sample, `cost` estimates its tokens (learned from the answers once known)."""
        waited = 0.0
        sample = zlib.crc32(key.encode("utf-8"))
        since = time.monotonic()  # a request resent after a 429 or in an outage has waited since its first turn
        throttled = 0  # the 429s it met in a row
        while True:
            ticket, pause = await self._acquire(cost, since)
            waited += pause
            try:
                verdict, headers, used = await send()
            except BaseException:  # cancelled: the request is no longer in flight, and says nothing of the provider
                with self._guard:
                    self._state.in_flight -= 1
                    self._state.probing = 0 if ticket.probe else self._state.probing
                raise
            throttled = throttled + 1 if verdict == "throttled" else 0
            if self._settle(ticket, verdict, headers, used, sample, throttled):
                return waited

    async def _acquire(self, cost: float, since: float) -> tuple[_Ticket, float]:
        loop = asyncio.get_running_loop()
        if self._turns is None or self._turns[0] is not loop:
            self._turns = (loop, asyncio.Lock())
        started = time.monotonic()
        waited = False
        async with self._turns[1]:  # one waiter per process polls; the others queue behind it, in order
            try:
                while True:
                    now = time.monotonic()
                    with self._guard:
                        state = self._state
                        if state.tokens_per_request > 0:
                            cost = state.tokens_per_request
                        stopped = started <= state.gave_up_at
                        delay, ticket = (math.inf, None) if stopped else self._admit(state, now, cost)
                        if ticket is not None:
                            pause = now - started
                            if waited or pause > 0.001:  # in the queue behind this process's other waiters
                                state.wait_s += pause
                                state.waits += not waited
                                return ticket, pause
                            return ticket, 0.0
                        if not waited:
                            waited = True
                            state.waiting += 1
                            state.waits += 1
                        if stopped or now - max(state.progress_at, since) > state.max_wait_s:
                            state.gave_up_at = max(state.gave_up_at, now)
                            raise WaitedTooLong(
                                f"{WAITED_TOO_LONG}, or stayed out of service, for {state.max_wait_s:g} s (the max "
                                "wait); resume to carry on"
                            )
                    await asyncio.sleep(min(max(delay, _POLL_S), 1.0))
            finally:  # sent, stopped or cancelled: it waits no more
                if waited:
                    with self._guard:
                        self._state.waiting -= 1

    def _admit(self, state: PaceState, now: float, cost: float) -> tuple[float, _Ticket | None]:
        """How long until this request may go (None ticket), or its ticket, taken now."""
        if now < state.pause_until:
            return state.pause_until - now, None
        probe = False
        if state.outage:
            if state.probing or now < state.probe_at:
                return (state.probe_at - now) if not state.probing else _POLL_S, None
            probe = True
        elif state.in_flight >= max(1, int(state.window)):
            return _POLL_S, None
        short = max(
            lack(state.own_requests, 1.0, now),
            lack(state.requests, 1.0 + reserve(state.requests, 1.0), now),
            lack(state.own_tokens, cost, now),
            lack(state.tokens, cost + reserve(state.tokens, 0.5 * cost), now),
        )
        if short > 0:
            return short, None
        for bucket, taken in (
            (state.own_requests, 1.0),
            (state.requests, 1.0),
            (state.own_tokens, cost),
            (state.tokens, cost),
        ):
            if bucket.rate > 0:
                bucket.level -= taken
        ticket = _Ticket(state.sent, state.tokens_sent, now, probe, cost)
        state.sent += 1
        state.tokens_sent += cost
        state.in_flight += 1
        state.probing = state.probing or probe
        return 0.0, ticket

    def _settle(
        self,
        ticket: _Ticket,
        verdict: Verdict,
        headers: Mapping[str, str],
        used: float | None,
        sample: int,
        throttled: int = 0,
    ) -> bool:
        """Take a request's outcome (`throttled`: the 429s it met in a row, this one included); True if the caller
        may return it, False to send it again."""
        now = time.monotonic()
        with self._guard:
            state = self._state
            state.in_flight -= 1
            if ticket.probe:
                state.probing = 0
            self._read_limits(state, headers, ticket, now)
            if used is not None and 0 < used < _MOST_TOKENS:
                state.tokens_per_request = (
                    used if not state.tokens_per_request else (0.8 * state.tokens_per_request + 0.2 * used)
                )
            if verdict == "answered":
                self._answered(state, ticket, now)
                return True
            if verdict == "throttled":
                state.throttled += 1
                self._cut(state, ticket)
                self._pause_for(state, headers, throttled, now)
                return False
            return self._failed(state, ticket, headers, sample, now)

    def _answered(self, state: PaceState, ticket: _Ticket, now: float) -> None:
        state.progress_at = now
        state.failures = state.failing_samples = 0
        state.backoff_s = 0.0
        if state.outage:
            state.outage = 0
            state.outage_s += now - state.outage_since
        latency = now - ticket.at
        typical = state.typical_s if state.typical_s > 0 else latency
        blown = latency > max(_BLOW_UP[0] * typical, typical + _BLOW_UP[1])
        state.typical_s = 0.9 * typical + 0.1 * latency
        if blown:
            self._cut(state, ticket)
        else:
            state.window = min(state.ceiling, state.window + 1 / max(state.window, 1.0))

    @staticmethod
    def _cut(state: PaceState, ticket: _Ticket) -> None:
        """Halve the requests in flight, once per round trip (a request sent before the last cut says nothing new)."""
        if ticket.sent >= state.cut_at:
            state.window = max(1.0, min(state.window, float(state.in_flight + 1)) / 2)
            state.cut_at = state.sent

    def _failed(self, state: PaceState, ticket: _Ticket, headers: Mapping[str, str], sample: int, now: float) -> bool:
        """A 5xx, timeout or refused connection; False: an outage holds the request (it is sent again)."""
        if state.outage:
            state.into_outage += 1
            if ticket.probe:
                state.probe_delay = min(_PROBE_CAP_S, state.probe_delay * 2)
                state.probe_at = now + max(state.probe_delay, self._retry_after(state, headers) or 0.0)
            return False
        state.failures += 1
        if state.failures == 1:
            state.failing_key, state.other_key, state.failing_samples = sample, sample, 1
        elif sample not in (state.failing_key, state.other_key):
            state.other_key = sample if state.failing_samples == 1 else state.other_key
            state.failing_samples += 1
        if state.failing_samples < _OUTAGE_SAMPLES:
            return True
        state.outage, state.outages, state.outage_since = 1, state.outages + 1, now
        state.into_outage += state.failures
        state.probe_delay = _PROBE_FIRST_S
        state.probe_at = now + max(_PROBE_FIRST_S, self._retry_after(state, headers) or 0.0)
        return False

    def _pause_for(self, state: PaceState, headers: Mapping[str, str], throttled: int, now: float) -> None:
        """A 429: back off (doubling) when the provider gives no Retry-After, and wait as long as it says when it
        gives one; a stated wait under the first backoff (a millisecond would resend at once for as long as the
        429s go on) is backed off from as from none, doubling with the 429s the same request met in a row (0.5 s,
        1 s, 2 s... to 30 s)."""
        after = self._retry_after(state, headers)
        if after is None:  # stated limits that still show room (a daily quota): the mirror alone would resend at once
            state.backoff_s = min(_BACKOFF_CAP_S, max(_BACKOFF_FIRST_S, state.backoff_s * 2))
            after = state.backoff_s
        elif after < _BACKOFF_FIRST_S:
            after = min(_BACKOFF_CAP_S, _BACKOFF_FIRST_S * 2 ** min(throttled - 1, 16))
        state.pause_until = max(state.pause_until, now + after)

    @staticmethod
    def _retry_after(state: PaceState, headers: Mapping[str, str]) -> float | None:
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            text = headers.get(name)
            if text is None:
                continue
            seconds = number(text)
            if seconds is not None:
                seconds *= scale
            elif scale == 1.0 and (moment := http_date(text)) is not None:
                seconds = moment - time.time()
            else:
                state.notes |= 1 << 3
                continue
            if seconds <= 0:
                state.notes |= 1 << 2
                return None
            if seconds > state.max_wait_s:
                state.notes |= 1 << 4
            return min(seconds, state.max_wait_s)
        return None

    def _read_limits(self, state: PaceState, headers: Mapping[str, str], ticket: _Ticket, now: float) -> None:
        """Mirror the provider's buckets from what it states: what is left less what was sent since, refilled at
        the rate the limit and its reset give."""
        if not states_limits(headers):
            return
        kinds: tuple[tuple[Bucket, Literal["requests", "tokens"]], ...] = (
            (state.requests, "requests"),
            (state.tokens, "tokens"),
        )
        for bucket, kind in kinds:
            reading = stated_limits(headers, kind)
            if reading is None:
                continue
            limit, remaining, reset, notes = reading
            state.notes |= notes
            if limit is None or remaining is None:
                continue
            deficit, rate = limit - remaining, limit / 60  # a limit is stated per minute...
            if reset is not None and deficit >= 1 and reset >= 0.05:  # ...unless refilling the deficit says slower
                rate = min(rate, deficit / reset)
            bucket.rate, bucket.cap = rate, limit
            if kind == "requests":
                state.stated_requests = limit
            else:
                state.stated_tokens = limit
            since = (
                (state.sent - ticket.sent - 1)
                if kind == "requests"
                else (state.tokens_sent - ticket.tokens_sent - ticket.cost)
            )
            bucket.level = min(limit, remaining + rate * (now - ticket.at) - since)
            bucket.stamp = now

    def note(self, bit: int) -> bool:
        """Say once, for every process of the run, what the provider sent that could not be true (bit `bit` of
        `NOTES`): True the first time."""
        with self._guard:
            first = not self._state.notes & (1 << bit)
            self._state.notes |= 1 << bit
            return first

    def answered_since(self, moment: float) -> bool:
        """Whether a request was answered after `moment` (a `time.monotonic()`, the same clock in every process)."""
        with self._guard:
            return self._state.progress_at > moment

    def failing_since(self, moment: float) -> bool:
        """Whether requests went through this gate and failed, with nothing answered after `moment`: what the
        beginning of an outage looks like (a model that sends no request through it never does)."""
        with self._guard:
            return self._state.failures > 0 and self._state.progress_at <= moment

    @property
    def counts_tokens(self) -> bool:
        """A token budget applies (the caller's or a stated one): answers' usage teaches what a request costs."""
        state = self._state
        return state.own_tokens.rate > 0 or state.tokens.rate > 0

    def report(self) -> PaceReport:
        with self._guard:
            state = self._state
            stated = (state.stated_requests or None, state.stated_tokens or None)
            return PaceReport(
                rate_limited=state.throttled,
                waits=state.waits,
                wait_s=round(state.wait_s, 3),
                outages=state.outages,
                outage_s=round(state.outage_s, 3),
                sent_into_outage=state.into_outage,
                stated_rpm=round(stated[0], 1) if stated[0] else None,
                stated_tpm=round(stated[1], 1) if stated[1] else None,
                notes=tuple(text for bit, text in enumerate(NOTES) if state.notes & (1 << bit)),
            )

    def describe(self) -> str:
        """The pace now, for a progress display: in flight, per second, the limits read, and any wait."""
        now = time.monotonic()
        with self._guard:
            state = self._state
            sent, in_flight, waiting = state.sent, state.in_flight, state.waiting
            outage, probe_in = state.outage, max(0.0, state.probe_at - now)
            paused = state.pause_until > now
            limits = [
                f"{state.stated_requests:.0f} rpm" if state.stated_requests else "",
                f"{state.stated_tokens:.0f} tpm" if state.stated_tokens else "",
            ]
        then, before = self._seen
        if now - then >= 1.0:
            self._pace = (sent - before) / (now - then)
            self._seen = (now, sent)
        stated = ", ".join(limit for limit in limits if limit)
        text = f"{in_flight} in flight, {self._pace:.1f} req/s" + (f" (limit {stated})" if stated else "")
        if outage:
            return f"{text} | provider unavailable, retrying in {probe_in:.0f} s"
        if waiting or paused:
            return f"{text} | waiting for capacity"
        return text
