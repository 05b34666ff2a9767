"""The first request of a case posed as its own conversation, sent without an agent run: most replies end the run.

An agent run costs several times the request it sends (its graph, capabilities, tool manager and task groups), and
most replies end the run with no other request: in function calling, text or calls that are all valid; in the text
modes, a reply the task's reader can read (or any, with no retries); in the structured modes, an output valid as
pydantic-ai validates it (or, in tool mode, any with no retries). So the case's conversation is sent as the agent
sends it (the same messages, settings, tools and output parameters), and the reply read as the agent would end the
run with it. A reply the agent would do more with (an invalid call or output, one to ask again for or failing the
run; a finish or a part it treats otherwise) is handed to an agent run that takes it as the answer to its first
request (`Replaying`), so the run goes on exactly as before and nothing is asked twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import (
    DeferredToolRequests,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.direct import model_request
from pydantic_ai.messages import AgentInstructionSource, InstructionId, InstructionPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.output import OutputSpec
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_core import ValidationError

from typed_eval.contracts import Case
from typed_eval.core.calls import ARGUMENTS_OBJECT, CASE_FUNCTIONS, at_most_calls, tool_definitions
from typed_eval.core.tasks import Task, TextReply, empty_reply_as_text
from typed_eval.providers.pydantic_ai_internals import (
    ObjectOutputProcessor,
    fill_response_cost,
    known_to_genai_prices,
    output_object,
)

__all__ = [
    "DirectRequests",
    "Replaying",
    "RetriesRanOut",
    "StructuredOutput",
    "case_tools",
    "ending",
    "first_request",
    "plain_parameters",
    "text_ending",
]

_ENDING_FINISHES = (None, "stop", "tool_call")
"""The finishes of a reply the agent reads as it reads any: another (a cut-off reply...) is left to the agent."""


_OUTPUT_RETURNED = "Final result processed."
"""What pydantic-ai answers the output tool's call that ends a run with."""


@dataclass(frozen=True)
class RetriesRanOut:
    """The output of a run that ends failing: its reply is invalid, and no corrective retry is left (the agent raises
    `UnexpectedModelBehavior` with this message, from this cause, the reply kept last in its messages)."""

    message: str
    cause: BaseException | None = None


Ended = tuple[list[ModelMessage], Any]
"""How a run ends with a reply: the messages it adds (the reply as the agent's capabilities leave it, and what the
agent answers it with), and the run's output."""

Read = Callable[[ModelResponse], Ended | None]
"""How the agent would end its run with a reply to its first request, or None when it would do more with it."""


@dataclass
class DirectRequests:
    """A model's requests sent without an agent run, as the agent sends them, each reply priced as pydantic-ai
    prices it. The models genai-prices does not know are remembered: looking one up scans every model of its
    provider with their patterns, each time (a tenth of a millisecond a request, the most of any step)."""

    model: Model
    unpriced: set[tuple[str | None, str | None, str | None]] = field(default_factory=set)

    async def ask_first(
        self,
        history: list[ModelMessage],
        settings: ModelSettings | None,
        parameters: ModelRequestParameters,
        read: Read,
    ) -> tuple[list[ModelMessage], Any] | Replaying:
        """The case's conversation asked with the agent's `parameters` and its reply `read` as the agent would read
        it: the run's messages and output when the reply ends it, else a model the agent run goes on from (its first
        request answered with that reply)."""
        history = _instructed(history, parameters)
        reply = await self.reply(history, settings, parameters)
        ended = read(reply)
        if ended is None:
            return Replaying(self.model, reply)
        return [*history, *ended[0]], ended[1]

    async def reply(
        self, history: Sequence[ModelMessage], settings: ModelSettings | None, parameters: ModelRequestParameters
    ) -> ModelResponse:
        """The reply to a conversation, asked as the agent asks it and priced as the agent prices it;
        `model.request`'s own errors are raised as they are."""
        prepared = self.model.prepare_messages(list(history), parameters)
        response = await model_request(
            self.model, prepared, model_settings=settings, model_request_parameters=parameters
        )
        self._price(response)
        return response

    def _price(self, response: ModelResponse) -> None:
        key = (response.model_name, response.provider_name, response.provider_url)
        if key in self.unpriced:
            return
        fill_response_cost(response)
        if response.usage.cost is None and not known_to_genai_prices(response):
            self.unpriced.add(key)


def first_request(
    task: Task[Any],
    case: Case,
    functions: Sequence[Mapping[str, Any]] | None,
    structured: StructuredOutput | None,
    retries: int,
    instructions: str | None,
) -> tuple[ModelRequestParameters, Read]:
    """What the agent's first request for this case offers (the case's `functions` when it is answered by calls;
    the `structured` output in the structured modes; nothing else in the text modes) with the agent's `instructions`,
    and how a reply to it would end the run with `retries` corrective retries."""
    if functions is not None:
        tools = case_tools(functions)
        parameters = plain_parameters(tools)
        read: Read = functools.partial(ending, tools={t.name for t in tools}, retries=retries)
    elif structured is not None:
        parameters = structured.parameters
        read = functools.partial(structured.ending, context=task.context_for(case), retries=retries)
    else:

        def readable(text: str) -> TextReply | None:
            reply, _ = task.read_reply(text, case)
            return reply if reply.output is not None or not retries else None  # else it is asked again

        parameters = plain_parameters()
        read = functools.partial(text_ending, read=readable, empty_as_text=bool(task.empty_reply))
    if instructions is not None:  # the agent's own, static: one part
        part = InstructionPart(instructions, id=InstructionId(source=AgentInstructionSource()))
        parameters = replace(parameters, instruction_parts=[part])
    return parameters, read


def _instructed(history: list[ModelMessage], parameters: ModelRequestParameters) -> list[ModelMessage]:
    """The conversation as the agent sends it: its last request carrying the agent's instructions, if any."""
    parts = parameters.instruction_parts
    if not parts or not history or not isinstance(history[-1], ModelRequest):
        return history
    return [*history[:-1], replace(history[-1], instructions="\n\n".join(part.content for part in parts))]


def plain_parameters(tools: Sequence[ToolDefinition] = ()) -> ModelRequestParameters:
    """The parameters of a request offering `tools` alone, text allowed: function calling's, and the text modes'."""
    return ModelRequestParameters(function_tools=list(tools), native_tools=[], output_tools=[])


def case_tools(functions: Sequence[Mapping[str, Any]]) -> list[ToolDefinition]:
    """The tools of a request offering the case's functions, as the agent sends `CaseFunctions`' (one per name)."""
    tools = {tool.name: replace(tool, toolset_id=CASE_FUNCTIONS) for tool in tool_definitions(functions)}
    return list(tools.values())


def ending(reply: ModelResponse, tools: Collection[str], retries: int) -> Ended | None:
    """How the agent ends its run when this reply answers its first request: the reply as its capabilities
    (`AtMostCalls`, `EmptyReplyAsText`) leave it, and the output, its text when it called nothing, its calls
    deferred when every one is valid, or `RetriesRanOut` when one is not and `retries` is 0; None when the agent
    would do more with it."""
    read = empty_reply_as_text(at_most_calls(reply))
    if read.state != "complete" or read.finish_reason not in _ENDING_FINISHES:
        return None
    if any(type(part) not in (TextPart, ToolCallPart) for part in read.parts):
        return None
    calls = [part for part in read.parts if isinstance(part, ToolCallPart)]
    if not calls:
        return [read], "".join(part.content for part in read.parts if isinstance(part, TextPart))
    if len({call.tool_call_id for call in calls}) < len(calls):
        return None
    if not all(call.tool_call_id and isinstance(call.args, str) for call in calls):
        return None
    if all(_valid(call, tools) for call in calls):
        return [read], DeferredToolRequests(calls=calls)
    return ([read], RetriesRanOut("an invalid call in the first reply, and no retry")) if retries == 0 else None


def text_ending(reply: ModelResponse, read: Callable[[str], TextReply | None], empty_as_text: bool) -> Ended | None:
    """How the agent of a text mode ends its run when this reply answers its first request: the reply (an empty one
    given the text `EMPTY_REPLY` when the task reads it so, as `EmptyReplyAsText` does) and what `read` makes of
    its text; None when the agent would do more with it (`read` gives None: it would ask again)."""
    kept = empty_reply_as_text(reply) if empty_as_text else reply
    if kept.state != "complete" or kept.finish_reason not in _ENDING_FINISHES:
        return None
    if any(type(part) is not TextPart for part in kept.parts) or not any(getattr(p, "content", "") for p in kept.parts):
        return None
    output = read("".join(part.content for part in kept.parts if isinstance(part, TextPart)))
    return ([kept], output) if output is not None else None


@dataclass(frozen=True)
class StructuredOutput:
    """How the agent of a structured mode (tool, native or prompted output of one type) asks for its output and
    reads it, taken from the output schema pydantic-ai makes for that agent: the request's parameters, and the
    validation pydantic-ai runs on a reply."""

    parameters: ModelRequestParameters
    processor: ObjectOutputProcessor[Any]
    tool: str | None
    """The output tool's name, in tool mode."""

    @classmethod
    def of(cls, output: OutputSpec[Any]) -> StructuredOutput | None:
        """None when the output is anything else (a union, a function, a choice...) or this pydantic-ai keeps it
        otherwise: the agent then asks alone. pydantic-ai's refusal of the output is raised as an agent's would be."""
        found = output_object(output)
        if found is None:
            return None
        parameters = ModelRequestParameters(
            function_tools=[],
            native_tools=[],
            output_mode=found.mode,
            output_tools=found.tools,
            output_object=found.object_def,
            prompted_output_template=found.template,
            allow_text_output=found.allows_text,
            allow_image_output=found.allows_image,
        )
        return cls(parameters, found.processor, found.tools[0].name if found.tools else None)

    def ending(self, reply: ModelResponse, context: Any, retries: int) -> Ended | None:
        """How the agent ends its run when this reply answers its first request: its output validated as pydantic-ai
        validates it (with the case's validation `context`), or in tool mode `RetriesRanOut` when it is invalid and
        `retries` is 0; None when the agent would do more with it."""
        if reply.state != "complete" or reply.finish_reason not in _ENDING_FINISHES:
            return None
        parts = [part for part in reply.parts if type(part) is not ThinkingPart]
        if len(parts) != 1:
            return None
        (part,) = parts
        call_id = ""
        if self.tool is None:
            if type(part) is not TextPart or not part.content:
                return None
            data = part.content
        elif type(part) is ToolCallPart and part.tool_name == self.tool and isinstance(part.args, str):
            data, call_id = part.args, part.tool_call_id
        else:
            return None
        try:
            value = self.processor.validate(data, validation_context=context)
        except ValidationError as exc:
            if retries or self.tool is None:  # asked again, or failed on a verdict the agent words itself
                return None
            return [reply], RetriesRanOut(f"Exceeded maximum output retries ({retries})", exc)
        key = self.processor.outer_typed_dict_key
        output = value[key] if key else value
        if self.tool is None:
            return [reply], output
        returned = ToolReturnPart(self.tool, _OUTPUT_RETURNED, tool_call_id=call_id)
        return [reply, ModelRequest(parts=[returned])], output


def _valid(call: ToolCallPart, tools: Collection[str]) -> bool:
    """A call the agent defers as it is: an offered function's, its arguments a JSON object (validated as
    pydantic-ai validates them)."""
    if call.tool_name not in tools or not isinstance(call.args, str):
        return False
    try:
        ARGUMENTS_OBJECT.validate_json(call.args or "{}")
    except ValidationError:
        return False
    return True


class Replaying(WrapperModel):
    """A model whose first request is answered with a reply already received (`DirectRequests.reply`), every later
    one by the model it wraps: an agent run over it goes on from that reply as if it had asked for it."""

    def __init__(self, wrapped: Model, reply: ModelResponse) -> None:
        super().__init__(wrapped)
        self._reply: ModelResponse | None = reply

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        reply, self._reply = self._reply, None
        if reply is not None:
            return reply
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    def __repr__(self) -> str:
        return f"Replaying({self.wrapped!r})"
