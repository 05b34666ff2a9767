"""What a caller gives a run (`RunConfig`): defaults, keyword overrides, checks.

`evaluate()`, `run()` and `open_model()` take a `RunConfig` and keyword overrides of its fields; each is checked
here, and an unknown keyword or a bad value is an `InputError` whose `parameter` names it. The run resolves it, once,
into the `RunSettings` it used and stores (`typed_eval.engine.settings.resolve_settings`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import InputError
from typed_eval.schemas import AnswerMode, RunSettings

__all__ = ["RunConfig", "check_config", "config_with", "user_prices"]


class RunConfig(BaseModel):
    """A run's settings as the caller gives them: every field has a default, a None is left for the run to resolve
    (to what suits the model and mode). Never holds an API key; not stored as it is (see `RunSettings`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = None
    """An OpenAI-compatible (or Ollama) server to send the requests to; stored without credentials."""
    mode: AnswerMode = "tool"
    retries: int | None = None
    """Corrective retries after an invalid output; None: the mode's default (`default_retries`)."""
    temperature: float | None = None
    seed: int | None = None
    """The model's sampling seed, where the provider takes one."""
    max_tokens: int | None = None
    """Output tokens per request at most; None: the provider's (a local server's 512)."""
    system_prompt: str | None = None
    repeats: int = 1
    """How many times each case is posed."""
    judge_model: str | None = None
    """The model an LLM judge grades with; stored, and a resume must keep it. None when nothing is judged."""
    tool_choice: Literal["required", "auto"] | None = None
    """Tool mode: whether the output tool call is forced; None: forced, unless the server refuses it."""
    concurrency: int | None = None
    """Requests in flight; None: what suits the model (a local server: 1), else 8."""
    price_in: float | None = None
    """USD per million input tokens, for a model with no known price (with `price_out`)."""
    price_out: float | None = None
    local: bool | None = None
    """The model runs here and costs nothing; None: told by the model (a test model or a loopback server)."""
    chat_format: str | None = None
    """A local model's llama-cpp-python chat handler (default: its own)."""
    batch: bool = False
    """Send the requests through the provider's batch API (batch prices)."""
    update_prices: str | None = None
    """A URL of genai-prices' data (e.g. `typed_eval.providers.prices.DEFAULT_UPDATE_URL`) to refresh prices from
    before the first request; not stored (a URL may hold credentials): the run's `updated_prices` says it was done."""
    rpm: float | None = None
    """A cap on requests per minute; the provider's stated limits apply besides."""
    tpm: float | None = None
    """A cap on tokens per minute."""
    max_wait_s: float | None = None
    """How long requests may wait with nothing answered before the run stops as partial; None: 600 s."""
    request_timeout: float | None = None
    """Seconds one request may take before it fails; None: the provider SDK's (600)."""
    max_transport_retries: int | None = None
    """Resends of a request after HTTP 429/5xx, a timeout or a dropped connection; None: the SDK's default (2)."""
    max_cost: float | None = None
    """Budget: stop starting samples once the known cost reaches this many USD (not stored)."""
    max_requests: int | None = None
    """Budget: stop starting samples once this many model requests were made (not stored)."""
    trace: bool = False
    """Send OpenTelemetry traces to the OTLP endpoint the `OTEL_EXPORTER_OTLP_*` variables name (the `otel` extra;
    see `typed_eval.engine.traces`; not stored)."""
    trace_content: bool = False
    """Traces: the prompts, replies, outputs and expected values too (else counts, names and scores only)."""


def config_with(config: RunConfig | None = None, /, **changes: Any) -> RunConfig:
    """`config` (default: every default) with `changes` applied, and checked: each change names a `RunConfig`
    field, or is `prices` (a `UserPrices`, which sets `price_in` and `price_out`). An unknown name, or a bad value
    (changed or not), raises `InputError` whose `parameter` names it."""
    base = config if config is not None else RunConfig()
    if not isinstance(base, RunConfig):
        raise InputError(f"must be a RunConfig, got {type(base).__name__}", parameter="config")
    values: dict[str, Any] = {name: getattr(base, name) for name in RunConfig.model_fields}
    for name, value in changes.items():
        if name == "prices":
            if value is not None and not isinstance(value, UserPrices):
                raise InputError(f"must be a UserPrices (USD per million tokens), got {_shown(value)}", parameter=name)
            values["price_in"] = value.input_per_million if value is not None else None
            values["price_out"] = value.output_per_million if value is not None else None
        elif name in RunConfig.model_fields:
            values[name] = value
        else:
            raise InputError("unknown parameter: not one of this function's, nor a RunConfig field", parameter=name)
    try:
        made = RunConfig.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = str(error["loc"][0]) if error["loc"] else None
        raise InputError(f"{error['msg']}, got {_shown(error['input'])}", parameter=where) from None
    check_config(made)
    return made


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_LEAST = {
    "retries": 0,
    "concurrency": 1,
    "repeats": 1,
    "max_tokens": 1,
    "max_transport_retries": 0,
    "max_requests": 1,
}
_POSITIVE = ("rpm", "tpm", "max_wait_s", "request_timeout")


def check_config(config: RunConfig) -> None:
    """Raise `InputError`, its `parameter` naming the setting, when a value is one no run can take."""
    for name, least in _LEAST.items():
        value = getattr(config, name)
        if value is not None and value < least:
            raise InputError(f"must be at least {least}, got {value}", parameter=name)
    for name in _POSITIVE:
        value = getattr(config, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"must be a finite number above 0, got {value}", parameter=name)
    if config.temperature is not None and not math.isfinite(config.temperature):
        raise InputError(f"must be a finite number, got {config.temperature}", parameter="temperature")
    if config.max_cost is not None and not (math.isfinite(config.max_cost) and config.max_cost >= 0):
        raise InputError(f"must be a finite number of 0 or more, got {config.max_cost}", parameter="max_cost")
    prices = (config.price_in, config.price_out)
    if (prices[0] is None) != (prices[1] is None):
        raise InputError(
            "give both the input and the output price (USD per million tokens), or neither", parameter="prices"
        )
    if any(price is not None and not (math.isfinite(price) and price >= 0) for price in prices):
        raise InputError(f"must be finite numbers of 0 or more, got {prices[0]} and {prices[1]}", parameter="prices")


def user_prices(settings: RunConfig | RunSettings) -> UserPrices | None:
    """The prices the caller gave (`price_in`, `price_out`, as given or as the run used them), if any."""
    if settings.price_in is None or settings.price_out is None:
        return None
    return UserPrices(settings.price_in, settings.price_out)
