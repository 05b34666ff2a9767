"""A task session that keeps its own conversation (`Conversation.exchange`): messages in OpenAI's chat format sent as
they are, the functions offered as tools, the reply's calls returned unexecuted, every request counted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.direct import model_request
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import RequestUsage

import evaluator
from evaluator import Case, Task
from tests.fake_openai import FakeOpenAI, completion, text
from typed_eval.core.calls import EchoedCallPart, Reply, ToolCall, chat_history
from typed_eval.core.errors import TaskError

FUNCTIONS = [
    {"name": "add", "description": "Adds.", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}
]


def test_a_session_exchanges_calls_and_results_over_several_requests() -> None:
    seen: list[tuple[list[ModelMessage], list[str]]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((messages, [tool.name for tool in info.function_tools]))
        usage = RequestUsage(input_tokens=10, output_tokens=2)
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("add", '{"a": 1}', tool_call_id="c1")], usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    replies: list[Reply] = []

    async def session(case: Case, conversation: Any) -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": case.prompt}]
        first = await conversation.exchange(messages, FUNCTIONS)
        replies.append(first)
        call = first.calls[0]
        tool_calls = [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]
        messages += [{"role": "assistant", "content": None, "tool_calls": tool_calls},
                     {"role": "tool", "tool_call_id": call.id, "content": "2"}]  # fmt: skip
        replies.append(await conversation.exchange(messages, []))
        return [r.text for r in replies]

    task: Task[Any] = Task(name="loop", output_type=list[str], score=lambda case, out: 1.0, session=session)
    result = asyncio.run(evaluator.evaluate(task, [Case(id="a", prompt="add one")], FunctionModel(model)))
    assert replies == [Reply("", (ToolCall("c1", "add", '{"a": 1}'),)), Reply("done")]
    assert [tools for _, tools in seen] == [["add"], []]
    second = seen[1][0]
    assert [type(m) for m in second] == [ModelRequest, ModelResponse, ModelRequest]
    assert second[1].parts == [EchoedCallPart("add", '{"a": 1}', tool_call_id="c1")]
    returned = second[2].parts[0]
    assert isinstance(returned, ToolReturnPart) and (returned.tool_name, returned.content) == ("add", "2")
    record = result.records[0]
    assert record.status == "correct"
    assert [(a.valid, a.raw, a.input_tokens) for a in record.attempts] == [
        (True, '[{"id": "c1", "name": "add", "arguments": "{\\"a\\": 1}"}]', 10),
        (True, "done", 10),
    ]
    assert (record.usage.requests, record.usage.input_tokens, record.corrective_retries) == (2, 20, 0)


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([{"role": "tool", "tool_call_id": "x", "content": "1"}], "answers no call of the conversation: 'x'"),
        ([{"role": "assistant", "content": None}], "needs text or tool calls"),
        ([{"role": "robot", "content": "hi"}], "must be system, user, assistant or tool, got 'robot'"),
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yes"}], "must end with a system"),
    ],
)
def test_a_conversation_that_cannot_be_sent_says_why(messages: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(TaskError, match=error):
        chat_history(messages)


def test_a_user_message_after_tool_results_shares_their_request() -> None:
    calls = [{"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}]
    history = chat_history(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
            {"role": "user", "content": "next"},
        ]
    )
    assert history[1].parts == [EchoedCallPart("f", '{"x": 1}', tool_call_id="c")]
    assert [type(p) for p in history[2].parts] == [ToolReturnPart, UserPromptPart]


def test_a_budget_reached_mid_sample_ends_it_missing_with_what_it_spent() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("add", '{"a": 1}', tool_call_id=f"c{len(messages)}")])

    async def session(case: Case, conversation: Any) -> Any:
        messages: list[dict[str, Any]] = [{"role": "user", "content": case.prompt}]
        while True:  # a model that never stops calling: only the budget ends this
            call = (await conversation.exchange(messages, FUNCTIONS)).calls[0]
            made = [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}]
            messages += [{"role": "assistant", "content": None, "tool_calls": made},
                         {"role": "tool", "tool_call_id": call.id, "content": "2"}]  # fmt: skip

    task: Task[Any] = Task(name="loop", output_type=list[str], score=lambda case, out: 1.0, session=session)
    cases = [Case(id="a", prompt="add"), Case(id="b", prompt="add")]
    result = asyncio.run(evaluator.evaluate(task, cases, FunctionModel(model), max_requests=4, concurrency=1))
    ((record,),) = [result.records]  # the second case never started
    assert (record.status, record.score, record.usage.requests, len(record.attempts)) == ("missing", None, 4, 4)
    assert (result.status, result.reason) == ("partial", "max_requests 4 reached")


def test_the_calls_of_a_posed_reply_go_back_to_the_server_byte_for_byte() -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"path": ".",  "n": 1}'}},
        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": '{"broken": '}},
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    with FakeOpenAI(lambda request: completion(text("done"))) as server:
        model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=server.url, api_key="k"))
        asyncio.run(model_request(model, chat_history(messages)))
    sent = server.requests[0]["messages"][1]["tool_calls"]
    assert [call["function"]["arguments"] for call in sent] == ['{"path": ".",  "n": 1}', '{"broken": ']


def test_a_sessions_requests_are_priced_as_an_agent_runs_are() -> None:
    async def session(case: Case, conversation: Any) -> Any:
        return (await conversation.exchange([{"role": "user", "content": case.prompt}], FUNCTIONS)).text

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        return completion(text("done"), model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=100)

    task: Task[Any] = Task(name="loop", output_type=str, score=lambda case, out: 1.0, session=session)
    with FakeOpenAI(reply) as server:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=server.url, api_key="k"))
        result = asyncio.run(evaluator.evaluate(task, [Case(id="a", prompt="go")], model))
    (record,) = result.records
    assert (record.cost.source, record.cost.usd) == ("genai-prices", pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6))
