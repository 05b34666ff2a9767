"""What a run's records say beyond its score: intervals, baselines, position bias, latency, consistency, and
paired comparisons of two runs on the same cases.

Records in, plain figures out (no rendering): the leaderboard, the comparison command and the HTML report
read these. Methods (stated in the README): Wilson 95% intervals per group; a stratified bootstrap over cases
(groups kept, 2,000 resamples, seed 0) for the headline; McNemar's exact test on right/wrong outcomes and a
paired bootstrap for score differences; Holm's correction when runs are compared with the best.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeAlias

from typed_eval.contracts import Aggregate, SampleRecord
from typed_eval.core.errors import InputError
from typed_eval.core.scoring import UNGROUPED, counted_score
from typed_eval.core.suite import CaseFacets
from typed_eval.reports.stats import (
    binomial_two_sided_p,
    bootstrap_ci,
    holm_adjust,
    mcnemar_exact_p,
    percentile,
    wilson_interval,
)

__all__ = [
    "ALPHA",
    "Comparison",
    "RunAnalysis",
    "analyse",
    "compare",
    "counted_score",
    "tied_with_best",
    "within_group",
]

Baseline: TypeAlias = Callable[[SampleRecord], tuple[int, int] | None]
"""A record's (options offered, right option's number), or None: `Suite.baseline`."""
Facets: TypeAlias = Callable[[SampleRecord], CaseFacets | None]
"""A record's case's features, or None: `Suite.facets`."""

ALPHA = 0.05
"""The significance level of rank groups."""


@dataclass
class RunAnalysis:
    """One run's records, reduced to what intervals and comparisons need (one float per case)."""

    aggregate: Aggregate
    case_scores: dict[str, float] = field(default_factory=dict)
    """Case id -> mean score over its scored repeats (errors and excluded cases left out)."""
    case_groups: dict[str, str] = field(default_factory=dict)
    case_weights: dict[str, float] = field(default_factory=dict)
    """Case id -> its weight in the score (1 unless the case gives one), in the order of `case_scores`."""
    repeats: int = 1
    consistency: float | None = None
    """Percent of cases posed more than once whose repeats all gave the same output."""
    chance: float | None = None
    positions: dict[str, int] = field(default_factory=dict)
    """Option number ("1" = first) -> answers that chose it, and "last" -> answers that chose the last option."""
    favourite_position: str | None = None
    """The position the most answers chose: an option number, or "last" when quizzes differ in their number of
    options and the last one was chosen more often than any fixed number."""
    favourite_position_score: float | None = None
    latency_median_s: float | None = None
    latency_p95_s: float | None = None
    group_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Group -> (correct, scored) over all scored records."""
    score_sum: float = 0.0
    """Sum of every scored record's score (correct answers, for multiple choice)."""
    binary: bool = True
    """Every score is 0 or 1 (right/wrong outcomes: McNemar applies), else a scored task."""
    case_facets: dict[str, CaseFacets] = field(default_factory=dict)
    """Case id -> its features, for a suite that declares them (`Suite.facets`)."""

    def by_group(self, values: Mapping[str, float]) -> dict[str, list[float]]:
        groups: dict[str, list[float]] = {}
        for case_id, value in values.items():
            groups.setdefault(self.case_groups[case_id], []).append(value)
        return groups

    def weights_by_group(self, values: Mapping[str, float]) -> dict[str, list[float]] | None:
        """The weights of `values`' cases, grouped and ordered as `by_group(values)` gives them; None when every
        case weighs 1 (plain means)."""
        if all(self.case_weights.get(case_id, 1.0) == 1.0 for case_id in values):
            return None
        return self.by_group({case_id: self.case_weights.get(case_id, 1.0) for case_id in values})

    def score_ci95(self) -> tuple[float, float] | None:
        """The headline's 95% interval, 0-100: stratified bootstrap over cases."""
        if not self.case_scores:
            return None
        low, high = bootstrap_ci(
            self.by_group(self.case_scores),
            aggregate=self.aggregate,
            weights_by_group=self.weights_by_group(self.case_scores),
        )
        return 100 * low, 100 * high

    def class_ci95(self) -> dict[str, tuple[float, float]]:
        """Each group's Wilson 95% interval, 0-100: for right/wrong outcomes of cases posed once and weighing
        alike (repeats are not independent trials, and weights are not counts: no interval then)."""
        if not self.binary or self.repeats > 1 or any(w != 1.0 for w in self.case_weights.values()):
            return {}
        return {
            group: (100 * low, 100 * high)
            for group, (right, scored) in self.group_counts.items()
            for low, high in [wilson_interval(right, scored)]
            if scored
        }


def _aggregate(
    values_by_group: Mapping[str, Sequence[float]],
    aggregate: Aggregate,
    weights_by_group: Mapping[str, Sequence[float]] | None = None,
) -> float | None:
    """The score made from per-case values as the run's score is made: macro or mean, weighted when weights are
    given."""
    pairs = [
        list(zip(values, weights_by_group[group] if weights_by_group else [1.0] * len(values), strict=True))
        for group, values in values_by_group.items()
        if values
    ]
    if not pairs:
        return None
    sums = [(sum(w * x for x, w in p), sum(w for _, w in p)) for p in pairs]
    if aggregate == "macro":
        return 100 * sum(s / w for s, w in sums) / len(sums)
    return 100 * sum(s for s, _ in sums) / sum(w for _, w in sums)


def _option_picked(output: object) -> int | None:
    """The option number an output chose: `{"answer": n}` in the structured modes, the tag's text otherwise."""
    if isinstance(output, dict):
        output = output.get("answer")
    if isinstance(output, bool):
        return None
    if isinstance(output, int):
        return output
    if isinstance(output, str) and output.strip().isdigit():
        return int(output.strip())
    return None


def _facets(facets: Facets, record: SampleRecord) -> CaseFacets | None:
    """The suite's features of a record's case; a plug-in's reading that fails on a record gives none."""
    try:
        found = facets(record)
    except Exception:  # someone else's code, shown a stored record it may not expect
        return None
    return found if isinstance(found, CaseFacets) else None


def analyse(
    records: Iterable[SampleRecord],
    aggregate: Aggregate = "macro",
    baseline: Baseline | None = None,
    facets: Facets | None = None,
) -> RunAnalysis:
    """Reduce a run's records (one per case and repeat) to per-case scores and the run's baselines; `baseline` is
    the suite's reading of a record's options (`Suite.baseline`): without it, no chance or favourite position;
    `facets` the suite's features of a record's case (`Suite.facets`)."""
    result = RunAnalysis(aggregate=aggregate)
    sums: dict[str, list[float]] = {}
    weights: dict[str, float] = {}
    outputs: dict[str, list[str]] = {}
    chance: dict[str, float] = {}
    expected: dict[str, int] = {}
    option_counts: dict[str, int] = {}
    latencies: list[float] = []
    repeats = 0
    for record in records:
        repeats = max(repeats, record.repeat + 1)
        group = record.group if record.group is not None else UNGROUPED
        if record.latency_s is not None:
            latencies.append(record.latency_s)
        choice = None if baseline is None else baseline(record)
        if choice is not None:
            chance[record.case_id] = 1 / choice[0]
            expected[record.case_id] = choice[1]
            option_counts[record.case_id] = choice[0]
        found = None if facets is None or record.case_id in result.case_facets else _facets(facets, record)
        if found is not None:
            result.case_facets[record.case_id] = found
        score = counted_score(record)
        if score is None:
            continue
        result.case_groups[record.case_id] = group
        weights[record.case_id] = record.weight
        sums.setdefault(record.case_id, []).append(score)
        picked = _option_picked(record.output)  # a choice is compared, not the free text reasoned around it
        outputs.setdefault(record.case_id, []).append(repr(record.output) if picked is None else str(picked))
        right, scored = result.group_counts.get(group, (0, 0))
        result.group_counts[group] = (right + (score == 1.0), scored + 1)
        result.score_sum += score
        result.binary = result.binary and score in (0.0, 1.0)
        if picked is not None and record.case_id in option_counts:
            for position in (str(picked), "last") if picked == option_counts[record.case_id] else (str(picked),):
                result.positions[position] = result.positions.get(position, 0) + 1
    result.repeats = max(repeats, 1)
    result.case_scores = {case_id: sum(values) / len(values) for case_id, values in sums.items()}
    result.case_weights = {case_id: weights[case_id] for case_id in result.case_scores}
    several = [values for values in outputs.values() if len(values) > 1]
    if several:
        result.consistency = 100 * sum(len(set(values)) == 1 for values in several) / len(several)
    scored_chance = {case_id: chance[case_id] for case_id in result.case_scores if case_id in chance}
    if scored_chance and len(scored_chance) == len(result.case_scores):
        result.chance = _aggregate(result.by_group(scored_chance), aggregate, result.weights_by_group(scored_chance))
    numbered = sorted((p for p in result.positions if p != "last"), key=int)
    result.positions = {p: result.positions[p] for p in [*numbered, "last"] if p in result.positions}
    if result.positions and len(scored_chance) == len(result.case_scores):
        favourite = max(result.positions, key=lambda p: result.positions[p])  # the first of equals: a number
        always = {
            case_id: float(expected[case_id] == (option_counts[case_id] if favourite == "last" else int(favourite)))
            for case_id in result.case_scores
        }
        result.favourite_position = favourite
        by_weight = result.weights_by_group(always)
        result.favourite_position_score = _aggregate(result.by_group(always), aggregate, by_weight)
    if latencies:
        result.latency_median_s = percentile(latencies, 50)
        result.latency_p95_s = percentile(latencies, 95)
    return result


@dataclass(frozen=True)
class Comparison:
    """Two runs on the same cases: `python format_result.py --compare RUN_A RUN_B`."""

    paired: int
    both_correct: int
    only_a: int
    only_b: int
    neither: int
    test: str
    """`mcnemar` (exact, on right/wrong outcomes) or `sign` (scored tasks: cases where A or B scored higher)."""
    p_value: float
    difference: float
    """A's score minus B's, in score points (0-100), over the paired cases."""
    difference_ci95: tuple[float, float]
    """Paired bootstrap (cases resampled within groups, seeded)."""
    a_better: int
    b_better: int


def within_group(analysis: RunAnalysis, group: str) -> RunAnalysis:
    """The analysis of one group's cases alone (for comparing two runs group by group)."""
    cases = {case_id for case_id, found in analysis.case_groups.items() if found == group}
    return replace(
        analysis,
        case_scores={c: v for c, v in analysis.case_scores.items() if c in cases},
        case_groups={c: group for c in cases},
        case_weights={c: w for c, w in analysis.case_weights.items() if c in cases},
    )


def compare(a: RunAnalysis, b: RunAnalysis) -> Comparison:
    """Pair two runs case by case (both scored the case); refuse runs with no case in common."""
    shared = [case_id for case_id in a.case_scores if case_id in b.case_scores]
    if not shared:
        raise InputError("the two runs have no scored case in common: compare runs made on the same cases")
    if any(a.case_groups[c] != b.case_groups[c] for c in shared):
        raise InputError("the two runs group their cases differently: they were not made on the same cases")
    if any(a.case_weights.get(c, 1.0) != b.case_weights.get(c, 1.0) for c in shared):
        raise InputError("the two runs weight their cases differently: they were not made on the same cases")
    right_a = {c: a.case_scores[c] > 0.5 for c in shared}
    right_b = {c: b.case_scores[c] > 0.5 for c in shared}
    counts = Counter((right_a[c], right_b[c]) for c in shared)
    a_better = sum(a.case_scores[c] > b.case_scores[c] for c in shared)
    b_better = sum(b.case_scores[c] > a.case_scores[c] for c in shared)
    binary = a.binary and b.binary and a.repeats == b.repeats == 1
    only_a, only_b = counts[True, False], counts[False, True]
    p_value = mcnemar_exact_p(only_a, only_b) if binary else binomial_two_sided_p(a_better, a_better + b_better)
    differences = {c: a.case_scores[c] - b.case_scores[c] for c in shared}
    by_group, weights = a.by_group(differences), a.weights_by_group(differences)
    low, high = bootstrap_ci(by_group, aggregate=a.aggregate, weights_by_group=weights)
    difference = _aggregate(by_group, a.aggregate, weights) or 0.0
    return Comparison(
        paired=len(shared),
        both_correct=counts[True, True],
        only_a=only_a,
        only_b=only_b,
        neither=counts[False, False],
        test="mcnemar" if binary else "sign",
        p_value=p_value,
        difference=difference,
        difference_ci95=(100 * low, 100 * high),
        a_better=a_better,
        b_better=b_better,
    )


def tied_with_best(best: RunAnalysis, others: Sequence[RunAnalysis | None]) -> list[bool | None]:
    """For each other run: statistically tied with the best (paired test vs the best, Holm-corrected, at
    `ALPHA`)? None for a run that cannot be paired with the best (no common case)."""
    p_values: list[float] = []
    pairable: list[int] = []
    for index, other in enumerate(others):
        if other is None:
            continue
        try:
            p_values.append(compare(best, other).p_value)
        except InputError:
            continue
        pairable.append(index)
    tied: list[bool | None] = [None] * len(others)
    for index, adjusted in zip(pairable, holm_adjust(p_values), strict=True):
        tied[index] = adjusted >= ALPHA
    return tied
