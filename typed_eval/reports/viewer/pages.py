"""The case viewer's pages, made on the server from the views' shared templates: every text from a run (model names,
case ids, prompts, outputs, feedback) is escaped by them, so a model answering `<script>` shows those characters and
nothing runs."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from typed_eval.contracts import Attempt, LeaderboardRow, SampleRecord
from typed_eval.core.errors import InputError
from typed_eval.core.suite import Suite, answer_lines
from typed_eval.core.terminal import printable
from typed_eval.reports.analysis import compare
from typed_eval.reports.facet_profile import run_facet_pairs, run_profiles
from typed_eval.reports.formatting import count, interval, metric, money, number, p_value, signed
from typed_eval.reports.html import CellView, cell_view, render
from typed_eval.reports.leaderboard import Board
from typed_eval.reports.pass_k import pass_k_cells
from typed_eval.reports.suite_figures import figure_legend, shown_figures
from typed_eval.store.case_store import FILTERS, PER_RUN_SORTS, CaseCell, CaseDetail, CasePage, RunEntry

__all__ = ["case", "cases", "error", "leaderboard"]

GRID_TEXT = 400
"""Characters of one answer line shown in the grid (the case page shows it whole, up to `PAGE_TEXT`)."""
GRID_LINES = 8
PAGE_TEXT = 50_000
"""Characters of one raw output, prompt or feedback shown on a case page; the rest is cut with a visible marker."""


def _page(template: str, title: str, **context: object) -> str:
    return render(template, view="viewer", title=title, policy=None, style=None, script=None, **context)


def error(status: int, message: str) -> str:
    return _page("viewer_error.html", f"{status}", status=status, message=message)


def _href(path: str, **params: str | int | None) -> str:
    kept = {key: str(value) for key, value in params.items() if value not in (None, "")}
    return f"{path}?{urlencode(kept)}" if kept else path


def _runs_param(keys: Sequence[str]) -> str:
    return ",".join(keys)


def _cost(value: float | None) -> str:
    """A cost, or `?` when it is not known."""
    return money(value) or "?"


# The leaderboard ----------------------------------------------------------------------------------------------


def leaderboard(entries: Sequence[RunEntry], board: Board, unreadable: Sequence[str] = ()) -> str:
    """The leaderboard page; `unreadable`: why each run left out cannot be read (one line each)."""
    keys = {str(entry.run.path): entry.key for entry in entries}
    suites = sorted({row.suite for row in board.rows})
    sections = [_suite_board(suite, [r for r in board.rows if r.suite == suite], board, keys) for suite in suites]
    shown = {row.path for row in board.rows}
    unread = ", ".join(entry.key for entry in entries if str(entry.run.path) not in shown)
    return _page(
        "viewer_board.html",
        "Leaderboard",
        summary=count(len(board.rows), "run"),
        sections=sections,
        unread=unread,
        unreadable=[printable(line) for line in unreadable],
    )


def _suite_board(
    suite: str, rows: Sequence[LeaderboardRow], board: Board, keys: Mapping[str, str]
) -> dict[str, object]:
    figures = shown_figures(rows)  # each under the name the suite gives it; the score not again
    passes = pass_k_cells(rows)
    lines = []
    for row in rows:
        key = keys.get(row.path, "")
        lines.append(
            {
                "key": key,
                "model": row.model,
                "mode": row.mode,
                "rank": row.rank or "",
                "best": row.rank_group == 1,
                "href": _href("/cases", runs=key),
                "score": number(row.score, 1),
                "ci": interval(row.score_ci95, between=" to "),
                "metrics": [_metric(row, one.name) for one in figures],
                "valid": number(row.valid_first_try, 1),
                "retries": row.corrective_retries,
                "cost": _cost(row.cost_usd),
                "per_correct": _cost(row.cost_per_correct_usd),
                "pass_k": [cell(row) for _, cell in passes],
                "cases": row.cases,
                "status": row.status,
            }
        )
    best, paired = _paired(rows, board, keys)
    title = rows[0].title if rows else "Score"
    profiles, facet_paired = _profiles(rows, board)
    heads = [(one.header, one.figure.about) for one in figures]
    return {"suite": suite, "title": title, "metrics": heads, "legend": figure_legend(rows), "rows": lines,
            "best": best, "paired": paired, "profiles": profiles, "facet_pairs": facet_paired,
            "passes": [header for header, _ in passes]}  # fmt: skip


def _profiles(rows: Sequence[LeaderboardRow], board: Board) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Each run's feature profile (a suite declaring `Suite.facets`), its placed cases on it, and each pair of runs
    on the same cases compared on the cases with each feature."""
    profiles: list[dict[str, object]] = [
        {"model": run.row.model, "mode": run.row.mode,
         "features": [
             {"facet": line.facet, "with": number(line.having.rate, 1), "with_ci": interval(line.having.ci95),
              "with_n": line.having.cases, "without": number(line.lacking.rate, 1),
              "without_ci": interval(line.lacking.ci95), "without_n": line.lacking.cases,
              "difference": signed(line.difference, 1)}
             for line in run.own
         ],
         "placed": [
             {"case": case.case_id, "group": case.group, "score": number(case.score, 2), "source": run.source,
              "facets": case.facets_text()}
             for case in run.placed
         ]}
        for run in run_profiles(rows, board.analyses)
        if run.own or run.placed
    ]  # fmt: skip
    pairs: list[dict[str, object]] = [
        {"a": f"{a.model} {a.mode}", "b": f"{b.model} {b.mode}", "facet": pair.facet, "paired": pair.paired,
         "only_a": pair.only_a, "only_b": pair.only_b, "p": p_value(pair.p_value, 3),
         "p_holm": p_value(pair.p_holm, 3), "difference": signed(pair.difference, 1)}
        for a, b, pair in run_facet_pairs(rows, board.analyses)
    ]  # fmt: skip
    return profiles, pairs


def _metric(row: LeaderboardRow, name: str) -> tuple[str, str]:
    """A suite's figure, and what it was with no corrective retry when that differs."""
    value, first = row.metrics.get(name), row.metrics_no_retry.get(name, row.metrics.get(name))
    return metric(name, value), metric(name, first) if first != value else ""


def _paired(
    rows: Sequence[LeaderboardRow], board: Board, keys: Mapping[str, str]
) -> tuple[LeaderboardRow | None, list[dict[str, object]]]:
    """Each run paired with the suite's best, case by case: the counts link to the cases behind them."""
    best = next((row for row in rows if row.rank == 1 and board.analyses.get(row.path) is not None), None)
    if best is None:
        return None, []
    best_analysis = board.analyses[best.path]
    assert best_analysis is not None
    lines: list[dict[str, object]] = []
    for row in rows:
        other = board.analyses.get(row.path)
        if row is best or other is None:
            continue
        try:
            result = compare(best_analysis, other)
        except InputError:
            continue
        pair = _runs_param([keys.get(best.path, ""), keys.get(row.path, "")])
        lines.append(
            {
                "model": row.model,
                "mode": row.mode,
                "paired": result.paired,
                "only_best": result.only_a,
                "only_best_href": _href("/cases", runs=pair, filter="better:0"),
                "only_this": result.only_b,
                "only_this_href": _href("/cases", runs=pair, filter="better:1"),
                "p": p_value(result.p_value, 3),
                "difference": signed(result.difference, 1),
            }
        )
    return best, lines


# The grid -----------------------------------------------------------------------------------------------------


def cases(
    entries: Sequence[RunEntry], page: CasePage, query: Mapping[str, str], suites: Mapping[str, Suite[Any]]
) -> str:
    keys = [entry.key for entry in entries]
    runs = _runs_param(keys)
    state = {key: query.get(key, "") for key in ("filter", "group", "q", "sort", "dir", "per_page")}

    def link(**changes: str | int | None) -> str:
        return _href("/cases", **({"runs": runs} | state | changes))

    pages = max(1, math.ceil(page.total / page.per_page))
    choices: list[tuple[str, str]] = [(name, name) for name in FILTERS if name != "disagree" or len(entries) > 1]
    if len(entries) > 1:
        choices += [
            (f"better:{index}", f"better in {entry.summary.model} ({entry.summary.mode})")
            for index, entry in enumerate(entries)
        ]
    heads = [
        {
            "model": entry.summary.model,
            "mode": entry.summary.mode,
            "key": entry.key,
            "sorts": [
                (name, link(sort=f"{name}:{index}", dir=_flip(state, f"{name}:{index}"), page=None))
                for name in PER_RUN_SORTS
            ],
        }
        for index, entry in enumerate(entries)
    ]
    grid = {"runs": runs, **{key: value for key, value in state.items() if value}, "page": str(page.page)}
    rows = [
        {
            "case_id": row.case_id,
            "group": row.group or "",
            "href": f"/case/{quote(row.case_id, safe='')}?{urlencode(grid)}",
            "cells": [_cell(row.cells.get(entry.key), suites.get(entry.summary.suite)) for entry in entries],
        }
        for row in page.rows
    ]
    names = " vs ".join(f"{entry.summary.model} ({entry.summary.mode})" for entry in entries)
    return _page(
        "viewer_cases.html",
        f"Cases: {names}",
        names=names,
        runs=runs,
        state=state,
        filters=choices,
        groups=page.groups,
        case_sort=link(sort="case", dir=None, page=None),
        group_sort=link(sort="group", dir=None, page=None),
        heads=heads,
        rows=rows,
        total=page.total,
        page=page.page,
        pages=pages,
        prev=link(page=page.page - 1) if page.page > 1 else None,
        next=link(page=page.page + 1) if page.page < pages else None,
        damaged=_damaged(page.damaged),
    )


def _flip(state: Mapping[str, str], sort: str) -> str:
    """The direction a sort link gives: descending when that sort is already ascending."""
    return "desc" if state["sort"] == sort and state["dir"] != "desc" else "asc"


def _cell(cell: CaseCell | None, suite: Suite[Any] | None) -> CellView | None:
    if cell is None:
        return None
    tokens = "" if cell.input_tokens is None else f"{cell.input_tokens:,}+{cell.output_tokens or 0:,} tok"
    facts = [
        f"retries {cell.corrective_retries}" if cell.corrective_retries else "",
        ", ".join(cell.invalid_kinds),
        tokens,
        money(cell.cost_usd),
        f"{cell.latency_s:.1f} s" if cell.latency_s is not None else "",
    ]
    score = "" if cell.score is None else f" {100 * cell.score:.0f}"
    repeats = f", {len(cell.records)} repeats" if len(cell.records) > 1 else ""
    head = f"{cell.status}{score}{repeats}"
    return cell_view(
        cell, suite, head=head, facts=facts, lines=GRID_LINES, text=GRID_TEXT, per_line=True, data_status=True
    )


# One case -----------------------------------------------------------------------------------------------------


def case(
    entries: Sequence[RunEntry], detail: CaseDetail, query: Mapping[str, str], suites: Mapping[str, Suite[Any]]
) -> str:
    """The case in each run; `query` is the grid's state, so the way back returns to the same filter and page."""
    grid = {key: query.get(key) for key in ("filter", "group", "q", "sort", "dir", "page", "per_page")}
    runs = [
        {
            "model": entry.summary.model,
            "mode": entry.summary.mode,
            "key": entry.key,
            "records": [
                _record(record, suites.get(entry.summary.suite), len(detail.runs.get(entry.key, [])))
                for record in detail.runs.get(entry.key, [])
            ],
        }
        for entry in entries
    ]
    return _page(
        "viewer_case.html",
        f"Case {detail.case_id}",
        back=_href("/cases", runs=_runs_param([entry.key for entry in entries]), **grid),
        case_id=detail.case_id,
        group=detail.group,
        prompt=detail.prompt,
        expected=_json_text(detail.expected),
        runs=runs,
        limit=PAGE_TEXT,
        damaged=_damaged(detail.damaged),
    )


def _damaged(damaged: Mapping[str, Sequence[str]]) -> list[tuple[str, list[str]]]:
    """Each run's lines left out, as a page lists them (the file's text made safe to show)."""
    return [(key, [printable(line) for line in lines]) for key, lines in damaged.items()]


def _json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _record(record: SampleRecord, suite: Suite[Any] | None, repeats: int) -> dict[str, object]:
    usage = record.usage
    tokens = (
        ""
        if usage.input_tokens is None
        else f" · {usage.input_tokens:,} in + {usage.output_tokens or 0:,} out tokens in {usage.requests} requests"
    )
    latency = "" if record.latency_s is None else f" · {record.latency_s:.2f} s"
    cost = f"cost {_cost(record.cost.usd)} ({record.cost.source})"
    return {
        "status": record.status,
        "head": f"Repeat {record.repeat + 1}: " if repeats > 1 else "",
        "score": "" if record.score is None else f" · score {100 * record.score:.0f}",
        "lines": answer_lines(suite, record),
        "facts": f"{record.corrective_retries} corrective retries · {cost}{tokens}{latency}",
        "error": record.error,
        "attempts": [
            _attempt(index, attempt, len(record.attempts)) for index, attempt in enumerate(record.attempts, 1)
        ],
        "details": _json_text(record.score_details) if record.score_details else "",
    }


def _attempt(index: int, attempt: Attempt, attempts: int) -> dict[str, object]:
    if attempt.valid:
        verdict = "valid" + (" (the fix)" if index > 1 else "")
    else:
        verdict = f"invalid: {attempt.invalid_kind or 'other'}"
    return {
        "index": index,
        "valid": attempt.valid,
        "verdict": verdict,
        "cost": "" if attempt.cost_usd is None else f" · {money(attempt.cost_usd)}",
        "raw": attempt.raw,
        "feedback": attempt.feedback,
        "feedback_label": "given to the model" if index < attempts else "(the last try: not sent)",
    }
