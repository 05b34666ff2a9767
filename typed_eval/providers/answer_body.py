"""What an answer's JSON body says that the provider SDKs would misread, read here from the body as sent.

- Usage that cannot be read: a token count that is not a whole number of 0 or more (`100.7`, `true`, `"12"`, -5) or
  a `usage` that is no object. The SDKs refuse the whole answer for a fraction (so a valid answer was lost) and read
  `true` as 1 token; here the answer is kept and its usage is unknown, which prices to an unknown cost.
- An error sent with HTTP 200 (`{"error": {...}}` and no answer): the SDKs fail to validate it as an answer, and
  the server's own message was lost in that noise; here it is the HTTP error it is.
"""

from __future__ import annotations

import json
import math
from typing import Any

from typed_eval.core.terminal import plain_line

__all__ = ["UnreadableUsageWarning", "answered_error", "error_status", "unreadable_usage", "without_usage"]

_SHOWN = 80
"""The most characters of a value quoted in a note."""


class UnreadableUsageWarning(UserWarning):
    """A server reported usage that cannot be read: said once per run (the CLI prints it as one note line)."""


def _count_ok(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 0


def _quoted(name: str, value: object) -> str:
    text = f"{json.dumps(name)}: {json.dumps(value, ensure_ascii=False)}"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _needed(payload: dict[str, Any]) -> tuple[str, ...]:
    """The counts the SDK needs in the usage of this kind of answer: OpenAI's chat completion, Anthropic's message
    and OpenAI's response; none named for another (an embedding's list)."""
    if "choices" in payload:
        return ("prompt_tokens", "completion_tokens", "total_tokens")
    if payload.get("type") == "message" or payload.get("object") == "response":
        return ("input_tokens", "output_tokens")
    return ()


def unreadable_usage(payload: dict[str, Any]) -> str | None:
    """The first count of the answer's `usage` that cannot be read, quoted as sent (`"prompt_tokens": 100.7`; the
    whole usage when it is no object or lacks a count the answer's kind needs), or None: readable, or no usage at all.
    Counts are the fields named `*_tokens`, at the top of `usage` and in its objects of details
    (`completion_tokens_details`, Anthropic's `cache_creation`)."""
    usage = payload.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, dict) or not all(usage.get(name) is not None for name in _needed(payload)):
        return _quoted("usage", usage)
    inner = [(k, v) for part in usage.values() if isinstance(part, dict) for k, v in part.items()]
    for name, value in [*usage.items(), *inner]:
        if name.endswith("_tokens") and not _count_ok(value):
            return _quoted(name, value)
    return None


def without_usage(payload: dict[str, Any]) -> dict[str, Any]:
    """The answer with its usage unknown: dropped (OpenAI's is optional, so the answer says none), or, in an
    Anthropic message, whose SDK needs one, zero input tokens (which the attempts read as untrue: unknown)."""
    kept = {name: value for name, value in payload.items() if name != "usage"}
    if payload.get("type") == "message":
        kept["usage"] = {"input_tokens": 0, "output_tokens": 0}
    return kept


def answered_error(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The error of a body sent with HTTP 200 that carries one instead of an answer (its message cleaned, and
    said to have come with 200; its `type` and `code` kept), or None."""
    error = payload.get("error")
    if error is None or any(name in payload for name in ("choices", "content", "candidates")):
        return None
    found = error if isinstance(error, dict) else {"message": error}
    message = found.get("message")
    said = plain_line(message if isinstance(message, str) else json.dumps(found, ensure_ascii=False))
    kept = {
        name: plain_line(value) if isinstance(value, str) else value
        for name in ("type", "code")
        if isinstance(value := found.get(name), str | int)
    }
    return {"message": f"the server sent this error with HTTP 200: {said}", **kept}


def error_status(error: dict[str, Any]) -> int:
    """The HTTP status an error sent with 200 stands for: its `code` when that is one (OpenRouter's way), else 502
    (an invalid answer from the server)."""
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    return 502
