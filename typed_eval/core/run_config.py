"""What a caller gives a run (`RunConfig`: the stored choices of `ChosenSettings` and what is never stored, such as
pydantic-ai's `model_settings` and the `BatchOptions`): defaults, keyword overrides, checks.

`evaluate()`, `run()` and `open_model()` take a `RunConfig` and keyword overrides of its fields; each is checked
here, and an unknown keyword or a bad value is an `InputError` whose `parameter` names it. The run resolves it, once,
into the `RunSettings` it used and stores (`typed_eval.engine.settings.resolve_settings`). How the calling process
drives and watches a run (stop, callbacks, pacer, worker processes) is not a setting: `typed_eval.engine.control`'s
`RunControl`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import ConfigDict, Field, PlainValidator, ValidationError
from pydantic_ai.settings import ModelSettings
from pydantic_core import PydanticCustomError

from typed_eval.contracts import ChosenSettings, RunSettings
from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import InputError

__all__ = ["BatchOptions", "RunConfig", "check_config", "config_with", "user_prices"]


@dataclass(frozen=True)
class BatchOptions:
    """How a run uses the provider's batch API (`RunConfig.batch_options`; `typed_eval.providers.batches` sends it).

    Every sample is sent at once (up to `max_requests` in flight), gathered into batches of at most
    `max_requests` by pydantic-ai; a queue is submitted once its first request has waited `max_wait_s`. A batch
    is checked after `poll_interval_s`, then half as long again after each check, up to `max_poll_interval_s`.
    A request the provider let expire, or failed with a rate limit or server error, goes out again in a new
    batch up to `max_resubmissions` times; corrective retries after an invalid output are follow-up batches.
    """

    poll_interval_s: float = 30.0
    max_poll_interval_s: float = 600.0
    max_wait_s: float = 1.0
    max_requests: int = 10_000
    max_resubmissions: int = 2


def _model_settings(value: Any) -> ModelSettings | None:
    """pydantic-ai's settings kept as given (the keys of a provider's own settings class included; a value such as an
    `httpx.Timeout` is no JSON), only checked to be a dict."""
    if value is None or isinstance(value, dict):
        return value  # type: ignore[return-value]
    raise PydanticCustomError("model_settings", "must be a pydantic-ai ModelSettings (a dict)")


class RunConfig(ChosenSettings):
    """A run's settings as the caller gives them: the choices a run stores (`ChosenSettings`: a None is the run's to
    resolve) and what it never stores as given. Never holds an API key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    update_prices: str | None = None
    """A URL of genai-prices' data (e.g. `typed_eval.providers.prices.DEFAULT_UPDATE_URL`) to refresh prices from
    before the first request; not stored (a URL may hold credentials): the run's `updated_prices` says it was done."""
    max_cost: float | None = None
    """Budget: stop starting samples once the known cost reaches this many USD (not stored)."""
    max_requests: int | None = None
    """Budget: stop starting samples once this many model requests were made (not stored)."""
    trace: bool = False
    """Send OpenTelemetry traces to the OTLP endpoint the `OTEL_EXPORTER_OTLP_*` variables name (the `otel` extra;
    see `typed_eval.engine.traces`; not stored)."""
    trace_content: bool = False
    """Traces: the prompts, replies, outputs and expected values too (else counts, names and scores only)."""
    model_settings: Annotated[ModelSettings | None, PlainValidator(_model_settings), Field(exclude=True)] = None
    """pydantic-ai's model settings, on top of those the config makes (`temperature`, `seed`, `max_tokens`...):
    `evaluate()` only, as they are never stored (`run()` refuses them: its summary would not say how it asked)."""
    batch_options: Annotated[BatchOptions | None, Field(exclude=True)] = None
    """How a batched run (`batch=True`) uses the batch API; None: the default options. Not stored (`batch` is)."""


MOVED_TO_CONTROL = ("stop", "on_record", "on_start", "pacer", "traffic", "keep_records", "workers")
"""Keywords `evaluate()` and `run()` once took, now fields of the `RunControl` (how the caller drives the run)."""


def config_with(config: RunConfig | None = None, /, **changes: Any) -> RunConfig:
    """`config` (default: every default) with `changes` applied, and checked: each change names a `RunConfig`
    field, or is `prices` (a `UserPrices`, which sets `price_in` and `price_out`). An unknown name, or a bad value
    (changed or not), raises `InputError` whose `parameter` names it; one of the `RunControl`'s fields
    (`MOVED_TO_CONTROL`: `on_record`, `stop`, `pacer`...) says to pass it there."""
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
        elif name == "batch" and isinstance(value, BatchOptions):
            raise InputError(
                "is True or False: give the BatchOptions as batch_options (with batch=True)", parameter=name
            )
        elif name in RunConfig.model_fields:
            values[name] = value
        elif name in MOVED_TO_CONTROL:
            raise InputError(
                f"is how the caller drives the run, not a setting of it: pass it in RunControl, as "
                f"control=RunControl({name}=...) (evaluator.RunControl)",
                parameter=name,
            )
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
    if config.batch_options is not None and not config.batch:
        raise InputError(
            "given with batch=False: set batch=True to batch the run (they say how)", parameter="batch_options"
        )


def user_prices(settings: RunConfig | RunSettings) -> UserPrices | None:
    """The prices the caller gave (`price_in`, `price_out`, as given or as the run used them), if any."""
    if settings.price_in is None or settings.price_out is None:
        return None
    return UserPrices(settings.price_in, settings.price_out)
