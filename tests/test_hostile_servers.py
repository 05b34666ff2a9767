"""Servers that misbehave in ways the red-team pass found: each reproduced against a loopback server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import evaluator
import farel_bench
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, tool_call

QUIZZES = list(farel_bench.generate(1, 3, 42, shuffle=True))
KEY = answer_key(QUIZZES)


def right(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def model_at(server: FakeOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel("m", provider=OpenAIProvider(base_url=server.url, api_key="k"))


def run(server: FakeOpenAI, **options: Any) -> evaluator.EvaluationResult:
    settings = {"max_retries": 0}  # the SDK's own resends would hide each fault
    return asyncio.run(evaluator.evaluate_quizzes(QUIZZES, model_at(server), model_settings=settings, **options))


@pytest.mark.parametrize(
    "body",
    [
        {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []},
        {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0}]},
        b"[]",
        b'{"choices": null}',
    ],
    ids=["no-choices", "choice-without-message", "a-list", "null-choices"],
)
def test_a_malformed_response_is_an_error_record_and_the_run_goes_on(body: dict[str, Any] | bytes) -> None:
    broken = QUIZZES[1].id

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        return Fault(200, body) if KEY(request).id == broken else right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    statuses = [(r.case_id, r.status) for r in result.records]
    assert statuses == [(QUIZZES[0].id, "correct"), (broken, "error"), *[(q.id, "correct") for q in QUIZZES[2:]]]
    assert result.status == "finished"
    assert result.scores.errors == 1
    assert result.records[1].error is not None


def test_a_passing_500_on_the_first_case_does_not_free_the_tool_choice() -> None:
    requests: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        requests.append(request["tool_choice"])
        if len(requests) == 1:
            return Fault(500, {"error": {"message": "upstream hiccup", "type": "server_error"}})
        return right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    assert (result.tool_choice, result.tool_choice_reason) == ("required", None)
    assert requests == ["required"] * (len(QUIZZES) + 1)
    assert [r.status for r in result.records] == ["correct"] * len(QUIZZES)


def test_a_refusal_that_repeats_frees_the_tool_choice_after_one_more_try() -> None:
    requests: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        requests.append(request["tool_choice"])
        if request["tool_choice"] == "required":
            return Fault(500, {"error": {"message": "AssertionError", "type": "server_error"}})
        return right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    assert result.tool_choice == "auto"
    assert requests == ["required", "required"] + ["auto"] * len(QUIZZES)
    assert [r.status for r in result.records] == ["correct"] * len(QUIZZES)
