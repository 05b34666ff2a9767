"""A run's first invalid outputs, gathered as its records go by: what the HTML report shows under each run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from typed_eval.contracts import SampleRecord

__all__ = ["MAX_TEXT", "InvalidExample", "InvalidExamples", "invalid_examples"]

MAX_TEXT = 2000
"""Characters of a raw output or feedback shown in full; the rest is cut with a visible marker."""


@dataclass(frozen=True)
class InvalidExample:
    """One rejected output of a run, as the page shows it: what the model sent and what it was told."""

    case_id: str
    repeat: int
    kind: str | None
    raw: str
    feedback: str | None


def _truncate(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n[… truncated: {len(text) - MAX_TEXT} more characters]"


class InvalidExamples:
    """The first `limit` invalid attempts of a run's records (in record order), gathered as the records go by: a few
    concrete failures say more about a model's format problems than the counts alone."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.found: list[InvalidExample] = []

    def add(self, record: SampleRecord) -> None:
        for attempt in record.attempts:
            if len(self.found) >= self.limit:
                return
            if not attempt.valid:
                feedback = None if attempt.feedback is None else _truncate(attempt.feedback)
                example = InvalidExample(
                    record.case_id, record.repeat, attempt.invalid_kind, _truncate(attempt.raw), feedback
                )
                self.found.append(example)


def invalid_examples(records: Iterable[SampleRecord], limit: int = 3) -> list[InvalidExample]:
    """The first `limit` invalid attempts of a run's records."""
    examples = InvalidExamples(limit)
    for record in records:
        examples.add(record)
    return examples.found
