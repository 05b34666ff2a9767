"""Read a finished agent conversation into attempts, usage and cost, using pydantic-ai's own verdicts.

Each model response is one attempt. Its verdict is the retry feedback pydantic-ai sent in the next
request (validation errors, "include your response in a tool call", the task reader's reminder). The last
response of a run whose retries ran out has none: its verdict is the error pydantic-ai raised with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    RetryFeedbackPart,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UnexpectedModelBehavior,
)
from pydantic_ai.exceptions import ToolRetryError
from pydantic_ai.usage import RequestUsage

from typed_eval.contracts import AnswerMode, Attempt, Cost, InvalidKind, TokenUsage, is_text_mode
from typed_eval.core.calls import call_json, call_verdict, invalid_call

__all__ = [
    "UserPrices",
    "Verdicts",
    "added_cost",
    "added_usage",
    "answers_held",
    "priced_attempts",
    "read_attempts",
    "sample_cost",
    "sample_usage",
    "validation_errors",
]

_KIND_BY_ERROR_TYPE: dict[str, InvalidKind] = {
    "json_invalid": "malformed_json",
    "json_type": "malformed_json",
    "missing": "missing_field",
    "missing_argument": "missing_field",
    "extra_forbidden": "extra_fields",
    "unexpected_keyword_argument": "extra_fields",
    "out_of_range": "out_of_range",
}
_VALUE_ERRORS = ("enum", "literal_error", "value_error", "assertion_error", "greater_than", "less_than",
                 "multiple_of", "too_short", "too_long", "string_pattern_mismatch", "union_tag_invalid")  # fmt: skip
"""Error types of a value of the right type that the schema does not allow: `invalid_value`."""


@dataclass(frozen=True)
class UserPrices:
    """Prices given by the user, in USD per million tokens, for models with no known price."""

    input_per_million: float
    output_per_million: float


@dataclass(frozen=True)
class Verdicts:
    """What a run's last response is judged by when no later request carries pydantic-ai's verdict on it."""

    mode: AnswerMode
    tool_name: str
    accepted: bool
    """The run ended with a valid output (in the text modes: one the reader could read)."""
    final_error: BaseException | None = None
    """The exception the run ended with: its cause is pydantic-ai's verdict when the retries ran out."""
    unreadable_kind: InvalidKind = "unreadable"
    unreadable_feedback: str | None = None
    """Text modes: what the task's reader tells the model about a reply it cannot read."""
    recheck: Callable[[str], Any] | None = None
    """Validation errors of a raw output, for a last response with no verdict (None: it is valid)."""
    offered: frozenset[str] | None = None
    """A task answered by calls among the case's functions (`Task.functions`): their names. A reply's calls are then
    its answer (its text when it called none), invalid when one names no offered function or its arguments are not
    a JSON object."""


def read_attempts(messages: Sequence[ModelMessage], verdicts: Verdicts) -> list[Attempt]:
    """One `Attempt` per model response, each judged by the feedback pydantic-ai sent after it."""
    responses = [(i, m) for i, m in enumerate(messages) if isinstance(m, ModelResponse)]
    attempts: list[Attempt] = []
    for n, (index, response) in enumerate(responses):
        following = messages[index + 1] if index + 1 < len(messages) else None
        feedback = following.parts if isinstance(following, ModelRequest) else ()
        attempts.append(_judge(response, feedback, verdicts, last=n == len(responses) - 1))
    return attempts


def _raw(response: ModelResponse) -> tuple[ToolCallPart | None, str]:
    call = next((p for p in response.parts if isinstance(p, ToolCallPart)), None)
    if call is not None:
        args = call.args
        return call, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return None, "".join(p.content for p in response.parts if isinstance(p, TextPart))


def _invalid(kind: InvalidKind, raw: str, feedback: str | None, default: str) -> Attempt:
    return Attempt(valid=False, invalid_kind=kind, raw=raw, feedback=feedback or default)


def _judge(response: ModelResponse, feedback: Sequence[Any], verdicts: Verdicts, *, last: bool) -> Attempt:
    if verdicts.offered is not None:
        return _judge_calls(response, feedback, verdicts.offered)
    call, raw = _raw(response)
    mode = verdicts.mode
    told = _verdict(feedback, call)
    if last and told is None:
        told = _final_verdict(verdicts.final_error)
    accepted = last and verdicts.accepted
    if is_text_mode(mode):
        if accepted or (not last and told is None):
            return Attempt(valid=True, raw=raw)
        if not raw.strip():
            return _invalid("empty", raw, _feedback_text(told), "empty response")
        if verdicts.recheck is not None:
            errors = verdicts.recheck(raw)
            return _invalid(_kind(errors), raw, _feedback_text(told) or _feedback_text(errors), "unreadable")
        told_text = _feedback_text(told) or verdicts.unreadable_feedback
        return _invalid(verdicts.unreadable_kind, raw, told_text, "the reply could not be read")
    if call is None and not raw.strip():
        return _invalid("empty", raw, _feedback_text(told), "empty response")
    if call is None and mode == "tool":
        return _invalid("no_tool_call", raw, _feedback_text(told), "text instead of a tool call")
    if call is not None and (mode != "tool" or call.tool_name != verdicts.tool_name):
        return _invalid("unknown_tool", raw, _feedback_text(told), f"unknown tool {call.tool_name!r}")
    if told is None and (accepted or not last):
        return Attempt(valid=True, raw=raw)
    errors = told
    if errors is None and verdicts.recheck is not None:
        errors = verdicts.recheck(raw)
    if errors is None:
        errors = [{"type": "other", "msg": "rejected after the last retry"}]
    return _invalid(_kind(errors), raw, _feedback_text(errors), "rejected")


def _judge_calls(response: ModelResponse, feedback: Sequence[Any], offered: frozenset[str]) -> Attempt:
    """A reply to a task answered by calls: its calls (as JSON), or its text when it called none; an invalid one is
    told what was said about its first invalid call (on the last try, what pydantic-ai would say about that call)."""
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    if not calls:
        return Attempt(valid=True, raw="".join(p.content for p in response.parts if isinstance(p, TextPart)))
    raw = json.dumps([call_json(c) for c in calls], ensure_ascii=False)
    for call in calls:
        found = invalid_call(call, offered)
        if found is not None:
            kind, reason = found
            said = _verdict(feedback, call) if feedback else call_verdict(call, offered)
            return _invalid(kind, raw, _feedback_text(said), reason)
    return Attempt(valid=True, raw=raw)


def _verdict(feedback: Sequence[Any], call: ToolCallPart | None) -> Any | None:
    """The validation errors pydantic-ai reported for this response, or None if it accepted it."""
    for part in feedback:
        if isinstance(part, ToolReturnPart) and call is not None and part.tool_call_id == call.tool_call_id:
            return part.content if part.outcome != "success" else None
        if isinstance(part, RetryFeedbackPart | RetryPromptPart):
            return part.content
    return None


def _final_verdict(error: BaseException | None) -> Any | None:
    """pydantic-ai's verdict on the last response when the retries ran out: the cause it raised with."""
    seen = 0
    cause = error.__cause__ if isinstance(error, UnexpectedModelBehavior) else None
    while cause is not None and seen < 5:
        if isinstance(cause, ToolRetryError):
            return cause.tool_retry.content
        if isinstance(cause, ValidationError):
            return [dict(e) for e in cause.errors(include_url=False)]
        if isinstance(cause, ModelRetry):
            return cause.message
        cause, seen = cause.__cause__, seen + 1
    return None


def validation_errors(validate: Callable[[str], Any], raw: str) -> list[dict[str, Any]] | None:
    """The errors of validating `raw`, or None when it is valid."""
    try:
        validate(raw)
    except ValidationError as exc:
        return [dict(e) for e in exc.errors(include_url=False)]
    return None


def _kind(errors: Any) -> InvalidKind:
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        kind = str(errors[0].get("type"))
        if kind in _KIND_BY_ERROR_TYPE:
            return _KIND_BY_ERROR_TYPE[kind]
        if kind.startswith(_VALUE_ERRORS):
            return "invalid_value"
        return "wrong_type"
    return "other"


def _feedback_text(feedback: Any) -> str | None:
    """The feedback as one readable string: validation error messages joined, or the retry text."""
    if isinstance(feedback, list) and feedback and isinstance(feedback[0], dict):
        return "; ".join(f"{'.'.join(map(str, e.get('loc', ()))) or 'output'}: {e.get('msg')}" for e in feedback)
    if isinstance(feedback, str):
        return feedback
    for part in feedback or ():
        if isinstance(part, RetryFeedbackPart | RetryPromptPart | ToolReturnPart):
            return _feedback_text(part.content)
    return None


MOST_TOKENS = 100_000_000
"""More tokens than any model's context holds (the largest hold about 10 million): a count above it is not true."""


def untrue_usage(usage: RequestUsage) -> bool:
    """Usage a server reported that cannot be true: a negative count (pydantic-ai then keeps none of it, so the
    response says 0 input tokens, though every request sends a prompt) or an absurd one."""
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.output_reasoning_tokens,
    )
    if any(n < 0 or n > MOST_TOKENS for n in counts):
        return True
    return usage.input_tokens == 0 and not usage.unmeasured_requests


def sample_usage(messages: Sequence[ModelMessage]) -> TokenUsage:
    """Tokens summed over every response; reasoning and cache counts only where reported (non-zero).

    Token counts are None when no response reported usage (a server that omits it, a replayed log), and when a
    response reported usage that cannot be true (`untrue_usage`): unknown, never 0.
    """
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if responses and all(r.usage.unmeasured_requests and not r.usage.has_values() for r in responses):
        return TokenUsage(requests=len(responses), input_tokens=None, output_tokens=None)
    if any(untrue_usage(r.usage) for r in responses):
        return TokenUsage(requests=len(responses), input_tokens=None, output_tokens=None)
    reasoning = sum(r.usage.output_reasoning_tokens for r in responses)
    cache_read = sum(r.usage.cache_read_tokens for r in responses)
    cache_write = sum(r.usage.cache_write_tokens for r in responses)
    return TokenUsage(
        requests=len(responses),
        input_tokens=sum(r.usage.input_tokens for r in responses),
        output_tokens=sum(r.usage.output_tokens for r in responses),
        reasoning_tokens=reasoning or None,
        cache_read_tokens=cache_read or None,
        cache_write_tokens=cache_write or None,
    )


def _reported_cost(details: dict[str, Any]) -> Decimal | None:
    """OpenRouter's `usage.cost`. With the user's own provider key (BYOK) that is only OpenRouter's fee: the
    provider's own charge, `upstream_inference_cost`, is paid too (pydantic-ai drops a fee of 0 from the details)."""

    def amount(key: str) -> Decimal | None:
        value = details.get(key)
        return Decimal(str(value)) if isinstance(value, int | float | Decimal) and not isinstance(value, bool) else None

    fee, upstream = amount("cost"), amount("upstream_inference_cost")
    if any(c is not None and not (c.is_finite() and c >= 0) for c in (fee, upstream)):
        return None  # a negative or non-finite charge cannot be true: no reported cost
    if details.get("is_byok") is True and upstream is not None:
        return (fee or Decimal(0)) + upstream
    return fee


BATCH_DISCOUNTS: dict[str, tuple[Decimal, str]] = {
    "openai": (Decimal("0.5"), "https://platform.openai.com/docs/guides/batch"),
    "anthropic": (Decimal("0.5"), "https://docs.claude.com/en/docs/build-with-claude/batch-processing#pricing"),
    "google": (Decimal("0.5"), "https://ai.google.dev/gemini-api/docs/batch-mode"),
}
"""What a provider's batch API charges, as a share of its live price, where its documentation says so: used when
genai-prices has no batch price for the model."""


def _batched(response: ModelResponse) -> bool:
    return (response.provider_details or {}).get("processing") == "batch"


def _documented_discount(response: ModelResponse) -> tuple[Decimal, str] | None:
    name = response.provider_name or ""
    return next((found for prefix, found in BATCH_DISCOUNTS.items() if name.startswith(prefix)), None)


def _batch_price(response: ModelResponse) -> tuple[Decimal | None, str]:
    """A batch API's answer at its batch price, and how that price was found: genai-prices' own batch price when
    it has one for the model (it then differs from the live price), else the live price times the documented
    discount; unknown for a provider whose batch price is not documented here."""
    cost = response.usage.cost
    live_details = {k: v for k, v in (response.provider_details or {}).items() if k != "processing"}
    try:
        live = replace(response, provider_details=live_details).cost().total_price if cost is not None else None
    except (LookupError, ValueError, AssertionError):
        live = None
    if cost is not None and live is not None and live != cost:
        return cost, "genai-prices batch price"
    found = _documented_discount(response)
    if found is None:
        return None, f"no batch price known for {response.provider_name}"
    share, source = found
    return (cost * share if cost is not None else None), f"documented batch discount x{share}: {source}"


def sample_cost(messages: Sequence[ModelMessage], usage: TokenUsage, *, local: bool, prices: UserPrices | None) -> Cost:
    """Cost by trust: the provider's reported cost, genai-prices, the user's prices, local (0), else unknown.

    A response of a batch API costs its batch price (`_batch_price`), and the cost says how it was found."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    batch_basis: str | None = None
    if any(untrue_usage(r.usage) for r in responses):  # untrue counts price to no true cost
        return Cost(usd=0.0, source="local") if local and prices is None else Cost(usd=None, source="unknown")
    if responses:
        reported = [_reported_cost(r.provider_details or {}) for r in responses]
        if all(c is not None for c in reported):
            return Cost(usd=float(sum(c for c in reported if c is not None)), source="provider")
        priced = [_batch_price(r) if _batched(r) else (r.usage.cost, None) for r in responses]
        batch_basis = "; ".join(sorted({basis for _, basis in priced if basis is not None})) or None
        if all(c is not None for c, _ in priced):
            usd = float(sum(c for c, _ in priced if c is not None))
            return Cost(usd=usd, source="genai-prices", batch_price=batch_basis)
    if prices is not None and (usage.input_tokens is None or usage.output_tokens is None):
        return Cost(usd=None, source="unknown")  # no counts to price
    if prices is not None:
        tokens_in, tokens_out = usage.input_tokens or 0, usage.output_tokens or 0
        usd = (tokens_in * prices.input_per_million + tokens_out * prices.output_per_million) / 1e6
        discounts = {_documented_discount(r) for r in responses if _batched(r)}
        if discounts:  # the user's prices are live prices: a batch pays its documented share of them
            (found,) = discounts if len(discounts) == 1 else (None,)
            if found is None:
                return Cost(usd=None, source="unknown", batch_price=batch_basis)
            usd *= float(found[0])
            batch_basis = f"documented batch discount x{found[0]}: {found[1]}"
        return Cost(usd=usd, source="user", batch_price=batch_basis)
    if local:
        return Cost(usd=0.0, source="local")
    return Cost(usd=None, source="unknown")


def priced_attempts(
    attempts: list[Attempt], messages: Sequence[ModelMessage], *, local: bool, prices: UserPrices | None
) -> list[Attempt]:
    """Each attempt with its own request's tokens and cost: a corrective retry resends the conversation so far, so it
    costs more than the first request, and what the retries cost is read from these."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    priced: list[Attempt] = []
    for attempt, response in zip(attempts, responses, strict=True):
        usage = sample_usage([response])
        cost = sample_cost([response], usage, local=local, prices=prices)
        update = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost_usd": cost.usd}
        priced.append(attempt.model_copy(update=update))
    return priced


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def added_usage(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    """Two usages of one sample (the answer, and a judge's grading of it) as one."""
    return TokenUsage(
        requests=a.requests + b.requests,
        input_tokens=None if a.input_tokens is None or b.input_tokens is None else a.input_tokens + b.input_tokens,
        output_tokens=None if a.output_tokens is None or b.output_tokens is None else a.output_tokens + b.output_tokens,
        reasoning_tokens=_sum(a.reasoning_tokens, b.reasoning_tokens),
        cache_read_tokens=_sum(a.cache_read_tokens, b.cache_read_tokens),
        cache_write_tokens=_sum(a.cache_write_tokens, b.cache_write_tokens),
    )


_TRUST: tuple[str, ...] = ("provider", "genai-prices", "user", "local", "unknown")


def added_cost(a: Cost, b: Cost) -> Cost:
    """Two costs of one sample as one: unknown if either is; else the sum, with the less trusted source of the two
    (a local model's 0 is exact, so it weakens neither)."""
    batch_price = "; ".join(sorted({c.batch_price for c in (a, b) if c.batch_price})) or None
    if a.usd is None or b.usd is None:
        return Cost(usd=None, source="unknown", batch_price=batch_price)
    paid = [c.source for c in (a, b) if c.source != "local"]
    source = max(paid, key=_TRUST.index) if paid else "local"
    return Cost(usd=a.usd + b.usd, source=source, batch_price=batch_price)


def answers_held(history: Sequence[ModelMessage]) -> int:
    """How many answers a conversation continued from a batch already holds: each was invalid (else the
    conversation would have ended), so each used one of the sample's corrective retries."""
    return sum(isinstance(m, ModelResponse) and m.state != "suspended" for m in history)
