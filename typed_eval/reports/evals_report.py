"""A stored run as pydantic_evals' `EvaluationReport` (`format_result.py --format pydantic-evals RUN_DIR`): its own
model, serialised by its own `EvaluationReportAdapter`, so pydantic_evals' tooling (`report.print`, comparisons with
a baseline) reads our runs.

Each record is a `ReportCase` (a scored output) or a `ReportCaseFailure` (an error, no valid output after the
corrective retries, a schema the provider refused). A record whose scorer kept pydantic_evals' results
(`score_details[EVALUATIONS]`) gives its assertions, scores and labels as they were, and the case's inputs and
metadata as the dataset gave them; any other run's record gives its score as the score `score`. Repeats are named as
pydantic_evals names them (`case [k/K]`, `source_case_name` the case). The metrics are the sample's tokens, cost and
corrective retries; the attributes its status and mode.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from typed_eval.contracts import SampleRecord
from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.core.evaluations import EVALUATIONS
from typed_eval.core.terminal import printable
from typed_eval.store.storage import StoredRun, latest_records

__all__ = ["evaluation_report"]

FAILED = ("error", "missing", "unsupported")


def evaluation_report(run: StoredRun) -> str:
    """The run as pydantic_evals' JSON of an `EvaluationReport` (indented by two)."""
    try:
        from pydantic import TypeAdapter
        from pydantic_evals.evaluators import EvaluationResult
        from pydantic_evals.reporting import (
            EvaluationReport,
            EvaluationReportAdapter,
            ReportCase,
            ReportCaseFailure,
        )
    except ImportError as exc:
        needs = "--format pydantic-evals needs pydantic-evals: pip install 'typed-eval[evals]'"
        raise InputError(f"{needs} ({exc})") from None
    passed = TypeAdapter(dict[str, EvaluationResult[bool]])
    numbers = TypeAdapter(dict[str, EvaluationResult[int | float]])
    texts = TypeAdapter(dict[str, EvaluationResult[str]])
    summary = run.summary
    repeats = summary.settings.repeats
    cases: list[ReportCase[Any, Any, Any]] = []
    failures: list[ReportCaseFailure[Any, Any, Any]] = []
    for record in latest_records(run.path):
        name, source_name = _names(record, repeats)
        kept = (record.score_details or {}).get(EVALUATIONS)
        found: dict[str, Any] = kept if isinstance(kept, dict) else {}
        inputs = found.get("inputs", record.prompt)
        metadata = found.get("metadata", record.metadata or None)
        if record.status in FAILED or record.score is None:
            failures.append(
                ReportCaseFailure(
                    name=name,
                    inputs=inputs,
                    metadata=metadata,
                    expected_output=record.expected,
                    error_message=record.error or _why(record),
                    error_stacktrace="",
                    source_case_name=source_name,
                )
            )
            continue
        as_score = {"name": "score", "value": record.score, "reason": None, "source": {"name": summary.suite}}
        try:
            if found:
                assertions = passed.validate_python(found.get("assertions", {}))
                scores = numbers.validate_python(found.get("scores", {}))
                labels = texts.validate_python(found.get("labels", {}))
            else:
                assertions, labels, scores = {}, {}, numbers.validate_python({"score": as_score})
            seconds = float(found.get("duration", record.latency_s or 0.0))
        except (TypeError, ValueError) as exc:  # a record edited by hand: one line, not pydantic's traceback
            raise ResultFileError(
                f"{run.path}: case {record.case_id!r}: its pydantic_evals results cannot be read: {_reason(exc)}"
            ) from None
        cases.append(
            ReportCase(
                name=name,
                inputs=inputs,
                metadata=metadata,
                expected_output=record.expected,
                output=record.output,
                metrics=_metrics(record),
                attributes={"status": record.status, "mode": record.mode},
                scores=scores,
                labels=labels,
                assertions=assertions,
                task_duration=seconds,
                total_duration=record.latency_s if record.latency_s is not None else seconds,
                source_case_name=source_name,
            )
        )
    report = EvaluationReport(
        name=f"{summary.model} ({summary.mode} mode)",
        cases=cases,
        failures=failures,
        experiment_metadata={
            "model": summary.model,
            "mode": summary.mode,
            "suite": summary.suite,
            "run_id": summary.run_id,
            "score_percent": summary.scores.score,
        },
        dataset_name=summary.task,
    )
    return EvaluationReportAdapter.dump_json(report, indent=2).decode("utf-8") + "\n"


def _names(record: SampleRecord, repeats: int) -> tuple[str, str | None]:
    """The case's name in the report and the case it repeats (None without repeats), as pydantic_evals names them."""
    if repeats <= 1:
        return record.case_id, None
    return f"{record.case_id} [{record.repeat + 1}/{repeats}]", record.case_id


def _reason(exc: Exception) -> str:
    """Why a record's kept results do not read, in one line: pydantic's first error and where (never the value)."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return printable(" ".join(str(exc).split()))


def _why(record: SampleRecord) -> str:
    if record.status == "missing":
        return f"no valid output after {record.corrective_retries} corrective retries"
    if record.status == "unsupported":
        return "the provider refused the output schema"
    return record.status


def _metrics(record: SampleRecord) -> dict[str, float | int]:
    usage = record.usage
    counted = {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "corrective_retries": record.corrective_retries,
        "cost_usd": record.cost.usd,
    }
    return {name: value for name, value in counted.items() if value is not None}
