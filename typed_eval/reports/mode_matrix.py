"""The model x mode table: for each model, its runs in each answer mode on the same cases side by side (score with
its interval, valid on the first try, cost per correct answer), the best mode, and every pair of modes compared case
by case with Holm's correction over the pairs: what a typed tool call costs and gains against free text."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any, TypeVar

from typed_eval.contracts import AnswerMode, GroupPair, LeaderboardRow, ModeCell, ModeComparison, ModePair
from typed_eval.core.errors import InputError
from typed_eval.reports.analysis import RunAnalysis, compare, within_group
from typed_eval.reports.leaderboard import Board, build_board
from typed_eval.reports.stats import holm_adjust
from typed_eval.store.storage import StoredRun

__all__ = ["MODE_ORDER", "mode_comparisons", "run_key"]

PairT = TypeVar("PairT", ModePair, GroupPair)

MODE_ORDER: tuple[AnswerMode, ...] = ("tool", "native", "prompted", "text", "tag")


def run_key(row: LeaderboardRow) -> str:
    """`<model-folder>/<run-folder>`: how a run is named under its results folder."""
    path = Path(row.path)
    return f"{path.parent.name}/{path.name}"


def mode_comparisons(
    runs: Sequence[StoredRun], order: Sequence[str] = (), board: Board | None = None
) -> list[ModeComparison]:
    """Per suite, model and cases (dataset MD5, limit, repeats), the newest run of each mode that reached the model;
    models with one mode are left out.
    `order`: the modes in the order they were given (the first is the one the others are read against); `board`:
    the runs' leaderboard when it is made already (their records are not read again)."""
    board = board or build_board(runs)
    started = {str(run.path): run.summary.started_at for run in runs}
    ranked = [*order, *(m for m in MODE_ORDER if m not in order)]
    limits = {str(run.path): run.summary.dataset.limit for run in runs}
    groups: dict[tuple[str, str, str, int | None, int], dict[str, LeaderboardRow]] = {}
    for row in sorted(board.rows, key=lambda r: started[r.path]):
        if row.status == "dnf":
            continue
        key = (row.suite, row.model, row.dataset_md5, limits[row.path], row.repeats)
        groups.setdefault(key, {})[row.mode] = row  # the newest wins
    found: list[ModeComparison] = []
    for (suite, model, *_), by_mode in groups.items():
        if len(by_mode) < 2:
            continue
        modes = sorted(by_mode, key=ranked.index)
        pair_groups = suite in board.suites and board.suites[suite].pair_groups
        found.append(_comparison(suite, model, [by_mode[m] for m in modes], board, pair_groups))
    return found


def _comparison(
    suite: str, model: str, rows: Sequence[LeaderboardRow], board: Board, pair_groups: bool
) -> ModeComparison:
    cells = {
        row.mode: ModeCell(
            run=run_key(row),
            score=row.score,
            score_ci95=row.score_ci95,
            valid_first_try=row.valid_first_try,
            cost_per_correct_usd=row.cost_per_correct_usd,
        )
        for row in rows
    }
    scored = [row for row in rows if row.score is not None]
    best = max(scored, key=lambda row: row.score or 0.0).mode if scored else None  # max keeps the first of equals
    pairs = [_pair(a, b, board, pair_groups) for a, b in combinations(rows, 2)]
    return ModeComparison(suite=suite, model=model, modes=cells, best_mode=best, versus=_with_holm(pairs))


def _with_holm(pairs: Sequence[PairT]) -> list[PairT]:
    """Each tested pair with its p-value Holm-corrected over those tested."""
    found = list(pairs)
    tested = [index for index, pair in enumerate(found) if pair.p_value is not None]
    adjusted = holm_adjust([found[index].p_value or 0.0 for index in tested])
    for index, p_holm in zip(tested, adjusted, strict=True):
        found[index] = found[index].model_copy(update={"p_holm": p_holm})
    return found


def _tested(a: RunAnalysis, b: RunAnalysis) -> dict[str, Any] | None:
    """The paired figures of two runs' analyses, or None when they share no scored case."""
    try:
        c = compare(a, b)
    except InputError:  # no scored case in common
        return None
    only_a, only_b = (c.only_a, c.only_b) if c.test == "mcnemar" else (c.a_better, c.b_better)
    return {
        "paired": c.paired,
        "only_a": only_a,
        "only_b": only_b,
        "p_value": c.p_value,
        "p_holm": None,
        "difference": c.difference,
        "difference_ci95": list(c.difference_ci95),
    }


UNTESTED: dict[str, Any] = {
    "paired": 0,
    "only_a": 0,
    "only_b": 0,
    "p_value": None,
    "p_holm": None,
    "difference": None,
    "difference_ci95": None,
}


def _pair(a: LeaderboardRow, b: LeaderboardRow, board: Board, pair_groups: bool) -> ModePair:
    analysis_a, analysis_b = board.analyses.get(a.path), board.analyses.get(b.path)
    if analysis_a is None or analysis_b is None:
        return ModePair(a=a.mode, b=b.mode, **UNTESTED)
    tested = _tested(analysis_a, analysis_b)
    if tested is None:
        return ModePair(a=a.mode, b=b.mode, **UNTESTED)
    by_group = []
    for group in dict.fromkeys(analysis_a.case_groups.values()) if pair_groups else ():
        figures = _tested(within_group(analysis_a, group), within_group(analysis_b, group))
        by_group.append(GroupPair(group=group, **(figures or UNTESTED)))
    return ModePair(a=a.mode, b=b.mode, **tested, by_group=_with_holm(by_group))
