"""A case file's scorer: each test's assertions graded in turn (an llm-rubric by the judge), weighted into the
test's score and pass, as the file's own tool grades them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from typed_eval.contracts import Case, Cost, TokenUsage
from typed_eval.core.attempts import added_cost, added_usage
from typed_eval.core.errors import TaskError
from typed_eval.core.tasks import Score, Task
from typed_eval.suites.case_files.assertions import (
    Assertion,
    Output,
    Rubric,
    json_text,
    judge_result,
)
from typed_eval.suites.case_files.checks import run_check
from typed_eval.suites.judge import Judge

__all__ = ["CaseFileGrader", "Posed", "test_result", "with_judge"]


# --- the file -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Posed:
    """What grading one case needs beyond the Case: its compiled assertions and promptfoo's context."""

    assertions: tuple[Assertion, ...]
    variables: dict[str, Any]
    test: dict[str, Any]
    threshold: float | None = None


class CaseFileGrader:
    """The scorer of a case file's task: R, the weighted mean of the test's assertion results, with each result
    (and a judge's reason) in the details; an LLM judge's usage and cost are handed back with the score."""

    def __init__(self, name: str, posed: Mapping[str, Posed], judge: Rubric | None = None) -> None:
        self.name = name
        self._posed = posed
        self.judge = judge

    @property
    def needs_judge(self) -> bool:
        return any(a.type == "llm-rubric" for p in self._posed.values() for a in p.assertions)

    test_verdict = None
    """The offline `test` model judges with pydantic-ai's made-up verdict."""

    def judged_by(self, judge: Rubric) -> CaseFileGrader:
        return CaseFileGrader(self.name, self._posed, judge)

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        return with_judge(task, judge)

    async def __call__(self, case: Case, value: Any) -> Score:
        posed = self._posed.get(case.id)
        if posed is None:
            raise TaskError(f"case {case.id!r} is not a test of case file {self.name}")
        output = Output(value if isinstance(value, str) else json_text(value), value)
        results: list[dict[str, Any]] = []
        usage: TokenUsage | None = None
        cost: Cost | None = None
        for assertion in posed.assertions:
            context = {
                "prompt": case.prompt,
                "vars": posed.variables,
                "test": posed.test,
                "config": assertion.spec.get("config", {}),
            }
            if assertion.type == "llm-rubric":
                if self.judge is None:
                    raise TaskError(f"case {case.id}: llm-rubric needs a judge model", parameter="judge_model")
                graded = judge_result(await self.judge(str(assertion.spec["value"]), output.text), assertion.threshold)
            else:
                graded = await run_check(assertion.spec, output, context)
            if graded.usage is not None:
                usage = graded.usage if usage is None else added_usage(usage, graded.usage)
            if graded.cost is not None:
                cost = graded.cost if cost is None else added_cost(cost, graded.cost)
            passed = bool(graded.passed) or assertion.weight == 0  # promptfoo: weight 0 never fails a test
            results.append(
                {
                    "type": assertion.type,
                    "weight": assertion.weight,
                    "score": graded.score,
                    "pass": passed,
                    "reason": graded.reason,
                    **graded.extra,
                }
            )
        score, passed = test_result(results, posed.threshold)
        return Score(score, {"pass": passed, "assertions": results}, usage, cost)


def test_result(results: list[dict[str, Any]], threshold: float | None) -> tuple[float, bool]:
    """promptfoo's test result: the weighted mean of the assertion scores (0 when the weights add up to 0), computed
    exactly and rounded once, so it cannot overflow (promptfoo adds in doubles in the order its assertions finish,
    which varies from run to run in the last bit); it passes when every assertion passed, or, with a threshold,
    when the score reaches it."""
    total = sum((Fraction(r["weight"]) * Fraction(r["score"]) for r in results), Fraction(0))
    weights = sum((Fraction(r["weight"]) for r in results), Fraction(0))
    score = float(total / weights) if weights > 0 else 0.0
    if threshold is not None:
        return score, score >= threshold
    return score, all(r["pass"] for r in results)


def with_judge(task: Task[Any], judge: Rubric) -> Task[Any]:
    """A case file's task whose llm-rubric assertions are graded by `judge` (e.g. `suites.judge.Judge`)."""
    grader = task.score
    if not isinstance(grader, CaseFileGrader):
        raise TaskError(f"task {task.name!r} is not a case file's: it has no llm-rubric assertions to judge")
    return replace(task, score=grader.judged_by(judge))
