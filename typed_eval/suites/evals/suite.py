"""The `pydantic-evals` suite: a pydantic_evals dataset file (`run --dataset cases.yaml`) posed like any suite's cases
(every mode, corrective retries, repeats, resume, costs, the leaderboard and the viewer), scored by the dataset's own
evaluators as pydantic_evals runs them. The headline is the mean of each case's assertions, or the score `--score`
names. Reference: docs/pydantic-evals.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError
from typed_eval.core.evaluations import EVALUATIONS
from typed_eval.core.suite import AnswerLine, Suite, SuiteFlag
from typed_eval.core.tasks import Task, TextReader

__all__ = ["PYDANTIC_EVALS", "DatasetParams"]

SUITE = "pydantic-evals"


class DatasetParams(BaseModel):
    """Which dataset, read how, and what heads the run."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="the dataset file, YAML or JSON as pydantic_evals' Dataset.to_file writes it")
    output_type: str | None = Field(
        None,
        description="the output type, module:Class (default: the object its $schema file describes, else str: the "
        "reply's text); expected outputs fit it",
    )
    inputs_type: str | None = Field(
        None,
        description="the inputs' type, module:Class, as evaluators read ctx.inputs (default: as the file has them)",
    )
    evaluators: list[str] = Field(
        default_factory=list,
        description="custom evaluator classes the file names: module (every Evaluator class it defines) or "
        "module:Class, comma-separated",
    )
    score: str | None = Field(None, description="the score that heads the run (default: the mean of the assertions)")
    evaluator_timeout: float = Field(120.0, gt=0, description="seconds an evaluator may take before its case errs")
    spans: bool = Field(
        False,
        description="record each sample's spans for your evaluators' ctx.span_tree and ctx.metrics (they are "
        "recorded anyway when the dataset has a span-based evaluator)",
    )


def _build(params: DatasetParams) -> tuple[Task[Any], Dataset]:
    try:  # the optional extra: without it the suite is still listed, and says what to install
        from typed_eval.suites.evals.evaluator_scoring import DatasetScorer
        from typed_eval.suites.evals.loading import evaluator_types, load_dataset, output_type, to_case
        from typed_eval.suites.evals.schema_output import schema_output
    except ImportError as exc:
        raise InputError(f"reading a pydantic_evals dataset needs pydantic-evals: pip install 'typed-eval[evals]' "
                         f"({exc})") from None  # fmt: skip
    output = output_type(params.output_type) if params.output_type else schema_output(Path(params.path)) or str
    try:
        inputs = output_type(params.inputs_type, "inputs type", Any)
        dataset = load_dataset(Path(params.path), output, evaluator_types(params.evaluators), inputs)
    except InputError as exc:
        hint = ""
        if params.output_type is None and "expected_output" in str(exc):
            hint = " (the output type is str unless --output-type module:Class or the file's $schema names one)"
        raise InputError(f"{exc}{hint}") from None
    cases = [to_case(case, number) for number, case in enumerate(dataset.cases, 1)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise InputError(f"dataset {params.path}: case {case.id!r} is named twice: case names are its ids")
        seen.add(case.id)
    if not cases:
        raise InputError(f"dataset {params.path}: it holds no case")
    scorer = DatasetScorer(
        cases={case.id: source for case, source in zip(cases, dataset.cases, strict=True)},
        evaluators=list(dataset.evaluators),
        headline=params.score,
        timeout=params.evaluator_timeout,
        spans=params.spans,
    )
    example = next((case.expected for case in cases if case.expected is not None), None)  # what `test` answers
    task: Task[Any] = Task(
        name=dataset.name or Path(params.path).stem,
        output_type=output,
        score=scorer,
        reader=TextReader(lambda text: text, example=example if isinstance(example, str) else "")
        if output is str
        else None,
        example=example,
        bounded_scores=params.score is None,
        spans=scorer.needs_spans,
    )
    return task, dataset_from_cases(cases, suite=SUITE, source="file", path=params.path)


def show_results(record: SampleRecord) -> Sequence[AnswerLine]:
    """The output, then each assertion (passed or failed), score and label with its reason."""
    text = record.output if isinstance(record.output, str) else json.dumps(record.output, ensure_ascii=False)
    lines = [AnswerLine(text)]
    found = (record.score_details or {}).get(EVALUATIONS)
    if not isinstance(found, dict):
        return lines
    for kind in ("assertions", "scores", "labels"):
        results = found.get(kind)
        for name, result in (results if isinstance(results, dict) else {}).items():
            if not isinstance(result, dict):
                continue
            value, reason = result.get("value"), result.get("reason")
            why = f": {reason}" if reason else ""
            if kind == "assertions":
                lines.append(AnswerLine(f"{name}{why}", "pass" if value is True else "fail"))
            else:
                lines.append(AnswerLine(f"{name} = {value}{why}"))
    return lines


def _headline(summary: RunSummary) -> str:
    named = summary.dataset.suite_params.get("score") if summary.dataset.suite_params else None
    return f"{summary.task}: {named}" if named else f"{summary.task}: assertions passed"


def _said(summary: RunSummary) -> list[str]:
    """The headline said plainly: what it averages, and a named score as its evaluator gives it (not in percent)."""
    named = summary.dataset.suite_params.get("score") if summary.dataset.suite_params else None
    score = summary.scores.score
    if named is None:
        return ["headline: the mean over the cases of the share of each case's assertions that passed, in percent"]
    value = "n/a" if score is None else f"{score / 100:g}"
    return [
        f"headline: the mean over the cases of the score {named!r}, {value} as its evaluator gives it (x 100 above)"
    ]


PYDANTIC_EVALS = Suite(
    name=SUITE,
    params=DatasetParams,
    build=_build,
    description="a pydantic_evals dataset file (YAML or JSON with $schema) scored by its own evaluators, as "
    "pydantic_evals runs them (run --dataset FILE)",
    title="Assertions",
    modes=("tool", "native", "prompted", "text"),
    headline=_headline,
    report_lines=_said,
    show_answer=show_results,
    group_columns=False,
    flags=(
        SuiteFlag("--dataset", "path", metavar="FILE"),
        SuiteFlag("--output-type", "output_type", metavar="MODULE:CLASS"),
        SuiteFlag("--evaluators", "evaluators", metavar="MODULE[:CLASS],..."),
        SuiteFlag("--score", "score", metavar="NAME"),
    ),
)
