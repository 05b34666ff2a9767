"""Tasks whose answer is the function calls a model makes among functions offered per case.

The case's functions become the request's tools as pydantic-ai external tools: a call comes back as a
`DeferredToolRequests` and is never executed. The output handed to the scorer is the list of calls, each its name
and its arguments as the model sent them (a JSON text, or the object a provider already decoded), or the model's text
when it called nothing. A case may be posed as its own conversation (`Task.messages`) instead of one prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RunContext,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from typed_eval.core.errors import TaskError
from typed_eval.schemas import Case, InvalidKind

__all__ = [
    "MAX_CALLS",
    "AtMostCalls",
    "CaseFunctions",
    "ChatMessage",
    "Functions",
    "call_json",
    "chat_history",
    "invalid_call",
    "last_calls",
]

ChatMessage = Mapping[str, Any]
"""`{"role": "system" | "user" | "assistant", "content": text}`: one message of a conversation posed as it is."""

Functions = Callable[[Case], Sequence[Mapping[str, Any]]]
"""A case's functions: `{"name", "description", "parameters"}` each, `parameters` a JSON schema of an object."""

MAX_CALLS = 1_000
"""The calls of one reply that are kept: pydantic-ai's handling of deferred calls grows with their square, so a
reply of a million calls would stall the run; no answer needs more."""

ARGUMENTS_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))
"""A call's arguments must be a JSON object: pydantic-ai validates them with this, and tells the model why not."""


class CaseFunctions(AbstractToolset[Case]):
    """The functions of the case being posed (the run's deps), offered as external tools: their calls are deferred,
    never run. An invalid call (arguments that are not a JSON object, a name not offered) is sent back to the model
    with the reason while retries are left."""

    def __init__(self, functions: Functions, retries: int) -> None:
        self._functions, self._retries = functions, retries

    @property
    def id(self) -> str | None:
        return "case-functions"

    async def get_tools(self, ctx: RunContext[Case]) -> dict[str, ToolsetTool[Case]]:
        tools: dict[str, ToolsetTool[Case]] = {}
        for doc in self._functions(ctx.deps):
            name = str(doc.get("name", ""))
            definition = ToolDefinition(
                name=name,
                parameters_json_schema=dict(doc.get("parameters") or {"type": "object", "properties": {}}),
                description=doc.get("description"),
                kind="external",
                strict=False,  # sent as defined: no schema rewriting for strict mode
            )
            tools[name] = ToolsetTool(
                toolset=self, tool_def=definition, max_retries=self._retries, args_validator=ARGUMENTS_OBJECT
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Case], tool: ToolsetTool[Case]
    ) -> Any:
        raise TaskError("a case's functions are never executed")  # external tools are deferred by pydantic-ai


class AtMostCalls(AbstractCapability[Any]):
    """A reply's calls beyond the first `MAX_CALLS` dropped (its other parts kept), before pydantic-ai reads it."""

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if len(calls) <= MAX_CALLS:
            return response
        kept = {id(p) for p in calls[:MAX_CALLS]}
        parts = [p for p in response.parts if not isinstance(p, ToolCallPart) or id(p) in kept]
        return replace(response, parts=parts)


def call_json(call: ToolCallPart) -> dict[str, Any]:
    """One call as a record stores it: its name and its arguments as sent."""
    return {"name": call.tool_name, "arguments": call.args if call.args is not None else ""}


def last_calls(messages: Sequence[ModelMessage]) -> list[dict[str, Any]] | None:
    """The calls of the last response as sent (`[{"name", "arguments"}]`), when it made any: what is scored."""
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if not responses:
        return None
    calls = [call_json(p) for p in responses[-1].parts if isinstance(p, ToolCallPart)]
    return calls or None


def invalid_call(call: ToolCallPart, offered: AbstractSet[str]) -> tuple[InvalidKind, str] | None:
    """Why a call is invalid (its kind and reason), or None: a name not offered, arguments not a JSON object."""
    if call.tool_name not in offered:
        return "unknown_tool", f"unknown function {call.tool_name!r}"
    args = call.args
    if isinstance(args, dict) or args is None:
        return None
    try:
        decoded = json.loads(args)
    except (ValueError, RecursionError) as exc:
        return "malformed_json", f"the arguments of {call.tool_name!r} are not JSON: {str(exc)[:200]}"
    if not isinstance(decoded, dict):
        return "wrong_type", f"the arguments of {call.tool_name!r} are not a JSON object"
    return None


def chat_history(messages: Sequence[ChatMessage]) -> list[ModelMessage]:
    """A conversation as pydantic-ai's messages, ready to be answered: system and user messages become requests,
    assistant messages responses; consecutive system and user messages share one request."""
    history: list[ModelMessage] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if not isinstance(content, str):
            raise TaskError(f"a posed message's content must be text, got {type(content).__name__}")
        if role == "assistant":
            history.append(ModelResponse(parts=[TextPart(content)]))
            continue
        if role == "system":
            part: SystemPromptPart | UserPromptPart = SystemPromptPart(content)
        elif role == "user":
            part = UserPromptPart(content)
        else:
            raise TaskError(f"a posed message's role must be system, user or assistant, got {role!r}")
        last = history[-1] if history else None
        if isinstance(last, ModelRequest):
            history[-1] = replace(last, parts=[*last.parts, part])
        else:
            history.append(ModelRequest(parts=[part]))
    if not history or not isinstance(history[-1], ModelRequest):
        raise TaskError("a posed conversation must end with a system or user message")
    return history
