"""`import evaluator`: two models evaluated in a user's own code, then their intervals and paired test."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from typed_eval.contracts import Quiz
from typed_eval.suites.multiple_choice import evaluate_quizzes, option_baseline


def quizzes() -> list[Quiz]:
    return [
        Quiz(id=f"{group}{i}", class_name=group, prompt=f"{group} {i}?", options=("a", "b", "c"), correct=1 + i % 3)
        for group in ("x", "y")
        for i in range(30)
    ]


def answering(choose: dict[str, int]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        args = json.dumps({"answer": choose[prompt]})
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    return FunctionModel(respond)


def test_analyse_and_compare_records_of_the_library() -> None:
    posed = quizzes()
    right = {q.prompt: q.correct for q in posed}
    first = {q.prompt: 1 for q in posed}  # right on the 20 quizzes whose answer is 1
    a = asyncio.run(evaluate_quizzes(posed, answering(right)))
    b = asyncio.run(evaluate_quizzes(posed, answering(first)))
    # the baselines are the multiple-choice suites' declaration (`Suite.baseline`): the library names it
    run_a, run_b = (
        evaluator.analyse(a.records, baseline=option_baseline),
        evaluator.analyse(b.records, baseline=option_baseline),
    )
    assert run_a.score_ci95() == (100.0, 100.0)
    assert run_b.favourite_position == "1"
    assert (run_b.favourite_position_score, run_b.chance) == (pytest.approx(100 / 3), pytest.approx(100 / 3))
    comparison = evaluator.compare(run_a, run_b)
    assert (comparison.paired, comparison.both_correct, comparison.only_a, comparison.only_b) == (60, 20, 40, 0)
    assert comparison.p_value == 2 / 2**40
    assert comparison.difference == pytest.approx(200 / 3)


def test_repeats_in_the_library_give_each_case_k_records_and_a_consistency() -> None:
    posed = quizzes()[:4]
    calls: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        calls.append(prompt)
        answer = len(calls) % 3 + 1 if prompt == "x 1?" else 2
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps({"answer": answer}))])

    result = asyncio.run(evaluate_quizzes(posed, FunctionModel(respond), repeats=2, concurrency=1))
    assert [(r.case_id, r.repeat) for r in result.records] == [(q.id, k) for k in range(2) for q in posed]
    analysis = evaluator.analyse(result.records)
    assert analysis.repeats == 2
    assert analysis.consistency == 75.0  # x1 answers 3, then 1 (the 2nd and 6th calls); the others always 2
