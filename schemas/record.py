"""What one quiz posed to one model leaves behind: its attempts, answer, usage and cost."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AnswerMode",
    "Attempt",
    "Cost",
    "CostSource",
    "InvalidKind",
    "SampleRecord",
    "SampleStatus",
    "TokenUsage",
]

AnswerMode = Literal["tool", "tag", "native", "prompted"]
"""How the model must answer: a typed tool call, farel-bench's `<ANSWER>` tag, a JSON-schema
response format, or a schema stated in the prompt."""

SampleStatus = Literal["correct", "incorrect", "missing", "error"]
"""`missing`: no valid answer after all retries; `error`: the call itself failed (not the model's output)."""

InvalidKind = Literal[
    "no_tool_call",
    "unknown_tool",
    "malformed_json",
    "wrong_type",
    "missing_field",
    "extra_fields",
    "out_of_range",
    "no_tag",
    "empty",
    "other",
]
"""Why an output was rejected. `no_tool_call`: text where a tool call was required."""

CostSource = Literal["provider", "genai-prices", "user", "local", "unknown"]
"""Where a cost came from, most trusted first; `unknown` goes with a cost of None, never 0."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attempt(_Record):
    """One model response to the quiz: the first answer or a reply to a corrective retry."""

    valid: bool
    invalid_kind: InvalidKind | None = None
    """Set when `valid` is False."""
    raw: str
    """The reply text, or the tool call's arguments as sent by the model."""
    answer: str | None = None
    """The answer as given (the tag's contents in tag mode), when the output carried one."""
    feedback: str | None = None
    """Why the output was rejected, as told to the model (or as it would have been on the last try)."""


class TokenUsage(_Record):
    """Tokens and requests, summed over all attempts; None means not reported (or not known, for imported logs)."""

    requests: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    reasoning_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class Cost(_Record):
    """Cost in USD with its source; `usd` None means unknown (never shown as free)."""

    usd: float | None
    source: CostSource


class SampleRecord(_Record):
    """Everything recorded for one quiz posed to one model (one JSONL line of a run)."""

    quiz_id: str
    degree: int | None
    class_name: str
    options: list[str]
    correct: int
    ambiguous: bool = False
    """The correct option's text is repeated: recorded, but left out of accuracy."""
    mode: AnswerMode
    answer: str | None
    """The final answer as given (tool modes: the option number; tag mode: the tag's contents)."""
    status: SampleStatus
    reasoning: str | None = None
    """The optional reasoning field of a structured answer."""
    relaxed_answer: str | None = None
    """Tag mode, missing replies only: the answer a relaxed reading finds (not counted as correct)."""
    attempts: list[Attempt]
    corrective_retries: int
    """Requests made to correct an invalid output (attempts after the first)."""
    usage: TokenUsage
    cost: Cost
    latency_s: float | None
    """Seconds from the first request to the final answer; None when not known (imported logs)."""
    transport_retries: int = 0
    """Requests the SDK sent again after a transport failure (429, 5xx, timeout, dropped connection):
    counted apart from corrective retries, never as invalid output."""
    cache_hits: int = 0
    """Responses served from the request cache (`--cache`) instead of the network."""
    error: str | None = None
    """Why the call failed, for status `error`."""
