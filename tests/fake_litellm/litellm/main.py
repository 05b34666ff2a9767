"""`ModelResponse` and `Usage` as `tau2.utils.llm_utils.generate` reads them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Function:
    name: str
    arguments: str
    """A JSON text, as a model sends it."""


@dataclass
class ToolCall:
    id: str
    function: Function
    type: str = "function"


@dataclass
class Message:
    role: str
    content: str | None
    tool_calls: list[ToolCall] | None = None


@dataclass
class Choice:
    message: Message
    finish_reason: str
    index: int = 0

    def to_dict(self) -> dict[str, Any]:
        """What τ-bench keeps as the message's `raw_data` (it reads it from the choice)."""
        return asdict(self)


@dataclass
class ModelResponse:
    model: str
    choices: list[Choice]
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def of(cls, model: str, message: dict[str, Any]) -> ModelResponse:
        """The response carrying an OpenAI-shaped assistant `message`."""
        calls = [
            ToolCall(c["id"], Function(c["function"]["name"], c["function"]["arguments"]))
            for c in message.get("tool_calls") or []
        ]
        choice = Choice(
            Message(message.get("role", "assistant"), message.get("content"), calls or None),
            "tool_calls" if calls else "stop",
        )
        return cls(model, [choice], Usage(prompt_tokens=10, completion_tokens=5))

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
