"""A stand-in for `litellm`, just what τ-bench's `tau2.utils.llm_utils` uses: `completion` answers with the message
`reply(request)` gives (set by a test), never over a network; `completion_cost` is 0. Not the real package, which is
never installed here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .main import ModelResponse

Reply = Callable[[dict[str, Any]], dict[str, Any]]

reply: Reply | None = None
"""The scripted model: the request (`model`, `messages`, `tools`, `tool_choice` and the other arguments) to the
assistant message (OpenAI's shape: `role`, `content`, `tool_calls` [{id, type, function {name, arguments}}])."""
requests: list[dict[str, Any]] = []
"""Every request `completion` was given, in order."""

suppress_debug_info = False
drop_params = False
cache: Any = None
success_callback: list[str] = []
failure_callback: list[str] = []


def disable_cache() -> None:
    global cache
    cache = None


def enable_cache() -> None:
    raise RuntimeError("the fake litellm has no cache")


def completion(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
    **kwargs: Any,
) -> ModelResponse:
    if reply is None:
        raise RuntimeError("fake litellm: no reply scripted")
    request = {"model": model, "messages": messages, "tools": tools, "tool_choice": tool_choice, **kwargs}
    requests.append(request)
    return ModelResponse.of(model, reply(request))


def completion_cost(completion_response: ModelResponse | None = None, **kwargs: Any) -> float:
    return 0.0
