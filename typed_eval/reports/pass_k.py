"""pass^k: how reliably a model does a task, for runs that pose each case several times (`repeats`).

A mean score says how often a model gets a case right; pass^k (Yao et al., 2024) says how likely it is to get it right
k times in a row, which is what a user relying on it meets. From the n trials of a case of which c succeeded,
C(c, k) / C(n, k) estimates without bias the chance that k trials drawn from them all succeed; pass^k is its mean over
the cases (every case counting once: case weights are not used). pass^1 is the success rate; pass^k falls with k
unless every case is all right or all wrong.

What a trial is, as that benchmark counts its simulations (each has a reward, a failed one 0):

- every record of a case that counts is a trial: the newest per case and repeat, as the scores count them;
- it succeeds when its score is 1 (within 1e-6); `partial`, `incorrect` and `missing` (no valid output after the
  corrective retries) fail, and so do `error` (the call failed) and `unsupported` (the provider refused the schema),
  which the score leaves out: pass^k asks whether the task got done, and it did not;
- a repeat that was never posed (a run stopped before it) has no record and is no trial; a case left out of the score
  (`excluded`) is no task;
- pass^k goes up to the fewest trials of any case, as its authors set K when a task has fewer trials than the
  others (a stopped run): every figure averages every case, and says how many (`tasks`).

Each figure comes with a 95% interval: the project's stratified bootstrap over cases (`stats.bootstrap_ci`: cases
resampled within their groups, 2,000 resamples, seed 0), so the same records always give the same interval.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from typed_eval.contracts import SampleRecord
from typed_eval.contracts.leaderboard_row import LeaderboardRow, PassK
from typed_eval.core.scoring import UNGROUPED
from typed_eval.reports.formatting import count, interval, number
from typed_eval.reports.stats import bootstrap_ci

__all__ = [
    "PASS_K_NOTES",
    "SUCCESS_TOLERANCE",
    "PassHatK",
    "TrialBook",
    "comparison_lines",
    "csv_fields",
    "csv_values",
    "figure_text",
    "pass_hat_k",
    "pass_k_cells",
    "report_lines",
    "succeeded",
    "task_pass_k",
]

SUCCESS_TOLERANCE = 1e-6
"""A trial succeeds when its score is within this of 1 (a reward of 1, as that benchmark reads it)."""


def succeeded(record: SampleRecord) -> bool:
    """Whether a trial succeeded: its score is 1. A record with no score (missing, error, unsupported) failed."""
    return record.score is not None and abs(record.score - 1.0) <= SUCCESS_TOLERANCE


def task_pass_k(trials: int, successes: int, k: int) -> Fraction:
    """C(c, k) / C(n, k): the chance that k of a case's n trials drawn without replacement all succeed, c of them
    having succeeded; exact, so a mean of them is too."""
    if not 1 <= k <= trials or not 0 <= successes <= trials:
        raise ValueError(f"pass^{k} of {successes} successes in {trials} trials: k must be 1 to the trials")
    return Fraction(math.comb(successes, k), math.comb(trials, k))


@dataclass(frozen=True)
class PassHatK:
    """A run's pass^1 .. pass^K over all its cases and per group (0-100, each with its 95% interval and the cases it
    averages), and the trials counted."""

    overall: list[PassK]
    groups: dict[str, list[PassK]] = field(default_factory=dict)
    trials: int = 0
    """Trials counted (records of cases that count)."""
    successes: int = 0


class TrialBook:
    """Each case's trials, one record at a time (the leaderboard's one pass over a run's records): the newest record
    per case and repeat counts, as the scores count it."""

    def __init__(self) -> None:
        self._trials: dict[tuple[str, int], tuple[str, bool] | None] = {}

    def add(self, record: SampleRecord) -> None:
        group = record.group if record.group is not None else UNGROUPED
        self._trials[record.case_id, record.repeat] = None if record.excluded else (group, succeeded(record))

    @property
    def most_trials(self) -> int:
        """The most trials any case has: the largest k pass^k is given for."""
        per_case = Counter(case_id for (case_id, _), trial in self._trials.items() if trial is not None)
        return max(per_case.values(), default=0)

    def result(self, *, resamples: int = 2000, seed: int = 0) -> PassHatK:
        """pass^1 .. pass^K over all cases and per group."""
        cases: dict[str, tuple[str, int, int]] = {}
        trials = successes = 0
        for (case_id, _), trial in self._trials.items():
            if trial is None:
                continue
            group, success = trial
            _, n, c = cases.get(case_id, (group, 0, 0))
            cases[case_id] = (group, n + 1, c + success)
            trials += 1
            successes += success
        by_group: dict[str, Counter[tuple[int, int]]] = {}
        for group, n, c in cases.values():
            by_group.setdefault(group, Counter())[n, c] += 1
        overall = _figures(by_group, resamples, seed)
        groups = {group: _figures({group: counts}, resamples, seed) for group, counts in by_group.items()}
        return PassHatK(overall, groups, trials, successes)

    def repeated(self) -> PassHatK | None:
        """The figures when some case was posed more than once (what the reports show), else None."""
        return self.result() if self.most_trials > 1 else None


def _figures(counts_by_group: Mapping[str, Counter[tuple[int, int]]], resamples: int, seed: int) -> list[PassK]:
    """pass^1 .. pass^K of the cases counted per group by their (trials, successes), K the fewest trials of a case:
    the exact mean over the cases, and the stratified bootstrap interval of that mean."""
    groups = counts_by_group.items()
    fewest = min((n for _, counts in groups for n, _ in counts), default=0)
    figures: list[PassK] = []
    for k in range(1, fewest + 1):
        kept = {group: [(n, c, times) for (n, c), times in found.items() if n >= k] for group, found in groups}
        tasks = sum(times for counts in kept.values() for _, _, times in counts)
        total = sum((times * task_pass_k(n, c, k) for counts in kept.values() for n, c, times in counts), Fraction())
        values = {
            group: [float(task_pass_k(n, c, k)) for n, c, times in counts for _ in range(times)]
            for group, counts in kept.items()
        }
        low, high = bootstrap_ci(values, aggregate="mean", resamples=resamples, seed=seed)
        figures.append(PassK(k=k, value=float(100 * total / tasks), ci95=[100 * low, 100 * high], tasks=tasks))
    return figures


def pass_hat_k(records: Iterable[SampleRecord], *, resamples: int = 2000, seed: int = 0) -> PassHatK:
    """pass^1 .. pass^K (0-100) of a run's records, over all cases and per group, each with its 95% bootstrap
    interval and the cases it averages; see the module's docstring for what a trial is and when it succeeds."""
    book = TrialBook()
    for record in records:
        book.add(record)
    return book.result(resamples=resamples, seed=seed)


def figure_text(figure: PassK, *, between: str = "-", stacked: bool = False) -> str:
    """`16.67 (5.0-30.0)`: the figure and its interval; `stacked`: a line each (a terminal table's narrow column)."""
    space = "\n" if stacked else " "
    return f"{number(figure.value)}{space}({interval(figure.ci95, between=between)})"


def report_lines(found: PassHatK) -> list[str]:
    """The run report's lines: pass^k over all cases, then per group when there are several."""
    if not found.overall:
        return []
    cases = found.overall[0].tasks
    figures = ", ".join(f"pass^{f.k} {figure_text(f, between=' to ')}" for f in found.overall)
    lines = [
        f"pass^k over {cases} cases, {found.trials} trials ({found.successes} with score 1; errors and refused "
        f"schemas count as failed trials), 95% bootstrap intervals: {figures}"
    ]
    if len(found.groups) > 1:
        for group, mine in found.groups.items():
            values = ", ".join(number(f.value) for f in mine)
            lines.append(f"pass^1..{len(mine)} of {group}: {values} ({count(mine[0].tasks, 'case')})")
    return lines


def comparison_lines(a: Sequence[PassK], b: Sequence[PassK]) -> list[str]:
    """Two runs' pass^k side by side, k by k (a run with fewer trials, or none, has no figure for the larger k)."""

    def side(name: str, figures: Sequence[PassK], k: int) -> str:
        if k > len(figures):
            return f"{name} n/a"
        return f"{name} {figure_text(figures[k - 1], between=' to ')} over {figures[k - 1].tasks} cases"

    return [f"pass^{k}: {side('A', a, k)}, {side('B', b, k)}" for k in range(1, max(len(a), len(b)) + 1)]


PASS_K_NOTES = (
    "pass^k: the chance that k trials of a case all score 1, C(c,k)/C(n,k) from its n trials of which c did, averaged "
    "over the cases (k up to the fewest trials of a case), with its 95% bootstrap interval; errors count as failed "
    "trials."
)
"""Under the tables that show pass^k."""


def pass_k_cells(
    rows: Sequence[LeaderboardRow], *, stacked: bool = False
) -> list[tuple[str, Callable[[LeaderboardRow], str]]]:
    """The tables' pass^1 .. pass^K columns (header, cell) for rows of runs that repeat their cases, none otherwise;
    `stacked`: each figure over its interval."""
    most = max((len(r.pass_k) for r in rows), default=0)
    return [(f"pass^{k}", _cell(k, stacked)) for k in range(1, most + 1)]


def _cell(k: int, stacked: bool) -> Callable[[LeaderboardRow], str]:
    def cell(row: LeaderboardRow) -> str:
        if k > len(row.pass_k):
            return ""
        return figure_text(row.pass_k[k - 1], stacked=stacked)

    return cell


def csv_fields(name: str) -> list[str]:
    """A pass^k figure's CSV columns (`name` is `pass^k`): its value, interval and the cases it averages."""
    return [name, f"{name}_ci95_low", f"{name}_ci95_high", f"{name}_tasks"]


def csv_values(figures: Sequence[PassK]) -> dict[str, float | int]:
    """The CSV columns of a row's figures (`csv_fields`), by name."""
    return {
        name: value
        for f in figures
        for name, value in zip(csv_fields(f"pass^{f.k}"), [f.value, *f.ci95, f.tasks], strict=True)
    }
