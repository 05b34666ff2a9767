"""What providers state of their rate limits, read from response headers (OpenAI's `x-ratelimit-*`, Anthropic's
`anthropic-ratelimit-*`, `Retry-After`): each reading checked, what cannot be true clamped and noted."""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Literal

__all__ = ["HORIZON_S", "http_date", "number", "stated_limits", "states_limits"]

HORIZON_S = 3600.0
"""A stated reset or Retry-After beyond this is absurd: clamped (and said once)."""


_DURATION_PARTS = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def duration(text: str) -> float | None:
    """OpenAI's `6m0s`, `1.5s`, `20ms`, or plain seconds."""
    text = text.strip()
    plain = number(text)
    if plain is not None:
        return plain
    parts = _DURATION_PARTS.findall(text)
    if not parts or "".join(value + unit for value, unit in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(value) * scale[unit] for value, unit in parts)


def number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def http_date(text: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


_STATING = ("x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining", "x-ratelimit-remaining-tokens",
            "anthropic-ratelimit-tokens-remaining", "x-ratelimit-limit-requests", "x-ratelimit-limit-tokens",
            "anthropic-ratelimit-requests-limit", "anthropic-ratelimit-tokens-limit")  # fmt: skip


def states_limits(headers: Mapping[str, str]) -> bool:
    return any(name in headers for name in _STATING)


def stated_limits(
    headers: Mapping[str, str], kind: Literal["requests", "tokens"]
) -> tuple[float | None, float | None, float | None, int] | None:
    """(limit, remaining, seconds to full, notes) as OpenAI or Anthropic state them; None if neither does."""
    names = (f"x-ratelimit-limit-{kind}", f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}")
    anthropic = (
        f"anthropic-ratelimit-{kind}-limit",
        f"anthropic-ratelimit-{kind}-remaining",
        f"anthropic-ratelimit-{kind}-reset",
    )
    texts = [headers.get(name) for name in names]
    as_time = False
    if texts[1] is None:
        texts = [headers.get(name) for name in anthropic]
        as_time = True
        if texts[1] is None:
            return None
    notes = 0
    limit = number(texts[0]) if texts[0] is not None else None
    remaining = number(texts[1]) if texts[1] is not None else None
    if (texts[0] is not None and limit is None) or (texts[1] is not None and remaining is None):
        notes |= 1 << 3
    if limit is not None and limit <= 0:
        limit, notes = None, notes | 1 << 3
    if remaining is not None and (remaining < 0 or (limit is not None and remaining > limit)):
        remaining, notes = max(0.0, min(remaining, limit or 0.0)), notes | 1 << 1
    reset: float | None = None
    if texts[2] is not None:
        reset = reset_at(texts[2]) if as_time else duration(texts[2])
        if reset is None:
            notes |= 1 << 3
        elif reset > HORIZON_S:
            reset, notes = 60.0, notes | 1 << 0
        elif reset < 0:
            reset = 0.0
    return limit, remaining, reset, notes


def reset_at(text: str) -> float | None:
    """Anthropic's reset: an RFC 3339 time; seconds from now."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp() - time.time()
