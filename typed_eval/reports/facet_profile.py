"""A score broken down by what the cases are made of (`Suite.facets`): for each feature, the score of the cases with
it and of those without it, with Wilson 95% intervals and the difference, so a reader sees which features break which
model in which mode; two runs on the same cases compared on the cases with each feature (McNemar's exact test,
Holm-corrected over the features); and the cases set beside the profile (the user's own) with the profile's score
on each of their features.

Records in (through `RunAnalysis`), plain figures, text lines and tables out; the run report, the comparison after a
run, the HTML report and the viewer show them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

from typed_eval.contracts import LeaderboardRow
from typed_eval.reports.analysis import RunAnalysis
from typed_eval.reports.formatting import interval, number, p_value, signed
from typed_eval.reports.stats import binomial_two_sided_p, holm_adjust, mcnemar_exact_p, wilson_interval

__all__ = [
    "FacetLine",
    "FacetPair",
    "PlacedCase",
    "RunProfile",
    "Share",
    "facet_pairs",
    "facet_profile",
    "pair_lines",
    "paired_runs",
    "placed_cases",
    "placed_lines",
    "profile_lines",
    "profile_of",
    "profile_tables",
    "run_facet_pairs",
    "run_profiles",
]


@dataclass(frozen=True)
class Share:
    """The score of some cases, 0-100: right/wrong cases posed once give the count right and a Wilson interval."""

    cases: int
    rate: float | None
    right: int | None = None
    ci95: tuple[float, float] | None = None

    def text(self) -> str:
        """`62.5 (30.6-86.3, 5/8)`, or `80.0 (n=10)` with no count right; `n/a` with no case."""
        if self.rate is None:
            return "n/a"
        counted = f"{self.right}/{self.cases}" if self.right is not None else f"n={self.cases}"
        return f"{number(self.rate, 1)} ({interval(self.ci95) + ', ' if self.ci95 else ''}{counted})"


@dataclass(frozen=True)
class FacetLine:
    """One feature: the cases with it, those without it, and with minus without in score points."""

    facet: str
    having: Share
    lacking: Share
    difference: float | None


@dataclass(frozen=True)
class PlacedCase:
    """A case set beside the profile: its score here, and each of its features with the profile's share on it."""

    case_id: str
    group: str
    score: float | None
    facets: tuple[tuple[str, Share | None], ...]

    def facets_text(self) -> list[tuple[str, str]]:
        """Each feature with the profile's share on it as text (`n/a` when the profile has none)."""
        return [(name, share.text() if share else "n/a") for name, share in self.facets]


@dataclass(frozen=True)
class RunProfile:
    """A run's own profile and its placed cases on the profile they are read against (`source`: the run it comes
    from, `model mode (run)`, when it is another's)."""

    row: LeaderboardRow
    own: list[FacetLine]
    placed: list[PlacedCase]
    source: str


@dataclass(frozen=True)
class FacetPair:
    """Two runs on the cases with one feature that both scored: the cases only a got right and only b (scored tasks:
    scored higher in), McNemar's exact test on them (the sign test for scored tasks) Holm-corrected over the
    features, and a's score minus b's in points, weighted as the cases weigh."""

    facet: str
    paired: int
    only_a: int
    only_b: int
    p_value: float
    p_holm: float
    difference: float


def _profiled(analysis: RunAnalysis) -> dict[str, tuple[str, ...]]:
    """The scored cases counted in the profile, with their features."""
    return {
        case_id: found.names
        for case_id in analysis.case_scores
        if (found := analysis.case_facets.get(case_id)) is not None and not found.placed
    }


def _share(analysis: RunAnalysis, cases: Sequence[str]) -> Share:
    if not cases:
        return Share(0, None)
    values = [analysis.case_scores[c] for c in cases]
    rate = 100 * sum(values) / len(values)
    counted = analysis.binary and analysis.repeats == 1 and all(analysis.case_weights.get(c, 1.0) == 1 for c in cases)
    if not counted:
        return Share(len(cases), rate)
    right = sum(value == 1.0 for value in values)
    low, high = wilson_interval(right, len(cases))
    return Share(len(cases), rate, right, (100 * low, 100 * high))


def _ordered(named: Iterable[tuple[str, ...]]) -> list[str]:
    """The features in the order the suite lists them (its cases' own order), the first seen first among equals."""
    first: dict[str, tuple[int, int]] = {}
    for seen, names in enumerate(named):
        for position, name in enumerate(names):
            first[name] = min(first.get(name, (position, seen)), (position, seen))
    return sorted(first, key=lambda name: first[name])


def facet_profile(analysis: RunAnalysis) -> list[FacetLine]:
    """Each feature of the run's profiled cases: their score with it and without it, and the difference."""
    profiled = _profiled(analysis)
    lines = []
    for facet in _ordered(profiled.values()):
        having = _share(analysis, [c for c, names in profiled.items() if facet in names])
        lacking = _share(analysis, [c for c, names in profiled.items() if facet not in names])
        gap = None if having.rate is None or lacking.rate is None else having.rate - lacking.rate
        lines.append(FacetLine(facet, having, lacking, gap))
    return lines


def placed_cases(analysis: RunAnalysis, profile: Sequence[FacetLine]) -> list[PlacedCase]:
    """The run's cases set beside a profile (this run's or another run's of the model and mode)."""
    shares = {line.facet: line.having for line in profile}
    return [
        PlacedCase(
            case_id,
            analysis.case_groups.get(case_id, ""),
            analysis.case_scores.get(case_id),
            tuple((name, shares.get(name)) for name in found.names),
        )
        for case_id, found in analysis.case_facets.items()
        if found.placed
    ]


def _paired(facet: str, a: RunAnalysis, b: RunAnalysis, cases: Iterable[str]) -> FacetPair | None:
    """The two runs on `cases`, as `analysis.compare` pairs them but without its bootstrap (a feature at a time, for
    every pair of runs, it would cost seconds a page)."""
    shared = [c for c in cases if c in a.case_scores and c in b.case_scores]
    if not shared:
        return None
    if a.binary and b.binary and a.repeats == b.repeats == 1:
        only_a = sum(a.case_scores[c] > 0.5 >= b.case_scores[c] for c in shared)
        only_b = sum(b.case_scores[c] > 0.5 >= a.case_scores[c] for c in shared)
        p = mcnemar_exact_p(only_a, only_b)
    else:
        only_a = sum(a.case_scores[c] > b.case_scores[c] for c in shared)
        only_b = sum(b.case_scores[c] > a.case_scores[c] for c in shared)
        p = binomial_two_sided_p(only_a, only_a + only_b)
    weights = [a.case_weights.get(c, 1.0) for c in shared]
    gaps = [w * (a.case_scores[c] - b.case_scores[c]) for c, w in zip(shared, weights, strict=True)]
    return FacetPair(facet, len(shared), only_a, only_b, p, p, 100 * sum(gaps) / sum(weights))


def facet_pairs(a: RunAnalysis, b: RunAnalysis) -> list[FacetPair]:
    """Two runs on the same cases, compared on the cases with each feature (a feature no case of both has: none)."""
    profiled_a, profiled_b = _profiled(a), _profiled(b)
    found: list[FacetPair] = []
    for facet in _ordered([*profiled_a.values(), *profiled_b.values()]):
        cases = [c for c, names in profiled_a.items() if facet in names and facet in profiled_b.get(c, ())]
        pair = _paired(facet, a, b, cases)
        found += [pair] if pair is not None else []
    adjusted = holm_adjust([pair.p_value for pair in found])
    return [replace(pair, p_holm=p) for pair, p in zip(found, adjusted, strict=True)]


def profile_of(
    row: LeaderboardRow, rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]
) -> tuple[list[FacetLine], LeaderboardRow | None]:
    """The profile a run's placed cases are read against: its own, else that of the first other run among `rows`
    of the suite, model and mode with one (the benchmark's run beside the user's own); and the run it comes from."""
    for other in [row, *(r for r in rows if r is not row)]:
        analysis = analyses.get(other.path)
        same = (other.suite, other.model, other.mode) == (row.suite, row.model, row.mode)
        if same and analysis is not None and (profile := facet_profile(analysis)):
            return profile, other
    return [], None


def run_profiles(rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]) -> list[RunProfile]:
    """The profile of each run of a suite among `rows` whose suite has features (the HTML report's and the viewer's)."""
    found = []
    for row in rows:
        analysis = analyses.get(row.path)
        if analysis is None or not analysis.case_facets:
            continue
        profile, source = profile_of(row, rows, analyses)
        on = "" if source is None or source is row else f"{source.model} {source.mode} ({source.run_id})"
        found.append(RunProfile(row, facet_profile(analysis), placed_cases(analysis, profile), on))
    return found


def run_facet_pairs(
    rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]
) -> list[tuple[LeaderboardRow, LeaderboardRow, FacetPair]]:
    """Each pair of runs among `rows` that posed the same cases, on the cases with each feature."""
    return [
        (a, b, pair)
        for a, b in paired_runs(rows)
        if (analysis_a := analyses.get(a.path)) is not None and (analysis_b := analyses.get(b.path)) is not None
        for pair in facet_pairs(analysis_a, analysis_b)
    ]


def paired_runs(rows: Sequence[LeaderboardRow]) -> list[tuple[LeaderboardRow, LeaderboardRow]]:
    """The pairs of runs that posed the same cases of a suite: two modes of a model, or two models in a mode."""
    return [
        (a, b)
        for a, b in combinations(rows, 2)
        if a.suite == b.suite
        and a.dataset_md5 == b.dataset_md5
        and "dnf" not in (a.status, b.status)
        and ((a.model == b.model) != (a.mode == b.mode))
    ]


def profile_lines(analysis: RunAnalysis) -> list[str]:
    """The run's profile as text, a line per feature, then each of its placed cases against it."""
    own = facet_profile(analysis)
    width = max([len("feature"), *(len(line.facet) for line in own)])
    lines = [f"feature profile: {'feature':<{width}}  with  |  without  |  with - without"] if own else []
    lines += [
        f"feature profile: {line.facet:<{width}}  {line.having.text()}  |  {line.lacking.text()}  |  "
        f"{signed(line.difference, 1) or 'n/a'}"
        for line in own
    ]
    return lines + placed_lines(analysis, own)


def placed_lines(analysis: RunAnalysis, profile: Sequence[FacetLine], source: str = "") -> list[str]:
    """Each placed case of the run, its features with the profile's score on each (`source`: the run the profile
    comes from, when it is another)."""
    lines = []
    for case in placed_cases(analysis, profile):
        score = "not scored" if case.score is None else f"score {number(case.score, 2)}"
        where = f" (on {source})" if source else ""
        shares = "; ".join(f"{name} {share}" for name, share in case.facets_text()) or "none"
        lines.append(f"feature profile, {case.group} case {case.case_id}: {score}; its features{where}: {shares}")
    return lines


def pair_lines(label_a: str, label_b: str, pairs: Sequence[FacetPair]) -> list[str]:
    """Two runs compared on the cases with each feature, a line per feature."""
    return [
        f"feature profile, {label_a} vs {label_b}: {pair.facet}: {pair.paired} paired, only a {pair.only_a}, only b "
        f"{pair.only_b}, p {p_value(pair.p_value, 3)} (Holm {p_value(pair.p_holm, 3)}), a - b "
        f"{signed(pair.difference, 1)}"
        for pair in pairs
    ]


Table = tuple[list[str], list[list[str]]]
"""A table's headers and its lines of cells."""


def profile_tables(
    rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]
) -> dict[str, list[Table]]:
    """By suite: each run's profile, its placed cases on it, and the per-feature pairs, as tables (the HTML report)."""
    found: dict[str, list[Table]] = {}
    for suite in dict.fromkeys(row.suite for row in rows):
        mine = [row for row in rows if row.suite == suite]
        profiles = run_profiles(mine, analyses)
        features = [
            [
                run.row.model,
                run.row.mode,
                line.facet,
                line.having.text(),
                line.lacking.text(),
                signed(line.difference, 1),
            ]
            for run in profiles
            for line in run.own
        ]
        placed = [
            [run.row.model, run.row.mode, case.case_id, case.group, number(case.score, 2), run.source,
             "; ".join(f"{name} {share}" for name, share in case.facets_text())]
            for run in profiles
            for case in run.placed
        ]  # fmt: skip
        pairs = [
            [f"{a.model} {a.mode}", f"{b.model} {b.mode}", pair.facet, str(pair.paired), str(pair.only_a),
             str(pair.only_b), p_value(pair.p_value, 3), p_value(pair.p_holm, 3), signed(pair.difference, 1)]
            for a, b, pair in run_facet_pairs(mine, analyses)
        ]  # fmt: skip
        tables = [
            (["Model", "Mode", "Feature", "With", "Without", "With - without"], features),
            (["Model", "Mode", "Own case", "Group", "Score", "Profile of", "Its features, with the profile's score"],
             placed),
            (["A", "B", "Feature", "Paired", "Only A", "Only B", "p", "p (Holm)", "A - B"], pairs),
        ]  # fmt: skip
        if any(lines for _, lines in tables):
            found[suite] = [(heads, lines) for heads, lines in tables if lines]
    return found
