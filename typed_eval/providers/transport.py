"""The HTTP layer under the provider SDKs: count transport retries per sample, and cache responses on request.

Retrying itself is the SDK's (openai, anthropic, google-genai: exponential backoff with jitter, `max_retries`
times, 2 for every provider unless told). openai and anthropic mark each retried request with
`x-stainless-retry-count`, which is how we tell a transport retry from a new request (corrective retries are new
requests of the agent); google-genai's resend is the request that follows a retryable failure. A 4xx that no resend
can change (any but 408, 409 and 429: a context length exceeded) is never resent, whatever the server's
`x-should-retry` says: sent once, counted once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import threading
import warnings
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
from pydantic_ai.models import create_async_httpx2_client

from typed_eval.core.errors import ResultFileError
from typed_eval.core.secrets import Redactor
from typed_eval.providers.answer_body import (
    UnreadableUsageWarning,
    answered_error,
    error_status,
    unreadable_usage,
    without_usage,
)
from typed_eval.providers.flow import Pacer, Verdict
from typed_eval.providers.pace_state import UNREADABLE_USAGE

__all__ = [
    "MAX_BODY",
    "REFUSED_HEADER",
    "ResponseCache",
    "SampleTraffic",
    "TrafficMeter",
    "current_traffic",
    "http_client",
    "meter_model",
]

_RETRYABLE = frozenset({408, 409, 429})
MAX_BODY = 64 << 20
"""The most bytes of one answer, decompressed, that a run reads."""
REFUSED_HEADER = "x-typed-eval-refused"
"""Marks an answer refused here (too large): the provider did answer, so it says nothing of an outage."""


@dataclass
class TrafficMeter:
    """One run's gauges for the progress display: retries so far and samples backing off right now."""

    transport_retries: int = 0
    waiting_now: int = 0
    batch_states: dict[str, int] = field(default_factory=dict)
    """With a batch API: how many batches are in each state, and how many samples wait on one (`waiting`)."""
    pacer: Pacer | None = None
    """The run's gate, whose pace and waits a progress display shows."""
    unreadable_usage: str | None = None
    """The first usage the server sent that cannot be read (said once, as a warning), or None."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def usage_unreadable(self, said: str) -> None:
        """An answer's usage cannot be read: its tokens and cost are unknown. Said once a run, in all its processes
        when they share a pacer (with `--workers`), which keeps it among the notes of the summary's pacing too."""
        with self._lock:
            first, self.unreadable_usage = self.unreadable_usage is None, self.unreadable_usage or said
        if self.pacer is not None:
            first = self.pacer.note(UNREADABLE_USAGE)
        if first:
            warnings.warn(
                UnreadableUsageWarning(
                    f"the server sent usage that cannot be read ({said}): the tokens and cost of such answers are "
                    "unknown"
                ),
                stacklevel=2,
            )

    def retried(self) -> None:
        with self._lock:
            self.transport_retries += 1

    def waiting(self, change: int) -> None:
        with self._lock:
            self.waiting_now += change


@dataclass
class SampleTraffic:
    """What one sample's requests met on the wire, reported to its run's meter."""

    meter: TrafficMeter
    pacer: Pacer | None = None
    """The run's gate every request of the sample goes through (None: sent as they come)."""
    key: str = ""
    """Names the sample to the pacer (an outage is failures of several samples)."""
    redact: Redactor | None = None
    """The run's secrets, kept out of what the response cache stores too."""
    transport_retries: int = 0
    cache_hits: int = 0
    rate_limited: int = 0
    """Responses answered HTTP 429 (resent by the pacer)."""
    wait_s: float = 0.0
    """Seconds the sample's requests waited for capacity or for an outage to end."""
    waiting: bool = False
    """A retryable failure was answered and the SDK is backing off before the next attempt."""

    def set_waiting(self, waiting: bool) -> None:
        if self.waiting != waiting:
            self.waiting = waiting
            self.meter.waiting(1 if waiting else -1)

    def sent(self, request: httpx2.Request) -> None:
        """The OpenAI and Anthropic SDKs number their resends in a header; Google's does not, so there a request
        sent while the sample waits after a retryable failure is the resend."""
        marked = request.headers.get("x-stainless-retry-count")
        resend = int(marked or 0) > 0 if marked is not None else self.waiting
        self.set_waiting(False)
        if resend:
            self.transport_retries += 1
            self.meter.retried()

    def failed(self, status: int | None) -> None:
        """A response the SDK will retry (or no response at all): the sample now waits for its backoff."""
        if status is None or status in _RETRYABLE or status >= 500:
            self.set_waiting(True)


current_traffic: ContextVar[SampleTraffic | None] = ContextVar("current_traffic", default=None)
"""Set by the evaluator around each sample, so the requests made in its task are counted for it (and its run)."""


class ResponseCache:
    """Successful responses keyed by the full request (URL and body: model, settings, messages, tools)."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, status INTEGER, headers TEXT, body BLOB)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise ResultFileError(
                f"cannot open the response cache {path}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        self._lock = threading.Lock()
        self.broken: str | None = None

    @staticmethod
    def key(request: httpx2.Request, body: bytes) -> str:
        return hashlib.sha256(request.method.encode() + b" " + str(request.url).encode() + b"\n" + body).hexdigest()

    def get(self, key: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        with self._lock:
            row = self._db.execute("SELECT status, headers, body FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        headers = [tuple(line.split(": ", 1)) for line in row[1].split("\n") if ": " in line]
        return int(row[0]), [(name, value) for name, value in headers], bytes(row[2])

    def put(self, key: str, status: int, headers: httpx2.Headers, body: bytes, redact: Redactor | None = None) -> None:
        """Keep an answer: a JSON object (a proxy's HTML page with status 200 is no answer to replay), with the
        run's secrets redacted. A cache that cannot be written (a full disk) is skipped from then on, `broken`
        saying why: the paid answer is recorded all the same."""
        if self.broken is not None or not _json_object(body):
            return
        if redact is not None and redact.active:
            body = redact(body.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        kept = "\n".join(f"{k}: {v}" for k, v in headers.items() if k.lower() == "content-type")
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", (key, status, kept, body))
        except (OSError, sqlite3.Error) as exc:
            self.broken = f"the response cache cannot be written ({exc}): answers are no longer kept in it"
            logging.getLogger("typed_eval").warning("warning: %s", self.broken)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _MeteredTransport(httpx2.AsyncBaseTransport):
    """Counts each request for the sample being posed (if any), answers from the cache when it has one, sends it
    through the run's pacer (which resends a 429, and a failure in an outage, itself), and bounds each sending,
    body included, by `deadline_s` (a read timeout alone lets a server that drips a byte a second hold a request
    forever)."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        cache: ResponseCache | None,
        deadline_s: float | None = None,
        *,
        paced: bool = True,
    ) -> None:
        self._inner = inner
        self._cache = cache
        self._deadline_s = deadline_s
        self._paced_here = paced

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        traffic = current_traffic.get()
        key = None
        if self._cache is not None:
            body = await request.aread()
            key = self._cache.key(request, body)
            hit = self._cache.get(key)
            if hit is not None:
                if traffic is not None:
                    traffic.cache_hits += 1
                status, headers, content = hit
                return await _read_body(httpx2.Response(status, headers=headers, content=content, request=request),
                                        traffic)  # fmt: skip
        if traffic is not None:
            traffic.sent(request)
        pacer = traffic.pacer if traffic is not None and self._paced_here else None
        if pacer is None:
            response = await self._send(request, traffic, whole=self._cache is not None)
        else:
            response = await self._paced(request, traffic, pacer)  # type: ignore[arg-type]
        read = _final_if_rejected(await _read_body(response, traffic))
        if read.status_code == 200 and self._cache is not None and key is not None:
            redact = traffic.redact if traffic is not None else None
            self._cache.put(key, response.status_code, response.headers, response.content, redact)
        return read

    async def _paced(self, request: httpx2.Request, traffic: SampleTraffic, pacer: Pacer) -> httpx2.Response:
        """Through the gate: a 429 and a failure in an outage are sent again once the pacer lets them."""
        last: list[httpx2.Response | httpx2.TransportError] = []

        async def attempt() -> tuple[Verdict, httpx2.Headers, float | None]:
            traffic.set_waiting(False)  # the pacer's resend is no backoff of the SDK's
            if last and isinstance(last[0], httpx2.Response):
                await last[0].aclose()
            try:
                response = await self._send(request, traffic, whole=True)  # bounded by `MAX_BODY`
            except httpx2.TransportError as exc:
                last[:] = [exc]
                return "failed", httpx2.Headers(), None
            last[:] = [response]
            status = response.status_code
            if status == 429 and b"insufficient_quota" not in response.content:  # no credit left: no wait helps
                traffic.rate_limited += 1
                return "throttled", response.headers, None
            failed = (status >= 500 or status == 408) and REFUSED_HEADER not in response.headers
            used = _used_tokens(response) if pacer.counts_tokens else None
            return ("failed" if failed else "answered"), response.headers, used

        length = request.headers.get("content-length", "")
        traffic.wait_s += await pacer.send(traffic.key, int(length) / 4 if length.isdigit() else 256.0, attempt)
        outcome = last[0]
        if isinstance(outcome, httpx2.TransportError):
            raise outcome
        return outcome

    async def _send(self, request: httpx2.Request, traffic: SampleTraffic | None, *, whole: bool) -> httpx2.Response:
        """One sending; the body read whole and decompressed when asked (or to bound it by the deadline), at most
        `MAX_BODY` bytes of it: a larger answer (a gzip bomb inflates half a megabyte to gigabytes) is refused as
        an HTTP error the SDK does not retry, with the reason."""
        whole = whole or self._deadline_s is not None
        try:
            async with asyncio.timeout(self._deadline_s):
                response = await self._inner.handle_async_request(request)
                if not whole:
                    body = None
                else:
                    response.request = request
                    body = await _read_capped(response)
        except TimeoutError:
            if traffic is not None:
                traffic.failed(None)
            raise httpx2.ReadTimeout(f"no whole response within {self._deadline_s:g} s", request=request) from None
        except httpx2.TransportError:
            if traffic is not None:
                traffic.failed(None)
            raise
        if body is None and whole:
            await response.aclose()
            reason = {"error": {"message": f"the response body passed {MAX_BODY >> 20} MB decompressed: refused"}}
            headers = {"content-type": "application/json", "x-should-retry": "false", REFUSED_HEADER: "body"}
            return httpx2.Response(502, headers=headers, json=reason, request=request)
        if response.status_code != 200 and traffic is not None:
            traffic.failed(response.status_code)
        if body is None:
            return response
        kept: httpx2.Headers | list[tuple[str, str]] = response.headers
        if "content-encoding" in response.headers:  # the body is decompressed now
            kept = [
                (name, value)
                for name, value in response.headers.multi_items()
                if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
            ]
        return httpx2.Response(response.status_code, headers=kept, content=body, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _final_if_rejected(response: httpx2.Response) -> httpx2.Response:
    """A 4xx that no resend can change, marked `x-should-retry: false`: the openai and anthropic SDKs obey a server's
    `true` before the status, and so sent a context length exceeded three times, each time refused alike."""
    if 400 <= response.status_code < 500 and response.status_code not in _RETRYABLE:
        response.headers["x-should-retry"] = "false"
    return response


async def _read_capped(response: httpx2.Response) -> bytes | None:
    """The decompressed body, or None once it passes `MAX_BODY` (read no further)."""
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_body(response: httpx2.Response, traffic: SampleTraffic | None) -> httpx2.Response:
    """A JSON answer as the SDK should read it (see `answer_body`): an error sent with HTTP 200 becomes the HTTP
    error it is (never resent: the server did answer), and usage that cannot be read is taken out, said once a run.
    Any other response, a stream's included, is passed on as it came."""
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if response.status_code != 200 or kind != "application/json":  # not a stream (SSE, Ollama's NDJSON)
        return response
    try:
        payload = json.loads(await response.aread())
    except (ValueError, httpx2.HTTPError):
        return response
    if not isinstance(payload, dict):
        return response
    kept = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    error = answered_error(payload)
    if error is not None:
        status = error_status(error)
        said = [("x-should-retry", "false"), (REFUSED_HEADER, "error")] if status == 502 else []
        return httpx2.Response(status, headers=kept + said, json={"error": error}, request=response.request)
    unreadable = unreadable_usage(payload)
    if unreadable is None:
        return response
    if traffic is not None:
        traffic.meter.usage_unreadable(unreadable)
    return httpx2.Response(200, headers=kept, json=without_usage(payload), request=response.request)


def _json_object(body: bytes) -> bool:
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


def _used_tokens(response: httpx2.Response) -> float | None:
    """The tokens an answer used, as OpenAI (`total_tokens`) or Anthropic (input + output) report them."""
    try:
        usage = json.loads(response.content).get("usage")
    except (ValueError, AttributeError, httpx2.ResponseNotRead):
        return None
    if not isinstance(usage, dict):
        return None
    total = usage.get("total_tokens")
    if total is None:
        parts = [usage.get(name) for name in ("input_tokens", "output_tokens")]
        total = sum(part for part in parts if isinstance(part, int | float) and not isinstance(part, bool)) or None
    if not isinstance(total, int | float) or isinstance(total, bool):
        return None
    return float(total) if total > 0 else None


_POOL = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
"""The OpenAI and Anthropic SDKs' own pool. A bare `AsyncHTTPTransport` keeps 20 connections alive, and at
concurrency 32 the rest were reopened on every request: about 8% of the whole run's throughput."""


def http_client(
    *, cache: ResponseCache | None = None, timeout: float | None = None, paced: bool = True
) -> httpx2.AsyncClient:
    """pydantic-ai's own HTTP client (timeouts, user agent), sending every request through the meter;
    `timeout` bounds each whole request (connection, waiting, and reading the body). `paced=False`: another
    provider's endpoint (an embedder), whose limits are not the run's model's, is not paced by its gate."""
    transport = _MeteredTransport(httpx2.AsyncHTTPTransport(limits=_POOL), cache, timeout, paced=paced)
    if timeout is None:
        return create_async_httpx2_client(transport=transport)
    return create_async_httpx2_client(transport=transport, timeout=timeout)


def meter_model(model: object) -> bool:
    """Count the transport retries of a model built elsewhere (a caller's `OpenAIChatModel`...): wrap its SDK
    client's transport once. Requests outside a run pass through uncounted. False if the model has no such client."""
    client = getattr(getattr(model, "client", None), "_client", None)
    if not isinstance(client, httpx2.AsyncClient):
        return False
    inner = client._transport
    if not isinstance(inner, _MeteredTransport):
        client._transport = _MeteredTransport(inner, None)
    return True
