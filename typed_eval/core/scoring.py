"""Sample records in, scores out: mean score per group, the headline, task metrics, format compliance, totals.

`ScoreBook` takes one record at a time, so a run of any size is scored in constant memory.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from typed_eval.contracts import (
    Aggregate,
    Compliance,
    GroupScore,
    InvalidKind,
    SampleRecord,
    Scores,
    Totals,
    status_of,
)
from typed_eval.core.counted_score import counted_score
from typed_eval.core.errors import TaskError

__all__ = ["UNGROUPED", "ScoreBook", "counted_score", "relaxed_score", "score_records", "with_relaxed_reading"]

UNGROUPED = "all"
"""The group of cases that name none."""

_TOKEN_COUNTS = ("input_tokens", "output_tokens", "reasoning_tokens", "cache_read_tokens")
"""Summed where reported; a count stays None (unknown) until some record reports it."""


def _percent(part: float, whole: float) -> float | None:
    return 100 * part / whole if whole else None


class ScoreBook:
    """Running counts; errors, refused schemas (`unsupported`) and excluded cases are counted but left out of the
    score; missing counts 0.

    Scores are means weighted by each record's case weight (1 unless the case gives one): a group's score is
    sum(weight x score) / sum(weight) over its scored records, and so is the `mean` headline over all of them.
    """

    def __init__(
        self,
        group_order: Iterable[str] = (),
        *,
        aggregate: Aggregate = "macro",
        metrics: Callable[[Mapping[str, float]], dict[str, float]] | None = None,
    ) -> None:
        self._groups: dict[str, GroupScore] = {name: GroupScore(group=name) for name in group_order}
        self._sums: dict[str, float] = {}
        self._weights: dict[str, float] = {}
        self._first_position: dict[str, int] = {}
        self._aggregate: Aggregate = aggregate
        self._metrics = metrics
        self._details: dict[str, float] = {}
        self._statuses: Counter[str] = Counter()
        self._invalid: Counter[InvalidKind] = Counter()
        self.samples = self.errors = self.unsupported = self.excluded = 0
        self._answered = self._first_valid = self._last_valid = self._retries = 0
        self._recoverable = self._recoverable_correct = 0
        self._requests = 0
        self._tokens: dict[str, int | None] = dict.fromkeys(_TOKEN_COUNTS)
        self._cost = 0.0
        self._costed = 0
        self._sources: set[str] = set()
        self._latency = 0.0
        self._timed = 0
        self._transport_retries = self._cache_hits = 0

    def add(self, record: SampleRecord, position: int | None = None) -> None:
        """Count `record`; `position` (its place in the dataset) keeps groups in dataset order."""
        self.samples += 1
        name = record.group if record.group is not None else UNGROUPED
        entry = self._groups.setdefault(name, GroupScore(group=name))
        if position is not None and position < self._first_position.get(name, position + 1):
            self._first_position[name] = position
        if record.status == "error":
            entry.errors += 1
            self.errors += 1
        elif record.status == "unsupported":
            entry.unsupported += 1
            self.unsupported += 1
        elif record.excluded:
            entry.excluded += 1
            self.excluded += 1
        else:
            self._statuses[record.status] += 1
            setattr(entry, record.status, getattr(entry, record.status) + 1)
            self._sums[name] = self._sums.get(name, 0.0) + record.weight * (record.score or 0.0)
            self._weights[name] = self._weights.get(name, 0.0) + record.weight
            for key, value in (record.score_details or {}).items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    self._details[key] = self._details.get(key, 0) + value
        if record.attempts:
            self._answered += 1
            self._first_valid += record.attempts[0].valid
            self._last_valid += record.attempts[-1].valid
        self._invalid.update(a.invalid_kind for a in record.attempts if not a.valid and a.invalid_kind is not None)
        self._retries += record.corrective_retries
        if record.status == "missing" and record.relaxed_output is not None:
            self._recoverable += 1
            self._recoverable_correct += record.relaxed_score == 1.0
        self._requests += record.usage.requests
        for count in _TOKEN_COUNTS:
            value = getattr(record.usage, count)
            if value is not None:
                self._tokens[count] = (self._tokens[count] or 0) + value
        if record.cost.usd is not None:
            self._cost += record.cost.usd
            self._costed += 1
            entry.cost_usd = (entry.cost_usd or 0.0) + record.cost.usd
        self._sources.add(record.cost.source)
        if record.latency_s is not None:
            self._latency += record.latency_s
            self._timed += 1
        self._transport_retries += record.transport_retries
        self._cache_hits += record.cache_hits

    @property
    def requests(self) -> int:
        return self._requests

    @property
    def cost_usd(self) -> float | None:
        return self._cost if self._costed else None

    @property
    def cost_per_sample(self) -> float | None:
        """The mean known cost of a sample so far; None before any is known."""
        return self._cost / self._costed if self._costed else None

    @property
    def answered(self) -> int:
        """Samples that got at least one model response."""
        return self._answered

    def scores(self) -> Scores:
        seen = [g for g in self._groups.values() if g.scored + g.errors + g.unsupported + g.excluded]
        if self._first_position:
            seen.sort(key=lambda g: self._first_position.get(g.group, len(self._first_position)))
        groups = [g.model_copy() for g in seen]
        for entry in groups:
            entry.score = _percent(self._sums.get(entry.group, 0.0), self._weights.get(entry.group, 0.0))
        means = [g.score for g in groups if g.score is not None]
        scored = sum(g.scored for g in groups)
        macro = sum(means) / len(means) if means else None
        mean = _percent(sum(self._sums.values()), sum(self._weights[g.group] for g in groups if g.scored))
        tokens = self._tokens
        return Scores(
            groups=groups,
            score=macro if self._aggregate == "macro" else mean,
            aggregate=self._aggregate,
            macro_score=macro,
            mean_score=mean,
            metrics=_finite(self._metrics(dict(self._details))) if self._metrics is not None and scored else {},
            samples=self.samples,
            correct=self._statuses["correct"],
            partial=self._statuses["partial"],
            incorrect=self._statuses["incorrect"],
            missing=self._statuses["missing"],
            errors=self.errors,
            unsupported=self.unsupported,
            excluded=self.excluded,
            compliance=Compliance(
                valid_first_try=_percent(self._first_valid, self._answered),
                valid_after_retries=_percent(self._last_valid, self._answered),
                mean_corrective_retries=self._retries / self._answered if self._answered else None,
                corrective_retries=self._retries,
                invalid_outputs=sum(self._invalid.values()),
                invalid_by_kind=dict(sorted(self._invalid.items())),
                relaxed_recoverable=self._recoverable,
                relaxed_recoverable_correct=self._recoverable_correct,
            ),
            totals=Totals(
                requests=self._requests,
                input_tokens=tokens["input_tokens"],
                output_tokens=tokens["output_tokens"],
                reasoning_tokens=tokens["reasoning_tokens"],
                cache_read_tokens=tokens["cache_read_tokens"],
                cost_usd=self.cost_usd,
                cost_complete=self._costed == self.samples,
                cost_sources=sorted(self._sources),
                mean_latency_s=self._latency / self._timed if self._timed else None,
                transport_retries=self._transport_retries,
                cache_hits=self._cache_hits,
            ),
        )


def _finite(metrics: Mapping[str, float | None]) -> dict[str, float | None]:
    """A task's figures as stored: NaN and infinities (a ratio of nothing to nothing) are None, as JSON writes them,
    so the summary reads back. A figure that is no number is the task's error, in one line."""
    found: dict[str, float | None] = {}
    for name, value in metrics.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise TaskError(f"the task's metrics gave {value!r} for {name!r}: give numbers (or None)")
        found[name] = None if value is None or not math.isfinite(value) else float(value)
    return found


def score_records(
    records: Iterable[SampleRecord],
    group_order: Iterable[str] = (),
    *,
    aggregate: Aggregate = "macro",
    metrics: Callable[[Mapping[str, float]], dict[str, float]] | None = None,
) -> Scores:
    """Score records; groups come in `group_order`, then in the order they first appear."""
    book = ScoreBook(group_order, aggregate=aggregate, metrics=metrics)
    for record in records:
        book.add(record)
    return book.scores()


def with_relaxed_reading(record: SampleRecord) -> SampleRecord:
    """A missing reply that the task's relaxed reading reads, scored as that reading scores it; others as they are."""
    if record.status != "missing" or record.relaxed_score is None:
        return record
    value = record.relaxed_score
    return record.model_copy(update={"status": status_of(value), "score": value, "output": record.relaxed_output})


def relaxed_score(records: Iterable[SampleRecord], aggregate: Aggregate) -> float | None:
    """The score (0-100) with the relaxed reading counted (`with_relaxed_reading`)."""
    return score_records((with_relaxed_reading(r) for r in records), aggregate=aggregate).score
