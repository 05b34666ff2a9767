"""The pacer's state: a small C structure of token buckets, counts and clocks, which forked processes can share (it
lives in memory mapped before they fork), and the lock they take to change it."""

from __future__ import annotations

import ctypes
import multiprocessing

from typed_eval.core.errors import EvaluatorError

__all__ = ["NOTES", "UNREADABLE_USAGE", "Bucket", "PaceState", "SharedLock", "lack", "refill", "reserve"]


class Bucket(ctypes.Structure):
    _fields_ = [("rate", ctypes.c_double), ("cap", ctypes.c_double), ("level", ctypes.c_double),
                ("stamp", ctypes.c_double)]  # fmt: skip
    rate: float
    """Refill per second; 0: no limit known."""
    cap: float
    level: float
    stamp: float


def refill(bucket: Bucket, now: float) -> None:
    if bucket.rate > 0:
        bucket.level = min(bucket.cap, bucket.level + (now - bucket.stamp) * bucket.rate)
    bucket.stamp = now


def lack(bucket: Bucket, cost: float, now: float) -> float:
    """Seconds until `cost` fits (0: now); a cost beyond the bucket fits once it is full, and leaves it owing."""
    if bucket.rate <= 0:
        return 0.0
    refill(bucket, now)
    short = min(cost, bucket.cap) - bucket.level
    return short / bucket.rate if short > 0 else 0.0


NOTES = (
    "a rate-limit reset of more than an hour (read as one minute)",
    "a negative or impossible remaining count (read as 0)",
    "a Retry-After in the past (waited the backoff instead)",
    "an unreadable rate-limit header (ignored)",
    "a Retry-After beyond the run's max wait (waited the max wait)",
    "usage that cannot be read (those answers' tokens and cost unknown)",
)
"""What the provider sent that could not be true, each said once (bit i of `PaceState.notes`)."""
UNREADABLE_USAGE = 5
"""The bit of `NOTES` an answer's usage that cannot be read sets (the transport reads it, not the pacer)."""


class PaceState(ctypes.Structure):
    _fields_ = [
        ("ceiling", ctypes.c_double), ("window", ctypes.c_double), ("in_flight", ctypes.c_int64),
        ("sent", ctypes.c_int64), ("cut_at", ctypes.c_int64), ("waiting", ctypes.c_int64),
        ("own_requests", Bucket), ("own_tokens", Bucket), ("requests", Bucket), ("tokens", Bucket),
        ("tokens_sent", ctypes.c_double), ("tokens_per_request", ctypes.c_double),
        ("pause_until", ctypes.c_double), ("backoff_s", ctypes.c_double),
        ("outage", ctypes.c_int32), ("probing", ctypes.c_int32), ("probe_at", ctypes.c_double),
        ("probe_delay", ctypes.c_double), ("outage_since", ctypes.c_double),
        ("failures", ctypes.c_int32), ("failing_samples", ctypes.c_int32), ("failing_key", ctypes.c_uint32),
        ("other_key", ctypes.c_uint32),
        ("progress_at", ctypes.c_double), ("typical_s", ctypes.c_double), ("max_wait_s", ctypes.c_double),
        ("throttled", ctypes.c_int64), ("waits", ctypes.c_int64), ("wait_s", ctypes.c_double),
        ("outages", ctypes.c_int64), ("outage_s", ctypes.c_double), ("into_outage", ctypes.c_int64),
        ("notes", ctypes.c_int32), ("gave_up_at", ctypes.c_double),
        ("stated_requests", ctypes.c_double), ("stated_tokens", ctypes.c_double),
    ]  # fmt: skip
    ceiling: float
    window: float
    in_flight: int
    sent: int
    cut_at: int
    waiting: int
    own_requests: Bucket
    own_tokens: Bucket
    requests: Bucket
    tokens: Bucket
    tokens_sent: float
    tokens_per_request: float
    pause_until: float
    backoff_s: float
    outage: int
    probing: int
    probe_at: float
    probe_delay: float
    outage_since: float
    failures: int
    failing_samples: int
    failing_key: int
    other_key: int
    progress_at: float
    typical_s: float
    max_wait_s: float
    throttled: int
    waits: int
    wait_s: float
    outages: int
    outage_s: float
    into_outage: int
    notes: int
    gave_up_at: float
    """When requests waiting then were stopped (-1: never); those arriving later wait afresh."""
    stated_requests: float
    """The request limit the provider states (per minute), as last read; 0: none."""
    stated_tokens: float


class SharedLock:
    """A lock of forked processes. It is held for microseconds of bookkeeping; one not released for 30 s was held by
    a process killed in those microseconds: the run fails in one line rather than hang."""

    _PATIENCE_S = 30.0

    def __init__(self) -> None:
        self._lock = multiprocessing.Lock()

    def __enter__(self) -> object:
        if not self._lock.acquire(timeout=self._PATIENCE_S):
            raise EvaluatorError("the pacer's lock was never released: a worker process died holding it")
        return self

    def __exit__(self, *_: object) -> None:
        self._lock.release()


def reserve(bucket: Bucket, least: float) -> float:
    """Room left unused in a stated bucket: the mirror is off by what refills while an answer travels back (and a
    token estimate by its error), so pace just under it."""
    return least + 0.1 * bucket.rate if bucket.rate > 0 else 0.0
