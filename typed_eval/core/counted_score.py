"""The counted score, stated once: a record's score as the statistics count it. Python reads the rule through
`counted_score`, DuckDB through the SQL expression `counted_score_sql` makes of the same rule, so the case viewer's
grid and the report's intervals can never count a record differently."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from typed_eval.contracts import SampleRecord

__all__ = ["LEFT_OUT_FLAGS", "LEFT_OUT_STATUSES", "UNSCORED", "counted_score", "counted_score_sql"]

LEFT_OUT_STATUSES: tuple[str, ...] = ("error", "unsupported")
"""A failed call says nothing of the model, nor does a schema the provider refused: left out of the score."""
LEFT_OUT_FLAGS: tuple[str, ...] = ("excluded",)
"""A record with one of these set (an excluded case) is left out of the score."""
UNSCORED: Mapping[str, float] = MappingProxyType({"missing": 0.0})
"""What a record with no score counts, by status: a missing output 0; any other status with no score is left out."""


def counted_score(record: SampleRecord) -> float | None:
    """A record's score as the statistics count it: its score, a missing output 0, None when it is left out of the
    score (a failed call, a refused schema, an excluded case, an output with no score)."""
    if record.status in LEFT_OUT_STATUSES or any(getattr(record, flag) for flag in LEFT_OUT_FLAGS):
        return None
    if record.score is None:
        return UNSCORED.get(record.status)
    return record.score


def counted_score_sql(status: str, score: str, flags: Mapping[str, str]) -> str:
    """The same rule as a DuckDB expression over the SQL expressions of a record's `status`, `score` and each of
    `LEFT_OUT_FLAGS` (by name in `flags`; NULL reads as false)."""
    statuses = ", ".join(_literal(name) for name in LEFT_OUT_STATUSES)
    left_out = " OR ".join(
        [f"{status} IN ({statuses})", *(f"coalesce({flags[flag]}, false)" for flag in LEFT_OUT_FLAGS)]
    )
    unscored = " ".join(f"WHEN {status} = {_literal(name)} THEN {value!r}" for name, value in UNSCORED.items())
    return f"CASE WHEN {left_out} THEN NULL WHEN {score} IS NOT NULL THEN {score} {unscored} END"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
