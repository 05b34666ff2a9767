"""Sample records in, scores out: per-class accuracy, the macro average, format compliance, totals."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from schemas import ClassScore, Compliance, InvalidKind, SampleRecord, Scores, TokenUsage, Totals

__all__ = ["score_records"]


def score_records(records: Sequence[SampleRecord]) -> Scores:
    """Score records in dataset order; errors and ambiguous quizzes are counted but left out of accuracy."""
    classes: dict[str, ClassScore] = {}
    for record in records:
        entry = classes.setdefault(record.class_name, ClassScore(class_name=record.class_name))
        if record.status == "error":
            entry.errors += 1
        elif record.ambiguous:
            entry.ambiguous += 1
        elif record.status == "correct":
            entry.correct += 1
        elif record.status == "incorrect":
            entry.incorrect += 1
        else:
            entry.missing += 1
    for entry in classes.values():
        scored = entry.correct + entry.incorrect + entry.missing
        entry.accuracy = 100 * entry.correct / scored if scored else None
    accuracies = [c.accuracy for c in classes.values() if c.accuracy is not None]
    scored_records = [r for r in records if r.status != "error" and not r.ambiguous]
    statuses = Counter(r.status for r in scored_records)
    return Scores(
        classes=list(classes.values()),
        macro_accuracy=sum(accuracies) / len(accuracies) if accuracies else None,
        samples=len(records),
        correct=statuses["correct"],
        incorrect=statuses["incorrect"],
        missing=statuses["missing"],
        errors=sum(r.status == "error" for r in records),
        ambiguous=sum(r.ambiguous and r.status != "error" for r in records),
        compliance=_compliance(records),
        totals=_totals(records),
    )


def _percent(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


def _compliance(records: Sequence[SampleRecord]) -> Compliance:
    answered = [r for r in records if r.attempts]
    invalid: Counter[InvalidKind] = Counter(
        a.invalid_kind for r in records for a in r.attempts if not a.valid and a.invalid_kind is not None
    )
    retries = sum(r.corrective_retries for r in records)
    recoverable = [r for r in records if r.status == "missing" and r.relaxed_answer is not None]
    return Compliance(
        valid_first_try=_percent(sum(r.attempts[0].valid for r in answered), len(answered)),
        valid_after_retries=_percent(sum(r.attempts[-1].valid for r in answered), len(answered)),
        mean_corrective_retries=retries / len(answered) if answered else None,
        corrective_retries=retries,
        invalid_outputs=sum(invalid.values()),
        invalid_by_kind=dict(sorted(invalid.items())),
        relaxed_recoverable=len(recoverable),
        relaxed_recoverable_correct=sum(r.relaxed_answer == str(r.correct) for r in recoverable),
    )


def _totals(records: Sequence[SampleRecord]) -> Totals:
    usage = sum((r.usage for r in records), TokenUsage(input_tokens=None, output_tokens=None))
    known = [r.cost.usd for r in records if r.cost.usd is not None]
    latencies = [r.latency_s for r in records if r.latency_s is not None]
    return Totals(
        requests=usage.requests,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cost_usd=sum(known) if known else None,
        cost_complete=len(known) == len(records),
        cost_sources=sorted({r.cost.source for r in records}),
        mean_latency_s=sum(latencies) / len(latencies) if latencies else None,
    )
