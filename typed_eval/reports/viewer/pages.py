"""The case viewer's pages, made on the server: every text from a run (model names, case ids, prompts, outputs,
feedback) is escaped here, so a model answering `<script>` shows those characters and nothing runs."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from typed_eval.core.errors import InputError
from typed_eval.core.suite import Suite, answer_lines
from typed_eval.reports.analysis import compare
from typed_eval.reports.html_report import answer_html, cut_text
from typed_eval.reports.leaderboard import Board
from typed_eval.schemas import Attempt, LeaderboardRow, SampleRecord
from typed_eval.store.case_store import FILTERS, PER_RUN_SORTS, CaseCell, CaseDetail, CasePage, RunEntry

__all__ = ["case", "cases", "error", "leaderboard"]

GRID_TEXT = 400
"""Characters of one answer line shown in the grid (the case page shows it whole, up to `PAGE_TEXT`)."""
GRID_LINES = 8
PAGE_TEXT = 50_000
"""Characters of one raw output, prompt or feedback shown on a case page; the rest is cut with a visible marker."""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _layout(title: str, body: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<link rel="stylesheet" href="/static/viewer.css">
<script src="/static/viewer.js" defer></script>
</head>
<body>
<nav><a href="/">Leaderboard</a></nav>
{body}
</body>
</html>
"""


def error(status: int, message: str) -> str:
    return _layout(f"{status}", f'<h1>{status}</h1><p class="error">{_e(message)}</p>')


def _href(path: str, **params: str | int | None) -> str:
    kept = {key: str(value) for key, value in params.items() if value not in (None, "")}
    return _e(f"{path}?{urlencode(kept)}" if kept else path)


def _runs_param(keys: Sequence[str]) -> str:
    return ",".join(keys)


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "?"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


# The leaderboard ----------------------------------------------------------------------------------------------


def leaderboard(entries: Sequence[RunEntry], board: Board) -> str:
    keys = {str(entry.run.path): entry.key for entry in entries}
    suites = sorted({row.suite for row in board.rows})
    sections = [_suite_board(suite, [r for r in board.rows if r.suite == suite], board, keys) for suite in suites]
    shown = {row.path for row in board.rows}
    unread = [entry for entry in entries if str(entry.run.path) not in shown]
    note = ""
    if unread:
        names = ", ".join(entry.key for entry in unread)
        note = f'<p class="note">Not on the leaderboard (records unreadable): {_e(names)}</p>'
    body = "".join(sections) or '<p class="note">No stored runs yet: run <code>python main.py run</code>.</p>'
    return _layout(
        "Leaderboard",
        f"""<h1>Leaderboard</h1>
<p class="muted">{len(board.rows)} run{"s" * (len(board.rows) != 1)}. Scores 0-100 with 95% intervals; ★ tied with the
best (paired test, Holm-corrected). Tick runs and compare their cases side by side.</p>
{body}{note}""",
    )


def _suite_board(suite: str, rows: Sequence[LeaderboardRow], board: Board, keys: Mapping[str, str]) -> str:
    head = (
        "<tr><th></th><th>Rank</th><th>Model</th><th>Mode</th><th>Score</th><th>95% CI</th><th>Valid 1st</th>"
        "<th>Retries</th><th>Cost</th><th>$/correct</th><th>Cases</th><th>Status</th><th>Run</th></tr>"
    )
    lines = []
    for row in rows:
        key = keys.get(row.path, "")
        ci = "" if not row.score_ci95 else f"{row.score_ci95[0]:.1f} to {row.score_ci95[1]:.1f}"
        star = ' <span class="star" title="tied with the best">★</span>' if row.rank_group == 1 else ""
        lines.append(
            f'<tr><td><input type="checkbox" name="run" value="{_e(key)}" aria-label="select {_e(row.model)}"></td>'
            f'<td class="num">{_e(row.rank or "")}{star}</td>'
            f'<td><a href="{_href("/cases", runs=key)}">{_e(row.model)}</a></td><td>{_e(row.mode)}</td>'
            f'<td class="num">{_num(row.score)}</td><td class="num">{ci}</td>'
            f'<td class="num">{_num(row.valid_first_try)}</td><td class="num">{row.corrective_retries}</td>'
            f'<td class="num">{_usd(row.cost_usd)}</td><td class="num">{_usd(row.cost_per_correct_usd)}</td>'
            f'<td class="num">{row.cases}</td><td>{_e(row.status)}</td><td class="key">{_e(key)}</td></tr>'
        )
    title = rows[0].title if rows else "Score"
    return f"""<section>
<h2>{_e(suite)} <span class="muted">{_e(title)}</span></h2>
<form method="get" action="/cases">
<div class="scroll"><table class="board"><thead>{head}</thead><tbody>{"".join(lines)}</tbody></table></div>
<p><button type="submit">Compare the ticked runs' cases</button></p>
</form>
{_paired(rows, board, keys)}
</section>
"""


def _paired(rows: Sequence[LeaderboardRow], board: Board, keys: Mapping[str, str]) -> str:
    """Each run paired with the suite's best, case by case: the counts link to the cases behind them."""
    best = next((row for row in rows if row.rank == 1 and board.analyses.get(row.path) is not None), None)
    if best is None:
        return ""
    best_analysis = board.analyses[best.path]
    assert best_analysis is not None
    lines = []
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
            f"<tr><td>{_e(row.model)} <span class='muted'>{_e(row.mode)}</span></td>"
            f'<td class="num">{result.paired}</td>'
            f'<td class="num"><a href="{_href("/cases", runs=pair, filter="better:0")}">{result.only_a}</a></td>'
            f'<td class="num"><a href="{_href("/cases", runs=pair, filter="better:1")}">{result.only_b}</a></td>'
            f'<td class="num">{result.p_value:.3g}</td><td class="num">{result.difference:+.1f}</td></tr>'
        )
    if not lines:
        return ""
    return f"""<h3>Paired with the best, {_e(best.model)} <span class="muted">{_e(best.mode)}</span></h3>
<div class="scroll"><table class="board"><thead><tr><th>Run</th><th>Paired cases</th><th>Only the best right</th>
<th>Only this right</th><th>p</th><th>Best - this</th></tr></thead>
<tbody>{"".join(lines)}</tbody></table></div>
"""


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
        choices += [(f"better:{index}", f"better in {entry.summary.model} ({entry.summary.mode})")
                    for index, entry in enumerate(entries)]  # fmt: skip
    filters = "".join(
        f'<option value="{_e(value)}"{" selected" * (state["filter"] == value)}>{_e(label)}</option>'
        for value, label in choices
    )
    groups = '<option value="">every group</option>' + "".join(
        f'<option value="{_e(group)}"{" selected" * (state["group"] == group)}>{_e(group)}</option>'
        for group in page.groups
    )
    form = f"""<form method="get" action="/cases" class="filters">
<input type="hidden" name="runs" value="{_e(runs)}">
<input type="hidden" name="sort" value="{_e(state["sort"])}"><input type="hidden" name="dir" value="{_e(state["dir"])}">
<input type="hidden" name="per_page" value="{_e(state["per_page"])}">
<label>Show <select name="filter">{filters}</select></label>
<label>Group <select name="group">{groups}</select></label>
<label>Search <input type="search" name="q" value="{_e(state["q"])}" placeholder="prompt or output"></label>
<button type="submit">Apply</button>
</form>"""
    heads = ['<th><a href="' + link(sort="case", dir=None, page=None) + '">Case</a></th>',
             '<th><a href="' + link(sort="group", dir=None, page=None) + '">Group</a></th>']  # fmt: skip
    for index, entry in enumerate(entries):
        sorts = " ".join(
            f'<a href="{link(sort=f"{name}:{index}", dir=_flip(state, f"{name}:{index}"), page=None)}">{name}</a>'
            for name in PER_RUN_SORTS
        )
        heads.append(
            f'<th><span class="model">{_e(entry.summary.model)}</span> <span class="mode">{_e(entry.summary.mode)}'
            f'</span><div class="key">{_e(entry.key)}</div><div class="sorts">sort: {sorts}</div></th>'
        )
    body = []
    for row in page.rows:
        grid = {"runs": runs, **{key: value for key, value in state.items() if value}, "page": str(page.page)}
        case_link = _e(f"/case/{quote(row.case_id, safe='')}?{urlencode(grid)}")
        cells = "".join(_cell(row.cells.get(entry.key), suites.get(entry.summary.suite)) for entry in entries)
        body.append(
            f'<tr><td class="case"><a href="{case_link}">{_e(row.case_id)}</a></td><td>{_e(row.group or "")}</td>'
            f"{cells}</tr>"
        )
    pager = (
        f'<p class="pager">{page.total:,} case{"s" * (page.total != 1)} · page {page.page} of {pages} '
        + (f'<a href="{link(page=page.page - 1)}" rel="prev">← previous</a> ' if page.page > 1 else "")
        + (f'<a href="{link(page=page.page + 1)}" rel="next">next →</a>' if page.page < pages else "")
        + "</p>"
    )
    names = " vs ".join(f"{entry.summary.model} ({entry.summary.mode})" for entry in entries)
    return _layout(
        f"Cases: {names}",
        f"""<h1>Cases <span class="muted">{_e(names)}</span></h1>
{form}
{pager}
<div class="scroll"><table class="grid"><thead><tr>{"".join(heads)}</tr></thead>
<tbody>{"".join(body)}</tbody></table></div>
{pager if page.rows else ""}""",
    )


def _flip(state: Mapping[str, str], sort: str) -> str:
    """The direction a sort link gives: descending when that sort is already ascending."""
    return "desc" if state["sort"] == sort and state["dir"] != "desc" else "asc"


def _cell(cell: CaseCell | None, suite: Suite[Any] | None) -> str:
    if cell is None:
        return '<td class="cell st-none">not posed</td>'
    lines = [line for record in cell.records for line in answer_lines(suite, record)]
    shown = "".join(answer_html(line, GRID_TEXT) for line in lines[:GRID_LINES])
    if len(lines) > GRID_LINES:
        shown += f'<div class="more">… {len(lines) - GRID_LINES} more lines</div>'
    tokens = "" if cell.input_tokens is None else f"{cell.input_tokens:,}+{cell.output_tokens or 0:,} tok"
    facts = [
        f"retries {cell.corrective_retries}" if cell.corrective_retries else "",
        ", ".join(cell.invalid_kinds),
        tokens,
        _usd(cell.cost_usd) if cell.cost_usd is not None else "",
        f"{cell.latency_s:.1f} s" if cell.latency_s is not None else "",
    ]
    score = "" if cell.score is None else f" {100 * cell.score:.0f}"
    repeats = f", {len(cell.records)} repeats" if len(cell.records) > 1 else ""
    return (
        f'<td class="cell st-{_e(cell.status)}" data-status="{_e(cell.status)}"><div class="status">'
        f"{_e(cell.status)}{score}{repeats}</div>{shown}"
        f'<div class="facts">{_e(" · ".join(fact for fact in facts if fact))}</div></td>'
    )


# One case -----------------------------------------------------------------------------------------------------


def case(
    entries: Sequence[RunEntry], detail: CaseDetail, query: Mapping[str, str], suites: Mapping[str, Suite[Any]]
) -> str:
    """The case in each run; `query` is the grid's state, so the way back returns to the same filter and page."""
    grid = {key: query.get(key) for key in ("filter", "group", "q", "sort", "dir", "page", "per_page")}
    back = _href("/cases", runs=_runs_param([entry.key for entry in entries]), **grid)
    prompt = (
        f"<pre>{_e(cut_text(detail.prompt, PAGE_TEXT))}</pre>"
        if detail.prompt is not None
        else '<p class="note">The prompt is not stored with these runs (made before records kept it).</p>'
    )
    runs = "".join(
        _run_section(entry, detail.runs.get(entry.key, []), suites.get(entry.summary.suite)) for entry in entries
    )
    return _layout(
        f"Case {detail.case_id}",
        f"""<p><a href="{back}">← the grid</a></p>
<h1>Case {_e(detail.case_id)}{f' <span class="muted">{_e(detail.group)}</span>' if detail.group else ""}</h1>
<h2>Prompt</h2>{prompt}
<h2>Expected</h2><pre>{_e(cut_text(_json_text(detail.expected), PAGE_TEXT))}</pre>
<div class="runs">{runs}</div>""",
    )


def _json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)


def _run_section(entry: RunEntry, records: Sequence[SampleRecord], suite: Suite[Any] | None) -> str:
    title = (
        f'<h2><span class="model">{_e(entry.summary.model)}</span> <span class="mode">{_e(entry.summary.mode)}</span>'
        f' <span class="key">{_e(entry.key)}</span></h2>'
    )
    if not records:
        return f'<section class="run">{title}<p class="note">This run did not pose the case.</p></section>'
    shown = "".join(_record(record, suite, len(records)) for record in records)
    return f'<section class="run">{title}{shown}</section>'


def _record(record: SampleRecord, suite: Suite[Any] | None, repeats: int) -> str:
    usage = record.usage
    tokens = (
        ""
        if usage.input_tokens is None
        else f" · {usage.input_tokens:,} in + {usage.output_tokens or 0:,} out tokens in {usage.requests} requests"
    )
    latency = "" if record.latency_s is None else f" · {record.latency_s:.2f} s"
    score = "" if record.score is None else f" · score {100 * record.score:.0f}"
    head = f"Repeat {record.repeat + 1}: " if repeats > 1 else ""
    attempts = "".join(_attempt(index, attempt, len(record.attempts)) for index, attempt in
                       enumerate(record.attempts, 1))  # fmt: skip
    error = f'<p class="error">Error: {_e(record.error)}</p>' if record.error else ""
    details = (
        f"<details><summary>Scorer's details</summary><pre>{_e(cut_text(_json_text(record.score_details), PAGE_TEXT))}"
        "</pre></details>"
        if record.score_details
        else ""
    )
    return f"""<div class="record st-{_e(record.status)}">
<h3>{_e(head)}<span class="status">{_e(record.status)}</span>{_e(score)}</h3>
<div class="answer-block">{"".join(answer_html(line, PAGE_TEXT) for line in answer_lines(suite, record))}</div>
<p class="facts">{_e(f"{record.corrective_retries} corrective retries · cost {_usd(record.cost.usd)} "
                     f"({record.cost.source}){tokens}{latency}")}</p>
{error}<ol class="attempts">{attempts}</ol>{details}
</div>"""  # fmt: skip


def _attempt(index: int, attempt: Attempt, count: int) -> str:
    if attempt.valid:
        verdict = "valid" + (" (the fix)" if index > 1 else "")
    else:
        verdict = f"invalid: {attempt.invalid_kind or 'other'}"
    feedback = (
        f'<div class="label">Feedback {"given to the model" if index < count else "(the last try: not sent)"}</div>'
        f"<pre>{_e(cut_text(attempt.feedback, PAGE_TEXT))}</pre>"
        if attempt.feedback
        else ""
    )
    cost = "" if attempt.cost_usd is None else f" · {_usd(attempt.cost_usd)}"
    return (
        f'<li class="attempt {"valid" if attempt.valid else "invalid"}"><div class="label">Attempt {index}: '
        f"{_e(verdict)}{_e(cost)}</div><pre>{_e(cut_text(attempt.raw, PAGE_TEXT))}</pre>{feedback}</li>"
    )
