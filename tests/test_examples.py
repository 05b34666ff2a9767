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
