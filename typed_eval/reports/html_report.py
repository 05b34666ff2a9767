"""The leaderboard as one self-contained HTML page: tables, plots and examples that open from disk offline.

Everything is inline (CSS, one small script that sorts tables and filters the case grids, matplotlib SVG), so the
page makes no request at all; a Content-Security-Policy says so to the browser too. Every piece of text from a run
(model names, raw outputs, feedback, answers) is untrusted and escaped; the script never makes markup from data.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.core.suite import AnswerLine, AnswerMark, Suite, answer_lines, find_suites
from typed_eval.reports.tables import (
    MODE_HEADERS,
    PAIR_HEADERS,
    class_header,
    metric_columns,
    mode_table_lines,
    retry_cost_share,
    suite_title,
)
from typed_eval.schemas import LeaderboardRow, ModeComparison, SampleRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

    from typed_eval.store.case_store import CaseCell, CaseRow, CaseStore

__all__ = [
    "GRID_FILTERS",
    "MAX_GRID_CASES",
    "MAX_GRID_CELLS",
    "CaseGrid",
    "InvalidExample",
    "InvalidExamples",
    "answer_html",
    "case_grids",
    "cut_text",
    "invalid_examples",
    "render_html",
]

MAX_TEXT = 2000
"""Characters of a raw output or feedback shown in full; the rest is cut with a visible marker."""

MAX_GRID_CASES = 2_000
MAX_GRID_CELLS = 10_000
"""The case grids inlined in the page: at most `MAX_GRID_CASES` cases in one suite's grid, and `MAX_GRID_CELLS` cells
(cases x runs) in all the page's grids, the suites taken in the page's order. A suite over either bound gets one
line saying so and how to browse its cases (`main.py view`), never a grid cut short. Why these, measured with Debian's
headless chromium on a 2-CPU machine: a cell weighs about 180 bytes with a short answer (an option number) and about
720 with `GRID_TEXT` characters of markup-heavy text (escaped); 10,000 cells (2,000 cases x 5 runs) make a 1.8 MB
page (7.2 MB with long answers) that loads and lays out in about 2 s, while 20,000 long ones make 14 MB and 7 to 10 s.
Beyond 2,000 rows one table is no longer read by scrolling: that is the viewer's job (it pages, sorts, and shows whole
answers)."""
GRID_LINES = 4
"""Answer lines shown in one cell at most (all repeats' lines, in order); the rest are counted."""
GRID_TEXT = 200
"""Characters of answer text shown in one cell, over its lines; the rest is cut with a visible marker (the viewer's
case page shows whole answers)."""
GRID_FILTERS = ("disagree", "wrong", "invalid", "error")
"""The filters a grid offers beside `all`, as `CaseStore` defines them; a row's `data-f` names those that keep it."""


@dataclass(frozen=True)
class InvalidExample:
    """One rejected output of a run, as the page shows it: what the model sent and what it was told."""

    case_id: str
    repeat: int
    kind: str | None
    raw: str
    feedback: str | None


def _truncate(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n[… truncated: {len(text) - MAX_TEXT} more characters]"


class InvalidExamples:
    """The first `limit` invalid attempts of a run's records (in record order), gathered as the records go by: a few
    concrete failures say more about a model's format problems than the counts alone."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.found: list[InvalidExample] = []

    def add(self, record: SampleRecord) -> None:
        for attempt in record.attempts:
            if len(self.found) >= self.limit:
                return
            if not attempt.valid:
                feedback = None if attempt.feedback is None else _truncate(attempt.feedback)
                example = InvalidExample(
                    record.case_id, record.repeat, attempt.invalid_kind, _truncate(attempt.raw), feedback
                )
                self.found.append(example)


def invalid_examples(records: Iterable[SampleRecord], limit: int = 3) -> list[InvalidExample]:
    """The first `limit` invalid attempts of a run's records."""
    examples = InvalidExamples(limit)
    for record in records:
        examples.add(record)
    return examples.found


@dataclass(frozen=True)
class CaseGrid:
    """One suite's cases as the page shows them: a row per case (in `CaseStore`'s order), a column per run (`runs`:
    each run's `LeaderboardRow.path`, in the board's order; the rows' cells are keyed by it), and per case the
    filters that keep it. A suite too big to inline has no rows and a `notice` saying so."""

    runs: tuple[str, ...]
    rows: tuple[CaseRow, ...] = ()
    filters: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """By filter (`GRID_FILTERS`): the case ids it keeps. `disagree` is absent with fewer than two runs."""
    suite: Suite[Any] | None = None
    """The suite whose `show_answer` shows the answers (None: not installed here; answers are shown as JSON)."""
    notice: str | None = None
    """Why the cases are not inlined (plain text)."""
    no_records: tuple[str, ...] = ()
    """Runs of the suite with no column: they stored no record."""


def case_grids(
    results_dir: Path,
    rows: Sequence[LeaderboardRow],
    *,
    max_cases: int = MAX_GRID_CASES,
    max_cells: int = MAX_GRID_CELLS,
    suites: Mapping[str, Suite[Any]] | None = None,
) -> dict[str, CaseGrid]:
    """The case grid of each suite of the board's `rows` (stored under `results_dir`), by suite name, read through
    `CaseStore`; suites over `max_cases`, or whose cells would take the page past `max_cells`, get a notice instead
    (see `MAX_GRID_CELLS`), as does one whose records cannot be read. `suites` by name (default: those installed)
    show the answers."""
    from typed_eval.store.case_store import CaseStore

    if suites is None:
        suites = {found.suite.name: found.suite for found in find_suites(on_error=lambda _: None)}
    if results_dir.is_file():  # one run's summary, as `format_result.py` takes it: its run folder
        results_dir = results_dir.parent
    view = f"run `python main.py view {shlex.quote(str(results_dir))}` to browse them"
    store = CaseStore(results_dir)
    try:
        entries = store.runs()
        keys = {str(entry.run.path): entry.key for entry in entries}
        least = {str(entry.run.path): entry.summary.scores.samples // max(1, entry.summary.settings.repeats)
                 for entry in entries}  # fmt: skip
        grids: dict[str, CaseGrid] = {}
        cells = 0
        for name in sorted({r.suite for r in rows}):
            paths = [r.path for r in rows if r.suite == name]
            suite = suites.get(name)
            try:
                located = [(path, keys.get(path)) for path in paths]
                at_least = max((least.get(path, 0) for path in paths), default=0)
                grid = _suite_grid(store, located, suite, max_cases, (cells, max_cells), view, at_least)
            except ResultFileError as exc:
                grid = CaseGrid(tuple(paths), suite=suite, notice=f"The cases of this suite are not inlined: {exc}.")
            cells += len(grid.rows) * len(grid.runs)
            grids[name] = grid
        return grids
    finally:
        store.close()


def _suite_grid(
    store: CaseStore,
    paths: Sequence[tuple[str, str | None]],
    suite: Suite[Any] | None,
    max_cases: int,
    cells: tuple[int, int],
    view: str,
    at_least: int = 0,
) -> CaseGrid:
    """One suite's grid: `paths` are its runs' (`LeaderboardRow.path`, `CaseStore` key or None when not stored);
    `cells` the cells the page holds already and the most it may; `view` says how to browse cases not inlined;
    `at_least` the cases its runs' summaries say one of them scored: over `max_cases`, no run is read (a run of
    100,000 records takes DuckDB seconds and a GB to load, for a grid not shown)."""
    if at_least > max_cases:
        runs = tuple(path for path, key in paths if key is not None)
        notice = (
            f"The cases of this suite are not inlined: {_many(at_least, 'case')} is more than {max_cases:,}; {view}."
        )
        return CaseGrid(runs, suite=suite, notice=notice, no_records=tuple(p for p, key in paths if key is None))
    by_key = {key: path for path, key in paths if key is not None and store.case_ids([key])}
    runs = tuple(by_key.values())
    no_records = tuple(path for path, _ in paths if path not in runs)
    if not runs:
        return CaseGrid((), suite=suite, no_records=no_records)
    shown = list(by_key)
    total = len(store.case_ids(shown))
    held, most = cells
    if total > max_cases:
        notice = f"The cases of this suite are not inlined: {_many(total, 'case')} is more than {max_cases:,}; {view}."
        return CaseGrid(runs, suite=suite, notice=notice, no_records=no_records)
    if held + total * len(runs) > most:
        notice = (
            f"The cases of this suite are not inlined: {_many(total, 'case')} x {_many(len(runs), 'run')} would take "
            f"the page to {held + total * len(runs):,} cells, more than {most:,}; {view}."
        )
        return CaseGrid(runs, suite=suite, notice=notice, no_records=no_records)
    found: list[CaseRow] = []
    page = 1
    while True:
        got = store.cases(shown, page=page, per_page=1000)
        found += [replace(row, cells={by_key[key]: cell for key, cell in row.cells.items()}) for row in got.rows]
        if page * got.per_page >= got.total:
            break
        page += 1
    filters = {f: frozenset(store.case_ids(shown, filter=f)) for f in GRID_FILTERS if f != "disagree" or len(shown) > 1}
    return CaseGrid(runs, tuple(found), filters, suite, None, no_records)


def render_html(
    rows: Sequence[LeaderboardRow],
    examples: Mapping[str, Sequence[InvalidExample]],
    *,
    title: str = "Leaderboard",
    modes: Sequence[ModeComparison] = (),
    cases: Mapping[str, CaseGrid] | None = None,
) -> str:
    """One self-contained page; `examples` is keyed by LeaderboardRow.path, `cases` (`case_grids`) by suite. Sections
    per suite, as the terminal leaderboard: runs of different suites are never compared."""
    try:
        import matplotlib
    except ImportError:
        raise InputError("the HTML report needs matplotlib: pip install 'typed-eval[report]'") from None
    suites = sorted({r.suite for r in rows})
    # Text stays text in the SVG (half the bytes of paths); a browser without DejaVu Sans uses its own sans-serif.
    with matplotlib.rc_context({"svg.fonttype": "none", "font.size": 9, "font.sans-serif": ["DejaVu Sans", "Arial"]}):
        sections = [
            _suite_section(s, [r for r in rows if r.suite == s], examples, i, (cases or {}).get(s))
            for i, s in enumerate(suites)
        ]
    script = _SCRIPT.strip()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    summary = f"{len(rows)} run{'s' * (len(rows) != 1)} in {len(suites)} suite{'s' * (len(suites) != 1)}"
    nav = " · ".join(f'<a href="#suite-{i}">{_e(s)}</a>' for i, s in enumerate(suites)) if len(suites) > 1 else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<header><h1>{_e(title)}</h1><p class="muted">{summary}. Scores 0-100 with 95% intervals; click a column
header to sort.{f" Suites: {nav}" if nav else ""}</p></header>
{_modes_section(modes)}{"".join(sections)}
<script>{script}</script>
</body>
</html>
"""


def _modes_section(modes: Sequence[ModeComparison]) -> str:
    """The model x mode table: each model's modes side by side, then every pair of them on paired cases."""
    if not modes:
        return ""
    mode_lines: list[list[str]] = []
    pair_lines: list[list[str]] = []
    for comparison in modes:
        mine, pairs = mode_table_lines([comparison])
        mode_lines += [[comparison.suite, *line] for line in mine]
        pair_lines += [[comparison.suite, *line] for line in pairs]
    tables = []
    for headers, lines in ((("Suite", *MODE_HEADERS), mode_lines), (("Suite", *PAIR_HEADERS), pair_lines)):
        head = "".join(f'<th scope="col"><button type="button">{_e(h)}</button></th>' for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in line) + "</tr>" for line in lines)
        tables.append(_scroll_table("sortable", head, body))
    return f"""<section id="modes">
<h2>Answer modes <span class="muted">each model's modes on the same cases; pairs compared case by case (McNemar
exact, or the sign test), Holm-corrected over each model's pairs</span></h2>
{"".join(tables)}
</section>
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _suite_section(
    suite: str,
    rows: Sequence[LeaderboardRow],
    examples: Mapping[str, Sequence[InvalidExample]],
    index: int,
    grid: CaseGrid | None,
) -> str:
    chances = {round(r.chance, 1) for r in rows if r.chance is not None}
    chance = chances.pop() if len(chances) == 1 else None
    about = f"{len(rows)} run{'s' * (len(rows) != 1)}" + ("" if chance is None else f" · chance level {chance:.1f}")
    name = suite_title(suite, rows)
    return f"""<section id="suite-{index}">
<h2>{_e(name)} <span class="muted">{about}</span></h2>
{_table(rows)}
<div class="grid">
<figure class="card"><figcaption>Score vs cost per case</figcaption>{_scatter(rows, index, chance)}</figure>
<figure class="card"><figcaption>Format compliance</figcaption>{_compliance(rows)}</figure>
</div>
<figure class="card"><figcaption>Score per class</figcaption>{_heatmap(rows)}</figure>
{_retries_figure(rows, index)}
<h3>Runs</h3>
{"".join(_details(r, examples.get(r.path, ())) for r in rows)}
{"" if grid is None else _case_grid(grid, rows, index)}</section>
"""


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    """Three significant digits, never scientific notation: $0.000123, $0.0123, $1.50."""
    if value is None:
        return ""
    if value == 0:
        return "$0"
    return f"${value:.{max(2, 2 - math.floor(math.log10(abs(value))))}f}"


def _key(value: float | int | str | None) -> str:
    return "" if value is None else _e(value)


def _cell(text: str, key: float | int | str | None, cls: str = "num") -> str:
    return f'<td class="{cls}" data-v="{_key(key)}">{text}</td>'


def _badges(row: LeaderboardRow) -> str:
    badges = []
    if not row.complete or row.status == "partial":
        done = f"{row.samples} samples of {row.cases} cases" + (f" x {row.repeats}" if row.repeats > 1 else "")
        badges.append(f'<span class="badge warn" title="partial or limited run: {_e(done)}">partial</span>')
    if row.status == "dnf":
        badges.append(f'<span class="badge bad" title="{_e(row.reason or "did not finish")}">DNF</span>')
    return "".join(badges)


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


def _table(rows: Sequence[LeaderboardRow]) -> str:
    metrics = metric_columns(rows)
    shown = [(name, f"{name}: a figure the suite's task reports") for name in metrics]
    columns = _COLUMNS[:3] + shown + _COLUMNS[3:]
    head = "".join(
        f'<th scope="col" title="{_e(tip)}"><button type="button">{_e(name)}</button></th>' for name, tip in columns
    )
    body = "".join(_table_row(r, metrics) for r in rows)
    return _scroll_table("leaderboard sortable", head, body)


def _scroll_table(cls: str, head: str, body: str) -> str:
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _table_row(r: LeaderboardRow, metrics: Sequence[str]) -> str:
    star = ' <span class="star" title="statistically tied with the best">★</span>' if r.rank_group == 1 else ""
    ci = f'<span class="ci">{r.score_ci95[0]:.1f}&ndash;{r.score_ci95[1]:.1f}</span>' if r.score_ci95 else ""
    score = "DNF" if r.status == "dnf" else _num(r.score)
    if r.cost_usd is None:
        cost = '<span class="muted">unknown</span>'
    else:
        cost = f"{'' if r.cost_complete else '≥'}{_usd(r.cost_usd)}"
    latency = "" if r.latency_median_s is None else f"{r.latency_median_s:.2f} / {_num(r.latency_p95_s, 2)}"
    samples = (
        f"{r.samples} / {r.cases}" + (f" &times;{r.repeats}" if r.repeats > 1 else "") if r.cases else str(r.samples)
    )
    cls = ' class="partial"' if not r.complete or r.status == "partial" else ""
    cells = [
        _cell(f"{'' if r.rank is None else r.rank}{star}", r.rank),
        _cell(
            f'<span class="model">{_e(r.model)}</span> <span class="mode">{_e(r.mode)}</span>{_badges(r)}',
            r.model,
            "text",
        ),
        _cell(f"<strong>{score}</strong>{ci}", r.score),
        *(_cell(_num(r.metrics.get(name), 2), r.metrics.get(name)) for name in metrics),
        _cell(_favourite(r), r.favourite_position_score),
        _cell(_num(r.valid_first_try), r.valid_first_try),
        _cell(_num(r.valid_after_retries), r.valid_after_retries),
        _cell(str(r.invalid_outputs), r.invalid_outputs),
        _cell(cost, r.cost_usd),
        _cell(_usd(r.cost_per_case_usd), r.cost_per_case_usd),
        _cell(_usd(r.cost_per_correct_usd), r.cost_per_correct_usd),
        _cell("" if r.score_per_usd is None else f"{r.score_per_usd:,.0f}", r.score_per_usd),
        _cell(latency, r.latency_median_s),
        _cell(samples, r.samples),
    ]
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _favourite(row: LeaderboardRow) -> str:
    position = row.favourite_position
    if position is None or row.favourite_position_score is None:
        return ""
    where = "last" if position == "last" else f"#{position}"
    return f'{row.favourite_position_score:.1f} <span class="mode">{where}</span>'


def _label(row: LeaderboardRow) -> str:
    return f"{row.model} ({row.mode})"


def _scatter(rows: Sequence[LeaderboardRow], index: int, chance: float | None) -> str:
    """Score over cost per case: whiskers for the 95% interval, the Pareto front as a step line. Runs with an
    unknown cost are listed under the plot, never drawn as free."""
    points = [(r, c) for r in rows if r.score is not None and (c := r.cost_per_case_usd) is not None]
    apart = {
        "unknown-cost": ("cost unknown", [r for r in rows if r.score is not None and r.cost_usd is None]),
        "partial-cost": (
            "cost only partly known",
            [r for r in rows if r.score is not None and r.cost_usd is not None and r.cost_per_case_usd is None],
        ),
        "no-score": ("no score", [r for r in rows if r.score is None]),
    }
    notes = [
        f'<p class="note {cls}">Not plotted, {why}: {", ".join(_e(_label(r)) for r in left)}.</p>'
        for cls, (why, left) in apart.items()
        if left
    ]
    if not points:
        return '<p class="note">No run with both a score and a known cost.</p>' + "".join(notes)
    return f'<div class="plot">{_scatter_svg(points, index, chance)}</div>' + "".join(notes)


def _scatter_svg(points: Sequence[tuple[LeaderboardRow, float]], index: int, chance: float | None) -> str:
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullLocator

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    positive = [c for _, c in points if c > 0]
    log = len(positive) > 1 and max(positive) > 10 * min(positive)
    free = log and len(positive) < len(points)
    zero_at = min(positive) / 10 if log else 0.0  # a free (local) run sits one decade left of the cheapest paid one
    xs = [c if c > 0 else zero_at for _, c in points]
    ys = [r.score or 0.0 for r, _ in points]
    low = [max(0.0, y - r.score_ci95[0]) if r.score_ci95 else 0.0 for (r, _), y in zip(points, ys, strict=True)]
    high = [max(0.0, r.score_ci95[1] - y) if r.score_ci95 else 0.0 for (r, _), y in zip(points, ys, strict=True)]
    ax.errorbar(xs, ys, yerr=[low, high], fmt="none", ecolor="#9aa5b1", elinewidth=1.2, capsize=3, zorder=1)
    front = sorted((x, y) for (r, _), x, y in zip(points, xs, ys, strict=True) if r.pareto)
    if front:
        ax.step([x for x, _ in front], [y for _, y in front], where="post", color="#d9480f", lw=1.5, zorder=2)
    for (row, _), x, y in zip(points, xs, ys, strict=True):
        on_front = bool(row.pareto)
        ax.scatter(
            [x],
            [y],
            s=70 if on_front else 40,
            marker="D" if on_front else "o",
            facecolors=("#d9480f" if on_front else "#1c7ed6") if row.complete else "white",
            edgecolors="#d9480f" if on_front else "#1c7ed6",
            linewidths=1.5,
            zorder=3,
        )
    bottom = min([y - lo for y, lo in zip(ys, low, strict=True)] + ([] if chance is None else [chance]))
    if chance is not None:
        ax.axhline(chance, color="#868e96", lw=1, ls="--", zorder=0)
        ax.annotate("chance", (1, chance), xycoords=("axes fraction", "data"), xytext=(0, 3),
                    textcoords="offset points", ha="right", fontsize=8, color="#868e96")  # fmt: skip
    _legend(ax, any(r.pareto for r, _ in points), not all(r.complete for r, _ in points))
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        if max(positive) < 300 * min(positive):  # two decades or less: 1, 2, 5 in each, or too few ticks
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.set_xlim(min(xs) / 2, max(xs) * 2)
        if free:  # "$0" then the decades, a dotted line between them: zero has no place on a log scale
            ax.set_xticks([zero_at, *(t for t in ax.get_xticks() if zero_at * 3 < t <= max(xs) * 2)])
            ax.axvline(zero_at * 3, color="#adb5bd", lw=1, ls=":")
    else:
        right = max(xs) * 1.15 or 1.0
        ax.set_xlim(-0.04 * right if max(xs) else -right, right)  # free runs are not drawn on the axis
        ax.xaxis.set_major_locator(MaxNLocator(5) if max(xs) else FixedLocator([0.0]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: "$0" if free and value == zero_at else _tick(value)))
    top = max(y + h for y, h in zip(ys, high, strict=True))
    ax.set_ylim(max(-3.0, bottom - 8), min(103.0, top + 8))
    ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= 100])
    ax.set_xlabel("cost per case (USD" + (", log scale)" if log else ")"))
    ax.set_ylabel("score")
    ax.grid(True, color="#e9ecef", lw=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    _labels(
        fig, ax, [(_label(r) + ("" if r.complete else " *"), x, y) for (r, _), x, y in zip(points, xs, ys, strict=True)]
    )
    return _svg(fig, index)


def _tick(value: float) -> str:
    """A dollar tick: three significant digits, trailing zeros dropped ($0.0001, $0.0025, $1.5)."""
    if value <= 0:
        return "$0"
    text = f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}"
    return "$" + (text.rstrip("0").rstrip(".") if "." in text else text)


def _legend(ax: Axes, front: bool, partial: bool) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="#9aa5b1", marker="|", ls="none", markersize=10, label="95% interval")]
    if front:
        handles.append(Line2D([], [], color="#d9480f", marker="D", label="Pareto front"))
    if partial:
        handles.append(Line2D([], [], color="#1c7ed6", marker="o", mfc="white", ls="none", label="* partial run"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1), ncols=len(handles), fontsize=8, frameon=False)


def _labels(fig: Figure, ax: Axes, labels: Sequence[tuple[str, float, float]]) -> None:
    """Name each point, trying a few positions around it so that labels do not overlap each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # type: ignore[no-untyped-call]
    placed: list[Bbox] = []
    offsets = [(6, 4, "left", "bottom"), (6, -4, "left", "top"), (-6, 4, "right", "bottom"), (-6, -4, "right", "top")]
    for text, x, y in sorted(labels, key=lambda item: -item[2]):
        for attempt, (dx, dy, ha, va) in enumerate([*offsets, offsets[0]]):
            note = ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=8,
                color="#343a40", parse_math=False, annotation_clip=False,
            )  # fmt: skip
            box = note.get_window_extent(renderer)
            inside = fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
            if attempt == len(offsets) or (inside and not any(box.overlaps(other) for other in placed)):
                break  # the last try is the first position again, kept even if it overlaps
            note.remove()
        placed.append(box)


def _svg(fig: Figure, index: int) -> str:
    """The figure as an inline <svg>: no XML prolog, deterministic ids (unique per figure in the page)."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"farel-{index}"}):
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
    svg = out.getvalue()
    svg = svg[svg.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)


def _colour(score: float) -> tuple[str, str]:
    """Background and text colour for a 0-100 score: white to deep blue, text white on the dark half."""
    t = min(1.0, max(0.0, score / 100))
    light, dark = (247, 251, 255), (8, 69, 148)
    rgb = "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(light, dark, strict=True))
    return f"#{rgb}", "#fff" if t > 0.55 else "#212529"


def _heatmap(rows: Sequence[LeaderboardRow]) -> str:
    """A table with coloured cells rather than an image: lighter, and readable by screen readers and search."""
    classes = list(dict.fromkeys(name for r in rows for name in r.classes))
    if not classes:
        return '<p class="note">No per-class scores.</p>'
    head = "".join(f'<th scope="col">{_e(class_header(c))}</th>' for c in classes)
    body = []
    for r in rows:
        cells = []
        for name in classes:
            value = r.classes.get(name)
            if value is None:
                cells.append('<td class="empty"></td>')
                continue
            bg, fg = _colour(value)
            ci = r.class_ci95.get(name)
            tip = f' title="{_e(name)}: {value:.1f}' + (f" (95%: {ci[0]:.1f}&ndash;{ci[1]:.1f})" if ci else "") + '"'
            cells.append(f'<td style="background:{bg};color:{fg}"{tip}>{value:.0f}</td>')
        label = f'<th scope="row">{_e(_label(r))}{_badges(r)}</th>'
        body.append(f"<tr>{label}{''.join(cells)}</tr>")
    return _scroll_table("heatmap", f"<th></th>{head}", "".join(body))


def _retries_figure(rows: Sequence[LeaderboardRow], index: int) -> str:
    """Score and valid outputs against the corrective retries allowed, a line each per run: what retries bought."""
    shown = [r for r in rows if len(r.score_by_retries) > 1]
    if not shown:
        return ""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.4, 3.4))
    score_axes, valid_axes = fig.subplots(1, 2)
    for row in shown:
        steps = range(len(row.score_by_retries))
        score_axes.plot(steps, [v if v is not None else float("nan") for v in row.score_by_retries], marker="o",
                        label=_label(row))  # fmt: skip
        valid_axes.plot(steps, [v if v is not None else float("nan") for v in row.valid_by_retries], marker="o")
    for axes, name in ((score_axes, "score"), (valid_axes, "valid outputs, %")):
        axes.set_xlabel("corrective retries allowed")
        axes.set_ylabel(name)
        axes.set_ylim(0, 100)
        axes.xaxis.get_major_locator().set_params(integer=True)
    score_axes.legend(fontsize=7)
    fig.tight_layout()
    shares = "".join(
        f"<li>{_e(_label(r))}: {r.retry_requests} retries cost {_usd(r.retry_cost_usd) or 'an unknown amount'}"
        + (f" ({share:.1f}% of the run)" if (share := retry_cost_share(r)) else "")
        + "</li>"
        for r in shown
        if r.retry_requests is not None
    )
    return (f'<figure class="card"><figcaption>What corrective retries bought</figcaption>'
            f'<div class="plot">{_svg(fig, 1000 + index)}</div><ul class="note">{shares}</ul></figure>')  # fmt: skip


def _compliance(rows: Sequence[LeaderboardRow]) -> str:
    """Stacked bars per run: valid on the first try, made valid by corrective retries, still invalid."""
    items = []
    for r in rows:
        label = f'<div class="bar-label">{_e(_label(r))}{_badges(r)}</div>'
        if r.valid_first_try is None:
            items.append(f'<li>{label}<div class="note">no answered samples</div></li>')
            continue
        first = r.valid_first_try
        final = max(first, r.valid_after_retries if r.valid_after_retries is not None else first)
        parts = [("first", first, "valid first try"), ("retry", final - first, "valid after retries"),
                 ("invalid", 100 - final, "still invalid")]  # fmt: skip
        bar = "".join(
            f'<span class="seg {cls}" style="width:{width:.2f}%" title="{tip}: {width:.1f}%"></span>'
            for cls, width, tip in parts
            if width > 0
        )
        kinds = ", ".join(
            f"{_e(kind)} {count}" for kind, count in sorted(r.invalid_by_kind.items(), key=lambda kv: -kv[1])
        )
        text = f"{first:.1f}% first try, {final:.1f}% after retries" + (f"; invalid: {kinds}" if kinds else "")
        bar = f'<div class="bar" role="img" aria-label="{text}">{bar}</div>'
        items.append(f'<li>{label}{bar}<div class="kinds">{text}</div></li>')
    legend = (
        '<div class="legend"><span class="seg first"></span>valid first try <span class="seg retry"></span>'
        'valid after retries <span class="seg invalid"></span>still invalid</div>'
    )
    return f'{legend}<ul class="bars">{"".join(items)}</ul>'


def _details(row: LeaderboardRow, examples: Sequence[InvalidExample]) -> str:
    latency = f"median {_num(row.latency_median_s, 2)} s, p95 {_num(row.latency_p95_s, 2)} s"
    facts = [
        ("Run", row.run_id),
        ("Status", row.status + ("" if row.complete else " (partial: fewer cases than the dataset)")),
        ("Samples", f"{row.samples} of {row.cases} cases, {row.repeats} repeat{'s' * (row.repeats != 1)}"),
        ("Chance", _num(row.chance)),
        ("Favourite position", "" if row.favourite_position is None else
         f"{row.favourite_position} (always choosing it scores {_num(row.favourite_position_score)})"),
        ("Corrective retries", str(row.corrective_retries)),
        ("Invalid outputs", ", ".join(f"{k} {n}" for k, n in row.invalid_by_kind.items()) or str(row.invalid_outputs)),
        ("Latency", "" if row.latency_median_s is None else latency),
        ("Reason", row.reason or ""),
        ("File", row.path),
    ]  # fmt: skip
    dl = "".join(f"<dt>{name}</dt><dd>{_e(value)}</dd>" for name, value in facts if value)
    shown = "".join(
        f"""<div class="example"><div class="example-head">case <code>{_e(x.case_id)}</code>, repeat {x.repeat}:
<span class="badge bad">{_e(x.kind or "invalid")}</span></div>
<div class="pre-label">Raw output</div><pre>{_e(x.raw)}</pre>"""
        + ("" if x.feedback is None else f'<div class="pre-label">Feedback given</div><pre>{_e(x.feedback)}</pre>')
        + "</div>"
        for x in examples
    )
    if examples:
        shown = f"<h4>First invalid outputs</h4>{shown}"
    about = ("DNF" if row.status == "dnf" else f"score {_num(row.score)}") + f" · {row.invalid_outputs} invalid"
    return f"""<details class="run"><summary><span class="model">{_e(_label(row))}</span>{_badges(row)}
<span class="muted">{about} · {_e(row.run_id)}</span></summary><dl>{dl}</dl>{shown}</details>
"""


_FILTER_TIPS = {
    "all": "every case",
    "disagree": "scored in every run shown, with scores not all equal",
    "wrong": "scored below full marks in some run",
    "invalid": "an invalid output in some run (before or after corrective retries)",
    "error": "a failed call in some run",
}
_STATUSES = {"correct", "partial", "mixed", "incorrect", "missing", "error"}


def _case_grid(grid: CaseGrid, rows: Sequence[LeaderboardRow], index: int) -> str:
    """A row per case, a column per run; the radio buttons and the search box hide rows (the page's script toggles
    `hidden` by each row's `data-f` words and its text, never making markup)."""
    by_path = {r.path: r for r in rows}
    no_records = "".join(
        f'<p class="note">No column for {_e(_label(by_path[path]))}: it stored no record.</p>'
        for path in grid.no_records
        if path in by_path
    )
    if grid.notice is not None:
        return f'<h3>Cases</h3>\n<p class="note case-notice">{_e(grid.notice)}</p>{no_records}\n'
    if not grid.runs:
        return f"<h3>Cases</h3>\n{no_records}\n"
    total = len(grid.rows)
    about = f"{_many(total, 'case')} x {_many(len(grid.runs), 'run')}"
    choices = []
    for name in ("all", *GRID_FILTERS):
        kept = grid.filters.get(name)
        count = total if name == "all" else None if kept is None else len(kept)
        checked = " checked" if name == "all" else ""
        tip = _FILTER_TIPS[name] if count is not None else "disagree compares runs: this suite has one"
        disabled = " disabled" if count is None else ""
        number = "" if count is None else f' <span class="muted">{count:,}</span>'
        choices.append(
            f'<label title="{_e(tip)}"><input type="radio" name="case-filter-{index}" value="{_e(name)}" '
            f'autocomplete="off"{checked}{disabled}>{_e(name)}{number}</label>'
        )
    heads = "".join(
        f'<th scope="col"><span class="model">{_e(by_path[path].model)}</span> <span class="mode">'
        f'{_e(by_path[path].mode)}</span><div class="run-id">{_e(by_path[path].run_id)}</div></th>'
        for path in grid.runs
    )
    body = []
    for case in grid.rows:
        marks = _e(" ".join(name for name in GRID_FILTERS if case.case_id in grid.filters.get(name, ())))
        cells = "".join(_case_cell(case.cells.get(path), grid.suite) for path in grid.runs)
        body.append(
            f'<tr data-f="{marks}"><th scope="row">{_e(case.case_id)}</th><td class="group">{_e(case.group or "")}</td>'
            f"{cells}</tr>"
        )
    return f"""<h3>Cases <span class="muted">{about}</span></h3>
<div class="case-grid">
<div class="case-controls"><fieldset><legend>Show</legend>{"".join(choices)}</fieldset>
<input type="search" class="case-search" placeholder="search the text shown" aria-label="search the cases"
autocomplete="off"> <span class="case-count" aria-live="polite">{total:,} of {total:,} cases</span></div>
{no_records}<div class="scroll"><table class="cases"><thead><tr><th scope="col">Case</th>
<th scope="col">Group</th>{heads}</tr></thead><tbody>{"".join(body)}</tbody></table></div>
</div>
"""


def _many(count: int, thing: str) -> str:
    return f"{count:,} {thing}{'s' * (count != 1)}"


def _case_cell(cell: CaseCell | None, suite: Suite[Any] | None) -> str:
    """One run's answer to one case: status (and score when partial), answer lines, invalid kinds, corrective
    retries and cost."""
    if cell is None:
        return '<td class="cell st-none">not posed</td>'
    status = cell.status
    score = "" if cell.score is None or status not in ("partial", "mixed") else f" {100 * cell.score:.0f}"
    repeats = f" · {len(cell.records)} repeats" if len(cell.records) > 1 else ""
    lines = [line for record in cell.records for line in answer_lines(suite, record)]
    shown, budget = [], GRID_TEXT
    for line in lines[:GRID_LINES]:
        if budget <= 0:
            break
        shown.append(answer_html(line, budget))
        budget -= len(line.text)
    if len(lines) > len(shown):
        more = len(lines) - len(shown)
        shown.append(f'<div class="more">… {more} more line{"s" * (more != 1)}</div>')
    retries = cell.corrective_retries
    facts = [
        "invalid: " + ", ".join(cell.invalid_kinds) if cell.invalid_kinds else "",
        f"{retries} corrective retr{'y' if retries == 1 else 'ies'}" if retries else "",
        _usd(cell.cost_usd),
    ]
    fact = " · ".join(f for f in facts if f)
    return (
        f'<td class="cell st-{_e(status if status in _STATUSES else "other")}"><div class="status">{_e(status)}{score}'
        f"{repeats}</div>{''.join(shown)}" + (f'<div class="facts">{_e(fact)}</div>' if fact else "") + "</td>"
    )


def cut_text(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a visible count of the rest."""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def answer_html(line: AnswerLine, limit: int) -> str:
    """One line of an answer (`Suite.show_answer`) as HTML, for this report's grid and the case viewer: its text
    escaped and cut at `limit`, its mark a class and a tag when it is a known one (a plug-in's other mark is not a
    class name)."""
    text = _e(cut_text(str(line.text), limit))
    if line.mark not in get_args(AnswerMark):
        return f'<div class="answer">{text}</div>'
    return f'<div class="answer mark-{_e(line.mark)}"><span class="tag">{_e(line.mark)}</span> {text}</div>'


_CSS = """
:root{--fg:#212529;--muted:#6c757d;--line:#dee2e6;--bg:#f8f9fa;--accent:#1c7ed6}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:24px 28px 48px;color:var(--fg);background:#fff;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:36px 0 12px;padding-top:12px;border-top:1px solid var(--line)}
h3{font-size:16px;margin:24px 0 8px}h4{font-size:13px;margin:12px 0 6px;color:var(--muted);text-transform:uppercase}
.muted{color:var(--muted);font-weight:normal}.note{color:var(--muted);font-size:12.5px;margin:6px 4px}
a{color:var(--accent)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
.leaderboard{width:100%;font-size:13px}
.leaderboard th,.leaderboard td{padding:6px 7px;border-bottom:1px solid var(--line);white-space:nowrap}
.leaderboard td.text{white-space:normal;min-width:16em}
.leaderboard thead th{background:var(--bg);border-bottom:2px solid var(--line);text-align:right;vertical-align:bottom}
.leaderboard thead th:nth-child(2){text-align:left}
.leaderboard th button{all:unset;cursor:pointer;font-weight:600}
.leaderboard th button:focus-visible{outline:2px solid var(--accent)}
.leaderboard th[aria-sort=ascending] button::after{content:" ▲"/"";font-size:10px}
.leaderboard th[aria-sort=descending] button::after{content:" ▼"/"";font-size:10px}
.leaderboard tbody tr:hover{background:#f1f3f5}
td.num{text-align:right}td.text{text-align:left}
tr.partial td{background:#fff9db}
.ci{display:block;color:var(--muted);font-size:11px}
.star{color:#f59f00}
.model{font-weight:600}.mode{color:var(--muted);font-size:12px}
.badge{display:inline-block;margin-left:6px;padding:0 6px;border-radius:9px;font-size:11px;font-weight:600;
vertical-align:1px}
.badge.warn{background:#ffe066;color:#5c3c00}.badge.bad{background:#ffe3e3;color:#c92a2a}
.grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px;margin-top:16px}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
.card{margin:16px 0 0;padding:12px 14px;border:1px solid var(--line);border-radius:8px}
.grid .card{margin:0}
figcaption{font-weight:600;margin-bottom:8px}
.plot svg{width:100%;height:auto;display:block}
.heatmap{font-size:12.5px}
.heatmap th,.heatmap td{padding:5px 8px;text-align:center;border:2px solid #fff}
.heatmap thead th{font-weight:600;color:var(--muted);font-size:12px}
.heatmap tbody th{text-align:left;font-weight:normal;white-space:nowrap}
.heatmap td{min-width:56px}.heatmap td.empty{background:var(--bg)}
.bars{list-style:none;margin:0;padding:0}.bars li{margin:0 0 10px}
.bar-label{font-size:12.5px}
.bar{display:flex;height:14px;border-radius:3px;overflow:hidden;background:var(--bg)}
.seg{display:inline-block;height:100%}
.seg.first{background:#2f9e44}.seg.retry{background:#b2f2bb}.seg.invalid{background:#e03131}
.kinds{font-size:11.5px;color:var(--muted)}
.legend{font-size:11.5px;color:var(--muted);margin-bottom:10px}
.legend .seg{width:12px;height:10px;margin:0 4px 0 10px;border-radius:2px;vertical-align:-1px}
.legend .seg:first-child{margin-left:0}
details.run{border:1px solid var(--line);border-radius:8px;margin:8px 0;padding:8px 12px}
details.run summary{cursor:pointer}details.run summary .muted{margin-left:8px;font-size:12px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:10px 0;font-size:13px}
dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}
.example{margin:8px 0 14px}.example-head{font-size:13px;margin-bottom:4px}
.pre-label{font-size:11px;color:var(--muted);margin-top:4px}
pre{margin:2px 0;padding:8px 10px;background:var(--bg);border:1px solid var(--line);border-radius:6px;
white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px;max-height:320px;overflow:auto}
.case-controls{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin:8px 0}
.case-controls fieldset{border:0;margin:0;padding:0;display:flex;gap:12px;flex-wrap:wrap}
.case-controls legend{float:left;margin-right:4px;color:var(--muted)}
.case-controls label{cursor:pointer;white-space:nowrap}.case-controls input[type=radio]{margin:0 4px 0 0}
.case-controls label:has(input:disabled){color:var(--muted)}
.case-search{font:inherit;padding:3px 8px;border:1px solid var(--line);border-radius:6px;min-width:16em}
.case-count{color:var(--muted);font-size:12.5px}
.cases{font-size:12.5px;width:100%}
.cases th,.cases td{padding:5px 7px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
.cases thead th{background:var(--bg);position:sticky;top:0}.cases tbody th{font-weight:600;white-space:nowrap}
.cases td.cell{min-width:180px;max-width:420px;border-left:3px solid transparent}
.run-id{color:var(--muted);font-size:11px;font-weight:normal;overflow-wrap:anywhere}
.cell .status{font-weight:600}.cell .facts{color:var(--muted);font-size:11.5px;margin-top:3px;overflow-wrap:anywhere}
.answer{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;
font-size:11.5px}
.answer .tag{font:10px system-ui,sans-serif;text-transform:uppercase;border-radius:3px;padding:0 4px;background:#fff}
.mark-right,.mark-valid,.mark-pass{color:#2b8a3e}.mark-wrong,.mark-invalid,.mark-fail{color:#c92a2a}
.mark-missing{color:#e67700}.more{color:var(--muted);font-size:11.5px}
td.st-correct{background:#ebfbee;border-left-color:#2f9e44}.st-correct .status{color:#2b8a3e}
td.st-partial,td.st-mixed{background:#fff9db;border-left-color:#f59f00}
.st-partial .status,.st-mixed .status{color:#e67700}
td.st-incorrect,td.st-missing{background:#fff5f5;border-left-color:#e03131}
.st-incorrect .status,.st-missing .status{color:#c92a2a}
td.st-error{background:#f1f3f5;border-left-color:#868e96}.st-error .status{color:#495057}
td.st-none{color:var(--muted)}
"""

_SCRIPT = """
document.querySelectorAll("table.sortable").forEach((table) => {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, col) => {
    th.querySelector("button").addEventListener("click", () => {
      const dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", dir);
      const body = table.tBodies[0];
      const key = (row) => row.cells[col].dataset.v;
      const rows = Array.from(body.rows).sort((a, b) => {
        const x = key(a), y = key(b);
        if (x === "" || y === "") return (x === "") - (y === "");
        const nx = Number(x), ny = Number(y);
        const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y, undefined, {numeric: true}) : nx - ny;
        return dir === "ascending" ? c : -c;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
});
document.querySelectorAll("div.case-grid").forEach((grid) => {
  const rows = Array.from(grid.querySelectorAll("table.cases tbody tr"));
  const texts = rows.map((row) => row.textContent.toLowerCase());
  const search = grid.querySelector("input.case-search");
  const count = grid.querySelector(".case-count");
  const update = () => {
    const picked = grid.querySelector("input[type=radio]:checked").value;
    const words = search.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((row, i) => {
      const keep = (picked === "all" || row.dataset.f.split(" ").includes(picked)) && texts[i].includes(words);
      row.hidden = !keep;
      shown += keep ? 1 : 0;
    });
    count.textContent = `${shown.toLocaleString("en")} of ${rows.length.toLocaleString("en")} cases`;
  };
  grid.querySelectorAll("input[type=radio]").forEach((radio) => radio.addEventListener("change", update));
  search.addEventListener("input", update);
});
"""
