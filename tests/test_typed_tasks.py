"""Typed tasks end to end: nested outputs, corrective retries, strict types, scorers, text readers, modes,
model strings, transport retries and stored runs, driven through pydantic-ai's real agent loop."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.providers.openai import OpenAIProvider

import evaluator
from evaluator import Case, EvaluationResult, Score, Task
from tests.conftest import without_usage
from tests.fake_openai import FakeOpenAI, Fault, completion, tool_call
from typed_eval.contracts import Attempt, Quiz
from typed_eval.core.errors import CaseScoringError
from typed_eval.core.tasks import TextReader
from typed_eval.suites.multiple_choice import multiple_choice_task

# --- output types -------------------------------------------------------------------------------------------


class Kind(StrEnum):
    FRIEND = "friend"
    FOE = "foe"


class Cat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["cat"]
    lives: int


class Dog(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["dog"]
    breed: str


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    kind: Kind
    pet: Annotated[Cat | Dog, Field(discriminator="type")]


class Household(BaseModel):
    model_config = ConfigDict(extra="forbid")
    people: list[Person]


class Count(BaseModel):
    n: int


class StrictCount(BaseModel):
    model_config = ConfigDict(strict=True)
    n: int


GOOD: dict[str, Any] = {
    "people": [
        {"name": "Ann", "kind": "friend", "pet": {"type": "cat", "lives": 9}},
        {"name": "Bob", "kind": "foe", "pet": {"type": "dog", "breed": "pug"}},
    ]
}
ENUM_FEEDBACK = "people.1.kind: Input should be 'friend' or 'foe'"


def edited(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    """A deep copy of GOOD with `change` applied to it."""
    data = copy.deepcopy(GOOD)
    change(data)
    return data


BAD_ENUM = edited(lambda d: d["people"][1].update(kind="enemy"))
MISSING_LIVES = edited(lambda d: d["people"][0]["pet"].pop("lives"))
EXTRA_COLOR = edited(lambda d: d["people"][1]["pet"].update(color="brown"))

# --- helpers ------------------------------------------------------------------------------------------------


def call(args: dict[str, Any] | str, name: str = "final_result") -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args)])


def say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def prompt_of(messages: Sequence[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def scripted(
    replies: Mapping[str, Sequence[ModelResponse]], seen: list[list[ModelMessage]] | None = None
) -> FunctionModel:
    """Answers the case whose prompt is `key` with `replies[key][turn]`; keeps every request in `seen`."""

    def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(list(messages))
        return replies[prompt_of(messages)][sum(isinstance(m, ModelResponse) for m in messages)]

    return FunctionModel(respond, profile=ModelProfile(supports_json_schema_output=True))


def one(replies: Sequence[ModelResponse], seen: list[list[ModelMessage]] | None = None) -> FunctionModel:
    return scripted({"p": replies}, seen)


def case(id: str = "c", prompt: str = "p", expected: Any = None, group: str | None = None) -> Case:
    return Case(id=id, prompt=prompt, expected=expected, group=group)


def full_marks(_: Case, __: Any) -> float:
    return 1.0


def household_task(
    score: Callable[[Case, Any], float | Score | Awaitable[float | Score]] = full_marks, **kw: Any
) -> Task[Any]:
    return Task(name="household", output_type=Household, score=score, **kw)


def evaluate(task: Task[Any], cases: Sequence[Case], model: Any, **options: Any) -> EvaluationResult:
    return asyncio.run(evaluator.evaluate(task, cases, model, **options))


def kinds(attempts: Sequence[Attempt]) -> list[str | None]:
    return [a.invalid_kind for a in attempts]


def read_count(text: str) -> Count | None:
    match = re.search(r"N=(\d+)", text)
    return Count(n=int(match.group(1))) if match else None


def any_number(text: str) -> Count | None:
    match = re.search(r"\d+", text)
    return Count(n=int(match.group())) if match else None


def count_is_expected(c: Case, output: Count) -> float:
    return 1.0 if output.n == c.expected else 0.0


# --- 1-3: nested outputs, corrective retries ----------------------------------------------------------------


def test_nested_output_valid_on_the_first_try() -> None:
    def grade(c: Case, output: Household) -> float:
        return sum(p.kind is Kind.FRIEND for p in output.people) / len(output.people)

    result = evaluate(household_task(grade), [case()], one([call(GOOD)]))
    record = result.records[0]
    assert record.output == GOOD
    assert (record.score, record.status, record.corrective_retries) == (0.5, "partial", 0)
    assert without_usage(record.attempts) == [Attempt(valid=True, raw=json.dumps(GOOD))]
    assert result.scores.compliance.valid_first_try == 100.0


def test_bad_enum_deep_in_a_list_is_corrected() -> None:
    result = evaluate(household_task(), [case()], one([call(BAD_ENUM), call(GOOD)]))
    record = result.records[0]
    assert without_usage(record.attempts) == [
        Attempt(valid=False, invalid_kind="invalid_value", raw=json.dumps(BAD_ENUM), feedback=ENUM_FEEDBACK),
        Attempt(valid=True, raw=json.dumps(GOOD)),
    ]
    assert (record.status, record.score, record.corrective_retries, record.output) == ("correct", 1.0, 1, GOOD)
    compliance = result.scores.compliance
    assert (compliance.valid_first_try, compliance.valid_after_retries) == (0.0, 100.0)
    assert compliance.invalid_by_kind == {"invalid_value": 1}


def test_every_nested_invalid_output_is_named_with_its_location() -> None:
    replies = [call(MISSING_LIVES), call(EXTRA_COLOR), call('{"people": ['), say("Ann and Bob"), call(GOOD)]
    record = evaluate(household_task(), [case()], one(replies), retries=5).records[0]
    assert [(a.invalid_kind, a.feedback) for a in record.attempts] == [
        ("missing_field", "people.0.pet.cat.lives: Field required"),
        ("extra_fields", "people.1.pet.dog.color: Extra inputs are not permitted"),
        ("malformed_json", "output: Invalid JSON: EOF while parsing a list at line 1 column 12"),
        ("no_tool_call", "Please include your response in a tool call."),
        (None, None),
    ]
    assert (record.status, record.corrective_retries) == ("correct", 4)


def test_retries_exhausted_on_a_nested_output_is_missing() -> None:
    result = evaluate(
        household_task(), [case()], one([call(BAD_ENUM), call(EXTRA_COLOR), call(MISSING_LIVES)]), retries=2
    )
    record = result.records[0]
    assert (record.status, record.score, record.output, record.corrective_retries) == ("missing", None, None, 2)
    assert kinds(record.attempts) == ["invalid_value", "extra_fields", "missing_field"]
    assert [a.valid for a in record.attempts] == [False] * 3
    assert record.attempts[-1].feedback == "people.0.pet.cat.lives: Field required"
    assert (result.scores.missing, result.scores.score) == (1, 0.0)


# --- 4: strict types ----------------------------------------------------------------------------------------


def test_multiple_choice_never_coerces_an_answer() -> None:
    quiz = Quiz(id="q1", class_name="kin", prompt="Which?\n1. a\n2. b", options=("a", "b"), correct=2)
    replies = [call({"answer": True}, "select_answer"), call({"answer": "2"}, "select_answer"),
               call({"answer": 2.0}, "select_answer"), call({"answer": 2}, "select_answer")]  # fmt: skip
    model = scripted({quiz.prompt: replies})
    record = evaluate(multiple_choice_task(), [quiz.to_case()], model, retries=3).records[0]
    assert kinds(record.attempts) == ["wrong_type", "wrong_type", "wrong_type", None]
    assert [a.feedback for a in record.attempts[:3]] == ["answer: Input should be a valid integer"] * 3
    assert (record.status, record.output) == ("correct", {"reasoning": None, "answer": 2})


def test_a_lax_user_model_coerces_and_a_strict_one_does_not() -> None:
    lax = Task(name="count", output_type=Count, score=full_marks)
    strict = Task(name="count", output_type=StrictCount, score=full_marks)
    coerced = evaluate(lax, [case()], one([call({"n": "2"})]), retries=0).records[0]
    assert (coerced.status, coerced.output, kinds(coerced.attempts)) == ("correct", {"n": 2}, [None])
    refused = evaluate(strict, [case()], one([call({"n": "2"})]), retries=0).records[0]
    assert (refused.status, refused.output) == ("missing", None)
    assert without_usage(refused.attempts) == [
        Attempt(valid=False, invalid_kind="wrong_type", raw='{"n": "2"}', feedback="n: Input should be a valid integer")
    ]


# --- 5: scorers, details, metrics, aggregates ---------------------------------------------------------------


def test_score_details_are_stored_and_summed_into_metrics() -> None:
    received: list[dict[str, float]] = []

    def grade(c: Case, output: Household) -> Score:
        hits = sum(p.name in c.expected for p in output.people)
        return Score(hits / 2, {"hits": hits, "misses": 2 - hits, "label": c.id, "perfect": hits == 2})

    def metrics(totals: Mapping[str, float]) -> dict[str, float]:
        received.append(dict(totals))
        return {"hit_rate": 100 * totals["hits"] / (totals["hits"] + totals["misses"])}

    task = household_task(grade, metrics=metrics)
    cases = [case("a", "pa", ["Ann", "Bob"]), case("b", "pb", ["Ann"])]
    result = evaluate(task, cases, scripted({"pa": [call(GOOD)], "pb": [call(GOOD)]}))
    assert [r.score_details for r in result.records] == [
        {"hits": 2, "misses": 0, "label": "a", "perfect": True},
        {"hits": 1, "misses": 1, "label": "b", "perfect": False},
    ]
    assert [r.status for r in result.records] == ["correct", "partial"]
    assert received[-1] == {"hits": 3, "misses": 1}
    assert result.scores.metrics == {"hit_rate": 75.0}
    assert (result.scores.score, result.scores.partial, result.scores.correct) == (75.0, 1, 1)


def test_an_async_scorer_is_awaited() -> None:
    async def grade(c: Case, output: Household) -> Score:
        await asyncio.sleep(0)
        return Score(0.25, {"judge": "async"})

    record = evaluate(household_task(grade), [case()], one([call(GOOD)])).records[0]
    assert (record.score, record.status, record.score_details) == (0.25, "partial", {"judge": "async"})


@pytest.mark.parametrize(("aggregate", "headline"), [("mean", 75.0), ("macro", 50.0)])
def test_headline_mean_or_macro_over_groups_of_different_sizes(aggregate: str, headline: float) -> None:
    cases = [case(f"a{n}", f"pa{n}", 2, "a") for n in range(3)] + [case("b0", "pb0", 3, "b")]
    model = scripted({c.prompt: [call(GOOD)] for c in cases})

    def grade(c: Case, output: Household) -> float:
        return 1.0 if len(output.people) == c.expected else 0.0

    scores = evaluate(household_task(grade, aggregate=aggregate), cases, model).scores
    assert [(g.group, g.correct, g.incorrect, g.score) for g in scores.groups] == [("a", 3, 0, 100.0), ("b", 0, 1, 0.0)]
    assert (scores.score, scores.mean_score, scores.macro_score) == (headline, 75.0, 50.0)


# --- 6: scorer errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "message"),
    [
        (lambda c, o: 1.5, "the scorer of task 'household' gave 1.5 for case 'c': scores are in [0, 1]"),
        (lambda c, o: 1 / 0, "the scorer of task 'household' failed on case 'c': ZeroDivisionError: division by zero"),
    ],
)
def test_a_broken_scorer_is_a_task_error(score: Callable[[Case, Any], float], message: str) -> None:
    with pytest.raises(evaluator.TaskError) as raised:
        evaluate(household_task(score), [case()], one([call(GOOD)]))
    assert str(raised.value) == message
    assert "\n" not in str(raised.value)


def test_a_scorer_failing_mid_run_stops_every_request() -> None:
    calls = [0]

    async def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        calls[0] += 1
        await asyncio.sleep(0.01)
        return call(GOOD)

    def grade(c: Case, output: Household) -> float:
        if c.id == "c5":
            raise ValueError("bad case")
        return 1.0

    async def scenario() -> tuple[int, int, str]:
        cases = [case(f"c{n}", f"p{n}") for n in range(20)]
        try:
            await evaluator.evaluate(household_task(grade), cases, FunctionModel(respond), concurrency=4)
        except evaluator.TaskError as exc:
            at_raise = calls[0]
            await asyncio.sleep(0.2)
            return at_raise, calls[0], str(exc)
        raise AssertionError("evaluate() did not raise")

    at_raise, later, message = asyncio.run(scenario())
    assert message == "the scorer of task 'household' failed on case 'c5': ValueError: bad case"
    assert at_raise < 20
    assert later == at_raise


# --- 7: text mode -------------------------------------------------------------------------------------------


def test_text_reader_feedback_is_sent_back_then_read() -> None:
    task = Task(name="count", output_type=Count, score=count_is_expected, reader=read_count)
    seen: list[list[ModelMessage]] = []
    record = evaluate(task, [case(expected=3)], one([say("about three"), say("N=3")], seen), mode="text").records[0]
    feedback = "Your reply could not be read: answer in the format the question asks for."
    assert without_usage(record.attempts) == [
        Attempt(valid=False, invalid_kind="unreadable", raw="about three", feedback=feedback),
        Attempt(valid=True, raw="N=3"),
    ]
    assert (record.status, record.output, record.corrective_retries) == ("correct", {"n": 3}, 1)
    retry = seen[1][-1]
    assert isinstance(retry, ModelRequest)
    told = [str(p.content) for p in retry.parts if isinstance(p, UserPromptPart)]
    wrapped = {f"<{tag}>\n{feedback}\n</{tag}>" for tag in ("pyai:retry_feedback", "retry_feedback")}  # 2.68, 2.62
    assert len(told) == 1 and any(text in told[0] for text in wrapped)


def test_text_reader_kind_feedback_and_relaxed_reading() -> None:
    reader = TextReader(read=read_count, feedback="Say N=<number>.", invalid_kind="no_tag", relaxed=any_number)
    task = Task(name="count", output_type=Count, score=count_is_expected, reader=reader)
    result = evaluate(task, [case(expected=3)], one([say("I think 3")]), mode="text", retries=0)
    record = result.records[0]
    assert without_usage(record.attempts) == [
        Attempt(valid=False, invalid_kind="no_tag", raw="I think 3", feedback="Say N=<number>.")
    ]
    assert (record.status, record.output, record.score) == ("missing", None, None)
    assert (record.relaxed_output, record.relaxed_score) == ({"n": 3}, 1.0)
    assert (result.scores.score, result.scores.missing, result.scores.correct) == (0.0, 1, 0)
    compliance = result.scores.compliance
    assert (compliance.relaxed_recoverable, compliance.relaxed_recoverable_correct) == (1, 1)


def test_a_relaxed_reading_whose_scorer_fails_its_case_leaves_the_case_missing_and_unscored() -> None:
    def refuse(case: Case, output: Any) -> float:
        raise CaseScoringError("the scorer cannot grade this case")

    reader = TextReader(read=read_count, feedback="Say N=<number>.", invalid_kind="no_tag", relaxed=any_number)
    task = Task(name="count", output_type=Count, score=refuse, reader=reader)
    record = evaluate(task, [case(expected=3)], one([say("I think 3")]), mode="text", retries=0).records[0]
    assert (record.status, record.error, record.relaxed_output, record.relaxed_score) == ("missing", None, None, None)


def test_text_mode_without_a_reader_parses_json_fenced_or_not() -> None:
    cases = [case("plain", "p1"), case("fenced", "p2")]
    model = scripted({"p1": [say(json.dumps(GOOD))], "p2": [say(f"```json\n{json.dumps(GOOD)}\n```")]})
    records = evaluate(household_task(), cases, model, mode="text").records
    assert [(r.status, r.output, r.corrective_retries) for r in records] == [("correct", GOOD, 0)] * 2


# --- 8: native and prompted ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["native", "prompted"])
def test_structured_text_modes_validate_a_nested_output(mode: Literal["native", "prompted"]) -> None:
    record = evaluate(
        household_task(), [case()], one([say(json.dumps(BAD_ENUM)), say(json.dumps(GOOD))]), mode=mode
    ).records[0]
    assert without_usage(record.attempts) == [
        Attempt(valid=False, invalid_kind="invalid_value", raw=json.dumps(BAD_ENUM), feedback=ENUM_FEEDBACK),
        Attempt(valid=True, raw=json.dumps(GOOD)),
    ]
    assert (record.status, record.output) == ("correct", GOOD)


# --- 9: model strings and transport retries ------------------------------------------------------------------


def test_test_model_string_generates_schema_valid_nested_data() -> None:
    record = evaluate(household_task(), [case()], "test").records[0]
    assert record.status != "error"
    assert record.status == "correct"
    Household.model_validate(record.output)


def test_test_model_string_answers_the_example() -> None:
    record = evaluate(household_task(example=Household.model_validate(GOOD)), [case()], "test").records[0]
    assert (record.status, record.output, kinds(record.attempts)) == ("correct", GOOD, [None])


def unavailable_twice() -> Callable[[dict[str, Any]], dict[str, Any] | Fault]:
    """Two 503s of one sample (no outage: one sample's failures), resent by the SDK."""
    calls = [0]

    def reply(_: dict[str, Any]) -> dict[str, Any] | Fault:
        calls[0] += 1
        if calls[0] <= 2:
            return Fault(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "20"})
        return completion(tool_call(GOOD, name="final_result"))

    return reply


def test_transport_retries_counted_for_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(unavailable_twice()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        result = evaluate(household_task(), [case()], "openai-chat:m", model_settings={"max_retries": 3})
        sent = len(server.requests)
    record = result.records[0]
    assert (record.status, record.output, record.transport_retries, sent) == ("correct", GOOD, 2, 3)
    assert (record.corrective_retries, result.scores.totals.transport_retries) == (0, 2)


def test_transport_retries_counted_for_a_callers_openai_model() -> None:
    with FakeOpenAI(unavailable_twice()) as server:
        model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=server.url, api_key="k"))
        result = evaluate(household_task(), [case()], model, model_settings={"max_retries": 3})
        sent = len(server.requests)
    record = result.records[0]
    assert (record.status, record.output, record.transport_retries, sent) == ("correct", GOOD, 2, 3)
    assert (record.corrective_retries, result.scores.totals.transport_retries) == (0, 2)


# --- 10: stored runs ----------------------------------------------------------------------------------------


def test_a_run_stopped_early_resumes_to_the_same_score(tmp_path: Path) -> None:
    cases = [case(f"c{n}", f"p{n}", expected) for n, expected in enumerate([2, 2, 1, 2, 3, 2])]
    seen: list[list[ModelMessage]] = []
    model = scripted({c.prompt: [call(GOOD)] for c in cases}, seen)

    def grade(c: Case, output: Household) -> float:
        return 1.0 if len(output.people) == c.expected else 0.0

    task = household_task(grade)

    def run(folder: Path, **options: Any) -> evaluator.RunOutcome:
        return asyncio.run(evaluator.run(task, cases, model, results_dir=folder, concurrency=1, **options))

    whole = run(tmp_path / "whole")
    assert whole.summary.status == "finished"
    assert whole.summary.scores.score == pytest.approx(400 / 6)
    first = run(tmp_path / "cut", max_requests=2)
    assert (first.summary.status, first.summary.reason, first.posed) == ("partial", "max_requests 2 reached", 6)
    assert len((first.run_dir / "samples.jsonl").read_text().splitlines()) == 2
    assert (first.run_dir / "summary.json").is_file()
    seen.clear()
    resumed = run(tmp_path / "cut", resume=True)
    assert resumed.run_dir == first.run_dir
    assert (resumed.summary.status, resumed.posed) == ("finished", 4)
    assert sorted(prompt_of(m) for m in seen) == ["p2", "p3", "p4", "p5"]
    stored = list(evaluator.read_records(resumed.run_dir))
    assert sorted(r.case_id for r in stored) == [c.id for c in cases]
    assert resumed.summary.scores.score == whole.summary.scores.score
    assert (resumed.summary.scores.correct, resumed.summary.scores.incorrect) == (4, 2)
