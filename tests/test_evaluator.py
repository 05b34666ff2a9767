"""The evaluator driven through pydantic-ai's FunctionModel: attempts, retries, statuses, usage and cost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    ModelConnectionError,
    ModelHTTPError,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UnexpectedModelBehavior,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile

import evaluator
from evaluator import EvaluationResult
from tests.conftest import without_usage
from typed_eval.contracts import AnswerMode, Attempt, Quiz, SampleRecord
from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import EvaluatorError
from typed_eval.core.run_config import BatchOptions
from typed_eval.suites.multiple_choice import (
    DEFAULT_SYSTEM_PROMPT,
    TAG_INSTRUCTION,
    evaluate_quizzes,
    multiple_choice_task,
)


def quiz(n: int, *, correct: int = 2, class_name: str = "kin", options: Sequence[str] = ("a", "b", "c", "d")) -> Quiz:
    lines = "\n".join(f"{k}. {text}" for k, text in enumerate(options, 1))
    return Quiz(
        id=f"q{n}", class_name=class_name, prompt=f"Question {n}?\n{lines}", options=tuple(options), correct=correct
    )


def call(args: dict[str, Any] | str, name: str = "select_answer") -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args)], usage=RequestUsage(input_tokens=50, output_tokens=7))


def say(text: str, **details: Any) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart(text)], usage=RequestUsage(input_tokens=50, output_tokens=7), provider_details=details or None
    )


def prompt_of(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def scripted(replies: dict[str, list[ModelResponse | Exception]], **model: Any) -> FunctionModel:
    """A model that answers quiz `qN` (by its prompt) with `replies['qN'][turn]`, or raises it."""

    def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        quiz_id = "q" + prompt_of(messages).split("?")[0].removeprefix("Question ")
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        reply = replies[quiz_id][turn]
        if isinstance(reply, Exception):
            raise reply
        return reply

    return FunctionModel(respond, **model)


def run(
    quizzes: Iterable[Quiz],
    model: FunctionModel,
    settings: evaluator.RunConfig | None = None,
    control: evaluator.RunControl | None = None,
    **options: Any,
) -> EvaluationResult:
    return asyncio.run(evaluate_quizzes(quizzes, model, settings, control, **options))


def answer(record: SampleRecord) -> str | None:
    """The option a multiple-choice record chose, as farel-bench compares it (tag mode: the tag's contents)."""
    output = record.output
    return str(output["answer"]) if isinstance(output, dict) else output  # type: ignore[return-value]


def kinds(attempts: list[Attempt]) -> list[str | None]:
    return [a.invalid_kind for a in attempts]


def test_valid_answer_on_the_first_try() -> None:
    result = run([quiz(1)], scripted({"q1": [call({"answer": 2, "reasoning": "b fits"})]}))
    record = result.records[0]
    assert (record.status, answer(record), record.output["reasoning"], record.corrective_retries) == (
        "correct",
        "2",
        "b fits",
        0,
    )
    assert without_usage(record.attempts) == [Attempt(valid=True, raw='{"answer": 2, "reasoning": "b fits"}')]
    assert (record.usage.requests, record.usage.input_tokens, record.usage.output_tokens) == (1, 50, 7)
    assert (record.cost.usd, record.cost.source) == (None, "unknown")
    assert result.status == "finished"
    assert result.tool_choice == "required"


def test_invalid_then_fixed_counts_one_corrective_retry() -> None:
    result = run([quiz(1)], scripted({"q1": [call({"answer": 9}), call({"answer": 2})]}))
    record = result.records[0]
    assert record.status == "correct"
    assert record.corrective_retries == 1
    assert without_usage(record.attempts) == [
        Attempt(
            valid=False,
            invalid_kind="out_of_range",
            raw='{"answer": 9}',
            feedback="answer: 9 is not an option number: choose a number from 1 to 4",
        ),
        Attempt(valid=True, raw='{"answer": 2}'),
    ]
    assert (record.usage.requests, record.usage.input_tokens, record.usage.output_tokens) == (2, 100, 14)
    compliance = result.scores.compliance
    assert (compliance.valid_first_try, compliance.valid_after_retries) == (0.0, 100.0)
    assert (compliance.corrective_retries, compliance.invalid_outputs) == (1, 1)
    assert compliance.invalid_by_kind == {"out_of_range": 1}


def test_always_invalid_exhausts_retries_and_is_missing() -> None:
    result = run([quiz(1)], scripted({"q1": [call({"answer": 0})] * 3}), retries=2)
    record = result.records[0]
    assert (record.status, answer(record), record.corrective_retries) == ("missing", None, 2)
    assert kinds(record.attempts) == ["out_of_range"] * 3
    assert record.attempts[-1].feedback == "answer: 0 is not an option number: choose a number from 1 to 4"
    assert result.scores.missing == 1
    assert result.scores.compliance.valid_after_retries == 0.0
    assert result.scores.groups[0].score == 0.0


def test_every_kind_of_invalid_output_is_named() -> None:
    replies: list[ModelResponse | Exception] = [
        say("I pick 2"),
        call('{"answer": '),
        call({"answer": "two"}),
        call({"answer": 2, "confidence": 0.9}),
        call({"reasoning": "no answer"}),
        call({"answer": 2}, name="pick"),
        ModelResponse(parts=[], usage=RequestUsage(input_tokens=50, output_tokens=0)),
        call({"answer": 3}),
    ]
    result = run([quiz(1)], scripted({"q1": replies}), retries=7)
    record = result.records[0]
    assert kinds(record.attempts) == [
        "no_tool_call",
        "malformed_json",
        "wrong_type",
        "extra_fields",
        "missing_field",
        "unknown_tool",
        "empty",
        None,
    ]
    assert record.attempts[0].feedback == "Please include your response in a tool call."
    assert (record.status, answer(record), record.corrective_retries) == ("incorrect", "3", 7)
    assert result.scores.compliance.invalid_by_kind == {
        "empty": 1,
        "extra_fields": 1,
        "malformed_json": 1,
        "missing_field": 1,
        "no_tool_call": 1,
        "unknown_tool": 1,
        "wrong_type": 1,
    }


def test_provider_error_is_recorded_and_the_run_goes_on() -> None:
    replies: dict[str, list[ModelResponse | Exception]] = {
        "q1": [call({"answer": 2})],
        "q2": [ModelHTTPError(503, "fake-model", body="overloaded")],
        "q3": [call({"answer": 1})],
    }
    result = run([quiz(1), quiz(2), quiz(3)], scripted(replies))
    assert [r.status for r in result.records] == ["correct", "error", "incorrect"]
    assert result.records[1].error == "HTTP 503 from fake-model: overloaded"
    assert without_usage(result.records[1].attempts) == []
    assert result.status == "finished"
    assert (result.scores.errors, result.scores.correct, result.scores.incorrect) == (1, 1, 1)
    assert result.scores.groups[0].score == 50.0  # errors are left out of accuracy


def test_unparseable_response_is_an_error_not_a_missing_answer() -> None:
    def broken(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        raise UnexpectedModelBehavior("Invalid response from openai chat completions endpoint: 1 validation error")

    record = run([quiz(1), quiz(2)], FunctionModel(broken)).records[1]
    assert (record.status, record.attempts) == ("error", [])
    assert (
        record.error
        == "UnexpectedModelBehavior: Invalid response from openai chat completions endpoint: 1 validation error"
    )


def test_unreachable_model_stops_after_the_first_quiz_as_dnf() -> None:
    refused = ModelConnectionError("fake-model", "Connection refused")
    result = run([quiz(1), quiz(2)], scripted({"q1": [refused], "q2": [refused]}))
    assert result.status == "dnf"
    assert result.reason == "ModelConnectionError: Connection refused"
    assert [r.case_id for r in result.records] == ["q1"]


def test_native_mode_unsupported_by_the_model_is_one_clear_error() -> None:
    with pytest.raises(EvaluatorError, match="cannot ask this model in native mode: Native structured output"):
        model = scripted({"q1": [say('{"answer": 2}')]}, profile=ModelProfile(supports_json_schema_output=False))
        run([quiz(1)], model, mode="native")


@pytest.mark.parametrize("mode", ["native", "prompted"])
def test_structured_text_modes_validate_and_retry(mode: AnswerMode) -> None:
    model = scripted(
        {"q1": [say("two"), say('{"answer": 5}'), say('{"answer": 2}')]},
        profile=ModelProfile(supports_json_schema_output=True),
    )
    record = run([quiz(1)], model, mode=mode).records[0]
    assert kinds(record.attempts) == ["malformed_json", "out_of_range", None]
    assert (record.status, answer(record)) == ("correct", "2")


def test_tag_mode_scores_exactly_as_farel_bench() -> None:
    replies: dict[str, list[ModelResponse | Exception]] = {
        "q1": [say("So <ANSWER>2</ANSWER>.")],
        "q2": [say("<ANSWER> 3 </ANSWER>")],
        "q3": [say("<ANSWER>1</ANSWER> or maybe <ANSWER>2</ANSWER>")],
        "q4": [say("<ANSWER>\n2\n</ANSWER>")],
        "q5": [say("ANSWER: 2")],
        "q6": [say("<ANSWER>2.</ANSWER>")],
    }
    result = run([quiz(n) for n in range(1, 7)], scripted(replies), mode="tag")
    records = result.records
    assert [r.status for r in records] == ["correct", "incorrect", "incorrect", "missing", "missing", "incorrect"]
    assert [answer(r) for r in records] == ["2", "3", "1", None, None, "2."]
    assert [r.relaxed_output for r in records] == [None, None, None, "2", "2", None]
    assert all(r.corrective_retries == 0 for r in records)
    assert kinds(records[3].attempts) == ["no_tag"]
    compliance = result.scores.compliance
    assert (compliance.relaxed_recoverable, compliance.relaxed_recoverable_correct) == (2, 2)


def test_tag_mode_with_retries_asks_again_for_the_tag() -> None:
    model = scripted({"q1": [say("It is 2"), say("<ANSWER>2</ANSWER>")]})
    record = run([quiz(1)], model, mode="tag", retries=1).records[0]
    assert kinds(record.attempts) == ["no_tag", None]
    assert record.attempts[0].feedback == f"No <ANSWER> tag found. {TAG_INSTRUCTION}"
    assert (record.status, record.corrective_retries) == ("correct", 1)


def test_cost_comes_from_the_most_trusted_source() -> None:
    reported = say("<ANSWER>2</ANSWER>", cost=0.0012)
    priced = say("<ANSWER>2</ANSWER>")
    priced.usage.cost = Decimal("0.0003")
    replies: dict[str, list[ModelResponse | Exception]] = {"q1": [reported], "q2": [priced], "q3": [say("x")]}
    quizzes = [quiz(1), quiz(2), quiz(3)]
    records = run(quizzes, scripted(replies), mode="tag", prices=UserPrices(1.0, 2.0)).records
    assert [(r.cost.usd, r.cost.source) for r in records] == [
        (0.0012, "provider"),
        (0.0003, "genai-prices"),
        (pytest.approx(6.4e-05), "user"),
    ]
    local = run([quiz(3)], scripted(replies), mode="tag", local=True).records[0]
    assert (local.cost.usd, local.cost.source) == (0.0, "local")


def test_scores_macro_average_leaves_ambiguous_quizzes_out() -> None:
    quizzes = [
        quiz(1, class_name="x"),
        quiz(2, class_name="x"),
        quiz(3, class_name="y"),
        quiz(4, class_name="y", correct=1, options=("same", "same", "other")),
    ]
    replies: dict[str, list[ModelResponse | Exception]] = {
        "q1": [call({"answer": 2})],
        "q2": [call({"answer": 1})],
        "q3": [call({"answer": 2})],
        "q4": [call({"answer": 2})],
    }
    result = run(quizzes, scripted(replies), concurrency=3)
    scores = result.scores
    assert [(c.group, c.correct, c.incorrect, c.excluded, c.score) for c in scores.groups] == [
        ("x", 1, 1, 0, 50.0),
        ("y", 1, 0, 1, 100.0),
    ]
    assert scores.score == 75.0
    assert (scores.samples, scores.excluded) == (4, 1)
    assert result.records[3].excluded is True


def test_quizzes_are_pulled_lazily_and_records_can_stay_out_of_memory() -> None:
    made: list[str] = []

    def stream() -> Iterator[Quiz]:
        for n in range(1, 31):
            made.append(f"q{n}")
            yield quiz(n, class_name="even" if n % 2 == 0 else "odd")

    seen: list[str] = []
    model = scripted({f"q{n}": [call({"answer": 2})] for n in range(1, 31)})
    kept_out = evaluator.RunControl(keep_records=False, on_record=lambda r: seen.append(r.case_id))
    result = run(stream(), model, control=kept_out, concurrency=4)
    assert (result.records, len(seen), len(made)) == ([], 30, 30)
    assert [(c.group, c.correct) for c in result.scores.groups] == [("odd", 15), ("even", 15)]


def test_records_come_back_in_quiz_order_and_each_is_reported_once() -> None:
    quizzes = [quiz(n) for n in range(1, 21)]
    seen: list[str] = []
    result = run(
        quizzes,
        scripted({q.id: [call({"answer": 2})] for q in quizzes}),
        control=evaluator.RunControl(on_record=lambda r: seen.append(r.case_id)),
        concurrency=5,
    )
    assert [r.case_id for r in result.records] == [q.id for q in quizzes]
    assert sorted(seen) == sorted(q.id for q in quizzes)
    assert result.scores.totals.requests == 20


def test_system_prompt_and_mode_instructions_reach_the_model() -> None:
    seen: dict[str, Any] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        seen["system"] = [p.content for p in request.parts if isinstance(p, SystemPromptPart)]
        seen["instructions"] = info.instructions
        seen["prompt"] = prompt_of(messages)
        return call({"answer": 2})

    tagged = quiz(1).model_copy(update={"prompt": quiz(1).prompt + "\n" + TAG_INSTRUCTION})
    run([tagged], FunctionModel(respond), system_prompt=DEFAULT_SYSTEM_PROMPT)
    assert seen["system"] == [DEFAULT_SYSTEM_PROMPT]
    assert (
        seen["instructions"]
        == "Answer by calling the select_answer tool with the number of the selected answer option."
    )
    assert seen["prompt"] == quiz(1).prompt  # the <ANSWER> instruction is dropped outside tag mode


def test_cost_budget_needs_a_known_price() -> None:
    with pytest.raises(
        EvaluatorError, match="max_cost: needs a known price, and unknown is all that is known"
    ) as caught:
        run([quiz(1), quiz(2)], scripted({"q1": [call({"answer": 2})]}), max_cost=1.0)
    assert caught.value.parameter == "max_cost"


def test_request_budget_stops_new_samples() -> None:
    quizzes = [quiz(n) for n in range(1, 11)]
    result = run(
        quizzes,
        scripted({q.id: [call({"answer": 2})] for q in quizzes}),
        concurrency=1,
        max_requests=3,
    )
    assert (result.status, result.reason, len(result.records)) == ("partial", "max_requests 3 reached", 3)


def test_bad_arguments_are_caller_errors() -> None:
    with pytest.raises(EvaluatorError, match="no cases"):
        run([], scripted({}))
    with pytest.raises(EvaluatorError, match="concurrency: must be at least 1, got 0") as caught:
        run([quiz(1)], scripted({}), concurrency=0)
    assert caught.value.parameter == "concurrency"


# --- one config object: RunConfig and its keyword overrides ----------------------------------------------------


def test_settings_and_keyword_overrides_are_one_thing() -> None:
    """A `RunConfig` and the keywords that override its fields pose alike; the keyword wins."""
    quizzes = [quiz(1), quiz(2)]
    replies = {"q1": [say("<ANSWER>2</ANSWER>")], "q2": [say("no tag")]}
    by_keyword = run(quizzes, scripted(replies), mode="tag", retries=0, concurrency=1)
    settings = evaluator.RunConfig(mode="tag", retries=0, concurrency=1)
    by_object = asyncio.run(evaluator.evaluate(multiple_choice_task(), [q.to_case() for q in quizzes],
                                               scripted(replies), settings))  # fmt: skip
    overridden = asyncio.run(evaluator.evaluate(multiple_choice_task(), [q.to_case() for q in quizzes],
                                                scripted(replies), settings.model_copy(update={"retries": 5}),
                                                retries=0))  # fmt: skip
    for result in (by_keyword, by_object, overridden):
        assert [(r.status, r.mode, len(r.attempts)) for r in result.records] == [
            ("correct", "tag", 1), ("missing", "tag", 1)
        ]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "parameter", "message"),
    [
        ({"retires": 2}, "retires", "retires: unknown parameter: not one of this function's, nor a RunConfig field"),
        ({"mode": "xml"}, "mode", "mode: Input should be 'tool', 'native', 'prompted', 'text' or 'tag', got 'xml'"),
        ({"retries": "many"}, "retries", "retries: Input should be a valid integer, unable to parse string as an"),
        ({"retries": -1}, "retries", "retries: must be at least 0, got -1"),
        ({"repeats": 0}, "repeats", "repeats: must be at least 1, got 0"),
        ({"max_wait_s": 0.0}, "max_wait_s", "max_wait_s: must be a finite number above 0, got 0.0"),
        ({"temperature": float("nan")}, "temperature", "temperature: must be a finite number, got nan"),
        ({"price_in": 1.0}, "prices", "prices: give both the input and the output price"),
        ({"prices": (1.0, 2.0)}, "prices", "prices: must be a UserPrices (USD per million tokens), got (1.0, 2.0)"),
        ({"prices": UserPrices(-1.0, 2.0)}, "prices", "prices: must be finite numbers of 0 or more, got -1.0 and 2.0"),
        (
            {"on_record": print},
            "on_record",
            "on_record: is how the caller drives the run, not a setting of it: pass "
            "it in RunControl, as control=RunControl(on_record=...)",
        ),
        ({"keep_records": False}, "keep_records", "keep_records: is how the caller drives the run"),
        ({"batch": BatchOptions()}, "batch", "batch: is True or False: give the BatchOptions as batch_options"),
        ({"batch_options": BatchOptions()}, "batch_options", "batch_options: given with batch=False: set batch=True"),
        ({"model_settings": 3}, "model_settings", "model_settings: must be a pydantic-ai ModelSettings (a dict)"),
    ],
)
def test_an_unknown_or_bad_setting_names_its_parameter(changes: dict[str, Any], parameter: str, message: str) -> None:
    task, cases = multiple_choice_task(), [quiz(1).to_case()]
    calls = [
        lambda: run([quiz(1)], scripted({}), **changes),
        lambda: asyncio.run(evaluator.run(task, cases, scripted({}), results_dir="/nonexistent", **changes)),
    ]
    for call_it in calls:
        with pytest.raises(evaluator.InputError) as refused:
            call_it()
        assert refused.value.parameter == parameter
        assert str(refused.value).startswith(message)
        assert str(refused.value) == f"{parameter}: {refused.value.message}"


def test_how_a_run_is_driven_is_its_control_and_what_only_run_takes_is_refused_elsewhere(tmp_path: Path) -> None:
    task, cases = multiple_choice_task(), [quiz(1).to_case()]
    refusals: dict[str, Callable[[], object]] = {
        "control": lambda: run([quiz(1)], scripted({}), None, evaluator.RunConfig()),  # type: ignore[arg-type]
        "on_start": lambda: run([quiz(1)], scripted({}), control=evaluator.RunControl(on_start=lambda *_: None)),
        "model_settings": lambda: asyncio.run(
            evaluator.run(task, cases, scripted({}), results_dir=tmp_path, model_settings={"temperature": 0.5})
        ),
    }
    for parameter, call_it in refusals.items():
        with pytest.raises(evaluator.InputError) as refused:
            call_it()
        assert refused.value.parameter == parameter
    assert list(tmp_path.iterdir()) == []


def test_a_bad_value_in_a_settings_object_is_refused_too() -> None:
    with pytest.raises(evaluator.InputError) as refused:
        run([quiz(1)], scripted({}), evaluator.RunConfig(concurrency=0))
    assert (refused.value.parameter, refused.value.message) == ("concurrency", "must be at least 1, got 0")
