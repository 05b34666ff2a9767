"""Sample records in, scores out: per-class accuracy, the macro average, format compliance, totals.

`ScoreBook` takes one record at a time, so a run of any size is scored in constant memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from schemas import ClassScore, Compliance, InvalidKind, SampleRecord, Scores, Totals

__all__ = ["ScoreBook", "score_records"]

_TOKEN_COUNTS = ("input_tokens", "output_tokens", "reasoning_tokens", "cache_read_tokens")
"""Summed where reported; a count stays None (unknown) until some record reports it."""


def _percent(part: int, whole: int) -> float | None:
    return 100 * part / whole if whole else None


class ScoreBook:
    """Running counts; errors and ambiguous quizzes are counted but left out of accuracy."""

    def __init__(self, class_order: Iterable[str] = ()) -> None:
        self._classes: dict[str, ClassScore] = {name: ClassScore(class_name=name) for name in class_order}
        self._first_position: dict[str, int] = {}
        self._statuses: Counter[str] = Counter()
        self._invalid: Counter[InvalidKind] = Counter()
        self.samples = self.errors = self.ambiguous = 0
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
        """Count `record`; `position` (its place in the dataset) keeps classes in dataset order."""
        self.samples += 1
        entry = self._classes.setdefault(record.class_name, ClassScore(class_name=record.class_name))
        if position is not None and position < self._first_position.get(record.class_name, position + 1):
            self._first_position[record.class_name] = position
        if record.status == "error":
            entry.errors += 1
            self.errors += 1
        elif record.ambiguous:
            entry.ambiguous += 1
            self.ambiguous += 1
        else:
            self._statuses[record.status] += 1
            if record.status == "correct":
                entry.correct += 1
            elif record.status == "incorrect":
                entry.incorrect += 1
            else:
                entry.missing += 1
        if record.attempts:
            self._answered += 1
            self._first_valid += record.attempts[0].valid
            self._last_valid += record.attempts[-1].valid
        self._invalid.update(a.invalid_kind for a in record.attempts if not a.valid and a.invalid_kind is not None)
        self._retries += record.corrective_retries
        if record.status == "missing" and record.relaxed_answer is not None:
            self._recoverable += 1
            self._recoverable_correct += record.relaxed_answer == str(record.correct)
        self._requests += record.usage.requests
        for name in _TOKEN_COUNTS:
            value = getattr(record.usage, name)
            if value is not None:
                self._tokens[name] = (self._tokens[name] or 0) + value
        if record.cost.usd is not None:
            self._cost += record.cost.usd
            self._costed += 1
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
    def answered(self) -> int:
        """Samples that got at least one model response."""
        return self._answered

    def scores(self) -> Scores:
        seen = [c for c in self._classes.values() if c.correct + c.incorrect + c.missing + c.errors + c.ambiguous]
        if self._first_position:
            seen.sort(key=lambda c: self._first_position.get(c.class_name, len(self._first_position)))
        classes = [c.model_copy() for c in seen]
        for entry in classes:
            scored = entry.correct + entry.incorrect + entry.missing
            entry.accuracy = 100 * entry.correct / scored if scored else None
        accuracies = [c.accuracy for c in classes if c.accuracy is not None]
        tokens = self._tokens
        return Scores(
            classes=classes,
            macro_accuracy=sum(accuracies) / len(accuracies) if accuracies else None,
            samples=self.samples,
            correct=self._statuses["correct"],
            incorrect=self._statuses["incorrect"],
            missing=self._statuses["missing"],
            errors=self.errors,
            ambiguous=self.ambiguous,
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


def score_records(records: Iterable[SampleRecord], class_order: Iterable[str] = ()) -> Scores:
    """Score records; classes come in `class_order`, then in the order they first appear."""
    book = ScoreBook(class_order)
    for record in records:
        book.add(record)
    return book.scores()
