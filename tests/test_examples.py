"""The library used by another benchmark: examples/arithmetic_bench.py, in-process and as users run it."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import subprocess
from types import ModuleType

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.conftest import PYTHON, REPO
from typed_eval.suites.multiple_choice import evaluate_quizzes


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arithmetic_bench", REPO / "examples" / "arithmetic_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solver(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
    """A model that does the arithmetic and answers with the matching option's number."""
    request = messages[0]
    assert isinstance(request, ModelRequest)
    prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
    match = re.match(r"What is (\d+) ([-+*]) (\d+)\?", prompt)
    assert match is not None
    a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    options = re.findall(r"^(\d+)\. (-?\d+)$", prompt, re.MULTILINE)
    choice = next(int(number) for number, text in options if int(text) == value)
    return ModelResponse(parts=[ToolCallPart("select_answer", {"answer": choice})])


def test_another_benchmark_scores_through_the_library() -> None:
    example = load_example()
    quizzes = example.arithmetic_quizzes(4, seed=3)
    result = asyncio.run(evaluate_quizzes(quizzes, FunctionModel(solver)))
    assert [(c.group, c.correct, c.score) for c in result.scores.groups] == [
        ("addition", 4, 100.0),
        ("subtraction", 4, 100.0),
        ("multiplication", 4, 100.0),
    ]
    assert result.scores.score == 100.0
    assert result.scores.totals.requests == 12


def test_example_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [PYTHON, "examples/arithmetic_bench.py", "--model", "test"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "addition: 40.00 (C: 2, I: 3, M: 0)",
        "subtraction: 0.00 (C: 0, I: 5, M: 0)",
        "multiplication: 40.00 (C: 2, I: 3, M: 0)",
        "macro accuracy: 26.67, valid first try: 100.0%, corrective retries: 0, requests: 15",
    ]


def load_support_desk() -> ModuleType:
    spec = importlib.util.spec_from_file_location("support_desk", REPO / "examples" / "support_desk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_agentic_benchmark_of_a_page_is_scored_on_the_state_it_leaves_with_pass_k() -> None:
    import evaluator

    desk = load_support_desk()
    result = asyncio.run(desk.main(FunctionModel(desk.scripted_agent)))
    assert [(r.case_id, r.repeat, r.score) for r in result.records] == [
        (case, repeat, 1.0) for repeat in range(3) for case in ("cancel-a1", "keep-all")
    ]
    assert result.records[0].output["orders"] == {"A1": "cancelled", "B2": "pending"}
    assert [(f.k, f.value) for f in evaluator.pass_hat_k(result.records).overall] == [(1, 100.0), (2, 100.0),
                                                                                      (3, 100.0)]  # fmt: skip

    def hasty(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """On the second trial (the run's seed 10 plus the repeat), cancels B2 when the customer names it."""
        named = "B2" in str(getattr(messages[-1].parts[-1], "content", ""))
        if named and info.model_settings is not None and info.model_settings.get("seed") == 11:
            return ModelResponse(parts=[ToolCallPart("cancel_order", {"order_id": "B2"})])
        return desk.scripted_agent(messages, info)

    customer = desk.SimulatedUser(FunctionModel(desk.scripted_customer), "customer")
    flaky = asyncio.run(evaluator.evaluate(desk.shop_task(customer), desk.CASES, FunctionModel(hasty), repeats=3,
                                           seed=10))  # fmt: skip
    assert [r.score for r in flaky.records if r.case_id == "keep-all"] == [1.0, 0.0, 1.0]
    assert [r.score for r in flaky.records if r.case_id == "cancel-a1"] == [1.0, 1.0, 1.0]
    figures = evaluator.pass_hat_k(flaky.records).overall
    assert [(f.k, round(f.value, 2), f.tasks) for f in figures] == [(1, 83.33, 2), (2, 66.67, 2), (3, 50.0, 2)]
