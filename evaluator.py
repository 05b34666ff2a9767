"""Evaluate models on typed tasks: a prompt, a typed output (any pydantic model) and a scorer.

The importable core: no argument parsing, no printing.

    import asyncio, evaluator
    task = evaluator.Task(name="graph", output_type=Graph, score=grade)     # Graph: any pydantic model
    cases = [evaluator.Case(id="s1", prompt="...", expected=..., group="...")]
    result = asyncio.run(evaluator.evaluate(task, cases, "openai:gpt-4o-mini", mode="tool", retries=5))
    # or: config = evaluator.RunConfig(mode="tool", retries=5); evaluator.evaluate(task, cases, model, config)
    result.records[0].output, result.records[0].score, result.scores.score

`evaluate()` poses and scores; `run()` does the same and stores the run (resumable) under a results folder.
`Suite(name, params, build)` makes a benchmark a plug-in (entry-point group `typed_eval.suites`), run with
`main.py run --suite NAME -S key=value`.
`analyse(records)` gives a run's interval and baselines, `compare(a, b)` pairs two runs case by
case:

    a, b = evaluator.analyse(result_a.records), evaluator.analyse(result_b.records)
    a.score_ci95(), evaluator.compare(a, b).p_value
"""

from __future__ import annotations

from typed_eval.core.attempts import UserPrices
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import EvaluatorError, InputError, ModelSetupError, ResultFileError, TaskError
from typed_eval.core.scoring import score_records
from typed_eval.core.settings import RunConfig
from typed_eval.core.suite import AnswerLine, Suite, SuiteContext
from typed_eval.core.tasks import Conversation, Score, Task, TextReader
from typed_eval.engine.evaluation import EvaluationResult, ToolChoice, evaluate
from typed_eval.engine.runs import RunOutcome, run
from typed_eval.engine.settings import default_retries
from typed_eval.providers.batches import BatchOptions
from typed_eval.providers.flow import Pacer, PaceReport
from typed_eval.providers.models import PreparedModel, open_model
from typed_eval.reports.analysis import Comparison, RunAnalysis, analyse, compare
from typed_eval.schemas import (
    AnswerMode,
    Attempt,
    Case,
    Quiz,
    RunSettings,
    RunSummary,
    SampleRecord,
    SampleStatus,
    Scores,
)
from typed_eval.store.storage import load_runs, read_records
from typed_eval.suites.multiple_choice import (
    DEFAULT_SYSTEM_PROMPT,
    OptionAnswer,
    evaluate_quizzes,
    multiple_choice_task,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AnswerLine",
    "AnswerMode",
    "Attempt",
    "BatchOptions",
    "Case",
    "Comparison",
    "Conversation",
    "Dataset",
    "EvaluationResult",
    "EvaluatorError",
    "InputError",
    "ModelSetupError",
    "OptionAnswer",
    "PaceReport",
    "Pacer",
    "PreparedModel",
    "Quiz",
    "ResultFileError",
    "RunAnalysis",
    "RunConfig",
    "RunOutcome",
    "RunSettings",
    "RunSummary",
    "SampleRecord",
    "SampleStatus",
    "Score",
    "Scores",
    "Suite",
    "SuiteContext",
    "Task",
    "TaskError",
    "TextReader",
    "ToolChoice",
    "UserPrices",
    "analyse",
    "compare",
    "dataset_from_cases",
    "default_retries",
    "evaluate",
    "evaluate_quizzes",
    "load_runs",
    "multiple_choice_task",
    "open_model",
    "read_records",
    "run",
    "score_records",
]
