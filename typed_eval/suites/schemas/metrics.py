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

from typed_eval.contracts import GroupScore, RunSummary, Scores
from typed_eval.contracts.leaderboard_row import Figure, Figures
from typed_eval.core.intervals import wilson_interval
from typed_eval.core.money import money

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

    def counts(self) -> dict[str, tuple[int, int]]:
        """Each figure as (successes, trials), the counts its interval is drawn from."""
        accepted = self.posed - self.refused
        return {"declared": (accepted, self.posed), "empirical": (self.valid, self.posed),
                "compliance": (self.valid, accepted)}  # fmt: skip


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


DECLARED = Figure(header="Declared coverage", about="schemas the provider did not refuse, over all posed")
EMPIRICAL = Figure(
    header="Empirical coverage", about="valid instances over all schemas posed (a refused schema counts as not valid)"
)
COMPLIANCE = Figure(header="Compliance", about="valid instances over the schemas not refused", score=True)
"""The headline score (each set's score too): a schema scores 1 when valid, and refused ones are not scored."""


def schemas_metrics(scores: Scores) -> Figures:
    """The leaderboard's columns, in percent: the three figures overall, and each set's empirical coverage, each
    said what it is (the tables' headers and legend; compliance is the score, so it is not shown twice)."""
    per_set, total = coverage(scores.groups)
    metrics = Figures()
    metrics.add(f"{PREFIX}-declared_coverage", _percent(total.declared), DECLARED)
    metrics.add(f"{PREFIX}-empirical_coverage", _percent(total.empirical), EMPIRICAL)
    metrics.add(f"{PREFIX}-compliance", _percent(total.compliance), COMPLIANCE)
    for name, figures in per_set.items():
        metrics.add(f"{PREFIX}-{name}", _percent(figures.empirical), EMPIRICAL.model_copy(update={"group": name}))
    return metrics


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def _interval(successes: int, trials: int) -> str:
    if not trials:
        return "n/a"
    low, high = wilson_interval(successes, trials)
    return f"{100 * low:.2f}-{100 * high:.2f}"


def _cost_line(scores: Scores, per_set: dict[str, Coverage], total: Coverage) -> str:
    """What a valid instance cost: every request's cost (retries and refusals included) over the valid instances."""
    cost = scores.totals.cost_usd if scores.totals.cost_complete else None
    sets = [f"{g.group} {_per_valid(g.cost_usd, per_set[g.group].valid)}" for g in scores.groups]
    return f"JSONSchemaBench cost per valid instance: {_per_valid(cost, total.valid)} ({', '.join(sets)})"


def _per_valid(cost: float | None, valid: int) -> str:
    return money(cost / valid) if cost is not None and valid else "n/a"


def schemas_report_lines(summary: RunSummary) -> list[str]:
    """One line per set and one for the run: declared coverage, empirical coverage, compliance, with the counts;
    their Wilson 95% intervals; and the cost of a valid instance."""
    per_set, total = coverage(summary.scores.groups)
    width = max([len("overall"), *map(len, per_set)])
    lines = [f"JSONSchemaBench: {'set':<{width}}  declared  empirical  compliance  (posed, refused, valid)"]
    for name, figures in [*per_set.items(), ("overall", total)]:
        lines.append(
            f"JSONSchemaBench: {name:<{width}}  {_text(figures.declared):>8}  {_text(figures.empirical):>9}  "
            f"{_text(figures.compliance):>10}  ({figures.posed}, {figures.refused}, {figures.valid})"
        )
    lines += [
        f"JSONSchemaBench 95% intervals (Wilson): {name:<{width}}  "
        + "  ".join(f"{figure} {_interval(*counted)}" for figure, counted in figures.counts().items())
        for name, figures in [*per_set.items(), ("overall", total)]
    ]
    lines.append(_cost_line(summary.scores, per_set, total))
    errors = sum(group.errors for group in summary.scores.groups)
    if errors:
        lines.append(f"JSONSchemaBench: failed calls left out of the figures (not refused schemas): {errors}")
    return lines
