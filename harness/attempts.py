"""Read a finished agent conversation into attempts, usage and cost, using pydantic-ai's own verdicts.

Each model response is one attempt. Its verdict is the retry feedback pydantic-ai sent in the next
request (validation errors, "include your response in a tool call", our tag reminder). Only the last
response of a run whose retries ran out has no feedback: it is checked with the same validator.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)

from harness.answers import ANSWER_TOOL, OptionAnswer, strict_tag_answer
from schemas import AnswerMode, Attempt, Cost, InvalidKind, TokenUsage

__all__ = ["UserPrices", "read_attempts", "sample_cost", "sample_usage"]

_KIND_BY_ERROR_TYPE: dict[str, InvalidKind] = {
    "json_invalid": "malformed_json",
    "json_type": "malformed_json",
    "missing": "missing_field",
    "missing_argument": "missing_field",
    "extra_forbidden": "extra_fields",
    "unexpected_keyword_argument": "extra_fields",
    "out_of_range": "out_of_range",
}


@dataclass(frozen=True)
class UserPrices:
    """Prices given by the user, in USD per million tokens, for models with no known price."""

    input_per_million: float
    output_per_million: float


def read_attempts(
    messages: Sequence[ModelMessage], mode: AnswerMode, options: int, *, output: OptionAnswer | None
) -> list[Attempt]:
    """One `Attempt` per model response; `output` is the structured answer the run ended with, if any."""
    responses = [(i, m) for i, m in enumerate(messages) if isinstance(m, ModelResponse)]
    attempts: list[Attempt] = []
    for n, (index, response) in enumerate(responses):
        following = messages[index + 1] if index + 1 < len(messages) else None
        feedback = following.parts if isinstance(following, ModelRequest) else ()
        last = n == len(responses) - 1
        attempts.append(_judge(response, feedback, mode, options, accepted=output if last else None))
    return attempts


def _raw(response: ModelResponse) -> tuple[ToolCallPart | None, str]:
    call = next((p for p in response.parts if isinstance(p, ToolCallPart)), None)
    if call is not None:
        args = call.args
        return call, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return None, "".join(p.content for p in response.parts if isinstance(p, TextPart))


def _judge(
    response: ModelResponse, feedback: Sequence[Any], mode: AnswerMode, options: int, *, accepted: OptionAnswer | None
) -> Attempt:
    call, raw = _raw(response)
    if mode == "tag":
        answer = strict_tag_answer(raw)
        if answer is not None:
            return Attempt(valid=True, raw=raw, answer=answer)
        kind: InvalidKind = "empty" if not raw.strip() else "no_tag"
        return Attempt(valid=False, invalid_kind=kind, raw=raw, feedback=_feedback_text(feedback) or "no <ANSWER> tag")
    if call is None and not raw.strip():
        return Attempt(
            valid=False, invalid_kind="empty", raw=raw, feedback=_feedback_text(feedback) or "empty response"
        )
    if call is None and mode == "tool":
        return Attempt(
            valid=False,
            invalid_kind="no_tool_call",
            raw=raw,
            feedback=_feedback_text(feedback) or "text instead of a tool call",
        )
    if call is not None and mode != "tool":
        return Attempt(valid=False, invalid_kind="unknown_tool", raw=raw, feedback=_feedback_text(feedback) or "")
    if call is not None and call.tool_name != ANSWER_TOOL:
        return Attempt(
            valid=False,
            invalid_kind="unknown_tool",
            raw=raw,
            feedback=_feedback_text(feedback) or f"unknown tool {call.tool_name!r}",
        )
    verdict = _verdict(feedback, call)
    if verdict is None and accepted is not None:
        return Attempt(valid=True, raw=raw, answer=str(accepted.answer))
    errors = verdict if verdict is not None else _errors_of(raw, mode, options)
    return Attempt(valid=False, invalid_kind=_kind(errors), raw=raw, feedback=_feedback_text(errors))


def _verdict(feedback: Sequence[Any], call: ToolCallPart | None) -> Any | None:
    """The validation errors pydantic-ai reported for this response, or None if it accepted it."""
    for part in feedback:
        if isinstance(part, ToolReturnPart) and call is not None and part.tool_call_id == call.tool_call_id:
            return part.content if part.outcome != "success" else None
        if isinstance(part, RetryFeedbackPart | RetryPromptPart):
            return part.content
    return None


def _parse(raw: str, mode: AnswerMode, options: int) -> OptionAnswer:
    text = raw.strip()
    if mode == "prompted" and text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return OptionAnswer.model_validate_json(text or "{}", context=options)


def _errors_of(raw: str, mode: AnswerMode, options: int) -> list[dict[str, Any]]:
    try:
        _parse(raw, mode, options)
    except ValidationError as exc:
        return [dict(e) for e in exc.errors(include_url=False)]
    return [{"type": "other", "msg": "rejected after the last retry"}]


def _kind(errors: Any) -> InvalidKind:
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return _KIND_BY_ERROR_TYPE.get(str(errors[0].get("type")), "wrong_type")
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


def sample_usage(messages: Sequence[ModelMessage]) -> TokenUsage:
    """Tokens summed over every response; reasoning and cache counts only where reported (non-zero).

    Token counts are None when no response reported usage (a server that omits it, a replayed log).
    """
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if responses and all(r.usage.unmeasured_requests and not r.usage.has_values() for r in responses):
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


def sample_cost(messages: Sequence[ModelMessage], usage: TokenUsage, *, local: bool, prices: UserPrices | None) -> Cost:
    """Cost by trust: the provider's reported cost, genai-prices, the user's prices, local (0), else unknown."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if responses:
        reported = [(r.provider_details or {}).get("cost") for r in responses]
        if all(isinstance(c, int | float | Decimal) for c in reported):
            return Cost(usd=float(sum(Decimal(str(c)) for c in reported)), source="provider")
        estimated = [r.usage.cost for r in responses]
        if all(c is not None for c in estimated):
            return Cost(usd=float(sum(c for c in estimated if c is not None)), source="genai-prices")
    if prices is not None:
        tokens_in, tokens_out = usage.input_tokens or 0, usage.output_tokens or 0
        usd = (tokens_in * prices.input_per_million + tokens_out * prices.output_per_million) / 1e6
        return Cost(usd=usd, source="user")
    if local:
        return Cost(usd=0.0, source="local")
    return Cost(usd=None, source="unknown")
