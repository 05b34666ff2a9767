"""Tasks answered by the calls a model makes among functions offered per case (`Task.functions`), posed as a
conversation of the case's own (`Task.messages`): the calls come back unexecuted, as sent, and are what is scored."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from evaluator import Case, Task
from typed_eval.contracts import AnswerMode

ADD = {"name": "add", "description": "Add two numbers.", "parameters": {"type": "object", "properties": {}}}
MUL = {"name": "mul", "description": "Multiply.", "parameters": {"type": "object", "properties": {"a": {}}}}


def offered(case: Case) -> list[dict[str, Any]]:
    functions: list[dict[str, Any]] = case.metadata["functions"]
    return functions


def conversation(case: Case, _: AnswerMode) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = case.metadata["messages"]
    return messages


def called(case: Case, output: Any) -> float:
    return 1.0 if output == case.expected else 0.0


TASK: Task[Any] = Task(
    name="calls",
    output_type=list[dict[str, Any]] | str,
    score=called,
    functions=offered,
    messages=conversation,
    empty_reply=True,
)


def make_case(id: str, functions: list[dict[str, Any]], expected: Any, system: str | None = None) -> Case:
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": id}]
    return Case(id=id, prompt=id, expected=expected, metadata={"functions": functions, "messages": messages})


CASES = [
    make_case(
        "parallel",
        [ADD, MUL],
        [{"name": "add", "arguments": '{"x": 1}'}, {"name": "mul", "arguments": '{"a": 2}'}],
        system="Be brief.",
    ),
    make_case("none", [MUL], "No function fits."),
    make_case("broken", [ADD], [{"name": "add", "arguments": "{x: 1"}]),
    make_case("unknown", [ADD], [{"name": "sub", "arguments": "{}"}]),
]
REPLIES: dict[str, list[Any]] = {
    "parallel": [ToolCallPart("add", '{"x": 1}', tool_call_id="a"), ToolCallPart("mul", '{"a": 2}', tool_call_id="b")],
    "none": [TextPart("No function fits.")],
    "broken": [ToolCallPart("add", "{x: 1", tool_call_id="a")],
    "unknown": [ToolCallPart("sub", "{}", tool_call_id="a")],
}


def test_the_calls_come_back_unexecuted_and_the_case_conversation_is_sent_as_it_is() -> None:
    seen: dict[str, tuple[list[str], Sequence[ModelMessage], str | None]] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        case_id = str(first.parts[-1].content)
        seen[case_id] = ([t.name for t in info.function_tools], messages, info.instructions)
        return ModelResponse(parts=REPLIES[case_id])

    result = asyncio.run(evaluator.evaluate(TASK, CASES, FunctionModel(respond), retries=0, concurrency=1))
    records = {r.case_id: r for r in result.records}
    assert {i: (r.status, r.output, [a.invalid_kind for a in r.attempts]) for i, r in records.items()} == {
        "parallel": ("correct", CASES[0].expected, [None]),
        "none": ("correct", "No function fits.", [None]),
        "broken": ("correct", CASES[2].expected, ["malformed_json"]),  # scored as sent when the retries ran out
        "unknown": ("correct", CASES[3].expected, ["unknown_tool"]),
    }
    tools, messages, instructions = seen["parallel"]
    assert (tools, instructions) == (["add", "mul"], None)  # the case's functions, no instructions of ours
    (request,) = messages
    assert isinstance(request, ModelRequest)
    assert [(type(p).__name__, p.content) for p in request.parts] == [
        ("SystemPromptPart", "Be brief."),
        ("UserPromptPart", "parallel"),
    ]
    assert isinstance(request.parts[0], SystemPromptPart)
    assert seen["none"][0] == ["mul"]


def test_a_reply_of_many_calls_keeps_the_first_thousand_and_a_huge_argument_is_scored_as_sent() -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        if first.parts[-1].content == "many":
            return ModelResponse(parts=[ToolCallPart("add", "{}", tool_call_id=f"c{n}") for n in range(1_500)])
        return ModelResponse(parts=[ToolCallPart("add", '{"x": "' + "a" * 10_000_000 + '"}', tool_call_id="a")])

    cases = [make_case("many", [ADD], None), make_case("huge", [ADD], None)]
    result = asyncio.run(evaluator.evaluate(TASK, cases, FunctionModel(respond), retries=0, concurrency=1))
    many, huge = result.records
    assert (many.status, len(many.output), many.output[-1]) == ("incorrect", 1_000, {"name": "add", "arguments": "{}"})
    assert (huge.status, len(huge.output[0]["arguments"]), huge.attempts[0].valid) == ("incorrect", 10_000_009, True)


def test_a_reply_of_valid_and_invalid_calls_is_asked_again_whole_while_retries_are_left() -> None:
    sent: list[list[tuple[str, str | None, str]]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(
            [
                (type(p).__name__, getattr(p, "tool_call_id", None), str(p.content))
                for m in messages
                for p in m.parts
                if not isinstance(p, ToolCallPart)
            ]
        )
        if len(sent) == 1:
            return ModelResponse(
                parts=[ToolCallPart("add", '{"x": 1}', tool_call_id="a"), ToolCallPart("mul", "{bad", tool_call_id="b")]
            )
        return ModelResponse(
            parts=[ToolCallPart("add", '{"x": 1}', tool_call_id="c"), ToolCallPart("mul", '{"a": 2}', tool_call_id="d")]
        )

    (record,) = asyncio.run(
        evaluator.evaluate(TASK, [make_case("mixed", [ADD, MUL], None)], FunctionModel(respond), retries=1)
    ).records
    assert record.output == [{"name": "add", "arguments": '{"x": 1}'}, {"name": "mul", "arguments": '{"a": 2}'}]
    assert [(a.valid, a.invalid_kind) for a in record.attempts] == [(False, "malformed_json"), (True, None)]
    assert record.corrective_retries == 1
    (user, to_add, to_mul) = sent[1]
    assert user == ("UserPromptPart", None, "mixed")
    assert to_add == ("ToolReturnPart", "a", "Another call of this reply is invalid: make all the calls again.")
    assert to_mul[:2] == ("ToolReturnPart", "b") and "Invalid JSON" in to_mul[2]


def test_the_conversation_posed_is_not_an_answer_of_the_model() -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert [type(m).__name__ for m in messages] == ["ModelRequest", "ModelResponse", "ModelRequest"]
        return ModelResponse(parts=[TextPart("none")])

    case = Case(
        id="chat",
        prompt="again",
        expected="none",
        metadata={
            "functions": [ADD],
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "again"},
            ],
        },
    )
    (record,) = asyncio.run(evaluator.evaluate(TASK, [case], FunctionModel(respond), retries=0)).records
    assert (record.status, len(record.attempts), record.usage.requests) == ("correct", 1, 1)
    assert record.usage.input_tokens is not None


def test_when_the_retries_run_out_on_a_reply_of_valid_and_invalid_calls_all_its_calls_are_scored() -> None:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart("add", '{"x": 1}', tool_call_id="a"), ToolCallPart("mul", "[2]", tool_call_id="b")]
        )

    (record,) = asyncio.run(
        evaluator.evaluate(TASK, [make_case("mixed", [ADD, MUL], None)], FunctionModel(respond), retries=1)
    ).records
    assert record.output == [{"name": "add", "arguments": '{"x": 1}'}, {"name": "mul", "arguments": "[2]"}]
    assert [(a.valid, a.invalid_kind) for a in record.attempts] == [(False, "wrong_type"), (False, "wrong_type")]
