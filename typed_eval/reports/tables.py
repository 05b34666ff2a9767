"""Leaderboard rows rendered as text: rich tables that fit an 80-column terminal (or one wide table), and a public
benchmark's markdown table with our columns after its own (CSV, JSON and comparisons: `reports/exports.py`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from typed_eval.contracts import LeaderboardRow
from typed_eval.core.suite import Suite
from typed_eval.core.terminal import printable
from typed_eval.reports.formatting import interval, metric, money_table, number, percent
from typed_eval.reports.leaderboard import CASE_SETS_NOTE, case_sets, installed_suites
from typed_eval.reports.pass_k import PASS_K_NOTES, pass_k_cells
from typed_eval.reports.suite_figures import GroupLine, figure_legend, group_lines, line_groups, run_figures

__all__ = [
    "escape_cell",
    "group_headers",
    "metric_columns",
    "pass_k_columns",
    "print_table",
    "render_markdown",
    "render_rich",
    "row_label",
]

NOTES = (
    "Grp 1: tied with the best run (paired test at 0.05, Holm-corrected). Cases a/b: a partial or limited run, "
    "not ranked. Chance: the score of random answers. Fav. pos.: the score of always choosing the option "
    "position the model chose most (#n, or last)."
)


GroupHeader = Callable[[str], str]
"""A group's name as a suite's tables head its column (`Suite.group_header`)."""


def group_headers(suites: Mapping[str, Suite[Any]] | None = None) -> Callable[[str], GroupHeader]:
    """By suite name, how its tables head a group's column: the suite's declaration among `suites` (default: those
    installed), else the group's name."""
    known = installed_suites() if suites is None else suites

    def of(name: str) -> GroupHeader:
        suite = known.get(name)
        return suite.group_header if suite is not None and suite.group_header is not None else str

    return of


def _usd(value: float | None, row: LeaderboardRow) -> str:
    if row.status == "dnf":
        return "DNF"
    if row.cost_sources == ["local"]:
        return "$0 (local)"
    if value is None:
        return "unknown"
    return money_table(value)


def _cost(row: LeaderboardRow) -> str:
    if row.status == "dnf" or row.cost_usd is None or row.cost_sources == ["local"]:
        return _usd(row.cost_usd, row)
    return ("" if row.cost_complete else ">=") + _usd(row.cost_usd, row)


def row_label(row: LeaderboardRow) -> str:
    marks = [row.mode, *(["imported"] if row.imported else []), *(["batch"] if row.batch else [])]
    if row.status == "partial":
        marks.append("partial")
    elif not row.complete and row.status == "finished":
        marks.append("incomplete")
    return f"{row.model} ({', '.join(marks)})"


def _cases(row: LeaderboardRow) -> str:
    scored = (row.samples - row.errors) // max(row.repeats, 1)
    text = str(row.cases) if row.complete else f"{scored}/{row.cases}"
    return text + (f"x{row.repeats}" if row.repeats > 1 else "")


def _favourite(row: LeaderboardRow) -> str:
    if row.favourite_position is None:
        return ""
    position = row.favourite_position
    return f"{number(row.favourite_position_score, 1)} {'last' if position == 'last' else '#' + position}"


def _latency(row: LeaderboardRow) -> str:
    if row.latency_median_s is None or row.latency_p95_s is None:
        return ""
    return f"{number(row.latency_median_s, 1)} / {number(row.latency_p95_s, 1)}"


@dataclass(frozen=True)
class Column:
    """One leaderboard column: its header and how a row's cell reads."""

    header: str
    cell: Callable[[LeaderboardRow], str]
    text: bool = False
    """Left-aligned (names); numbers are right-aligned."""


def _dnf(cell: Callable[[LeaderboardRow], str]) -> Callable[[LeaderboardRow], str]:
    return lambda row: "DNF" if row.status == "dnf" else cell(row)


NR = Column("Nr", lambda r: "" if r.rank is None else str(r.rank))
MODEL = Column("Model", row_label, text=True)
GROUP = Column("Grp", lambda r: "" if r.rank_group is None else str(r.rank_group))
CASES = Column("Cases", _cases)
CI = Column("95% CI", lambda r: interval(r.score_ci95))
CHANCE = Column("Chance", lambda r: number(r.chance, 1))
FAVOURITE = Column("Fav. pos.", _favourite)
VALID = Column("Valid 1st", _dnf(lambda r: percent(r.valid_first_try)))
VALID_FINAL = Column("Valid final", _dnf(lambda r: percent(r.valid_after_retries)))
RETRIES = Column("Retries", lambda r: str(r.corrective_retries))
INVALID = Column("Invalid", lambda r: str(r.invalid_outputs))
MISSING = Column("Missing", lambda r: str(r.missing))
ERRORS = Column("Errors", lambda r: str(r.errors))
COST = Column("Cost", _cost)
PER_CORRECT = Column("$/correct", lambda r: _usd(r.cost_per_correct_usd, r))
PARETO = Column("Pareto", lambda r: {True: "yes", False: "no", None: ""}[r.pareto])
LATENCY = Column("p50 / p95 s", _latency)
CONSISTENCY = Column("Consistent", lambda r: percent(r.consistency))
USAGE = Column(
    "Req / In Tok / Out Tok",
    lambda r: " / ".join("unknown" if n is None else str(n) for n in (r.requests, r.input_tokens, r.output_tokens)),
    text=True,
)
RUN = Column("Run", lambda r: r.run_id, text=True)
NO_RETRY = Column("Score, no retry", _dnf(lambda r: number(r.score_by_retries[0]) if r.score_by_retries else ""))
"""The score had no corrective retry been allowed: next to the final score, what the retries bought."""


def retry_cost_share(row: LeaderboardRow) -> float | None:
    """Percent of the run's cost spent on corrective retries; None when either cost is unknown (or the run free)."""
    if row.retry_cost_usd is None or not row.cost_usd:
        return None
    return 100 * row.retry_cost_usd / row.cost_usd


RETRY_COST = Column("Retry cost", lambda r: percent(retry_cost_share(r)))
"""The share of the run's cost spent on corrective retries."""
MODEL_AND_RUN = Column("Model / run", lambda r: f"{row_label(r)}\n{r.run_id}", text=True)


RELAXED = Column("Relaxed", _dnf(lambda r: number(r.score_relaxed)))
"""The score with the relaxed reading counted (a public benchmark's relaxed reading), for suites that show it."""


def suite_title(suite: str, rows: Sequence[LeaderboardRow]) -> str:
    """What a suite's tables are titled: its score's name when it has one, else the suite's name."""
    titles = [r.title for r in rows if r.suite == suite and r.title != "Score"]
    return titles[0] if titles else suite


def _score_column(rows: Sequence[LeaderboardRow]) -> Column:
    return Column(rows[0].title if rows else "Score", _dnf(lambda r: number(r.score)))


def metric_columns(rows: Sequence[LeaderboardRow]) -> list[str]:
    """The metrics the rows' suite shows as columns, in the order its runs name them."""
    return list(dict.fromkeys(name for row in rows for name in row.columns))


def _class_columns(rows: Sequence[LeaderboardRow], header: GroupHeader = str) -> list[Column]:
    """A column per group (headed as the suite's `header` says) unless the suite leaves them out, then one per figure
    the suite shows (a figure per problem size, or a public benchmark's own totals) under the name it gives it, those
    of the whole run first. When the suite has figures of its own per group, each group's column says which figure
    it holds (`easy Score`, `easy Recall`)."""
    lines = group_lines(rows)
    kinds = [line for line in lines if line.names is not None]
    columns = [
        Column(header(name) + (f" {line.label}" if kinds else ""), _group_cell(line, name))
        for line in lines
        if line.names is None
        for name in line_groups(rows, [line])
    ]
    columns += [Column(one.header, _metric_cell(one.name)) for one in run_figures(rows)]
    return columns + [
        Column(f"{header(name)} {line.label}", _group_cell(line, name))
        for line in kinds
        for name in line_groups(rows, [line])
    ]


def _group_cell(line: GroupLine, group: str) -> Callable[[LeaderboardRow], str]:
    return lambda row: line.value(row, group)


def _metric_cell(name: str) -> Callable[[LeaderboardRow], str]:
    return lambda row: "" if row.status == "dnf" else metric(name, row.metrics.get(name))


def _constant(text: str) -> Callable[[LeaderboardRow], str]:
    return lambda row: text


def _lines_cell(lines: Sequence[GroupLine], group: str) -> Callable[[LeaderboardRow], str]:
    """A group's figures in a row, a line each."""
    return lambda row: "\n".join(line.value(row, group) for line in lines)


def _relaxed(rows: Sequence[LeaderboardRow]) -> list[Column]:
    return [RELAXED] if any(r.relaxed_column for r in rows) else []


def _suites(rows: Sequence[LeaderboardRow]) -> list[str]:
    return list(dict.fromkeys(r.suite for r in rows))


def _by_suite(rows: Sequence[LeaderboardRow]) -> list[tuple[str, list[LeaderboardRow]]]:
    return [(suite, [r for r in rows if r.suite == suite]) for suite in _suites(rows)]


def _repeated(rows: Sequence[LeaderboardRow]) -> list[Column]:
    return [CONSISTENCY] if any(r.repeats > 1 for r in rows) else []


def pass_k_columns(rows: Sequence[LeaderboardRow], *, stacked: bool = False) -> list[Column]:
    """pass^1 .. pass^K with their intervals, for rows of runs that repeat their cases; none otherwise."""
    return [Column(header, cell) for header, cell in pass_k_cells(rows, stacked=stacked)]


def _markdown_columns(rows: Sequence[LeaderboardRow], header: GroupHeader = str) -> list[Column]:
    """A public benchmark's columns first (Nr, Model, its score, its groups or its metrics), so its table is a
    prefix of ours, then the relaxed score."""
    return [
        NR, MODEL, _score_column(rows), *_class_columns(rows, header), *_relaxed(rows), CI, GROUP, CASES, CHANCE,
        FAVOURITE, VALID, VALID_FINAL, RETRIES, INVALID, MISSING, ERRORS, COST, PER_CORRECT, PARETO, LATENCY,
        *_repeated(rows), *pass_k_columns(rows), NO_RETRY, RETRY_COST, USAGE, RUN,
    ]  # fmt: skip


def render_markdown(
    rows: Sequence[LeaderboardRow], *, only: str | None = None, suites: Mapping[str, Suite[Any]] | None = None
) -> str:
    """A pipe table per suite, laid out as a public benchmark's published one (tabulate's: each column at least its
    header + 2); with several suites, each table under a `### suite` heading. `suites` (default: those installed)
    head the group columns.

    `only` keeps just that suite's runs and its public table's columns (Nr, Model, score, groups).
    """
    headers = group_headers(suites)
    tables: list[tuple[str, str]] = []
    for suite, rows_of_suite in _by_suite(rows):
        for cases, mine in case_sets(rows_of_suite) if only is None or suite == only else []:
            columns = _markdown_columns(mine, headers(suite))
            shown = columns[: 3 + len(_class_columns(mine))] if only is not None else columns
            legend = figure_legend(mine)
            table = _markdown_table(mine, shown) + ("" if legend is None else f"\n{legend}\n")
            tables.append((f"{suite} ({cases})" if cases else suite, table))
    if len(tables) == 1:
        return tables[0][1]
    return "\n".join(f"### {printable(suite)}\n\n{table}" for suite, table in tables)


def escape_cell(cell: str) -> str:
    """A `|` inside a cell (a model or class name) would end the cell: markdown writes it `\\|`; a control character
    would reach the terminal: it is shown as its escape."""
    return printable(cell).replace("|", "\\|")


def _markdown_table(rows: Sequence[LeaderboardRow], columns: Sequence[Column]) -> str:
    headers = [escape_cell(c.header) for c in columns]
    body = [[escape_cell(c.cell(row)) for c in columns] for row in rows]
    widths = [max(len(h) + 2, *(len(r[i]) for r in body)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = [cell.ljust(w) if c.text else cell.rjust(w) for c, cell, w in zip(columns, cells, widths, strict=True)]
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(":" + "-" * (w + 1) if c.text else "-" * (w + 1) + ":" for c, w in zip(columns, widths, strict=True))
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in body)]) + "\n"


def render_rich(
    rows: Sequence[LeaderboardRow],
    console: Console,
    *,
    wide: bool = False,
    suites: Mapping[str, Suite[Any]] | None = None,
) -> None:
    """Per suite: the headline table (scores, intervals, baselines, cost per correct answer, latency), the suite's
    own figures under their names with a legend saying what each is, the figures per group (a line per figure when
    there are several), then format compliance and cost, each fitting 100 columns; `wide`: one table with every
    column, as wide as it needs."""
    headers = group_headers(suites)
    for suite, mine, cases in ((s, m, c) for s, of_suite in _by_suite(rows) for c, m in case_sets(of_suite)):
        name = suite_title(suite, mine) + (f" ({cases})" if cases else "")
        notes = f"{NOTES} {CASE_SETS_NOTE}" if cases else NOTES
        legend = figure_legend(mine)
        if wide:
            wide_notes = notes if legend is None else f"{notes} {legend}"
            _rich_table(console, name, mine, _markdown_columns(mine, headers(suite)), wrap=False, notes=wide_notes)
            continue
        baselines = [CHANCE, FAVOURITE] if any(r.chance is not None for r in mine) else []
        headline = [NR, GROUP, MODEL_AND_RUN, CASES, _score_column(mine), CI, *_relaxed(mine), *baselines, VALID,
                    PER_CORRECT, LATENCY]  # fmt: skip
        _rich_table(console, name, mine, headline + _repeated(mine), wrap=True, notes=notes)
        if passes := pass_k_columns(mine, stacked=True):
            _rich_table(console, f"{name}: pass^k", mine, [NR, MODEL, CASES, *passes], wrap=True, notes=PASS_K_NOTES)
        if whole := [Column(one.header, _metric_cell(one.name)) for one in run_figures(mine)]:
            _rich_table(console, f"{name}: the suite's own figures", mine, [NR, MODEL, *whole], wrap=True, notes=legend)
            legend = None
        lines = group_lines(mine)
        if groups := line_groups(mine, lines):
            label = [Column("Figure", _constant("\n".join(line.label for line in lines)), text=True)]
            lead = [NR, MODEL, *(label if len(lines) > 1 else [])]  # repeated when the table goes on
            by_group = [Column(headers(suite)(group), _lines_cell(lines, group)) for group in groups]
            title = f"{name} by group"
            _rich_table(console, title, mine, lead + by_group, wrap=True, notes=legend, fixed=len(lead))
        compliance = [
            NR, MODEL, VALID, VALID_FINAL, NO_RETRY, RETRIES, RETRY_COST, INVALID, MISSING, ERRORS, COST, USAGE,
        ]  # fmt: skip
        _rich_table(console, f"{name}: format compliance and cost", mine, compliance, wrap=True)


def _rich_table(
    console: Console,
    title: str,
    rows: Sequence[LeaderboardRow],
    columns: Sequence[Column],
    *,
    wrap: bool,
    notes: str | None = None,
    fixed: int = 1,
) -> None:
    """`print_table` of the rows' cells; a table that goes on repeats its first `fixed` columns (and the names)."""
    # cells are Text, never markup: a model named `[link=...]x[/link]` or holding `[/]` is shown as it is written
    cells = [[printable(column.cell(row)) for column in columns] for row in rows]
    headers = [(printable(column.header), column.text) for column in columns]
    names = [index for index, column in enumerate(columns) if column in (MODEL, MODEL_AND_RUN)]
    print_table(console, title, headers, cells, wrap=wrap, names=names[0] if names else None, notes=notes, fixed=fixed)
    console.print()


def print_table(
    console: Console,
    title: str,
    headers: Sequence[tuple[str, bool]],
    cells: Sequence[Sequence[str]],
    *,
    wrap: bool = True,
    names: int | None = None,
    notes: str | None = None,
    fixed: int = 1,
) -> None:
    """A table of text cells under `title`, each column's header with whether it holds text (left-aligned) or a
    figure. With `wrap` it fits the console and cuts nothing: headers stack over their column; when the names
    (column `names`) do not fit whole, each is shown as a key (`m1`...) named in a legend under the table; when the
    columns do not fit, they go on in another table, each repeating the first `fixed` columns (and the names)."""
    if not wrap or _fits(console, _table(headers, cells, wrap=wrap)):
        console.print(Text(printable(title)))
        console.print(_table(headers, cells, wrap=wrap))
        _notes(console, notes)
        return
    lead = list(range(max(fixed, 0 if names is None else names + 1)))
    legend: list[str] = []
    if names is not None and not _fits(console, _part(headers, cells, [*lead, *lead[-1:]])):
        keys = [f"m{number}" for number in range(1, len(cells) + 1)]
        legend = [f"{key}: {' '.join(line[names].split())}" for key, line in zip(keys, cells, strict=True)]
        cells = [[*line[:names], key, *line[names + 1 :]] for line, key in zip(cells, keys, strict=True)]
    parts: list[list[int]] = [[]]
    for index in range(len(lead), len(headers)):
        if parts[-1] and not _fits(console, _part(headers, cells, [*lead, *parts[-1], index])):
            parts.append([])
        parts[-1].append(index)
    for place, part in enumerate(parts):
        console.print(Text(printable(title if place == 0 else f"{title} (continued)")))
        console.print(_part(headers, cells, [*lead, *part]))
    for line in legend:
        console.print(Text(line))
    _notes(console, notes)


def _notes(console: Console, notes: str | None) -> None:
    if notes is not None:
        console.print(Text(notes))


def _fits(console: Console, table: Table) -> bool:
    """The table's natural width (every cell on its lines, uncut) is the console's or less."""
    unbounded = console.options.update_width(1 << 20)
    return Measurement.get(console, unbounded, table).maximum <= console.width


def _part(
    headers: Sequence[tuple[str, bool]],
    cells: Sequence[Sequence[str]],
    columns: Sequence[int],
) -> Table:
    """The table of `columns` only."""
    return _table([headers[i] for i in columns], [[line[i] for i in columns] for line in cells], wrap=True)


_PIECE = re.compile(r"[^\s_-]*[-_]|[^\s_-]+|\s+")
"""A header's pieces: a word up to and with a hyphen or an underscore after which it may break, or a space."""


def stacked(header: str, width: int) -> str:
    """The header on lines of `width` characters or fewer (or its longest piece), broken at spaces and after a hyphen
    or an underscore (`set_easy` over a column of figures as set_ / easy): a column is no wider than its
    figures need."""
    pieces = _PIECE.findall(header)
    width = max([width, *(len(piece) for piece in pieces if not piece.isspace())])
    lines = [""]
    space = False
    for piece in pieces:
        if piece.isspace():
            space = bool(lines[-1])
            continue
        joined = lines[-1] + (" " if space else "") + piece
        if len(joined) > width and lines[-1]:
            lines.append(piece)
        else:
            lines[-1] = joined
        space = False
    return "\n".join(lines)


def _table(headers: Sequence[tuple[str, bool]], cells: Sequence[Sequence[str]], *, wrap: bool) -> Table:
    """The table (its title is printed above it, wrapped at the console's width, not the table's)."""
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=0,
        show_edge=False,
    )
    for index, (header, text) in enumerate(headers):
        widest = max((len(part) for line in cells for part in line[index].splitlines()), default=0)
        if wrap:  # a header stacks over its column: "great grand-child" as great / grand- / child
            header = stacked(header, widest)
        justify: JustifyMethod = "left" if text else "right"
        table.add_column(Text(header), justify=justify, no_wrap=True, min_width=widest)
    for line in cells:
        table.add_row(*(Text(cell) for cell in line))
    return table
