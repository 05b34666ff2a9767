"""What one case posed to one model leaves behind: its attempts, output, score, usage and cost."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "AnswerMode",
    "Attempt",
    "Cost",
    "CostSource",
    "InvalidKind",
    "SampleRecord",
    "SampleStatus",
    "TokenUsage",
    "is_text_mode",
    "status_of",
]

AnswerMode = Literal["tool", "native", "prompted", "text", "tag"]
"""How the model must answer: a typed tool call, a JSON-schema response format, a schema stated in the
prompt, or plain text read by the task's reader. `tag` is the text mode of the suites whose original benchmark asks
for its answer in a tag (`<ANSWER>`), kept so their runs read as they always did."""

SampleStatus = Literal["correct", "partial", "incorrect", "missing", "error", "unsupported"]
"""From the score: `correct` 1, `partial` between 0 and 1, `incorrect` 0. `missing`: no valid output after
all retries (scored 0); `error`: the call itself failed (not the model's output), left out of the score;
`unsupported`: the provider refused the schema sent (an HTTP 400 about the response format or a tool's parameters,
`typed_eval.providers.refusals`), neither an invalid output nor an error: left out of the score, counted, never
retried nor posed again."""


def status_of(score: float) -> SampleStatus:
    """The status a score gives: `correct` at 1, `incorrect` at 0, `partial` between."""
    return "correct" if score == 1.0 else "incorrect" if score == 0.0 else "partial"


InvalidKind = Literal[
    "no_tool_call",
    "unknown_tool",
    "malformed_json",
    "wrong_type",
    "missing_field",
    "extra_fields",
    "invalid_value",
    "out_of_range",
    "no_tag",
    "unreadable",
    "empty",
    "other",
]
"""Why an output was rejected. `no_tool_call`: text where a tool call was required; `invalid_value`: the
right type but a value the schema does not allow (not in an enum, failed a constraint); `out_of_range`: an
option number that the question does not have; `no_tag` / `unreadable`: text the task's reader could not read."""

CostSource = Literal["provider", "genai-prices", "user", "local", "unknown"]
"""Where a cost came from, most trusted first; `unknown` goes with a cost of None, never 0."""


def is_text_mode(mode: AnswerMode) -> bool:
    """Modes where the model answers in plain text and the task's reader turns it into an output."""
    return mode in ("text", "tag")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attempt(_Record):
    """One model response to the case: the first output or a reply to a corrective retry."""

    valid: bool
    invalid_kind: InvalidKind | None = None
    """Set when `valid` is False."""
    raw: str
    """The reply text, or the tool call's arguments as sent by the model."""
    feedback: str | None = None
    """Why the output was rejected, as told to the model (or as it would have been on the last try)."""
    input_tokens: int | None = Field(default=None, exclude_if=lambda tokens: tokens is None)
    """This attempt's request alone (the conversation so far, resent); left out when unknown (imports, older runs)."""
    output_tokens: int | None = Field(default=None, exclude_if=lambda tokens: tokens is None)
    cost_usd: float | None = Field(default=None, exclude_if=lambda usd: usd is None)
    """What this attempt's request cost; left out when unknown."""
    score: float | None = Field(default=None, exclude_if=lambda score: score is None)
    """An invalid attempt followed by a retry, of a task answered by calls: the score of its calls as sent, which the
    sample would have had with no more retries (a benchmark that scores the first answer counts this); left out
    otherwise (the sample's own score is the last attempt's)."""


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
    batch_price: str | None = None
    """Sent through a batch API: how its price was found (the price data's batch price, or the provider's
    documented batch discount, with where it is documented)."""


class SampleRecord(_Record):
    """Everything recorded for one case posed to one model (one JSONL line of a run)."""

    case_id: str
    repeat: int = 0
    """Which posing of the case this is (0, 1, ... with `repeats`); a record is keyed by (case_id, repeat)."""
    group: str | None = None
    """The case's group (a multiple-choice suite's class); scores are also reported per group."""
    prompt: str | None = Field(default=None, exclude_if=lambda prompt: prompt is None)
    """The text posed (the case's prompt), so a record can be read on its own; left out when not known (runs made
    before prompts were recorded, published logs that do not hold them)."""
    expected: JsonValue = None
    """What the scorer compared the output with, as JSON (multiple choice: the correct option number)."""
    metadata: dict[str, JsonValue] = {}
    """The case's metadata (multiple choice: its options)."""
    excluded: bool = False
    """Recorded but left out of the score (e.g. an ambiguous quiz, whose correct option's text repeats)."""
    weight: float = Field(default=1.0, exclude_if=lambda weight: weight == 1.0)
    """The case's weight in the score (its `Case.weight`): scores are means weighted by it. Left out when 1, so
    records of unweighted cases are written as before."""
    mode: AnswerMode
    status: SampleStatus
    output: JsonValue = None
    """The validated output as JSON (text modes: what the task's reader took from the reply); None if none."""
    score: float | None = None
    """In [0, 1]; None when there is no valid output (missing, error) or the case is excluded."""
    score_details: dict[str, JsonValue] | None = None
    """What the task's scorer reported beside the score (e.g. the valid, invalid and missing edges)."""
    relaxed_output: JsonValue = None
    """Text modes, missing replies only: what a relaxed reading finds (not counted in the score)."""
    relaxed_score: float | None = None
    """The score `relaxed_output` would have had."""
    attempts: list[Attempt]
    corrective_retries: int
    """Requests made to correct an invalid output (attempts after the first)."""
    usage: TokenUsage
    cost: Cost
    latency_s: float | None
    """Seconds from the first request to the final output, waits for capacity (`wait_s`) left out; None when not
    known (imported logs)."""
    transport_retries: int = 0
    """Requests the SDK sent again after a transport failure (429, 5xx, timeout, dropped connection):
    counted apart from corrective retries, never as invalid output."""
    cache_hits: int = 0
    """Responses served from the request cache instead of the network."""
    rate_limited: int = Field(default=0, exclude_if=lambda count: count == 0)
    """Responses answered HTTP 429 and sent again once the provider had capacity (never a transport retry)."""
    wait_s: float = Field(default=0.0, exclude_if=lambda seconds: seconds == 0)
    """Seconds the sample's requests waited for capacity or for an outage to end: left out of `latency_s`."""
    error: str | None = None
    """Why the call failed, for status `error`."""
