"""BFCL's multi-turn categories played through a task session: scripted models (one call per step, the same reply
for the same conversation) drive `evaluator.evaluate`, the calls run on BFCL's own backends in worker processes and
the trajectories are scored by BFCL's own multi-turn checker. Skipped where bfcl-eval or mpmath is not installed."""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mpmath")
pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

import evaluator  # noqa: E402
from typed_eval.schemas import SampleRecord  # noqa: E402
from typed_eval.suites.bfcl.multi_turn.backend import signatures  # noqa: E402
from typed_eval.suites.bfcl.multi_turn.cases import CATEGORIES, MultiTurnCase, load_multi_turn  # noqa: E402
from typed_eval.suites.bfcl.multi_turn.loop import HOLD_OUT_MESSAGE, Mode  # noqa: E402
from typed_eval.suites.bfcl.multi_turn.task import MultiTurnRunner, multi_turn_case  # noqa: E402
from typed_eval.suites.bfcl.multi_turn.workers import BackendPool  # noqa: E402

CASES = {case.id: case for case in load_multi_turn(CATEGORIES, "sample").cases}
Call = tuple[str, dict[str, Any]]
Plan = list[list[list[Call] | str]]
"""Per turn, per step: the calls of the reply, or its text. After a turn's steps: the text "Done."."""


def ground_truth_plan(case: MultiTurnCase) -> Plan:
    """The ground truth's calls, one per step, positional arguments bound to their parameter's name."""
    found = signatures(case.involved_classes)
    plan: Plan = []
    for turn in case.ground_truth:
        steps: list[list[Call] | str] = []
        for source in turn:
            node = ast.parse(source, mode="eval").body
            assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            args = [ast.literal_eval(arg) for arg in node.args]
            kwargs = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
            bound = found[node.func.id].bind(*args, **kwargs).arguments
            steps.append([(node.func.id, dict(bound))])
        plan.append(steps)
    return plan


def position(messages: list[ModelMessage]) -> tuple[int, int]:
    """(turn, step) of a request: the user messages that are not execution results, the replies since the last."""
    turn, step = -1, 0
    for message in messages:
        if isinstance(message, ModelResponse):
            step += 1
        for part in message.parts if isinstance(message, ModelRequest) else []:
            if isinstance(part, UserPromptPart) and not str(part.content).startswith("[{'role': 'tool'"):
                turn, step = turn + 1, 0
    return turn, step


def scripted(plans: dict[str, Plan], mode: Mode, seen: list[list[ModelMessage]]) -> FunctionModel:
    """A model that answers a case (known by its first user text) by its plan, deterministically."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        first = next(p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart))
        turn, step = position(messages)
        steps = plans[str(first)][turn] if turn < len(plans[str(first)]) else []
        planned = steps[step] if step < len(steps) else "Done."
        if isinstance(planned, str):
            return ModelResponse(parts=[TextPart(planned)])
        if mode == "text":
            text = ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in planned)
            return ModelResponse(parts=[TextPart(f"[{text}]")])
        return ModelResponse(
            parts=[ToolCallPart(name, json.dumps(args), tool_call_id=f"call_{turn}_{step}_{n}") for n, (name, args) in enumerate(planned)]
        )

    return FunctionModel(reply)


def run(plans: dict[str, Plan], mode: Mode = "tool") -> tuple[dict[str, SampleRecord], list[list[ModelMessage]]]:
    """Each planned case (by id) played in `mode`: its record by id, and the conversations the model saw."""
    seen: list[list[ModelMessage]] = []
    by_text = {CASES[case_id].turns[0][0]["content"]: plan for case_id, plan in plans.items()}
    assert len(by_text) == len(plans), "one case per first user text in a run"
    pool = BackendPool(workers=2)
    try:
        runner = MultiTurnRunner(CASES, pool)
        cases = [multi_turn_case(CASES[case_id]) for case_id in plans]
        result = asyncio.run(evaluator.evaluate(runner.task(mode), cases, scripted(by_text, mode, seen), concurrency=2))
    finally:
        pool.close()
    return {record.case_id: record for record in result.records}, seen


def by_category(category: str) -> Iterator[str]:
    return (case_id for case_id in CASES if CASES[case_id].category == category)


@pytest.mark.parametrize("mode", ["tool", "text"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_the_ground_truth_of_the_sample_passes_bfcls_checker(category: str, mode: Mode) -> None:
    records, _ = run({case_id: ground_truth_plan(CASES[case_id]) for case_id in by_category(category)}, mode)
    assert {case_id: (r.status, r.score_details) for case_id, r in records.items()} == {
        case_id: ("correct", None) for case_id in by_category(category)
    }
