"""The leaderboard as one self-contained HTML page: tables, plots and examples that open from disk offline.

Everything is inline (the views' one stylesheet, one small script that sorts tables and filters the case grids,
matplotlib SVG), so the page makes no request at all; a Content-Security-Policy says so to the browser too. Every
piece of text from a run (model names, raw outputs, feedback, answers) is untrusted and escaped by the templates;
the script never makes markup from data.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from typed_eval.contracts import LeaderboardRow, ModeComparison
from typed_eval.core.errors import InputError
from typed_eval.core.suite import Suite
from typed_eval.core.terminal import printable
from typed_eval.reports.case_grid import GRID_FILTERS, GRID_LINES, GRID_TEXT, CaseGrid
from typed_eval.reports.formatting import count, interval, money, number
from typed_eval.reports.html import CellView, asset, cell_view, render
from typed_eval.reports.invalid_examples import InvalidExample
from typed_eval.reports.leaderboard import CASE_SETS_NOTE, case_sets
from typed_eval.reports.mode_tables import (
    GROUP_HEADERS,
    MODE_HEADERS,
    PAIR_HEADERS,
    group_pair_lines,
    mode_table_lines,
)
from typed_eval.reports.pass_k import figure_text, pass_k_cells
from typed_eval.reports.report_figures import retries_figure, scatter
from typed_eval.reports.suite_figures import GroupLine, Shown, figure_legend, group_lines, line_groups, run_figures
from typed_eval.reports.tables import GroupHeader, group_headers, suite_title

if TYPE_CHECKING:
    from typed_eval.store.case_store import CaseCell

__all__ = ["render_html"]


def _label(row: LeaderboardRow) -> str:
    return f"{row.model} ({row.mode})"


def render_html(
    rows: Sequence[LeaderboardRow],
    examples: Mapping[str, Sequence[InvalidExample]],
    *,
    title: str = "Leaderboard",
    modes: Sequence[ModeComparison] = (),
    cases: Mapping[str, CaseGrid] | None = None,
    suites: Mapping[str, Suite[Any]] | None = None,
    profiles: Mapping[str, Sequence[tuple[list[str], list[list[str]]]]] | None = None,
) -> str:
    """One self-contained page; `examples` is keyed by LeaderboardRow.path, `cases` (`case_grids`) by suite; `suites`
    (default: those installed) head the group columns; `profiles` (`facet_profile.profile_tables`) by suite. Sections
    per suite, as the terminal leaderboard: runs of
    different suites are never compared."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("the HTML report needs matplotlib: pip install 'typed-eval[report]'") from None
    names = sorted({r.suite for r in rows})
    headers = group_headers(suites)
    # Text stays text in the SVG (half the bytes of paths); a browser without DejaVu Sans uses its own sans-serif.
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "font.sans-serif": ["DejaVu Sans", "Arial"]}):
        sections = [
            _section(s, [r for r in rows if r.suite == s], examples, i, (cases or {}).get(s), headers(s))
            | {"profile": (profiles or {}).get(s, [])}
            for i, s in enumerate(names)
        ]
    script = asset("report.js").strip()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    return render(
        "report.html",
        view="report",
        title=title,
        policy=f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'",
        style=Markup(asset("style.css")),
        script=Markup(script),
        summary=f"{count(len(rows), 'run')} in {count(len(names), 'suite')}",
        suites=names,
        modes=_modes(modes),
        sections=sections,
    )


def _modes(modes: Sequence[ModeComparison]) -> list[tuple[list[str], list[list[str]]]]:
    """The model x mode tables: each model's modes side by side, then every pair of them on paired cases."""
    if not modes:
        return []
    mode_lines: list[list[str]] = []
    pair_lines: list[list[str]] = []
    group_lines: list[list[str]] = []
    for comparison in modes:
        mine, pairs = mode_table_lines([comparison])
        mode_lines += [[comparison.suite, *line] for line in mine]
        pair_lines += [[comparison.suite, *line] for line in pairs]
        group_lines += [[comparison.suite, *line] for line in group_pair_lines([comparison])]
    tables = [(["Suite", *MODE_HEADERS], mode_lines), (["Suite", *PAIR_HEADERS], pair_lines)]
    return tables + ([(["Suite", *GROUP_HEADERS], group_lines)] if group_lines else [])


def _section(
    suite: str,
    rows: Sequence[LeaderboardRow],
    examples: Mapping[str, Sequence[InvalidExample]],
    index: int,
    grid: CaseGrid | None,
    header: GroupHeader,
) -> dict[str, object]:
    chances = {round(r.chance, 1) for r in rows if r.chance is not None}
    chance = chances.pop() if len(chances) == 1 else None
    figures = run_figures(rows)  # those per group are heatmaps of their own
    shown = [(one.header, _tip(one)) for one in figures]
    passes = [(header, _PASS_K_TIP.format(k=header[5:])) for header, _ in pass_k_cells(rows)]
    return {
        "index": index,
        "name": suite_title(suite, rows),
        "about": count(len(rows), "run")
        + ("" if chance is None else f" · chance level {chance:.1f}")
        + (f" · {CASE_SETS_NOTE}" if len(case_sets(rows)) > 1 else ""),
        "heads": _COLUMNS[:3] + shown + passes + _COLUMNS[3:],
        "rows": rows,
        "metrics": [one.name for one in figures],
        "passes": len(passes),
        "scatter": Markup(scatter(rows, index, chance)),
        "compliance": _compliance(rows),
        "heatmaps": _heatmaps(rows, header),
        "legend": figure_legend(rows),
        "retries": Markup(retries_figure(rows, index)),
        "runs": [_run(r, examples.get(r.path, ())) for r in rows],
        "grid": None if grid is None else _grid(grid, rows),
    }


_COLUMNS = [
    ("Rank", "rank; ★ = statistically tied with the best (paired test, Holm-corrected)"),
    ("Model", "model and answer mode; partial = fewer cases than the dataset"),
    ("Score", "headline score, 0-100, with its 95% bootstrap interval"),
    ("Fav. pos.", "what always choosing the option position this model chose most would score (#n, or last)"),
    ("Valid 1st", "percent of samples whose first output was valid"),
    ("Valid final", "percent valid after corrective retries"),
    ("Invalid", "invalid outputs (all attempts)"),
    ("Cost", "total cost in USD; ≥ when some samples have no known cost"),
    ("$/case", "cost per case"),
    ("$/correct", "cost per correct answer"),
    ("Score/$", "score divided by the cost per case"),
    ("Latency", "median / p95 seconds per case"),
    ("Samples", "samples scored / cases in the dataset"),
]


_PASS_K_TIP = (
    "pass^{k}: the chance that {k} trials of a case all score 1, averaged over the cases (errors count as failed "
    "trials), with its 95% bootstrap interval"
)


def _colour(score: float) -> tuple[str, str]:
    """Background and text colour for a 0-100 score: white to deep blue, text white on the dark half."""
    t = min(1.0, max(0.0, score / 100))
    light, dark = (247, 251, 255), (8, 69, 148)
    rgb = "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(light, dark, strict=True))
    return f"#{rgb}", "#fff" if t > 0.55 else "#212529"


_DASH = "\N{EN DASH}"


def _tip(one: Shown) -> str:
    """A column's tooltip: what the suite says the figure is."""
    about = one.figure.about or "a figure the suite's task reports"
    return f"{one.header}: {about}"


def _heatmaps(rows: Sequence[LeaderboardRow], header: GroupHeader) -> list[dict[str, object]]:
    """A heatmap per figure of each group: the score per group (named as the score is), then each kind of the
    suite's own figures per group, under the name the suite gives it (no group at all: one saying so)."""
    lines = group_lines(rows)
    if not lines:
        return [{"caption": f"{rows[0].title if rows else 'Score'} per group", "heads": [], "lines": []}]
    return [_heatmap(rows, header, line) for line in lines]


def _heatmap(rows: Sequence[LeaderboardRow], header: GroupHeader, line: GroupLine) -> dict[str, object]:
    """A table with coloured cells rather than an image: lighter, and readable by screen readers and search."""
    groups = line_groups(rows, [line])
    lines = []
    for r in rows:
        cells: list[dict[str, object] | None] = []
        for name in groups:
            value = _group_value(r, line, name)
            if value is None:
                cells.append(None)
                continue
            background, colour = _colour(value)
            ci = r.class_ci95.get(name) if line.names is None else None
            tip = f"{name}: {value:.1f}" + (f" (95%: {interval(ci, between=_DASH)})" if ci else "")
            cells.append({"background": background, "colour": colour, "tip": tip, "value": value})
        lines.append({"label": _label(r), "row": r, "cells": cells})
    return {"caption": f"{line.label} per group", "heads": [header(name) for name in groups], "lines": lines}


def _group_value(row: LeaderboardRow, line: GroupLine, group: str) -> float | None:
    """The line's 0-100 figure for the group (a figure in dollars is no colour: None)."""
    if line.names is None:
        return row.classes.get(group)
    name = line.names.get(group)
    return None if name is None or name.endswith("-usd") else row.metrics.get(name)


def _compliance(rows: Sequence[LeaderboardRow]) -> list[dict[str, object]]:
    """Stacked bars per run: valid on the first try, made valid by corrective retries, still invalid."""
    bars: list[dict[str, object]] = []
    for r in rows:
        if r.valid_first_try is None:
            bars.append({"label": _label(r), "row": r, "parts": None, "text": ""})
            continue
        first = r.valid_first_try
        final = max(first, r.valid_after_retries if r.valid_after_retries is not None else first)
        parts = [
            ("first", first, "valid first try"),
            ("retry", final - first, "valid after retries"),
            ("invalid", 100 - final, "still invalid"),
        ]
        kinds = ", ".join(f"{kind} {times}" for kind, times in sorted(r.invalid_by_kind.items(), key=lambda kv: -kv[1]))
        text = f"{first:.1f}% first try, {final:.1f}% after retries" + (f"; invalid: {kinds}" if kinds else "")
        bars.append({"label": _label(r), "row": r, "parts": [part for part in parts if part[1] > 0], "text": text})
    return bars


def _run(row: LeaderboardRow, examples: Sequence[InvalidExample]) -> dict[str, object]:
    """A run's facts and first invalid outputs, under a line that opens them."""
    latency = f"median {number(row.latency_median_s)} s, p95 {number(row.latency_p95_s)} s"
    favourite = f"{row.favourite_position} (always choosing it scores {number(row.favourite_position_score, 1)})"
    facts = [
        ("Run", row.run_id),
        ("Status", row.status + ("" if row.complete else " (partial: fewer cases than the dataset)")),
        ("Samples", f"{row.samples} of {row.cases} cases, {count(row.repeats, 'repeat')}"),
        ("Chance", number(row.chance, 1)),
        ("Favourite position", "" if row.favourite_position is None else favourite),
        ("Corrective retries", str(row.corrective_retries)),
        ("Invalid outputs", ", ".join(f"{k} {n}" for k, n in row.invalid_by_kind.items()) or str(row.invalid_outputs)),
        ("Latency", "" if row.latency_median_s is None else latency),
        ("pass^k", ", ".join(f"pass^{f.k} {figure_text(f)}" for f in row.pass_k)),
        ("Reason", row.reason or ""),
        ("File", row.path),
    ]
    return {
        "label": _label(row),
        "row": row,
        "about": ("DNF" if row.status == "dnf" else f"score {number(row.score, 1)}")
        + f" · {row.invalid_outputs} invalid",
        "run_id": row.run_id,
        "facts": [(name, value) for name, value in facts if value],
        "examples": examples,
    }


_FILTER_TIPS = {
    "all": "every case",
    "disagree": "scored in every run shown, with scores not all equal",
    "wrong": "scored below full marks in some run",
    "invalid": "an invalid output in some run (before or after corrective retries)",
    "error": "a failed call in some run",
    "unsupported": "a schema the provider refused in some run",
}


def _grid(grid: CaseGrid, rows: Sequence[LeaderboardRow]) -> dict[str, object]:
    """A row per case, a column per run; the radio buttons and the search box hide rows (the page's script toggles
    `hidden` by each row's `data-f` words and its text, never making markup)."""
    by_path = {r.path: r for r in rows}
    total = len(grid.rows)
    choices = []
    for name in ("all", *GRID_FILTERS):
        kept = grid.filters.get(name)
        kept_count = total if name == "all" else None if kept is None else len(kept)
        tip = _FILTER_TIPS[name] if kept_count is not None else "disagree compares runs: this suite has one"
        choices.append({"name": name, "count": kept_count, "tip": tip})
    cases = [
        {
            "marks": " ".join(name for name in GRID_FILTERS if case.case_id in grid.filters.get(name, ())),
            "case_id": case.case_id,
            "group": case.group or "",
            "cells": [_grid_cell(case.cells.get(path), grid.suite) for path in grid.runs],
        }
        for case in grid.rows
    ]
    shown = grid.notice is None and grid.runs
    return {
        "notice": grid.notice,
        "runs": grid.runs,
        "no_records": [_label(by_path[path]) for path in grid.no_records if path in by_path],
        "damaged": [printable(line) for line in grid.damaged],
        "about": f"{count(total, 'case')} x {count(len(grid.runs), 'run')}" if shown else "",
        "total": total,
        "choices": choices,
        "heads": [by_path[path] for path in grid.runs],
        "rows": cases,
    }


def _grid_cell(cell: CaseCell | None, suite: Suite[Any] | None) -> CellView | None:
    """One run's answer to one case: status (and score when partial), answer lines, invalid kinds, corrective
    retries and cost."""
    if cell is None:
        return None
    score = "" if cell.score is None or cell.status not in ("partial", "mixed") else f" {100 * cell.score:.0f}"
    repeats = f" · {len(cell.records)} repeats" if len(cell.records) > 1 else ""
    retries = cell.corrective_retries
    facts = [
        "invalid: " + ", ".join(cell.invalid_kinds) if cell.invalid_kinds else "",
        f"{retries} corrective retr{'y' if retries == 1 else 'ies'}" if retries else "",
        money(cell.cost_usd),
    ]
    head = f"{cell.status}{score}{repeats}"
    return cell_view(cell, suite, head=head, facts=facts, lines=GRID_LINES, text=GRID_TEXT, per_line=False)
