"""What a finished `run` prints: each run's report (per-group lines, the headline, format compliance, totals,
pacing), and with several models their table and paired comparison."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from typed_eval.contracts import LeaderboardRow, RunSummary, is_text_mode
from typed_eval.core.errors import EvaluatorError
from typed_eval.core.suite import Suite
from typed_eval.core.terminal import printable
from typed_eval.reports.analysis import RunAnalysis
from typed_eval.reports.exports import render_comparison
from typed_eval.reports.facet_profile import pair_lines, placed_lines, profile_lines, profile_of, run_facet_pairs
from typed_eval.reports.leaderboard import Board, RunRead, build_board, compare_runs, load_run, read_run
from typed_eval.reports.mode_matrix import mode_comparisons
from typed_eval.reports.mode_tables import render_modes_rich
from typed_eval.reports.pass_k import report_lines
from typed_eval.reports.tables import render_rich
from typed_eval.store.storage import StoredRun


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _position(position: str) -> str:
    return "the last option" if position == "last" else f"option {position}"


def _meaning(rows: Sequence[LeaderboardRow]) -> list[str]:
    """The closing lines: each score against chance and against always choosing the run's favourite position, the
    two scores a model reaches without reading the question."""
    lines: list[str] = []
    for row in rows:
        if row.score is None or row.chance is None:
            continue
        favourite = ""
        if row.favourite_position is not None and row.favourite_position_score is not None:
            where = _position(row.favourite_position)
            favourite = f", always {where} (its favourite position) {row.favourite_position_score:.2f}"
        verdict = "above both" if row.score > max(row.chance, row.favourite_position_score or 0) else "not above both"
        lines.append(
            f"{row.model} in {row.mode} mode: {row.score:.2f} against chance {row.chance:.2f}{favourite}: {verdict}"
        )
    if lines:
        lines.append(
            "(a score not above both shows no sign of reading the question: random answers, or one position "
            "chosen whatever is asked, score as much)"
        )
    return lines


def baselines(analysis: RunAnalysis) -> str:
    """What the score of cases with options means: against answering at random, and against always choosing the
    option position this model chose most (a model that ignores the question but has a favourite position scores
    that)."""
    line = f"baselines: chance {analysis.chance:.2f} (a random option each time)"
    position, score = analysis.favourite_position, analysis.favourite_position_score
    if position is not None and score is not None:
        where = _position(position)
        line += f"; always {where}, the position this model chose most: {score:.2f}"
    return line


def _count(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def _retry_lines(summary: RunSummary, read: RunRead, suite: Suite[Any] | None) -> list[str]:
    """What the corrective retries changed and cost, and the suite's lines as they would read with none (what a
    benchmark scoring the first answer reports), when some sample used one."""
    economics, first = read.retries, read.first_attempt
    if economics is None or first is None:
        return []
    scores = economics.score_by_retries
    cost = f"${economics.retry_cost_usd:.6f}" if economics.retry_cost_usd is not None else "an unknown amount"
    lines = [
        f"corrective retries: score {_score(scores[0])} with none, {_score(scores[-1])} with up to "
        f"{len(scores) - 1}; the {economics.retry_requests} retries cost {cost}"
    ]
    if suite is not None and suite.report_lines is not None:
        lines += [
            f"with no corrective retry, {line}"
            for line in suite.report_lines(summary.model_copy(update={"scores": first}))
        ]
    return lines


def print_report(summary: RunSummary, run_dir: Path, suite: Suite[Any] | None = None) -> None:
    """Per-group lines (as the original benchmark prints them), the headline score, format compliance and totals."""
    scores = summary.scores
    for g in scores.groups:
        score = f"{g.score:.2f}" if g.score is not None else "n/a"
        counts = (("P", g.partial), ("E", g.errors), ("U", g.unsupported))
        extra = "".join(f", {label}: {n}" for label, n in counts if n)
        extra += f", excluded: {g.excluded}" if g.excluded else ""
        print(printable(f"{g.group}: {score} (C: {g.correct}, I: {g.incorrect}, M: {g.missing} A: {g.scored}{extra})"))
    headline = f"{scores.score:.2f}" if scores.score is not None else "n/a"
    title = suite.headline(summary) if suite is not None and suite.headline is not None else f"{summary.suite} score"
    print(printable(f"{title}: {headline}  ({summary.model}, {summary.mode} mode)"))
    read = read_run(StoredRun(run_dir, summary))  # the records, once: retries, the relaxed reading, the baselines
    for line in suite.report_lines(summary) if suite is not None and suite.report_lines is not None else []:
        print(printable(line))
    for line in profile_lines(read.analysis) if read.analysis is not None else []:
        print(printable(line))
    if scores.metrics:
        print("metrics: " + ", ".join(f"{name} {_score(value)}" for name, value in scores.metrics.items()))
    for line in report_lines(read.pass_k) if read.pass_k is not None and summary.status != "dnf" else []:
        print(printable(line))
    comp, totals = scores.compliance, scores.totals
    first = f"{comp.valid_first_try:.1f}%" if comp.valid_first_try is not None else "n/a"
    after = f"{comp.valid_after_retries:.1f}%" if comp.valid_after_retries is not None else "n/a"
    kinds = ", ".join(f"{k} {n}" for k, n in comp.invalid_by_kind.items()) or "none"
    print(
        f"format: valid first try {first}, after retries {after}, corrective retries {comp.corrective_retries}, "
        f"invalid outputs {comp.invalid_outputs} ({kinds}), missing {scores.missing}, errors {scores.errors}"
        + (f", unsupported {scores.unsupported} (the provider refused the schema)" if scores.unsupported else "")
    )
    for line in _retry_lines(summary, read, suite):
        print(printable(line))
    if is_text_mode(summary.mode) and comp.relaxed_recoverable:
        relaxed = read.relaxed
        print(
            f"relaxed reading: {comp.relaxed_recoverable} missing replies state an answer without the tag "
            f"({comp.relaxed_recoverable_correct} of them correct); not counted"
            + (f", the score with them: {relaxed:.2f}" if relaxed is not None else "")
        )
    if scores.excluded:
        print(f"excluded: {scores.excluded} cases recorded but not scored")
    if read.analysis is not None and read.analysis.chance is not None and scores.score is not None:
        print(baselines(read.analysis))
    cost = (
        "unknown"
        if totals.cost_usd is None
        else f"${totals.cost_usd:.6f}{'' if totals.cost_complete else ' (lower bound)'}"
    )
    print(
        f"totals: {totals.requests} requests, {_count(totals.input_tokens)} input / {_count(totals.output_tokens)} "
        f"output tokens, cost {cost}, {summary.wall_s:.1f} s"
    )
    pacing = totals.pacing
    if pacing is not None and (pacing.rate_limited or pacing.waits or pacing.outages):
        stated = ", ".join(
            f"{value:.0f} {unit}" for value, unit in ((pacing.stated_rpm, "rpm"), (pacing.stated_tpm, "tpm")) if value
        )
        print(
            f"pacing: {pacing.rate_limited} answers 429 (waited out, none an error), {pacing.waits} requests waited "
            f"{pacing.wait_s:.1f} s in all, {pacing.outages} outages ({pacing.outage_s:.1f} s, "
            f"{pacing.sent_into_outage} requests sent into them)"
            + (f"; the provider states {stated}" if stated else "")
        )
    print(f"stored in {run_dir}")


def print_comparison(run_dirs: Sequence[Path], modes: Sequence[str]) -> None:
    """The runs of one command side by side; with several modes, each model's modes compared (the model x mode
    table), else with two models their paired comparison."""
    runs = [load_run(run_dir) for run_dir in run_dirs]
    print()
    board = build_board(runs)
    render_rich(board.rows, Console())
    if len(modes) > 1:
        render_modes_rich(mode_comparisons(runs, modes, board), Console())
        for line in [*_meaning(board.rows), *_facet_lines(board)]:
            print(printable(line))
        return
    if len(runs) == 2:
        try:
            comparison, a, b = compare_runs(*runs)
        except EvaluatorError as exc:
            print(f"paired comparison: none ({exc})")
            return
        print(render_comparison(comparison, a, b), end="")
        for line in _facet_lines(board):
            print(printable(line))


def _facet_lines(board: Board) -> list[str]:
    """Each pair of runs on the same cases (two modes of a model, two models in a mode) compared on the cases with
    each feature, and the user's own cases placed on another run's profile, for a suite that declares features."""
    lines: list[str] = []
    for a, b, pair in run_facet_pairs(board.rows, board.analyses):
        lines += pair_lines(f"{a.model} {a.mode}", f"{b.model} {b.mode}", [pair])
    for row in board.rows:
        analysis = board.analyses.get(row.path)
        if analysis is None or not any(found.placed for found in analysis.case_facets.values()):
            continue
        profile, source = profile_of(row, board.rows, board.analyses)
        if source is not None and source is not row:  # placed on its own profile in its own report already
            where = f"{source.model} {source.mode} run {Path(source.path).name}"
            lines += placed_lines(analysis, profile, where)
    return lines
