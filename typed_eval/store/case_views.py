"""What the case store answers: stored runs under their keys, a case's cells (one run's records of it, reduced to
what a grid shows), pages of a grid, and one case in each run; and the filters and sorts a grid offers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.core.counted_score import counted_score
from typed_eval.core.errors import InputError
from typed_eval.store.storage import RUNNING, StoredRun

__all__ = [
    "FILTERS",
    "PER_RUN_SORTS",
    "CaseCell",
    "CaseDetail",
    "CasePage",
    "CaseRow",
    "Filter",
    "NotFoundError",
    "RunEntry",
]

Filter = Literal["all", "disagree", "wrong", "invalid", "error", "unsupported"]
FILTERS: tuple[Filter, ...] = ("all", "disagree", "wrong", "invalid", "error", "unsupported")
"""`disagree`: scored in every run shown, with scores not all equal (the cases behind a paired test); `wrong`: scored
below 1 in some run; `invalid`: an invalid output in some run; `error`: a failed call in some run; `unsupported`: a
schema the provider refused in some run. Besides these, `better:N`: scored in every run shown, run N (from 0) above
each other (a paired comparison's "only A right")."""

PER_RUN_SORTS = ("score", "cost", "latency", "retries")
"""Sorts by one run's cells (`score:1`: by the second run shown); `case` and `group` sort the rows."""


class NotFoundError(InputError):
    """A run key or case id that is not stored (the viewer answers 404)."""


@dataclass(frozen=True)
class RunEntry:
    """A stored run under its key: its folder relative to the results folder (`<model-folder>/<run-folder>`)."""

    key: str
    run: StoredRun

    @property
    def summary(self) -> RunSummary:
        return self.run.summary

    @property
    def status(self) -> str:
        """The summary's status, or `running` for a run whose summary says it has not finished."""
        reason = self.summary.reason or ""
        return "running" if reason == RUNNING else self.summary.status


@dataclass(frozen=True)
class CaseCell:
    """One run's answer to one case: its records (one per repeat) reduced to what the grid shows."""

    records: list[SampleRecord]

    @property
    def status(self) -> str:
        """The records' status, or `mixed` when the repeats differ."""
        statuses = {record.status for record in self.records}
        return statuses.pop() if len(statuses) == 1 else "mixed"

    @property
    def score(self) -> float | None:
        """The mean score of the scored repeats, in [0, 1] (a missing output scores 0)."""
        scores = [counted_score(record) for record in self.records]
        known = [score for score in scores if score is not None]
        return sum(known) / len(known) if known else None

    @property
    def output(self) -> JsonValue:
        """The output; with repeats, each repeat's in order."""
        if len(self.records) == 1:
            return self.records[0].output
        return [record.output for record in self.records]

    @property
    def invalid_kinds(self) -> list[str]:
        kinds = (a.invalid_kind for r in self.records for a in r.attempts if not a.valid and a.invalid_kind)
        return list(dict.fromkeys(kinds))

    @property
    def cost_usd(self) -> float | None:
        known = [record.cost.usd for record in self.records if record.cost.usd is not None]
        return sum(known) if known else None

    @property
    def latency_s(self) -> float | None:
        known = [record.latency_s for record in self.records if record.latency_s is not None]
        return sum(known) / len(known) if known else None

    @property
    def corrective_retries(self) -> int:
        return sum(record.corrective_retries for record in self.records)

    @property
    def input_tokens(self) -> int | None:
        """Summed over the repeats; None when a repeat's count is not known."""
        counts = [record.usage.input_tokens for record in self.records]
        return None if None in counts else sum(count or 0 for count in counts)

    @property
    def output_tokens(self) -> int | None:
        counts = [record.usage.output_tokens for record in self.records]
        return None if None in counts else sum(count or 0 for count in counts)

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "score": self.score,
            "output": self.output,
            "corrective_retries": self.corrective_retries,
            "invalid_kinds": self.invalid_kinds,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "repeats": len(self.records),
            "statuses": [record.status for record in self.records],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    group: str | None
    cells: dict[str, CaseCell]
    """By run key; a run that has no record of the case has no cell."""


@dataclass(frozen=True)
class CasePage:
    total: int
    """Rows the filter keeps, over all pages."""
    page: int
    per_page: int
    rows: list[CaseRow]
    groups: list[str] = field(default_factory=list)
    """Every group of the shown runs' cases (for the group filter)."""
    entries: list[RunEntry] = field(default_factory=list)
    """The runs shown, in their columns' order."""
    damaged: dict[str, list[str]] = field(default_factory=dict)
    """By run key: why each of its lines that is not a record was left out (runs with none are not keys)."""


@dataclass(frozen=True)
class CaseDetail:
    case_id: str
    prompt: str | None
    expected: JsonValue
    group: str | None
    runs: dict[str, list[SampleRecord]]
    """By run key: the run's records of the case, one per repeat (none when the run did not pose it)."""
    entries: list[RunEntry] = field(default_factory=list)
    """The runs shown, in the order named."""
    damaged: dict[str, list[str]] = field(default_factory=dict)
    """As `CasePage.damaged`."""
