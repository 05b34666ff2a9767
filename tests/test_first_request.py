"""A case posed as its own conversation is asked without an agent run (`engine/first_request.py`), in function
calling and in the text modes: the same request as the agent's, the same record, and a reply the agent would do more
with handed to an agent run that goes on from it without asking again."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel, ValidationInfo, field_validator
from pydantic_ai import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.messages import FinishReason
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from evaluator import Case
from tests.test_function_calls import ADD, MUL, TASK, called, conversation, make_case
from typed_eval.contracts import AnswerMode, RunSettings, SampleRecord
from typed_eval.core.secrets import Redactor
from typed_eval.core.tasks import Task, TextReader
from typed_eval.engine.first_request import ending
from typed_eval.engine.posing import Poser
from typed_eval.providers.transport import TrafficMeter

Asked = tuple[list[tuple[str, Any]], ModelSettings | None, ModelRequestParameters]


class Seen(WrapperModel):
    """The wrapped model, each request it is sent kept: its messages' parts, its settings and its parameters."""

    def __init__(self, replies: list[ModelResponse]) -> None:
        self.replies = list(replies)
        super().__init__(FunctionModel(self._respond, profile=ModelProfile(supports_json_schema_output=True)))
        self.asked: list[Asked] = []
        self.instructed: list[list[str | None]] = []
        """The instructions each message of each request carries."""

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return self.replies.pop(0)

    async def request(
        self, messages: list[ModelMessage], settings: ModelSettings | None, parameters: ModelRequestParameters
    ) -> ModelResponse:
        parts = [
            (type(p).__name__, getattr(p, "content", None) or getattr(p, "args", None))
            for m in messages
            for p in m.parts
        ]
        self.instructed.append([getattr(m, "instructions", None) for m in messages])
        self.asked.append((parts, settings, parameters))
        return await super().request(messages, settings, parameters)


def call(name: str, args: Any, call_id: str = "a") -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=call_id)


def reply(*parts: Any, finish: FinishReason | None = None) -> ModelResponse:
    return ModelResponse(parts=list(parts), finish_reason=finish)


REPLIES: dict[str, list[ModelResponse]] = {
    "calls": [reply(call("add", '{"x": 1}'), call("mul", '{"a": 2}', "b"))],
    "text": [reply(TextPart("No function "), TextPart("fits."))],
    "empty": [reply()],
    "text and calls": [reply(TextPart("Here:"), call("add", "{}"))],
    "no arguments": [reply(call("add", ""))],
    "not JSON": [reply(call("add", "{x: 1")), reply(call("add", '{"x": 1}'))],
    "not an object": [reply(call("add", "[1]")), reply(call("add", "{}"))],
    "unknown": [reply(call("sub", "{}")), reply(TextPart("none"))],
    "valid and invalid": [reply(call("add", "{}"), call("mul", "{bad", "b")), reply(call("add", "{}"))],
    "two invalid": [reply(call("add", "{bad"), call("sub", "{}", "b")), reply(call("add", "{}"))],
    "decoded arguments": [reply(call("add", {"x": 1}))],
    "no id": [reply(call("add", "{}", "")), reply(call("add", "{}"))],
    "same ids": [reply(call("add", "{}"), call("mul", "{}"))],
    "cut off": [reply(TextPart("half a"), finish="length")],
}
REPLIES["same ids"][0].parts[1] = call("mul", "{}", "a")


def readable(text: str) -> str | None:
    return text.strip() if text.strip().startswith("answer") else None


def text_task(empty_reply: bool) -> Task[Any]:
    reader = TextReader(readable, feedback="Start with 'answer'.")
    return Task(
        name="read", output_type=str, score=called, reader=reader, messages=conversation, empty_reply=empty_reply
    )


TEXT_REPLIES: dict[str, list[ModelResponse]] = {
    "readable": [reply(TextPart("answer "), TextPart("42"))],
    "unreadable": [reply(TextPart("42")), reply(TextPart("answer 42"))],
    "padded": [reply(TextPart("  answer 42\n"))],
    "blank": [reply(TextPart("   ")), reply(TextPart("answer"))],
    "empty": [reply(), reply(TextPart("answer"))],
    "empty text": [reply(TextPart("")), reply(TextPart("answer"))],
    "a call": [reply(call("add", "{}")), reply(TextPart("answer"))],
    "cut off": [reply(TextPart("answer 4"), finish="length"), reply(TextPart("answer"))],
}


def posed(
    direct: bool,
    case: Case,
    replies: list[ModelResponse],
    retries: int,
    seed: int | None,
    task: Task[Any] = TASK,
    mode: AnswerMode = "tool",
) -> tuple[Seen, Any]:
    model = Seen(replies)
    settings = RunSettings(mode=mode, retries=retries, seed=seed)
    poser = Poser(
        task,
        model,
        settings,
        model_settings=ModelSettings(seed=seed, temperature=0.5) if seed is not None else ModelSettings(),
        traffic=TrafficMeter(),
        redact=Redactor(),
        pacer=None,
    )
    assert poser.direct  # a conversation with no instructions of ours and no batch: asked directly
    poser.direct = direct
    outcome = asyncio.run(poser.pose(case, repeat=1))
    return model, outcome


def stored(record: SampleRecord) -> dict[str, Any]:
    return record.model_dump(exclude={"latency_s", "wait_s"})


@pytest.mark.parametrize("retries", [0, 2])
@pytest.mark.parametrize("name", list(REPLIES))
def test_asked_directly_the_model_is_sent_and_the_record_is_what_an_agent_run_sends_and_records(
    name: str, retries: int
) -> None:
    case = make_case(name, [ADD, MUL], None, system="Be brief.")
    by_agent, agent_outcome = posed(False, case, REPLIES[name], retries, seed=7)
    directly, direct_outcome = posed(True, case, REPLIES[name], retries, seed=7)
    assert [(parts, settings) for parts, settings, _ in directly.asked] == [
        (parts, settings) for parts, settings, _ in by_agent.asked
    ]
    assert [parameters for _, _, parameters in directly.asked] == [parameters for _, _, parameters in by_agent.asked]
    assert stored(direct_outcome.record) == stored(agent_outcome.record)
    assert repr(direct_outcome.exception) == repr(agent_outcome.exception)
    assert directly.replies == by_agent.replies  # no reply asked twice, none left out
    assert directly.instructed == by_agent.instructed


@pytest.mark.parametrize("retries", [0, 2])
@pytest.mark.parametrize("empty_reply", [True, False])
@pytest.mark.parametrize("mode", ["text", "tag"])
@pytest.mark.parametrize("name", list(TEXT_REPLIES))
def test_in_the_text_modes_too_what_is_asked_directly_and_recorded_is_what_an_agent_run_asks_and_records(
    name: str, mode: AnswerMode, empty_reply: bool, retries: int
) -> None:
    case, task = make_case(name, [], None, system="Be brief."), text_task(empty_reply)
    by_agent, agent_outcome = posed(False, case, TEXT_REPLIES[name], retries, 3, task, mode)
    directly, direct_outcome = posed(True, case, TEXT_REPLIES[name], retries, 3, task, mode)
    assert [asked[:2] for asked in directly.asked] == [asked[:2] for asked in by_agent.asked]
    assert [asked[2] for asked in directly.asked] == [asked[2] for asked in by_agent.asked]
    assert stored(direct_outcome.record) == stored(agent_outcome.record)
    assert repr(direct_outcome.exception) == repr(agent_outcome.exception)
    assert directly.replies == by_agent.replies


def test_a_text_reply_is_read_asked_directly_and_an_unreadable_one_asked_again_by_the_agent() -> None:
    case = make_case("unreadable", [], "answer 42")
    model, outcome = posed(True, case, TEXT_REPLIES["unreadable"], 1, None, text_task(False), "text")
    assert (outcome.record.status, outcome.record.output, outcome.record.corrective_retries) == (
        "correct",
        "answer 42",
        1,
    )
    assert [a.feedback for a in outcome.record.attempts] == ["Start with 'answer'.", None]
    (kind, told) = model.asked[1][0][-1]  # the agent's retry, its feedback framed as pydantic-ai frames it
    assert model.asked[1][0][:2] == [("UserPromptPart", "unreadable"), ("TextPart", "42")]
    assert kind == "UserPromptPart" and "\nStart with 'answer'.\n" in str(told)


def test_the_requests_asked_directly_carry_the_run_s_settings_and_the_case_s_functions_as_tools() -> None:
    model, outcome = posed(True, make_case("calls", [ADD, MUL], None), REPLIES["calls"], 0, seed=7)
    ((parts, settings, parameters),) = model.asked
    assert parts == [("UserPromptPart", "calls")]
    assert settings == {"seed": 8, "temperature": 0.5}  # the repeat's seed
    assert [(t.name, t.kind, t.strict, t.toolset_id) for t in parameters.function_tools] == [
        ("add", "external", False, "case-functions"),
        ("mul", "external", False, "case-functions"),
    ]
    assert (parameters.allow_text_output, parameters.output_tools) == (True, [])
    assert outcome.record.output == [{"name": "add", "arguments": '{"x": 1}'}, {"name": "mul", "arguments": '{"a": 2}'}]


@pytest.mark.parametrize("retries", [0, 2])
def test_a_reply_ends_the_run_asked_directly_only_when_the_agent_would_end_it_alike(retries: int) -> None:
    tools = {"add", "mul"}
    ended = {name: ending(replies[0], tools, retries) for name, replies in REPLIES.items()}
    ran_out = "RetriesRanOut" if retries == 0 else None  # an invalid call and no retry: the run fails on it
    assert {name: None if e is None else type(e[1]).__name__ for name, e in ended.items()} == {
        "calls": "DeferredToolRequests",
        "text": "str",
        "empty": "str",
        "text and calls": "DeferredToolRequests",
        "no arguments": "DeferredToolRequests",
        "not JSON": ran_out,
        "not an object": ran_out,
        "unknown": ran_out,
        "valid and invalid": ran_out,
        "two invalid": ran_out,
        "decoded arguments": None,
        "no id": None,
        "same ids": None,
        "cut off": None,
    }
    text, empty = ended["text"], ended["empty"]
    assert text is not None and text[1] == "No function fits."
    assert empty is not None and empty[1] == "\u2063empty reply\u2063"
    assert [[type(p).__name__ for p in m.parts] for m in empty[0]] == [["TextPart"]]  # as EmptyReplyAsText leaves it


def test_replies_are_priced_as_pydantic_ai_prices_them_and_a_model_genai_prices_does_not_know_is_looked_up_once() -> (
    None
):
    from pydantic_ai.usage import RequestUsage

    from typed_eval.engine.first_request import DirectRequests, plain_parameters

    def answer(model_name: str) -> ModelResponse:
        usage = RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000)
        return ModelResponse(parts=[TextPart("hi")], usage=usage, model_name=model_name, provider_name="openai")

    class Answering(WrapperModel):
        """Answers with the replies as they are (their model, provider and usage)."""

        def __init__(self, replies: list[ModelResponse]) -> None:
            super().__init__(FunctionModel(lambda messages, info: replies[0]))
            self.replies = replies

        async def request(self, *args: Any) -> ModelResponse:
            return self.replies.pop(0)

    replies = [answer("gpt-4o-2024-08-06"), answer("gpt-4o-2024-08-06"), answer("mock-fc"), answer("mock-fc")]
    requests = DirectRequests(Answering(replies))
    priced = [asyncio.run(requests.reply([], None, plain_parameters())) for _ in range(4)]
    assert [reply.usage.cost for reply in priced] == [Decimal("12.5"), Decimal("12.5"), None, None]
    assert requests.unpriced == {("mock-fc", "openai", None)}


class Point(BaseModel):
    x: int
    y: int = 0

    @field_validator("x")
    @classmethod
    def within(cls, x: int, info: ValidationInfo) -> int:
        if isinstance(info.context, int) and x > info.context:
            raise ValueError(f"at most {info.context}")
        return x


def as_expected(case: Case, output: Any) -> float:
    return 1.0 if to_jsonable_python(output) == case.expected else 0.0


def structured_task(output_type: Any) -> Task[Any]:
    return Task(
        name="shape",
        output_type=output_type,
        score=as_expected,
        messages=conversation,
        validation_context=lambda case: 9,
    )


def out(args: Any, call_id: str = "a", name: str = "final_result") -> ToolCallPart:
    return call(name, args, call_id)


VALID = reply(out('{"x": 1}'))
TOOL_REPLIES: dict[str, list[ModelResponse]] = {
    "valid": [VALID],
    "invalid": [reply(out('{"x": "a"}')), VALID],
    "out of context": [reply(out('{"x": 99}')), VALID],
    "not JSON": [reply(out("{x")), VALID],
    "text and call": [reply(TextPart("Here:"), out('{"x": 2}'))],
    "thinking": [reply(ThinkingPart("so"), out('{"x": 3}'))],
    "unknown tool": [reply(out("{}", name="other")), VALID],
    "two calls": [reply(out('{"x": 1}'), out('{"x": 2}', "b"))],
    "text": [reply(TextPart('{"x": 1}')), VALID],
    "empty": [reply(), VALID],
    "decoded arguments": [reply(out({"x": 4}))],
    "no id": [reply(out('{"x": 5}', ""))],
    "cut off": [reply(out('{"x": 1'), finish="length"), VALID],
}
TEXT_OUTPUT = reply(TextPart('{"x": 1}'))
OBJECT_REPLIES: dict[str, list[ModelResponse]] = {
    "valid": [TEXT_OUTPUT],
    "fenced": [reply(TextPart('```json\n{"x": 2}\n```'))],
    "invalid": [reply(TextPart('{"x": "a"}')), TEXT_OUTPUT],
    "out of context": [reply(TextPart('{"x": 99}')), TEXT_OUTPUT],
    "two texts": [reply(TextPart('{"x": '), TextPart("3}"))],
    "thinking": [reply(ThinkingPart("so"), TextPart('{"x": 4}'))],
    "empty text": [reply(TextPart("")), TEXT_OUTPUT],
    "a call": [reply(out('{"x": 1}')), TEXT_OUTPUT],
    "cut off": [reply(TextPart('{"x": 1'), finish="length"), TEXT_OUTPUT],
}
LIST_REPLIES: dict[str, list[ModelResponse]] = {
    "listed": [reply(out('{"response": [1, 2]}'))],
    "not listed": [reply(out("[1, 2]")), reply(out('{"response": []}'))],
}


def both_ways(
    case: Case, replies: list[ModelResponse], retries: int, task: Task[Any], mode: AnswerMode
) -> tuple[Seen, Any]:
    """The case posed by an agent run and directly: the same requests, record and exception; the direct outcome."""
    by_agent, agent_outcome = posed(False, case, replies, retries, 3, task, mode)
    directly, direct_outcome = posed(True, case, replies, retries, 3, task, mode)
    assert [asked[:2] for asked in directly.asked] == [asked[:2] for asked in by_agent.asked]
    assert [asked[2] for asked in directly.asked] == [asked[2] for asked in by_agent.asked]
    assert stored(direct_outcome.record) == stored(agent_outcome.record)
    assert repr(direct_outcome.exception) == repr(agent_outcome.exception)
    assert directly.replies == by_agent.replies
    assert directly.instructed == by_agent.instructed
    return directly, direct_outcome


@pytest.mark.parametrize("retries", [0, 2])
@pytest.mark.parametrize(
    ("mode", "name"),
    [("tool", name) for name in TOOL_REPLIES]
    + [(mode, name) for mode in ("native", "prompted") for name in OBJECT_REPLIES],
)
def test_in_the_structured_modes_what_is_asked_directly_and_recorded_is_what_an_agent_run_asks_and_records(
    mode: AnswerMode, name: str, retries: int
) -> None:
    replies = TOOL_REPLIES[name] if mode == "tool" else OBJECT_REPLIES[name]
    both_ways(make_case(name, [], {"x": 1, "y": 0}, system="Be brief."), replies, retries, structured_task(Point), mode)


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.parametrize("name", list(LIST_REPLIES))
def test_an_output_that_is_not_an_object_is_read_from_the_key_pydantic_ai_wraps_it_in(name: str, retries: int) -> None:
    both_ways(make_case(name, [], [1, 2]), LIST_REPLIES[name], retries, structured_task(list[int]), "tool")


def test_a_valid_structured_output_ends_the_run_asked_directly_and_an_invalid_one_goes_on_in_the_agent() -> None:
    seen, outcome = both_ways(
        make_case("p", [], {"x": 2, "y": 0}), TOOL_REPLIES["text and call"], 0, structured_task(Point), "tool"
    )
    ((_, _, parameters),) = seen.asked
    assert (parameters.output_mode, [t.name for t in parameters.output_tools], parameters.allow_text_output) == (
        "tool",
        ["final_result"],
        False,
    )
    assert (outcome.record.status, outcome.record.output) == ("correct", {"x": 2, "y": 0})
    seen, outcome = both_ways(
        make_case("p", [], {"x": 1, "y": 0}), TOOL_REPLIES["out of context"], 1, structured_task(Point), "tool"
    )
    assert (outcome.record.status, outcome.record.corrective_retries, len(seen.asked)) == ("correct", 1, 2)
    assert "at most 9" in str(outcome.record.attempts[0].feedback)


def test_a_structured_output_pydantic_ai_reads_otherwise_is_left_to_the_agent() -> None:
    from pydantic_ai import NativeOutput, ToolOutput

    from typed_eval.engine.first_request import StructuredOutput

    def made(output_type: Any) -> StructuredOutput | None:
        return StructuredOutput.of(output_type)

    assert made(ToolOutput(Point)) is not None and made(NativeOutput(Point)) is not None
    assert made([ToolOutput(Point), ToolOutput(list[int])]) is None  # a choice of two outputs
    assert made(ToolOutput(lambda x: x + 1)) is None  # a function run on the output
    assert made([ToolOutput(Point), str]) is None  # text allowed beside the tool


@pytest.mark.parametrize(
    ("args", "status", "output"), [('{"x": 2}', "correct", {"x": 2, "y": 0}), ('{"x": 10}', "missing", None)]
)
def test_in_tool_mode_a_valid_output_or_with_no_retry_an_invalid_one_ends_the_case_with_no_agent_run(
    args: str, status: str, output: Any
) -> None:
    model = Seen([reply(out(args))])
    poser = Poser(
        structured_task(Point),
        model,
        RunSettings(mode="tool", retries=0),
        model_settings=ModelSettings(),
        traffic=TrafficMeter(),
        redact=Redactor(),
        pacer=None,
    )
    outcome = asyncio.run(poser.pose(make_case("p", [], {"x": 2, "y": 0})))
    assert poser._agent is None  # never made
    assert (outcome.record.status, outcome.record.output, outcome.exception) == (status, output, None)
    valid = status == "correct"
    assert [(a.valid, a.feedback) for a in outcome.record.attempts] == [
        (valid, None if valid else "x: Value error, at most 9")
    ]


@pytest.mark.parametrize("name", ["calls", "text", "not JSON"])
def test_a_task_s_own_instructions_are_sent_directly_as_the_agent_sends_them(name: str) -> None:
    from dataclasses import replace

    task = replace(TASK, instructions="Call at most what is needed.")
    seen, _ = both_ways(make_case(name, [ADD, MUL], None), REPLIES[name], 1, task, "tool")
    assert seen.instructed[0] == ["Call at most what is needed."]
    assert [p.content for p in seen.asked[0][2].instruction_parts or []] == ["Call at most what is needed."]
    seen, _ = both_ways(
        make_case(name, [], None),
        TEXT_REPLIES["readable"],
        1,
        replace(text_task(True), instructions="Begin with 'answer'."),
        "text",
    )
    assert seen.instructed[0] == ["Begin with 'answer'."]
