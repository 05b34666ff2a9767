"""`format_result.py` (and `typed-eval-leaderboard`): the leaderboard of stored runs in the terminal, markdown, CSV,
JSON or one HTML page, and `--compare RUN_A RUN_B`, a paired comparison of two runs."""

from __future__ import annotations

import io
import os
import sys
from argparse import SUPPRESS
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from typed_eval.cli.common import notes_in_one_line
from typed_eval.contracts import LeaderboardRow, ModeComparison
from typed_eval.core.errors import EvaluatorError, InputError, OneLineArgumentParser, ResultFileError
from typed_eval.core.suite import find_suites
from typed_eval.core.terminal import printable
from typed_eval.reports.case_grid import case_grids
from typed_eval.reports.evals_report import evaluation_report
from typed_eval.reports.exports import comparison_json, render_comparison, render_csv, render_json
from typed_eval.reports.facet_profile import profile_tables
from typed_eval.reports.html_report import render_html
from typed_eval.reports.leaderboard import RANK_BY, build_board, compare_runs, load_run, newest_runs
from typed_eval.reports.mode_matrix import mode_comparisons
from typed_eval.reports.mode_tables import (
    render_modes_csv,
    render_modes_json,
    render_modes_markdown,
    render_modes_rich,
)
from typed_eval.reports.tables import render_markdown, render_rich
from typed_eval.store.storage import load_runs

__all__ = ["main"]


def _parser() -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog="format_result.py", description="Leaderboard of stored runs.")
    parser.add_argument("dir", nargs="?", type=Path, default=Path("result"), help="results folder (default result)")
    parser.add_argument(
        "--format",
        choices=["rich", "markdown", "csv", "json", "html", "pydantic-evals"],
        help="output format (default: rich on a terminal, markdown otherwise; html needs -o; pydantic-evals: one run "
        "folder as pydantic_evals' EvaluationReport JSON)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write to this file (html: required)")
    parser.add_argument(
        "--suite",
        metavar="NAME",
        help="only that suite's runs; markdown: only its public table's columns (Nr, Model, score, groups)",
    )
    for found in find_suites(on_error=lambda _: None):  # older spellings of `--suite NAME` a suite keeps
        for flag in found.suite.board_flags:
            parser.add_argument(flag, dest="suite", action="store_const", const=found.suite.name, help=SUPPRESS)
    parser.add_argument("--rank-by", choices=RANK_BY, default="score", help="rank runs by (default score)")
    parser.add_argument("--latest", action="store_true", help="only the newest run per model, mode, suite, settings")
    parser.add_argument("--wide", action="store_true", help="rich: one table with every column")
    parser.add_argument(
        "--modes",
        action="store_true",
        help="the model x mode table: each model's answer modes on the same cases, every pair of them compared",
    )
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"), help="paired comparison of two run folders"
    )
    return parser


def _comparison(paths: Sequence[Path], fmt: str | None) -> str:
    comparison, row_a, row_b = compare_runs(*(load_run(path) for path in paths))
    if fmt == "json":
        return comparison_json(comparison, row_a, row_b)
    if fmt not in (None, "rich"):
        raise InputError(f"--compare prints text or json, not {fmt}")
    return render_comparison(comparison, row_a, row_b)


def main(argv: Sequence[str] | None = None) -> int:
    with notes_in_one_line("format_result.py"):
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.compare:
            _write(_comparison(args.compare, args.format), args.output)
            return 0
        if args.format == "pydantic-evals":
            _write(evaluation_report(load_run(args.dir)), args.output)
            return 0
        skipped: list[ResultFileError] = []

        def skip(exc: ResultFileError) -> None:
            print(f"format_result.py: error: {printable(str(exc))}", file=sys.stderr)  # and the others are shown
            skipped.append(exc)

        runs = load_runs(args.dir, skip)
        shown = newest_runs(runs) if args.latest else runs
        if args.suite is not None and runs:
            shown = [run for run in shown if run.summary.suite == args.suite]  # each suite is ranked on its own
            if not shown:
                raise ResultFileError(f"no stored runs of suite {args.suite} under {args.dir}")
        board = build_board(shown, rank_by=args.rank_by, on_error=skip)
        rows = board.rows
        if not rows and skipped:
            return ResultFileError.exit_code
        if not rows:
            raise ResultFileError(f"no stored runs under {args.dir}: run `python main.py run` first")
        fmt = args.format or ("rich" if sys.stdout.isatty() and args.output is None else "markdown")
        kept = {row.path for row in rows}
        modes = mode_comparisons([run for run in shown if str(run.path) in kept], board=board)
        if args.modes and not modes:
            raise ResultFileError(
                f"no model under {args.dir} has runs in two answer modes on the same cases: run one with "
                "`main.py run --mode tool --mode tag`"
            )
        if fmt == "html":
            if args.output is None:
                raise InputError("--format html writes a file: name it with -o FILE")
            cases = case_grids(args.dir, board.rows)
            profiles = profile_tables(board.rows, board.analyses)
            _write(render_html(board.rows, board.examples, modes=modes, cases=cases, profiles=profiles), args.output)
        elif args.modes:
            _write_modes(modes, fmt, args.output)
        elif fmt == "rich" and args.output is None:
            render_rich(rows, Console(width=100_000) if args.wide else Console(), wide=args.wide)
        else:
            _write(_text(rows, fmt, args.suite, args.wide), args.output)
        if skipped:  # the others are shown; the exit says that not every run was
            return ResultFileError.exit_code
    except EvaluatorError as exc:
        print(f"format_result.py: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader left (`| head`): end quietly, as `main.py` does
        return _reader_left()
    return 0


EXIT_BROKEN_PIPE = 141
"""What a shell reports for a process a closed pipe stopped (128 + SIGPIPE)."""


def _reader_left() -> int:
    """Point standard output at /dev/null, so the interpreter's last flush at exit fails no more."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def _text(rows: Sequence[LeaderboardRow], fmt: str, suite: str | None, wide: bool) -> str:
    if fmt == "rich":
        console = Console(file=io.StringIO(), width=100_000 if wide else 100, color_system=None)
        render_rich(rows, console, wide=wide)
        return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]
    return {
        "markdown": lambda: render_markdown(rows, only=suite),
        "csv": lambda: render_csv(rows),
        "json": lambda: render_json(rows),
    }[fmt]()


def _write_modes(modes: Sequence[ModeComparison], fmt: str, output: Path | None) -> None:
    if fmt == "rich" and output is None:
        render_modes_rich(modes, Console())
        return
    if fmt == "rich":
        console = Console(file=io.StringIO(), width=100, color_system=None)
        render_modes_rich(modes, console)
        _write(console.file.getvalue(), output)  # type: ignore[attr-defined]
        return
    render = {"markdown": render_modes_markdown, "csv": render_modes_csv, "json": render_modes_json}[fmt]
    _write(render(modes), output)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()  # here, where a reader that left is caught, not at exit
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
