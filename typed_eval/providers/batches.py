"""Send a run's model requests through the provider's batch API (half the price, results within a day).

pydantic-ai's `BatchModelRequests` queues the requests, submits them as batches and reads the results; a run
whose output type includes `PendingModelResponse` ends as soon as its request waits on a batch, with a message
history that names the batch. That history is kept here, in the run folder as soon as the batch exists, so a
run stopped in any way (Ctrl-C, kill -9) collects the same batch when resumed instead of paying for it twice.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_ai import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.capabilities import BatchModelRequests
from pydantic_ai.models import Model
from pydantic_core import to_jsonable_python

from typed_eval.core.errors import EvaluatorError, ResultFileError
from typed_eval.core.run_config import BatchOptions
from typed_eval.core.secrets import Redactor
from typed_eval.providers.transport import TrafficMeter

__all__ = [
    "PENDING_FILE",
    "BatchOptions",
    "Batching",
    "PendingRequests",
    "batch_capability",
    "batch_of",
    "describe_states",
    "without_pending",
]

PENDING_FILE = "batches.jsonl"

SampleKey = tuple[str, int]
"""A sample: its case id and repeat index."""


def batch_capability(options: BatchOptions) -> BatchModelRequests:
    """pydantic-ai's capability that batches a run's requests as `options` say."""
    return BatchModelRequests(
        max_requests=options.max_requests,
        max_wait=timedelta(seconds=options.max_wait_s),
        max_resubmissions=options.max_resubmissions,
        poll_interval=timedelta(seconds=options.poll_interval_s),
        max_poll_interval=timedelta(seconds=max(options.max_poll_interval_s, options.poll_interval_s)),
    )


def batch_of(response: ModelResponse) -> tuple[str, str] | None:
    """The id and state (`in_progress`, `canceling`, `ended`) of the batch a pending response waits on."""
    response_id = response.provider_response_id or ""
    if response.state != "suspended" or not response_id.startswith("batch:"):
        return None
    batch_id = response_id.removeprefix("batch:").rpartition(":")[0]
    ticket = (response.provider_details or {}).get("batch")
    handle = ticket.get("batch") if isinstance(ticket, dict) else None
    status = handle.get("status") if isinstance(handle, dict) else None
    return batch_id, status if isinstance(status, str) else "in_progress"


def without_pending(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A conversation without the responses that still wait on a batch (they hold no answer yet)."""
    return [m for m in messages if not (isinstance(m, ModelResponse) and m.state == "suspended")]


@dataclass
class PendingRequests:
    """The samples whose request waits on a batch: their message history, by (case id, repeat).

    With a run folder, each history is appended to `batches.jsonl` (one flushed JSON line) the moment its request
    is in a batch, and read back on resume; only a new batch adds a line, not every check of the same one. A
    sample done (answered, or failed) gets a line saying so, so a retry of its error starts afresh rather than
    from the batch that failed it.
    """

    path: Path | None = None
    _histories: dict[SampleKey, tuple[str, list[ModelMessage]]] = field(default_factory=dict, repr=False)
    _states: dict[str, str] = field(default_factory=dict, repr=False)
    _waiting: dict[SampleKey, str] = field(default_factory=dict, repr=False)
    _torn: bool = field(default=False, repr=False)
    """The file ends in a line cut off by a kill: the next line starts on a line of its own."""

    def __post_init__(self) -> None:
        if self.path is None or not self.path.exists():
            return
        text = self.path.read_text(encoding="utf-8")
        self._torn = bool(text) and not text.endswith("\n")
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                key = (str(entry["case_id"]), int(entry["repeat"]))
                if entry.get("done"):
                    self._histories.pop(key, None)
                    continue
                messages = ModelMessagesTypeAdapter.validate_python(entry["messages"])
                self._histories[key] = (str(entry["batch_id"]), messages)
            except (ValueError, KeyError, TypeError, ValidationError):
                continue  # a line torn by a kill mid-write: that sample's request was never saved as sent

    def history(self, key: SampleKey) -> list[ModelMessage] | None:
        """What a resumed sample continues from: the conversation that ends waiting on its batch."""
        kept = self._histories.get(key)
        return kept[1] if kept is not None else None

    def wait(self, key: SampleKey, messages: list[ModelMessage], redact: Redactor | None = None) -> None:
        """A sample's request is in a batch: keep its history (on disk before anything else happens), with any
        secret the run knows (a key in the server's URL) taken out."""
        pending = batch_of(messages[-1]) if messages and isinstance(messages[-1], ModelResponse) else None
        if pending is None:
            return
        batch_id, state = pending
        self._states[batch_id] = state
        self._waiting[key] = batch_id
        if self._histories.get(key, ("", []))[0] == batch_id:
            return
        self._histories[key] = (batch_id, messages)
        if self.path is not None:
            line = {
                "case_id": key[0],
                "repeat": key[1],
                "batch_id": batch_id,
                "messages": to_jsonable_python(messages, bytes_mode="base64"),
            }
            text = json.dumps(line, ensure_ascii=False)
            self._append((redact(text) if redact is not None else text) + "\n")

    def done(self, key: SampleKey) -> None:
        """A sample's answer arrived (or its request failed): it waits on no batch any more."""
        batch_id = self._waiting.pop(key, None)
        if batch_id is not None:
            self._states[batch_id] = "ended"
        if self._histories.pop(key, None) is not None and self.path is not None:
            self._append(json.dumps({"case_id": key[0], "repeat": key[1], "done": True}, ensure_ascii=False) + "\n")

    def states(self) -> dict[str, int]:
        """How many batches are in each state, and how many samples wait on one (`waiting`)."""
        counts: dict[str, int] = {}
        for state in self._states.values():
            counts[state] = counts.get(state, 0) + 1
        if self._waiting:
            counts["waiting"] = len(self._waiting)
        return counts

    def _append(self, text: str) -> None:
        assert self.path is not None
        if self._torn:
            text, self._torn = "\n" + text, False
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)  # flushed on close, as a record is: what a kill -9 cannot take back
        except OSError as exc:
            raise ResultFileError(f"cannot write to {self.path}: {exc.strerror or exc}") from None


def describe_states(counts: dict[str, Any]) -> str:
    """`batches 1 in_progress, 2 ended (40 samples waiting)` for a progress line; empty without batches."""
    waiting = counts.get("waiting", 0)
    states = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()) if state != "waiting")
    if not states:
        return ""
    return f"batches {states}" + (f" ({waiting} samples waiting)" if waiting else "")


class Batching:
    """One run's batching: the capability every agent of the run shares (so their requests share batches), the
    pending requests, and the pace of checks."""

    def __init__(self, model: Model, options: BatchOptions, pending: PendingRequests) -> None:
        self.options, self.pending = options, pending
        self.capability = batch_capability(options)
        if model.batch_max_requests is None:
            raise EvaluatorError(
                f"{model.system}:{model.model_name} has no batch API (OpenAI's Responses API, Anthropic and Google "
                "have one)",
                parameter="batch",
            )
        batched = self.capability.get_wrapper_model(model)
        assert batched is not None
        self._batched = batched
        self._redact = Redactor.for_run(model=model)

    async def wait(self, key: SampleKey, messages: list[ModelMessage], traffic: TrafficMeter) -> None:
        """Keep a sample's pending request, then wait until its batch is due for a check."""
        self.pending.wait(key, messages, self._redact)
        traffic.batch_states = self.pending.states()
        last = messages[-1]
        delay = self._batched.continuation_delay(last) if isinstance(last, ModelResponse) else None
        await asyncio.sleep(self.options.poll_interval_s if delay is None else delay)

    def done(self, key: SampleKey, traffic: TrafficMeter) -> None:
        self.pending.done(key)
        traffic.batch_states = self.pending.states()
