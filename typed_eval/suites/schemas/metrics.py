"""JSONSchemaBench's three figures, per set and overall, from a run's counts.

Declared coverage: schemas not refused over all posed; empirical coverage: valid instances over all posed (a refused
schema counts as not valid); compliance: valid instances over the schemas not refused. A refused schema is a record
of status `unsupported` (the provider's HTTP 400 about the schema). A failed call (`error`: a timeout, a 5xx, a schema
that could not be posed) is left out of all three, as it is of the score: JSONSchemaBench's own code counts an API
error (`API_BAD_RESPONSE`) as a schema not covered, which would count the provider's outages against the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from typed_eval.schemas import GroupScore, RunSummary, Scores

__all__ = ["Coverage", "coverage", "schemas_metrics", "schemas_report_lines"]

PREFIX = "schemas"


@dataclass(frozen=True)
class Coverage:
    posed: int
    refused: int
    valid: int

    @property
    def declared(self) -> float | None:
        return (self.posed - self.refused) / self.posed if self.posed else None

    @property
    def empirical(self) -> float | None:
        return self.valid / self.posed if self.posed else None

    @property
    def compliance(self) -> float | None:
        accepted = self.posed - self.refused
        return self.valid / accepted if accepted else None


def _of(group: GroupScore) -> Coverage:
    posed = group.scored + group.unsupported
    return Coverage(posed=posed, refused=group.unsupported, valid=group.correct)


def coverage(groups: Sequence[GroupScore]) -> tuple[dict[str, Coverage], Coverage]:
    """Each set's figures, and the whole run's (the sums of the sets')."""
    per_set = {group.group: _of(group) for group in groups}
    total = Coverage(
        posed=sum(c.posed for c in per_set.values()),
        refused=sum(c.refused for c in per_set.values()),
        valid=sum(c.valid for c in per_set.values()),
    )
    return per_set, total


def _percent(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 2)


def schemas_metrics(scores: Scores) -> dict[str, float | None]:
    """The leaderboard's columns, in percent: the three figures overall, and each set's empirical coverage."""
    per_set, total = coverage(scores.groups)
    metrics = {
        f"{PREFIX}-declared_coverage": _percent(total.declared),
        f"{PREFIX}-empirical_coverage": _percent(total.empirical),
        f"{PREFIX}-compliance": _percent(total.compliance),
    }
    for name, figures in per_set.items():
        metrics[f"{PREFIX}-{name}"] = _percent(figures.empirical)
    return metrics


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def schemas_report_lines(summary: RunSummary) -> list[str]:
    """One line per set and one for the run: declared coverage, empirical coverage, compliance, with the counts."""
    per_set, total = coverage(summary.scores.groups)
    width = max([len("overall"), *map(len, per_set)])
    lines = [f"JSONSchemaBench: {'set':<{width}}  declared  empirical  compliance  (posed, refused, valid)"]
    for name, figures in [*per_set.items(), ("overall", total)]:
        lines.append(
            f"JSONSchemaBench: {name:<{width}}  {_text(figures.declared):>8}  {_text(figures.empirical):>9}  "
            f"{_text(figures.compliance):>10}  ({figures.posed}, {figures.refused}, {figures.valid})"
        )
    errors = sum(group.errors for group in summary.scores.groups)
    if errors:
        lines.append(f"JSONSchemaBench: failed calls left out of the figures (not refused schemas): {errors}")
    return lines
