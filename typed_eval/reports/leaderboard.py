"""Leaderboard rows of stored runs: scores with their intervals and baselines, rank groups, cost per correct answer
and the Pareto frontier, ranked by score, cost, value or frontier. Rendering is `typed_eval.reports.tables`.

Each run's records are read once (`analysis.analyse`); a run stored without its records (a hand-made summary)
gets a row from its summary alone, with no interval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from typed_eval.contracts import LeaderboardRow, SampleRecord, Scores, is_text_mode
from typed_eval.contracts.leaderboard_row import Figures
from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.core.retries import RetryBook, RetryEconomics
from typed_eval.core.scoring import ScoreBook, relaxed_score, with_relaxed_reading
from typed_eval.core.suite import Suite, find_suites
from typed_eval.reports.analysis import Comparison, RunAnalysis, analyse, compare, tied_with_best
from typed_eval.reports.invalid_examples import InvalidExample, InvalidExamples
from typed_eval.reports.pass_k import PassHatK, TrialBook
from typed_eval.reports.stats import pareto_front
from typed_eval.store.storage import RECORDS_FILE, SUMMARY_FILE, StoredRun, latest_records, load_runs

__all__ = [
    "CASE_SETS_NOTE",
    "RANK_BY",
    "Board",
    "RankBy",
    "RunRead",
    "build_board",
    "build_rows",
    "case_sets",
    "compare_runs",
    "installed_suites",
    "load_run",
    "newest_runs",
    "read_run",
    "relaxed_score",
]

RankBy = Literal["score", "cost", "value", "pareto"]
RANK_BY: tuple[RankBy, ...] = ("score", "cost", "value", "pareto")


@dataclass(frozen=True)
class RunRead:
    """What the leaderboard takes from one pass over a run's records: the per-case analysis, the score with the
    relaxed reading counted (text modes), and the first invalid outputs (the HTML report's examples)."""

    analysis: RunAnalysis | None = None
    relaxed: float | None = None
    examples: list[InvalidExample] = field(default_factory=list)
    retries: RetryEconomics | None = None
    first_attempt: Scores | None = None
    """The scores with no corrective retry, when some sample used one."""
    pass_k: PassHatK | None = None
    """pass^1 .. pass^K, when some case was posed more than once."""


def installed_suites() -> dict[str, Suite[Any]]:
    """The installed suites by name (one that fails to load is left out: its runs show what needs no suite)."""
    return {found.suite.name: found.suite for found in find_suites(on_error=lambda _: None)}


def read_run(
    run: StoredRun,
    suites: Mapping[str, Suite[Any]] | None = None,
    on_damaged: Callable[[ResultFileError], None] | None = None,
) -> RunRead:
    """The run's records read once (none when it was stored without them); the run's suite, among `suites`
    (default: those installed), declares its baselines. `on_damaged`: a damaged records line is handed to it and
    the rest read (without it, it raises)."""
    suite = (installed_suites() if suites is None else suites).get(run.summary.suite)
    s = run.summary
    text = is_text_mode(s.mode) and s.status != "dnf" and s.scores.score is not None
    recoverable = text and s.scores.compliance.relaxed_recoverable > 0
    if not _has_records(run.path):
        return RunRead(relaxed=s.scores.score if text and not recoverable else None)
    relaxed = ScoreBook(aggregate=s.scores.aggregate) if recoverable else None
    examples = InvalidExamples()
    retries = RetryBook(s.scores.aggregate, s.settings.retries or 0)
    trials = TrialBook()

    def each() -> Iterator[SampleRecord]:
        for record in latest_records(run.path, on_damaged):
            if relaxed is not None:
                relaxed.add(with_relaxed_reading(record))
            examples.add(record)
            retries.add(record)
            trials.add(record)
            yield record

    declared = (suite.baseline, suite.facets) if suite is not None else (None, None)
    analysis = analyse(each(), s.scores.aggregate, *declared)
    score = relaxed.scores().score if relaxed is not None else s.scores.score if text else None
    return RunRead(analysis, score, examples.found, retries.economics(), retries.first_attempt(), trials.repeated())


_NUMBER = re.compile(r"(\d+)")


def _natural(name: str) -> list[Any]:
    """`size-8` before `size-16`."""
    return [int(part) if part.isdigit() else part for part in _NUMBER.split(name)]


def _shown(suite: Suite[Any] | None, metrics: Mapping[str, float | None]) -> list[str]:
    """The metrics the suite shows as columns, a `prefix*` name taking every metric it starts."""
    shown: list[str] = []
    for name in suite.columns if suite is not None else ():
        if name.endswith("*"):
            shown += sorted((m for m in metrics if m.startswith(name[:-1])), key=_natural)
        else:
            shown.append(name)
    return list(dict.fromkeys(shown))


def load_run(path: Path) -> StoredRun:
    """One stored run, named by its folder or its summary file."""
    summary = path / SUMMARY_FILE if path.is_dir() else path
    if summary.name != SUMMARY_FILE or not summary.is_file():
        raise ResultFileError(f"{path} is not a stored run: name a run folder (it holds {SUMMARY_FILE})")
    (run,) = load_runs(summary)
    return run


def newest_runs(runs: Iterable[StoredRun]) -> list[StoredRun]:
    """The newest run per model, mode, suite, task, cases and settings (`--latest`): older runs of the same
    configuration are left out."""
    newest: dict[tuple[str, ...], StoredRun] = {}
    for run in runs:  # oldest first, as load_runs gives them
        s = run.summary
        settings = s.settings.model_dump_json(
            exclude={
                "concurrency",
                "tool_choice",
                "tool_choice_reason",
                "base_url",
                "request_timeout",
                "max_transport_retries",
            }
        )
        key = (s.model, s.mode, s.suite, s.task, s.dataset.md5, str(s.dataset.limit), settings)
        newest.pop(key, None)
        newest[key] = run
    return list(newest.values())


@dataclass(frozen=True)
class Board:
    """The leaderboard's rows, and each run's first invalid outputs by its path (the HTML report shows them)."""

    rows: list[LeaderboardRow]
    examples: dict[str, list[InvalidExample]]
    analyses: dict[str, RunAnalysis | None]
    """By path: each run's records reduced for statistics (None: stored without them)."""
    suites: Mapping[str, Suite[Any]] = field(default_factory=dict)
    """The installed suites the rows were read with, by name."""


def build_board(
    runs: Sequence[StoredRun],
    *,
    rank_by: RankBy = "score",
    on_error: Callable[[ResultFileError], None] | None = None,
) -> Board:
    """One row per run, a block per suite (by name); runs of different suites are never ranked against each
    other. Complete runs are ranked (equal keys share the smallest rank); partial, limited and unscored runs
    follow them unranked, so a 2-case run never stands above a full one. A run whose records cannot be read raises
    `ResultFileError`, or with `on_error` is handed to it and left out (a damaged records line is handed to it and
    the rest of the run shown). Each run's records are read once."""
    suites = installed_suites()
    rows: list[LeaderboardRow] = []
    reads: dict[str, RunRead] = {}
    for run in runs:
        try:
            read = read_run(run, suites, on_error)
            row = _row(run, read, suites.get(run.summary.suite))
        except ResultFileError as exc:
            if on_error is None:
                raise
            on_error(exc)
            continue
        rows.append(row)
        reads[row.path] = read
    ordered: list[LeaderboardRow] = []
    for suite in sorted({r.suite for r in rows}):
        mine = _with_frontier([r for r in rows if r.suite == suite])
        mine = _with_rank_groups(mine, {path: read.analysis for path, read in reads.items()})
        ordered += _ranked(mine, rank_by)
    examples = {path: read.examples for path, read in reads.items()}
    return Board(ordered, examples, {path: read.analysis for path, read in reads.items()}, suites)


def build_rows(
    runs: Sequence[StoredRun],
    *,
    rank_by: RankBy = "score",
    on_error: Callable[[ResultFileError], None] | None = None,
) -> list[LeaderboardRow]:
    """`build_board(...).rows`."""
    return build_board(runs, rank_by=rank_by, on_error=on_error).rows


def _known_cost(row: LeaderboardRow) -> bool:
    return row.cost_usd is not None and row.cost_complete


def _row(run: StoredRun, read: RunRead, suite: Suite[Any] | None) -> LeaderboardRow:
    s, scores, analysis = run.summary, run.summary.scores, read.analysis
    scored = s.status != "dnf"
    score = scores.score if scored else None
    repeats = max(s.settings.repeats, analysis.repeats if analysis else 1)
    complete = (
        s.status == "finished"
        and s.dataset.limit is None
        and scores.errors == 0
        and scores.samples >= s.dataset.cases * repeats
        and score is not None
    )
    metrics: dict[str, float | None] = {}
    made = suite.row_metrics(scores) if scored and suite is not None and suite.row_metrics else {}
    if scored:
        metrics = scores.metrics | made
    shown = _shown(suite, metrics)
    labels = made.labels if isinstance(made, Figures) else {}  # what the suite says its figures are
    first = read.first_attempt
    no_retry = suite.row_metrics(first) if scored and first and suite is not None and suite.row_metrics else {}
    known_cost = scores.totals.cost_usd is not None and scores.totals.cost_complete
    cost = scores.totals.cost_usd if known_cost else None
    per_case = None if cost is None or not scores.samples else cost / scores.samples
    correct_sum = analysis.score_sum if analysis else scores.correct + 0.0
    ci = analysis.score_ci95() if analysis and scored else None
    return LeaderboardRow(
        rank=None,
        suite=s.suite,
        task=s.task,
        model=s.model,
        mode=s.mode,
        run_id=s.run_id,
        status=s.status,
        imported=s.imported,
        score=score,
        title=suite.title if suite is not None and suite.title else "Score",
        classes={g.group: g.score for g in scores.groups} if scored else {},
        metrics=metrics,
        metrics_no_retry=no_retry,
        columns=shown,
        figures={name: labels[name] for name in shown if name in labels},
        group_columns=suite.group_columns if suite is not None else True,
        relaxed_column=suite.relaxed_column if suite is not None else False,
        samples=scores.samples,
        correct=scores.correct,
        partial=scores.partial,
        incorrect=scores.incorrect,
        missing=scores.missing,
        errors=scores.errors,
        unsupported=scores.unsupported,
        ambiguous=scores.excluded,
        valid_first_try=scores.compliance.valid_first_try,
        corrective_retries=scores.compliance.corrective_retries,
        invalid_outputs=scores.compliance.invalid_outputs,
        requests=scores.totals.requests,
        input_tokens=scores.totals.input_tokens,
        output_tokens=scores.totals.output_tokens,
        cost_usd=scores.totals.cost_usd,
        cost_complete=scores.totals.cost_complete,
        cost_sources=scores.totals.cost_sources,
        batch=s.settings.batch,
        wall_s=s.wall_s,
        dataset_md5=s.dataset.md5,
        reason=s.reason,
        path=str(run.path),
        cases=s.dataset.cases,
        complete=complete,
        repeats=repeats,
        consistency=analysis.consistency if analysis else None,
        score_ci95=list(ci) if ci else None,
        class_ci95={k: list(v) for k, v in analysis.class_ci95().items()} if analysis and scored else {},
        chance=analysis.chance if analysis else None,
        positions=analysis.positions if analysis else {},
        favourite_position=analysis.favourite_position if analysis else None,
        favourite_position_score=analysis.favourite_position_score if analysis else None,
        cost_per_case_usd=per_case,
        cost_per_correct_usd=cost / correct_sum if cost is not None and correct_sum else None,
        score_per_usd=score / per_case if score is not None and per_case else None,
        latency_median_s=analysis.latency_median_s if analysis else None,
        latency_p95_s=analysis.latency_p95_s if analysis else None,
        rate_limited=scores.totals.pacing.rate_limited if scores.totals.pacing else None,
        wait_s=scores.totals.pacing.wait_s if scores.totals.pacing else None,
        valid_after_retries=scores.compliance.valid_after_retries,
        invalid_by_kind=dict(scores.compliance.invalid_by_kind),
        score_relaxed=read.relaxed if scored else None,
        pass_k=read.pass_k.overall if read.pass_k is not None and scored else [],
        pass_k_groups=read.pass_k.groups if read.pass_k is not None and scored else {},
        **(asdict(read.retries) if read.retries is not None and scored else {}),
    )


def _with_frontier(rows: Sequence[LeaderboardRow]) -> list[LeaderboardRow]:
    """Mark the complete runs with a known cost that no other such run beats on both cost per case and score."""
    eligible = [r for r in rows if r.complete and _known_cost(r)]
    front = pareto_front([(r.cost_per_case_usd, r.score) for r in eligible])
    on_front = {id(r): flag for r, flag in zip(eligible, front, strict=True)}
    return [r.model_copy(update={"pareto": on_front.get(id(r))}) for r in rows]


def _with_rank_groups(
    rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]
) -> list[LeaderboardRow]:
    """Among complete runs on the same cases: rank group 1 for the best and every run a paired test
    (Holm-corrected) cannot tell from it, 2 for the rest."""
    groups: dict[str, int] = {}
    for md5 in dict.fromkeys(r.dataset_md5 for r in rows):
        candidates = sorted(
            (r for r in rows if r.complete and r.dataset_md5 == md5 and analyses.get(r.path) is not None),
            key=lambda r: -(r.score or 0),
        )
        if not candidates:
            continue
        best, others = candidates[0], candidates[1:]
        best_analysis = analyses[best.path]
        assert best_analysis is not None
        tied = tied_with_best(best_analysis, [analyses[r.path] for r in others])
        groups[best.path] = 1
        groups |= {r.path: 1 if flag else 2 for r, flag in zip(others, tied, strict=True) if flag is not None}
    return [r.model_copy(update={"rank_group": groups.get(r.path)}) for r in rows]


def _sort_key(rank_by: RankBy) -> Callable[[LeaderboardRow], tuple[float, ...] | None]:
    """The key a complete row is ranked by (smaller first), or None when the row cannot be ranked that way."""

    def score(row: LeaderboardRow) -> tuple[float, ...] | None:
        return None if row.score is None else (-round(row.score, 2),)

    def cost(row: LeaderboardRow) -> tuple[float, ...] | None:
        per_case = row.cost_per_case_usd
        return None if per_case is None or row.score is None else (per_case, -round(row.score, 2))

    def value(row: LeaderboardRow) -> tuple[float, ...] | None:
        if row.score is None or row.cost_per_case_usd is None:
            return None
        if row.cost_per_case_usd == 0:  # free (a local model): worth more than any paid run, best score first
            return (0, -round(row.score, 2))
        return (1, -(row.score_per_usd or 0))

    def pareto(row: LeaderboardRow) -> tuple[float, ...] | None:
        if row.pareto is None or row.score is None or row.cost_per_case_usd is None:
            return None
        return (0 if row.pareto else 1, row.cost_per_case_usd, -round(row.score, 2))

    return {"score": score, "cost": cost, "value": value, "pareto": pareto}[rank_by]


def _ranked(rows: Sequence[LeaderboardRow], rank_by: RankBy) -> list[LeaderboardRow]:
    key = _sort_key(rank_by)
    rankable = sorted((r for r in rows if r.complete and key(r) is not None), key=lambda r: (key(r), r.model, r.mode))
    ranked: list[LeaderboardRow] = []
    for position, row in enumerate(rankable, 1):
        tied = ranked and key(rankable[position - 2]) == key(row)
        ranked.append(row.model_copy(update={"rank": ranked[-1].rank if tied else position}))
    taken = {id(r) for r in rankable}
    unranked = [r for r in rows if id(r) not in taken]
    unranked.sort(key=lambda r: (r.score is None, -(r.score or 0), r.model, r.mode))
    return ranked + unranked


def compare_runs(a: StoredRun, b: StoredRun) -> tuple[Comparison, LeaderboardRow, LeaderboardRow]:
    """Pair two stored runs case by case; refused in one line when they do not share their cases."""
    if a.summary.dataset.md5 != b.summary.dataset.md5:  # case ids alone can match on other cases (q00001...)
        raise InputError(
            f"the two runs were made on different cases (dataset MD5 {a.summary.dataset.md5} and "
            f"{b.summary.dataset.md5}): compare runs made on the same cases"
        )
    suites = installed_suites()
    read_a, read_b = read_run(a, suites), read_run(b, suites)
    if read_a.analysis is None or read_b.analysis is None:
        raise ResultFileError("both runs need their records (samples.jsonl) to be compared case by case")
    row_a, row_b = _row(a, read_a, suites.get(a.summary.suite)), _row(b, read_b, suites.get(b.summary.suite))
    return compare(read_a.analysis, read_b.analysis), row_a, row_b


def _has_records(run_dir: Path) -> bool:
    """Whether a run was stored with its records (a hand-made summary may stand alone)."""
    return (run_dir / RECORDS_FILE).is_file()


CASE_SETS_NOTE = (
    "Runs of this suite on other cases (another version of its data, or other parameters) are in their own table, "
    "headed by their cases' MD5: runs are ranked only against runs on the same cases."
)


def case_sets(rows: Sequence[LeaderboardRow]) -> list[tuple[str, list[LeaderboardRow]]]:
    """A suite's rows by the cases they were run on: one set with no heading when all share them, else each set
    headed `cases <MD5 prefix>`, so runs on different task versions are never shown ranked together."""
    sets = {md5: [r for r in rows if r.dataset_md5 == md5] for md5 in dict.fromkeys(r.dataset_md5 for r in rows)}
    if len(sets) == 1:
        return [("", list(rows))]
    return [(f"cases {md5[:8]}", mine) for md5, mine in sets.items()]
