"""Tasks whose answer is the function calls a model makes among functions offered per case.

The case's functions become the request's tools as pydantic-ai external tools: a call comes back as a
`DeferredToolRequests` and is never executed. The output handed to the scorer is the list of calls, each its name
and its arguments as the model sent them (a JSON text, or the object a provider already decoded), or the model's text
when it called nothing. A case may be posed as its own conversation (`Task.messages`) instead of one prompt.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RunContext,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, ValidationError, core_schema

from typed_eval.contracts import Case, InvalidKind
from typed_eval.core.errors import TaskError

__all__ = [
    "ARGUMENTS_OBJECT",
    "CASE_FUNCTIONS",
    "MAX_CALLS",
    "AtMostCalls",
    "CaseFunctions",
    "ChatMessage",
    "Functions",
    "Reply",
    "ToolCall",
    "at_most_calls",
    "call_json",
    "call_verdict",
    "chat_history",
    "invalid_call",
    "last_calls",
    "reply_of",
    "resent_calls",
    "schemas_as_given",
    "tool_definitions",
]

ChatMessage = Mapping[str, Any]
"""`{"role": "system" | "user" | "assistant", "content": text}`: one message of a conversation posed as it is."""


@dataclass(frozen=True)
class ToolCall:
    """One call of a reply, as the model sent it: its arguments are the JSON text it wrote, never parsed here."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """A model's reply to one request of a conversation a task drives itself (`Conversation.exchange`)."""

    text: str
    calls: tuple[ToolCall, ...] = ()


Functions = Callable[[Case], Sequence[Mapping[str, Any]]]
"""A case's functions: `{"name", "description", "parameters"}` each, `parameters` a JSON schema of an object."""

MAX_CALLS = 1_000
"""The calls of one reply that are kept: pydantic-ai's handling of deferred calls grows with their square, so a
reply of a million calls would stall the run; no answer needs more."""

CASE_FUNCTIONS = "case-functions"
"""The id of the toolset of a case's functions, which the agent gives each of its tools' definitions."""

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
        return CASE_FUNCTIONS

    async def get_tools(self, ctx: RunContext[Case]) -> dict[str, ToolsetTool[Case]]:
        tools: dict[str, ToolsetTool[Case]] = {}
        for definition in tool_definitions(self._functions(ctx.deps)):
            tools[definition.name] = ToolsetTool(
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
        return at_most_calls(response)


def at_most_calls(response: ModelResponse) -> ModelResponse:
    """A reply with its calls beyond the first `MAX_CALLS` dropped (what `AtMostCalls` makes of it)."""
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


def call_verdict(call: ToolCallPart, offered: AbstractSet[str]) -> str | list[dict[str, Any]] | None:
    """What pydantic-ai tells the model about a call it refuses, or None when it defers the call: for a name not
    offered, its own words; for arguments that are not a JSON object, the errors of validating them as it does."""
    if call.tool_name not in offered:
        names = ", ".join(repr(name) for name in sorted(offered))
        listed = f"Available tools: {names}" if names else "No tools available."
        return f"Unknown tool name: {call.tool_name!r}. {listed}"
    try:
        if isinstance(call.args, str):
            ARGUMENTS_OBJECT.validate_json(call.args or "{}")
        else:
            ARGUMENTS_OBJECT.validate_python(call.args or {})
    except ValidationError as exc:
        return [dict(error) for error in exc.errors(include_url=False)]
    return None


def resent_calls(
    messages: list[ModelMessage], prefix: int, functions: Sequence[Mapping[str, Any]] | None, retries: int
) -> list[ModelMessage] | None:
    """The conversation (its first `prefix` messages posed, not answered) asking again for a reply of calls some of
    which are invalid (pydantic-ai ends the run with the valid ones deferred), while `retries` are left: every call of
    the reply is sent back, the invalid ones with their reason, so the model makes them all again. None when nothing
    is to be asked again."""
    responses = [m for m in messages[prefix:] if isinstance(m, ModelResponse)]
    if not responses or len(responses) > retries or functions is None:
        return None
    offered = {str(doc.get("name")) for doc in functions}
    calls = [p for p in responses[-1].parts if isinstance(p, ToolCallPart)]
    reasons = [invalid_call(call, offered) for call in calls]
    if not any(reasons):
        return None
    last = messages[-1]
    said = last.parts if isinstance(last, ModelRequest) else ()  # pydantic-ai's word on the invalid calls
    answered = {p.tool_call_id for p in said if isinstance(p, ToolReturnPart)}
    parts = [
        ToolReturnPart(
            tool_name=call.tool_name,
            content=found[1] if found else "Another call of this reply is invalid: make all the calls again.",
            tool_call_id=call.tool_call_id,
            outcome="retried",
        )
        for call, found in zip(calls, reasons, strict=True)
        if call.tool_call_id not in answered
    ]
    if isinstance(last, ModelRequest):
        return [*messages[:-1], replace(last, parts=[*last.parts, *parts])]
    return [*messages, ModelRequest(parts=parts)]


def chat_history(messages: Sequence[ChatMessage]) -> list[ModelMessage]:
    """A conversation as pydantic-ai's messages, ready to be answered: system, user and tool messages become
    requests, assistant messages (their text and calls) responses; consecutive requests' messages share one."""
    history: list[ModelMessage] = []
    names: dict[str, str] = {}  # a call's id -> its function, which a tool message does not repeat
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            calls = _assistant_calls(message.get("tool_calls"))
            names.update((call.tool_call_id, call.tool_name) for call in calls)
            text = [TextPart(content)] if isinstance(content, str) and (content or not calls) else []
            if not text and not calls:
                raise TaskError("a posed assistant message needs text or tool calls")
            history.append(ModelResponse(parts=[*text, *calls]))
            continue
        if not isinstance(content, str):
            raise TaskError(f"a posed message's content must be text, got {type(content).__name__}")
        part: SystemPromptPart | UserPromptPart | ToolReturnPart
        if role == "system":
            part = SystemPromptPart(content)
        elif role == "user":
            part = UserPromptPart(content)
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in names:
                raise TaskError(f"a posed tool message answers no call of the conversation: {call_id[:80]!r}")
            part = ToolReturnPart(tool_name=names[call_id], content=content, tool_call_id=call_id)
        else:
            raise TaskError(f"a posed message's role must be system, user, assistant or tool, got {str(role)[:40]!r}")
        last = history[-1] if history else None
        if isinstance(last, ModelRequest):
            history[-1] = replace(last, parts=[*last.parts, part])
        else:
            history.append(ModelRequest(parts=[part]))
    if not history or not isinstance(history[-1], ModelRequest):
        raise TaskError("a posed conversation must end with a system, user or tool message")
    return history


class EchoedCallPart(ToolCallPart):
    """A call of a posed conversation, sent back as the model made it. pydantic-ai writes a call's arguments again
    as compact JSON, an invalid text wrapped in `{"INVALID_JSON": ...}`; an agent's loop echoes the reply unchanged
    (as benchmarks' own handlers do), so providers that take the arguments as text get them byte for byte."""

    def args_as_json_str(self) -> str:
        return self.args if isinstance(self.args, str) else super().args_as_json_str()


def _assistant_calls(tool_calls: Any) -> list[ToolCallPart]:
    """An assistant message's `tool_calls` (OpenAI's chat format) as pydantic-ai's call parts, arguments as sent."""
    if tool_calls is None:
        return []
    if not isinstance(tool_calls, list):
        raise TaskError("a posed assistant message's tool_calls must be a list")
    parts: list[ToolCallPart] = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise TaskError("a posed tool call needs a function with a name")
        arguments = function.get("arguments")
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        parts.append(EchoedCallPart(tool_name=function["name"], args=text, tool_call_id=str(call.get("id"))))
    return parts


def reply_of(response: ModelResponse) -> Reply:
    """A response as a `Reply`: its text, and its calls with their arguments as sent."""
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = tuple(
        ToolCall(p.tool_call_id, p.tool_name, p.args if isinstance(p.args, str) else json.dumps(p.args or {}))
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    return Reply(text, calls)


def tool_definitions(functions: Sequence[Mapping[str, Any]]) -> list[ToolDefinition]:
    """Functions (`{"name", "description", "parameters"}`) as the tools of a request."""
    empty: dict[str, Any] = {"type": "object", "properties": {}}
    return [
        ToolDefinition(
            name=str(doc.get("name", "")),
            description=doc.get("description"),
            parameters_json_schema=dict(doc.get("parameters") or empty),
            kind="external",
            strict=False,  # sent as defined: no schema rewriting for strict mode
        )
        for doc in functions
    ]


def schemas_as_given(model: Model) -> Model:
    """A copy of `model` that sends functions' JSON schemas as given: without its profile's schema transformer,
    which rewrites them for the provider's strict mode (OpenAI's drops every `title`, `$schema`, `discriminator`)."""
    clone = copy.copy(model)
    vars(clone)["profile"] = {**model.profile, **ModelProfile(json_schema_transformer=None)}
    return clone
