"""Whether a server takes a forced tool choice, found on a run's first case: the errors a server refusing
`tool_choice: required` gives, and every request the tries behind that finding sent, counted in the case's record
(the server received each one, SDK resends included)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pydantic_ai import ModelHTTPError

from typed_eval.contracts import SampleRecord
from typed_eval.core.attempts import added_usage
from typed_eval.core.errors import error_text
from typed_eval.engine.posing import Outcome

__all__ = ["names_tool_choice", "refuses_forced_choice", "with_earlier_tries"]


def refuses_forced_choice(exc: BaseException | None) -> bool:
    """A request error that a server refusing `tool_choice: required` gives: HTTP 500 (llama-cpp-python), or a 400
    or 422 that names the tool choice. Any other 4xx cannot change when the request is sent again (a context length
    exceeded): it is the sample's error, sent once."""
    if not isinstance(exc, ModelHTTPError):
        return False
    return exc.status_code == 500 or (exc.status_code in (400, 422) and names_tool_choice(exc))


def names_tool_choice(exc: BaseException | None) -> bool:
    """The refusal says it is about the tool choice (else it may be a passing fault: ask once more first)."""
    body = error_text(exc)
    return "tool_choice" in body or "tool choice" in body


def with_earlier_tries(outcome: Outcome, earlier: Sequence[SampleRecord]) -> Outcome:
    """`outcome`, the record kept for the case, with what its `earlier` tries sent and spent added: requests, tokens,
    transport retries, rate-limited resends and waits."""
    if not earlier:
        return outcome
    record = outcome.record
    usage = functools.reduce(added_usage, (try_.usage for try_ in earlier), record.usage)
    kept = record.model_copy(
        update={
            "usage": usage,
            "transport_retries": record.transport_retries + sum(try_.transport_retries for try_ in earlier),
            "rate_limited": record.rate_limited + sum(try_.rate_limited for try_ in earlier),
            "wait_s": record.wait_s + sum(try_.wait_s for try_ in earlier),
        }
    )
    return Outcome(kept, outcome.exception)
