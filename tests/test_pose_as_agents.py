"""Tasks a `pose_as` gives per case: an output type pydantic-ai refuses is that case's error (not the run's), and the
engine keeps only the recently used agents of tasks met again (a suite may pose every case with its own output
type)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest
from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_core import core_schema

import evaluator
from typed_eval.contracts import AnswerMode, Case
from typed_eval.core.tasks import Task
from typed_eval.engine import posing


class Answer(BaseModel):
    value: int


class Unposable(dict[str, Any]):
    """An output type whose JSON schema cannot be made: pydantic-ai refuses it as an agent is made."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.any_schema()

    @classmethod
    def __get_pydantic_json_schema__(cls, core: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        raise ValueError("no schema for this one")


def _tasks(made: list[str]) -> Task[Any]:
    """The run's task: case `bad` posed with `Unposable`, every other with an `Answer` task of its own (`made` says
    for which case each was made)."""

    def score(case: Case, output: Any) -> float:
        return 1.0 if output == Answer(value=int(str(case.expected))) else 0.0

    def pose_as(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
        made.append(case.id)
        output: type = Unposable if case.id == "bad" else Answer
        return Task(name="t", output_type=output, score=score), mode

    return Task(name="t", output_type=Any, score=score, pose_as=pose_as)


def _answering(asked: list[str]) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        asked.append(prompt)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"value": int(prompt)})])

    return FunctionModel(respond)


def test_an_output_type_pydantic_ai_refuses_is_that_cases_error_and_the_run_goes_on() -> None:
    asked: list[str] = []
    cases = [Case(id=name, prompt=prompt, expected=prompt) for name, prompt in (("a", "1"), ("bad", "2"), ("c", "3"))]
    result = asyncio.run(evaluator.evaluate(_tasks([]), cases, _answering(asked), mode="tool", concurrency=1))
    records = {r.case_id: r for r in result.records}
    assert {name: (r.status, r.score) for name, r in records.items()} == {
        "a": ("correct", 1.0),
        "bad": ("error", None),
        "c": ("correct", 1.0),
    }
    assert records["bad"].error == "OutputNotPosable: pydantic-ai cannot pose it: ValueError: no schema for this one"
    assert (records["bad"].attempts, sorted(asked)) == ([], ["1", "3"])  # nothing sent for it


def test_a_task_met_again_keeps_its_poser_among_the_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(posing, "POSERS_KEPT", 2)
    made: list[str] = []
    task = _tasks(made)
    tasks: dict[str, Task[Any]] = {}
    inner = task.pose_as
    assert inner is not None

    def kept(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:  # one task per case, as a suite keeps
        if case.id not in tasks:
            tasks[case.id] = inner(case, mode)[0]
        return tasks[case.id], mode

    built: list[int] = []
    real = posing.Poser.__init__

    def counted(self: posing.Poser, posed: Task[Any], *args: Any, **kwargs: Any) -> None:
        built.append(id(posed))
        real(self, posed, *args, **kwargs)

    monkeypatch.setattr(posing.Poser, "__init__", counted)
    # met first: a poser of its own; met again: kept, the least recently used of those dropped (`b` once a and c are)
    names = ["a", "b", "a", "b", "a", "c", "c", "a", "b"]
    cases = [Case(id=name, prompt=str(k), expected=str(k)) for k, name in enumerate(names)]
    run = Task(name="t", output_type=Any, score=task.score, pose_as=kept)
    result = asyncio.run(evaluator.evaluate(run, cases, _answering([]), mode="tool", concurrency=1))
    assert [r.status for r in result.records] == ["correct"] * len(names)
    built_for = [next(n for n, t in tasks.items() if id(t) == b) for b in built[1:]]
    assert built_for == ["a", "b", "a", "b", "c", "c", "b"]


def test_a_task_made_for_one_case_goes_with_its_sample() -> None:
    """A suite making a task per case (each case its own output type) has none of them kept once posed."""
    made: list[str] = []
    task = _tasks(made)
    inner = task.pose_as
    assert inner is not None
    tasks: list[weakref.ref[Task[Any]]] = []
    alive: list[int] = []

    def fresh(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
        posed, mode = inner(case, mode)
        tasks.append(weakref.ref(posed))
        return posed, mode

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        gc.collect()
        alive.append(sum(ref() is not None for ref in tasks))  # the case being asked's own, and no other
        prompt = str(messages[0].parts[-1].content)  # type: ignore[union-attr]
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"value": int(prompt)})])

    cases = [Case(id=f"c{k}", prompt=str(k), expected=str(k)) for k in range(5)]
    run = Task(name="t", output_type=Any, score=task.score, pose_as=fresh)
    result = asyncio.run(evaluator.evaluate(run, cases, FunctionModel(respond), mode="tool", concurrency=1))
    assert [r.status for r in result.records] == ["correct"] * 5
    assert alive == [1] * 5
