"""The one settings object of a run (`RunSettings`), as a caller gives it: defaults, keyword overrides, checks.

`evaluate()`, `run()` and `open_model()` take a `RunSettings` and keyword overrides of its fields; each is checked
here, and an unknown keyword or a bad value is an `InputError` whose `parameter` names it. The run fills in the rest
(see `typed_eval.engine.evaluation.resolved_settings`), and stores the settings so filled.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import InputError
from typed_eval.schemas import RunSettings

__all__ = ["check_settings", "settings_with", "user_prices"]


def settings_with(settings: RunSettings | None = None, /, **changes: Any) -> RunSettings:
    """`settings` (default: every default) with `changes` applied, and checked: each change names a `RunSettings`
    field, or is `prices` (a `UserPrices`, which sets `price_in` and `price_out`). An unknown name, or a bad value
    (changed or not), raises `InputError` whose `parameter` names it."""
    base = settings if settings is not None else RunSettings()
    values: dict[str, Any] = {name: getattr(base, name) for name in RunSettings.model_fields}
    for name, value in changes.items():
        if name == "prices":
            if value is not None and not isinstance(value, UserPrices):
                raise InputError(f"must be a UserPrices (USD per million tokens), got {_shown(value)}", parameter=name)
            values["price_in"] = value.input_per_million if value is not None else None
            values["price_out"] = value.output_per_million if value is not None else None
        elif name in RunSettings.model_fields:
            values[name] = value
        else:
            raise InputError("unknown parameter: not one of this function's, nor a RunSettings field", parameter=name)
    try:
        made = RunSettings.model_validate(values)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = str(error["loc"][0]) if error["loc"] else None
        raise InputError(f"{error['msg']}, got {_shown(error['input'])}", parameter=where) from None
    check_settings(made)
    return made


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_LEAST = {"retries": 0, "concurrency": 1, "repeats": 1, "workers": 1, "max_tokens": 1, "max_transport_retries": 0}


def check_settings(settings: RunSettings) -> None:
    """Raise `InputError`, its `parameter` naming the setting, when a value is one no run can take."""
    for name, least in _LEAST.items():
        value = getattr(settings, name)
        if value is not None and value < least:
            raise InputError(f"must be at least {least}, got {value}", parameter=name)
    for name in ("rpm", "tpm", "max_wait_s", "request_timeout"):
        value = getattr(settings, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"must be a finite number above 0, got {value}", parameter=name)
    if settings.temperature is not None and not math.isfinite(settings.temperature):
        raise InputError(f"must be a finite number, got {settings.temperature}", parameter="temperature")
    prices = (settings.price_in, settings.price_out)
    if (prices[0] is None) != (prices[1] is None):
        raise InputError(
            "give both the input and the output price (USD per million tokens), or neither", parameter="prices"
        )
    if any(price is not None and not (math.isfinite(price) and price >= 0) for price in prices):
        raise InputError(f"must be finite numbers of 0 or more, got {prices[0]} and {prices[1]}", parameter="prices")


def user_prices(settings: RunSettings) -> UserPrices | None:
    """The prices the caller gave (`price_in`, `price_out`), if any."""
    if settings.price_in is None or settings.price_out is None:
        return None
    return UserPrices(settings.price_in, settings.price_out)
