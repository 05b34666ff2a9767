#!/usr/bin/env python3
"""Leaderboard of stored runs: farel-bench's FaRel table plus format-compliance, token and cost columns.

    python format_result.py [DIR] [--format rich|markdown|csv|json]

Rows are built as data (`LeaderboardRow`) first, then rendered; every format shows the same rows.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from farel_eval.errors import EvaluatorError, OneLineArgumentParser, ResultFileError
from farel_eval.schemas import LeaderboardRow
from farel_eval.storage import StoredRun, load_runs

__all__ = ["build_rows", "class_header", "render_csv", "render_json", "render_markdown", "render_rich"]


def build_rows(runs: Sequence[StoredRun]) -> list[LeaderboardRow]:
    """One row per run, grouped by suite (FaRel first), best score first within a suite; equal scores (to two
    decimals) share the smallest rank. Runs of different suites are never ranked against each other."""
    rows = [_row(run) for run in runs]
    ordered: list[LeaderboardRow] = []
    for suite in _suites(rows):
        mine = [r for r in rows if r.suite == suite]
        scored = sorted(
            (r for r in mine if r.score is not None), key=lambda r: (-round(r.score or 0, 2), r.model, r.mode)
        )
        ranked: list[LeaderboardRow] = []
        for position, row in enumerate(scored, 1):
            tied = ranked and round(ranked[-1].score or 0, 2) == round(row.score or 0, 2)
            ranked.append(row.model_copy(update={"rank": ranked[-1].rank if tied else position}))
        ordered += ranked + [r for r in mine if r.score is None]
    return ordered


def _suites(rows: Sequence[LeaderboardRow]) -> list[str]:
    return sorted({r.suite for r in rows}, key=lambda name: (name != "farel", name))


def _row(run: StoredRun) -> LeaderboardRow:
    s, scores = run.summary, run.summary.scores
    scored = s.status != "dnf"
    score = scores.score if scored else None
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
        farel=score if s.suite == "farel" else None,
        classes={g.group: g.score for g in scores.groups} if scored else {},
        metrics=scores.metrics if scored else {},
        samples=scores.samples,
        correct=scores.correct,
        partial=scores.partial,
        incorrect=scores.incorrect,
        missing=scores.missing,
        errors=scores.errors,
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
        wall_s=s.wall_s,
        dataset_md5=s.dataset.md5,
        reason=s.reason,
        path=str(run.path),
    )


def class_header(name: str) -> str:
    """Class names as the public FaRel table writes its headers: "grandchild" -> "grand-child"."""
    return re.sub(r"grand(?=[a-z])", "grand-", name)


def _class_names(rows: Sequence[LeaderboardRow]) -> list[str]:
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row.classes))
    return list(names)


def _label(row: LeaderboardRow) -> str:
    marks = [row.mode] + (["imported"] if row.imported else []) + ([row.status] if row.status == "partial" else [])
    return f"{row.model} ({', '.join(marks)})"


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _cost(row: LeaderboardRow) -> str:
    if row.status == "dnf":
        return "DNF"
    if row.cost_usd is None:
        return "unknown"
    if row.cost_sources == ["local"]:
        return "$0 (local)"
    return f"{'' if row.cost_complete else '>='}${row.cost_usd:.6f}"


def _cells(row: LeaderboardRow, classes: Sequence[str]) -> list[str]:
    """The table's cells for one row, as text: Nr, Model, score, groups, then the compliance columns."""
    dnf = row.status == "dnf"
    return [
        "" if row.rank is None else str(row.rank),
        _label(row),
        "DNF" if dnf else _num(row.score),
        *["" if dnf else _num(row.classes.get(name)) for name in classes],
        "DNF" if dnf else ("" if row.valid_first_try is None else f"{row.valid_first_try:.1f}%"),
        str(row.corrective_retries),
        str(row.invalid_outputs),
        str(row.missing),
        str(row.errors),
        _cost(row),
        " / ".join("unknown" if n is None else str(n) for n in (row.requests, row.input_tokens, row.output_tokens)),
    ]


def _score_title(suite: str) -> str:
    return "FaRel" if suite == "farel" else "Score"


def _headers(classes: Sequence[str], suite: str = "farel") -> list[str]:
    return [
        "Nr",
        "Model",
        _score_title(suite),
        *map(class_header, classes),
        "Valid 1st",
        "Retries",
        "Invalid",
        "Missing",
        "Errors",
        "Cost",
        "Req / In Tok / Out Tok",
    ]


def render_markdown(rows: Sequence[LeaderboardRow], *, farel_only: bool = False) -> str:
    """A pipe table per suite, laid out as farel-bench's published one (tabulate's: each column at least its
    header + 2); with several suites, each table under a `### suite` heading.

    `farel_only` keeps just the FaRel runs and the public table's columns (Nr, Model, FaRel, classes).
    """
    suites = [s for s in _suites(rows) if s == "farel" or not farel_only]
    tables = [_markdown_table([r for r in rows if r.suite == suite], suite, farel_only) for suite in suites]
    if len(tables) == 1:
        return tables[0]
    return "\n".join(f"### {suite}\n\n{table}" for suite, table in zip(suites, tables, strict=True))


def _escape(cell: str) -> str:
    """A `|` inside a cell (a model or class name) would end the cell: markdown writes it `\\|`."""
    return cell.replace("|", "\\|")


def _markdown_table(rows: Sequence[LeaderboardRow], suite: str, farel_only: bool) -> str:
    classes = _class_names(rows)
    count = 3 + len(classes) if farel_only else None
    headers = [_escape(h) for h in _headers(classes, suite)[:count]]
    body = [[_escape(c) for c in _cells(row, classes)[:count]] for row in rows]
    widths = [max(len(h) + 2, *(len(r[i]) for r in body)) for i, h in enumerate(headers)]
    left = {1, len(_headers(classes)) - 1}

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join(":" + "-" * (w + 1) if i in left else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in body)]) + "\n"


def render_rich(rows: Sequence[LeaderboardRow], console: Console) -> None:
    """Per suite, two tables that fit a terminal: scores per group, then format compliance, cost and tokens."""
    for suite in _suites(rows):
        _rich_tables([r for r in rows if r.suite == suite], suite, console)


def _rich_tables(rows: Sequence[LeaderboardRow], suite: str, console: Console) -> None:
    classes = _class_names(rows)
    headers = _headers(classes, suite)
    cells = [_cells(row, classes) for row in rows]
    split = 3 + len(classes)
    name = "FaRel" if suite == "farel" else suite
    for title, columns in (
        (name, range(split)),
        (f"{name}: format compliance and cost" if suite != "farel" else "Format compliance and cost",
         [0, 1, *range(split, len(headers))]),
    ):  # fmt: skip
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for i in columns:
            widest = max([len(c[i]) for c in cells] + [len(word) for word in headers[i].split()])
            text = i == 1 or i == len(headers) - 1
            table.add_column(headers[i], justify="left" if text else "right", no_wrap=i == 1, min_width=widest)
        for row in cells:
            table.add_row(*(row[i] for i in columns))
        console.print(table)


def render_csv(rows: Sequence[LeaderboardRow]) -> str:
    classes = _class_names(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "rank",
            "suite",
            "model",
            "mode",
            "run_id",
            "status",
            "imported",
            "score",
            *classes,
            "samples",
            "correct",
            "incorrect",
            "missing",
            "errors",
            "valid_first_try",
            "corrective_retries",
            "invalid_outputs",
            "requests",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "wall_s",
        ]
    )
    for r in rows:
        writer.writerow(
            [
                r.rank,
                r.suite,
                r.model,
                r.mode,
                r.run_id,
                r.status,
                r.imported,
                _num(r.score),
                *(_num(r.classes.get(c)) for c in classes),
                r.samples,
                r.correct,
                r.incorrect,
                r.missing,
                r.errors,
                _num(r.valid_first_try),
                r.corrective_retries,
                r.invalid_outputs,
                r.requests,
                r.input_tokens,
                r.output_tokens,
                "" if r.cost_usd is None else f"{r.cost_usd:.6f}",
                r.wall_s,
            ]
        )
    return out.getvalue()


def render_json(rows: Sequence[LeaderboardRow]) -> str:
    return json.dumps([r.model_dump(mode="json") for r in rows], indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineArgumentParser(prog="format_result.py", description="Leaderboard of stored runs.")
    parser.add_argument("dir", nargs="?", type=Path, default=Path("result"), help="results folder (default result)")
    parser.add_argument(
        "--format",
        choices=["rich", "markdown", "csv", "json"],
        help="output format (default: rich on a terminal, markdown otherwise)",
    )
    parser.add_argument(
        "--farel-only",
        action="store_true",
        help="markdown with only the public FaRel table's columns (Nr, Model, FaRel, classes)",
    )
    args = parser.parse_args(argv)
    try:
        rows = build_rows(load_runs(args.dir))
        if not rows:
            raise ResultFileError(f"no stored runs under {args.dir}: run `python main.py run` first")
    except EvaluatorError as exc:
        print(f"format_result.py: error: {exc}", file=sys.stderr)
        return exc.exit_code
    fmt = args.format or ("rich" if sys.stdout.isatty() else "markdown")
    if fmt == "rich":
        render_rich(rows, Console())
    else:
        text = {
            "markdown": lambda: render_markdown(rows, farel_only=args.farel_only),
            "csv": lambda: render_csv(rows),
            "json": lambda: render_json(rows),
        }[fmt]()
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
