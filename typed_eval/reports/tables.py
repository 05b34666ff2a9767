"""Leaderboard rows rendered as text: rich tables that fit an 80-column terminal (or one wide table), a public
benchmark's markdown table with our columns after its own, CSV and JSON; and a paired comparison of two runs."""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rich import box
from rich.console import Console, JustifyMethod
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from typed_eval.core.suite import Suite
from typed_eval.core.terminal import json_printable, printable
from typed_eval.reports.analysis import ALPHA, Comparison
from typed_eval.reports.formatting import interval, metric, money_table, number, p_value, percent, signed
from typed_eval.reports.leaderboard import CASE_SETS_NOTE, case_sets, installed_suites
from typed_eval.reports.pass_k import PASS_K_NOTES, comparison_lines, csv_fields, csv_values, pass_k_cells
from typed_eval.schemas import LeaderboardRow

__all__ = [
    "comparison_json",
    "csv_value",
    "escape_cell",
    "group_headers",
    "print_table",
    "render_comparison",
    "render_csv",
    "render_json",
    "render_markdown",
    "render_rich",
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


def _label(row: LeaderboardRow) -> str:
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
MODEL = Column("Model", _label, text=True)
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
MODEL_AND_RUN = Column("Model / run", lambda r: f"{_label(r)}\n{r.run_id}", text=True)


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
    """A column per group (headed as the suite's `header` says) unless the suite leaves them out, then one per
    metric the suite shows (a figure per problem size, or a public benchmark's own totals)."""
    names: dict[str, None] = {}
    for row in rows:
        if row.group_columns:
            names.update(dict.fromkeys(row.classes))
    groups = [Column(header(name), _group_cell(name)) for name in names]
    return groups + [Column(name, _metric_cell(name)) for name in metric_columns(rows)]


def _group_cell(name: str) -> Callable[[LeaderboardRow], str]:
    return lambda row: "" if row.status == "dnf" else number(row.classes.get(name))


def _metric_cell(name: str) -> Callable[[LeaderboardRow], str]:
    return lambda row: "" if row.status == "dnf" else metric(name, row.metrics.get(name))


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
            tables.append((f"{suite} ({cases})" if cases else suite, _markdown_table(mine, shown)))
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
    """Per suite: the headline table (scores, intervals, baselines, cost per correct answer, latency), the
    scores per group, then format compliance and cost, each fitting 100 columns; `wide`: one table with
    every column, as wide as it needs."""
    headers = group_headers(suites)
    for suite, mine, cases in ((s, m, c) for s, of_suite in _by_suite(rows) for c, m in case_sets(of_suite)):
        name = suite_title(suite, mine) + (f" ({cases})" if cases else "")
        notes = f"{NOTES} {CASE_SETS_NOTE}" if cases else NOTES
        score, classes = _score_column(mine), _class_columns(mine, headers(suite))
        if wide:
            _rich_table(console, name, mine, _markdown_columns(mine, headers(suite)), wrap=False, notes=notes)
            continue
        options = any(r.chance is not None for r in mine)  # no options to guess among: the suite's own figures
        baselines = [CHANCE, FAVOURITE] if options else classes
        headline = [NR, GROUP, MODEL_AND_RUN, CASES, score, CI, *baselines, VALID, PER_CORRECT, LATENCY]
        _rich_table(console, name, mine, headline + _repeated(mine), wrap=True, notes=notes)
        if passes := pass_k_columns(mine, stacked=True):
            _rich_table(console, f"{name}: pass^k", mine, [NR, MODEL, CASES, *passes], wrap=True, notes=PASS_K_NOTES)
        if (classes or _relaxed(mine)) and options:
            _rich_table(console, f"{name} by group", mine, [NR, MODEL, score, *_relaxed(mine), *classes], wrap=True)
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
) -> None:
    # cells are Text, never markup: a model named `[link=...]x[/link]` or holding `[/]` is shown as it is written
    cells = [[printable(column.cell(row)) for column in columns] for row in rows]
    headers = [(printable(column.header), column.text) for column in columns]
    names = [index for index, column in enumerate(columns) if column in (MODEL, MODEL_AND_RUN)]
    print_table(console, title, headers, cells, wrap=wrap, names=names[0] if names else None, notes=notes)
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
            header = textwrap.fill(header, max(widest, *(len(part) for part in re.findall(r"[^\s-]+-?", header))))
        justify: JustifyMethod = "left" if text else "right"
        table.add_column(Text(header), justify=justify, no_wrap=True, min_width=widest)
    for line in cells:
        table.add_row(*(Text(cell) for cell in line))
    return table


CSV_FIELDS = (
    "samples", "correct", "incorrect", "missing", "errors", "valid_first_try", "corrective_retries", "invalid_outputs",
    "requests", "input_tokens", "output_tokens", "cost_usd", "wall_s", "complete", "cases", "repeats",
    "score_ci95_low", "score_ci95_high", "rank_group", "chance", "favourite_position", "favourite_position_score",
    "cost_per_case_usd", "cost_per_correct_usd", "score_per_usd", "pareto", "latency_median_s", "latency_p95_s",
    "valid_after_retries", "consistency", "rate_limited", "wait_s",
)  # fmt: skip


def csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.6f}".rstrip("0")
    return value


def render_csv(rows: Sequence[LeaderboardRow]) -> str:
    """A line per run: the groups' scores, `CSV_FIELDS`, the relaxed score when a suite shows it, then each metric
    a suite shows as a column, and each again as it was with no corrective retry (`NAME_no_retry`) when a run used
    some."""
    classes = list(dict.fromkeys(name for row in rows for name in row.classes))
    metrics = [name for name in metric_columns(rows) if name not in (*CSV_FIELDS, "score_relaxed")]
    no_retry = [name for name in metrics if any(name in r.metrics_no_retry for r in rows)]
    passes = [name for column in pass_k_columns(rows) for name in csv_fields(column.header)]
    fields = (
        CSV_FIELDS
        + (("score_relaxed",) if any(r.relaxed_column for r in rows) else ())
        + tuple(metrics)
        + tuple(f"{name}_no_retry" for name in no_retry)
        + tuple(passes)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["rank", "suite", "model", "mode", "run_id", "status", "imported", "score", *map(printable, classes), *fields]
    )
    for r in rows:
        values = r.model_dump()
        low, high = r.score_ci95 or (None, None)
        values |= {"score_ci95_low": low, "score_ci95_high": high}
        values |= {name: r.metrics.get(name) for name in metrics}
        values |= {f"{name}_no_retry": r.metrics_no_retry.get(name, r.metrics.get(name)) for name in no_retry}
        values |= dict.fromkeys(passes) | csv_values(r.pass_k)
        writer.writerow(
            [r.rank, *map(printable, (r.suite, r.model)), r.mode, printable(r.run_id), r.status, r.imported]
            + [number(r.score)]
            + [number(r.classes.get(c)) for c in classes]
            + [csv_value(values[field]) for field in fields]
        )
    return out.getvalue()


def render_json(rows: Sequence[LeaderboardRow]) -> str:
    return json_printable(json.dumps([r.model_dump(mode="json") for r in rows], indent=2, ensure_ascii=False)) + "\n"


def comparison_json(comparison: Comparison, a: LeaderboardRow, b: LeaderboardRow) -> str:
    data = asdict(comparison) | {"a": _identity(a), "b": _identity(b)}
    data["difference_ci95"] = list(comparison.difference_ci95)
    return json_printable(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def _identity(row: LeaderboardRow) -> dict[str, object]:
    found: dict[str, object] = {"model": row.model, "mode": row.mode, "run_id": row.run_id, "path": row.path}
    passes = {"pass_k": [f.model_dump(mode="json") for f in row.pass_k]} if row.pass_k else {}
    return found | {"score": row.score} | passes


def render_comparison(comparison: Comparison, a: LeaderboardRow, b: LeaderboardRow) -> str:
    """The paired comparison in a few lines: counts, the test, and the difference with its interval."""
    c = comparison
    test = "McNemar exact" if c.test == "mcnemar" else "sign test"
    verdict = "a difference" if c.p_value < ALPHA else "no difference shown"
    lines = [
        f"A: {_label(a)}  {number(a.score)}  [{a.run_id}]",
        f"B: {_label(b)}  {number(b.score)}  [{b.run_id}]",
        f"paired cases {c.paired}: both right {c.both_correct}, only A {c.only_a}, only B {c.only_b}, "
        f"neither {c.neither}",
    ]
    if c.test == "sign":
        lines.append(f"A scored higher on {c.a_better} cases, B on {c.b_better}")
    lines += [
        f"{test}: p = {p_value(c.p_value)} ({verdict} at {ALPHA})",
        f"difference A - B: {signed(c.difference)} points, 95% CI {signed(c.difference_ci95[0])} to "
        f"{signed(c.difference_ci95[1])} (paired bootstrap)",
        *comparison_lines(a.pass_k, b.pass_k),
    ]
    return printable("\n".join(lines)) + "\n"
