"""The first request of a case posed as its own conversation, sent without an agent run: most replies end the run.

An agent run costs several times the request it sends (its graph, capabilities, tool manager and task groups), and
most replies end the run with no other request: in function calling, text or calls that are all valid; in the text
modes, a reply the task's reader can read (or any, with no retries). So the case's conversation is sent as the agent
sends it (the same messages, settings and tools), and the reply read as the agent would end the run with it. A reply
the agent would do more with (an invalid call, one to ask again for or failing the run; a finish or a part it
treats otherwise) is handed to an agent run that takes it as the answer to its first request (`Replaying`), so the
run goes on exactly as before and nothing is asked twice.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import DeferredToolRequests, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai._genai_prices import calculate_price_for_usage, fill_response_cost
from pydantic_ai.direct import model_request
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_core import ValidationError

from typed_eval.core.calls import ARGUMENTS_OBJECT, CASE_FUNCTIONS, at_most_calls, tool_definitions
from typed_eval.core.tasks import TextReply, empty_reply_as_text

__all__ = ["DirectRequests", "Replaying", "RetriesRanOut", "case_tools", "ending", "text_ending"]

_ENDING_FINISHES = (None, "stop", "tool_call")
"""The finishes of a reply the agent reads as it reads any: another (a cut-off reply...) is left to the agent."""


class RetriesRanOut:
    """The output of a run that ends failing: its reply has an invalid call, and no corrective retry is left (the
    agent raises `UnexpectedModelBehavior`, the reply kept last in its messages)."""


Ended = tuple[ModelResponse, Any]
"""How a run ends with a reply: the reply as the agent's capabilities leave it (the one its messages keep), and the
run's output."""


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
        functions: Sequence[Mapping[str, Any]] | None,
        read: Callable[[ModelResponse], Ended | None],
        retries: int,
    ) -> tuple[list[ModelMessage], Any] | Replaying:
        """The case's conversation asked, offering the case's `functions` when it is answered by calls (`ending`,
        with the run's `retries`), else none (`read`: `text_ending`): the run's messages and output when the reply
        ends it, else a model the agent run goes on from (its first request answered with that reply)."""
        tools = case_tools(functions) if functions is not None else []
        reply = await self.reply(history, settings, tools)
        ended = ending(reply, {tool.name for tool in tools}, retries) if functions is not None else read(reply)
        if ended is None:
            return Replaying(self.model, reply)
        return [*history, ended[0]], ended[1]

    async def reply(
        self, history: Sequence[ModelMessage], settings: ModelSettings | None, tools: Sequence[ToolDefinition]
    ) -> ModelResponse:
        """The reply to a conversation, asked as the agent asks it (`tools` its only tools, text allowed) and priced
        as the agent prices it; `model.request`'s own errors are raised as they are."""
        parameters = ModelRequestParameters(function_tools=list(tools), native_tools=[], output_tools=[])
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
        if response.usage.cost is None and not _known(response):
            self.unpriced.add(key)


def _known(response: ModelResponse) -> bool:
    """Whether genai-prices knows the response's model (its price may still be unknown for this usage)."""
    try:
        calculate_price_for_usage(
            response.usage,
            model_name=response.model_name or "",
            provider_api_url=response.provider_url,
            provider_name=response.provider_name,
        )
    except LookupError:
        return False
    except Exception:  # usage it cannot price (or a failure pydantic-ai warned of): not an unknown model
        return True
    return True


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
        return read, "".join(part.content for part in read.parts if isinstance(part, TextPart))
    if len({call.tool_call_id for call in calls}) < len(calls):
        return None
    if not all(call.tool_call_id and isinstance(call.args, str) for call in calls):
        return None
    if all(_valid(call, tools) for call in calls):
        return read, DeferredToolRequests(calls=calls)
    return (read, RetriesRanOut()) if retries == 0 else None


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
    return (kept, output) if output is not None else None


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
