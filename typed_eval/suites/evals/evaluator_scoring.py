"""A dataset's evaluators as the scorer, run as pydantic_evals runs them: an `EvaluatorContext` of the case (its
inputs, metadata and expected output as the dataset gave them, the validated output, the sample's seconds, and the
span tree of its asking with the metrics read from it when its spans were recorded: `Task.spans`), each
evaluator (the case's own, then the dataset's) through pydantic_evals' `run_evaluator`, the results grouped into
assertions, scores and labels by pydantic_evals' own grouping.

The headline of a case is the mean of its assertions (True 1, False 0), or the score the user names. An evaluator
that raises or outlives its time is that case's error. LLMJudge and GEval grade with the run's judge
(`--judge-model`, default the run's model) whatever model the file names, and what they spend is the sample's.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_evals import Case as EvalsCase
from pydantic_evals._task_run import TaskRun, extract_span_tree_metrics
from pydantic_evals.dataset import _group_evaluator_outputs_by_type
from pydantic_evals.evaluators import (
    ArgumentCorrectness,
    EvaluationResult,
    Evaluator,
    EvaluatorContext,
    EvaluatorFailure,
    GEval,
    HasMatchingSpan,
    LLMJudge,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from pydantic_evals.evaluators._run_evaluator import run_evaluator
from pydantic_evals.otel import SpanTree
from pydantic_evals.otel._errors import SpanTreeRecordingError

from typed_eval.contracts import Case, Cost, TokenUsage
from typed_eval.core.attempts import sample_cost, sample_usage
from typed_eval.core.errors import CaseScoringError
from typed_eval.core.evaluations import EVALUATIONS
from typed_eval.core.tasks import Score, Task
from typed_eval.suites.judge import Judge

__all__ = ["NO_SPANS", "SPAN_BASED", "DatasetScorer"]

NO_SPANS = (
    "no spans were recorded for this case: typed-eval records them when the dataset has a span-based evaluator "
    "(HasMatchingSpan, the tool-call ones) or -S spans=true is given, with opentelemetry-sdk installed"
)
SPAN_BASED = (HasMatchingSpan, ToolCorrectness, TrajectoryMatch, ArgumentCorrectness, MaxToolCalls, MaxModelRequests)
"""pydantic_evals' evaluators that read the case's span tree: a dataset with one has each sample's spans recorded."""
_RESULTS = TypeAdapter(Mapping[str, EvaluationResult])
JUDGED = (LLMJudge, GEval)


class _Recorded(WrapperModel):
    """The judge's model, keeping every response of one case's grading (what the sample is charged)."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.responses: list[ModelMessage] = []

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await super().request(messages, model_settings, model_request_parameters)
        self.responses.append(response)
        return response


@dataclass(frozen=True)
class DatasetScorer:
    """Scores a case's output with the dataset's evaluators; `headline` names the score heading the run (None: the
    mean of the assertions); `timeout` bounds each evaluator, in seconds."""

    cases: Mapping[str, EvalsCase[Any, Any, Any]]
    evaluators: Sequence[Evaluator[Any, Any, Any]]
    headline: str | None = None
    timeout: float = 120.0
    judge: Judge | None = None
    spans: bool = False
    """Record each sample's spans even when no evaluator of the dataset is span-based (for the user's own)."""

    @property
    def needs_judge(self) -> bool:
        return any(isinstance(ev, JUDGED) for ev in self._all())

    @property
    def needs_spans(self) -> bool:
        """Whether each sample's spans are recorded: a span-based evaluator is in the dataset, or they are asked for."""
        return self.spans or any(isinstance(ev, SPAN_BASED) for ev in self._all())

    @property
    def test_verdict(self) -> Any:
        """What `--judge-model test` answers: pydantic_evals' grading output, passing every output."""
        return {"reason": "the offline test judge passes every output", "pass": True, "score": 1.0}

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        return replace(task, score=replace(self, judge=judge))

    def _all(self) -> list[Evaluator[Any, Any, Any]]:
        return [ev for case in self.cases.values() for ev in case.evaluators] + list(self.evaluators)

    async def __call__(
        self, case: Case, output: Any, seconds: float | None = None, spans: Sequence[Any] | None = None
    ) -> Score:
        source = self.cases[case.id]
        tree, run = _span_tree(spans)
        context = EvaluatorContext[Any, Any, Any](
            name=source.name,  # None for an unnamed case, as pydantic_evals gives it
            inputs=source.inputs,
            metadata=source.metadata,
            expected_output=source.expected_output,
            output=output,
            duration=seconds or 0.0,
            _span_tree=tree,
            attributes=run.attributes,
            metrics=run.metrics,
        )
        recorded = _Recorded(self.judge.model) if self.judge is not None else None
        evaluators = [*source.evaluators, *self.evaluators]
        runs = [self._run(ev, recorded, context, case.id) for ev in evaluators]
        outputs = await asyncio.gather(*runs, return_exceptions=True)  # every evaluator ends, failed or not
        usage, cost = self._spent(recorded)
        for out in outputs:
            if isinstance(out, CaseScoringError):  # the first failure is the case's, with what the judge spent
                raise CaseScoringError(str(out), usage=usage, cost=cost) from out
            if isinstance(out, BaseException):
                raise out
        results = [result for out in outputs if not isinstance(out, BaseException) for result in out]
        assertions, scores, labels = _group_evaluator_outputs_by_type(results)
        value = self._headline(case.id, assertions, scores)
        details = {
            EVALUATIONS: {
                "inputs": source.inputs,
                "metadata": source.metadata,
                "duration": context.duration,
                "assertions": _RESULTS.dump_python(assertions, mode="json"),
                "scores": _RESULTS.dump_python(scores, mode="json"),
                "labels": _RESULTS.dump_python(labels, mode="json"),
            }
        }
        return Score(value, details, usage=usage, cost=cost)

    def _spent(self, recorded: _Recorded | None) -> tuple[TokenUsage | None, Cost | None]:
        """What the judge's requests for this case used and cost, or None for both when it asked nothing."""
        if recorded is None or not recorded.responses or self.judge is None:
            return None, None
        usage = sample_usage(recorded.responses)
        return usage, sample_cost(recorded.responses, usage, local=self.judge.local, prices=self.judge.prices)

    def _judged(self, evaluator: Evaluator[Any, Any, Any], model: Model | None) -> Evaluator[Any, Any, Any]:
        """An LLM judge of the file grading with the run's judge."""
        if model is not None and isinstance(evaluator, JUDGED):
            settings = evaluator.model_settings or (self.judge.model_settings if self.judge is not None else None)
            return replace(evaluator, model=model, model_settings=settings)
        return evaluator

    def _headline(
        self, case_id: str, assertions: Mapping[str, EvaluationResult[bool]], scores: Mapping[str, EvaluationResult]
    ) -> float:
        if self.headline is not None:
            if self.headline not in scores:
                given = ", ".join(scores) or "none"
                raise CaseScoringError(f"case {case_id!r}: no score named {self.headline!r} (its scores: {given})")
            return float(scores[self.headline].value)
        if not assertions:
            raise CaseScoringError(
                f"case {case_id!r}: its evaluators gave no assertion: name the score that heads the run (--score NAME)"
            )
        return sum(bool(result.value) for result in assertions.values()) / len(assertions)

    async def _run(
        self,
        given: Evaluator[Any, Any, Any],
        judge: Model | None,
        context: EvaluatorContext[Any, Any, Any],
        case_id: str,
    ) -> list[EvaluationResult]:
        """One evaluator's results as `run_evaluator` gives them (a judge's with the source the file gave it); its
        failure, or its running past `timeout`, is the case's error. A synchronous evaluator runs on a thread of its
        own, so one that hangs is left behind."""
        name = given.get_default_evaluation_name()
        evaluator = self._judged(given, judge)
        try:
            if inspect.iscoroutinefunction(type(evaluator).evaluate):
                outcome = await asyncio.wait_for(run_evaluator(evaluator, context), self.timeout)
            else:
                outcome = await asyncio.wait_for(_on_thread(evaluator, context), self.timeout)
        except TimeoutError:
            raise CaseScoringError(f"case {case_id!r}: evaluator {name} took more than {self.timeout:g} s") from None
        if isinstance(outcome, EvaluatorFailure):
            message = " ".join(outcome.error_message.split())
            raise CaseScoringError(f"case {case_id!r}: evaluator {name} failed: {message}")
        if evaluator is given:
            return outcome
        return [replace(result, source=given.as_spec()) for result in outcome]


def _span_tree(spans: Sequence[Any] | None) -> tuple[SpanTree | SpanTreeRecordingError, TaskRun]:
    """The sample's span tree as pydantic_evals builds a task's (its spans, those whose parent is not among them the
    roots), and the metrics it reads from it (`requests`, tokens, `cost`), or the error its evaluators are given when
    no spans were recorded (then no metrics, as pydantic_evals has none without a tree)."""
    run = TaskRun()
    if spans is None:
        return SpanTreeRecordingError(NO_SPANS), run
    tree = SpanTree()
    tree.add_readable_spans(list(spans))
    extract_span_tree_metrics(run, tree)
    return tree, run


def _on_thread(
    evaluator: Evaluator[Any, Any, Any], context: EvaluatorContext[Any, Any, Any]
) -> asyncio.Future[list[EvaluationResult] | EvaluatorFailure]:
    """`run_evaluator` on a daemon thread with its own event loop: the run's loop never waits on it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[list[EvaluationResult] | EvaluatorFailure] = loop.create_future()

    def settle(result: list[EvaluationResult] | EvaluatorFailure | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        result: list[EvaluationResult] | EvaluatorFailure | None = None
        error: BaseException | None = None
        try:
            result = asyncio.run(run_evaluator(evaluator, context))
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the run ended while this one hung: nobody waits for it
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"evaluator {type(evaluator).__name__}", daemon=True).start()
    return future
