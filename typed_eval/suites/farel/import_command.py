"""`import farel PATH...` (also `import-farel`): farel-bench's published logs stored as runs, re-scored and checked
against each log's own summary lines."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import EvaluatorError, OneLineArgumentParser
from typed_eval.core.suite import SuiteCommand
from typed_eval.core.terminal import printable
from typed_eval.suites.farel.dataset import generated_dataset, read_dataset
from typed_eval.suites.farel.importer import import_log_file
from typed_eval.suites.farel.logs import log_files
from typed_eval.suites.importing import RESULTS_DIR, error_line

__all__ = ["IMPORT_FAREL"]

FLAGS = {"quizzes": "--quizzes", "results_dir": "--results-dir"}
"""The flags of the command, for an error about one log that the others outlive."""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog=f"{prog} import farel", description="farel-bench log files, re-scored")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, or folders searched for *.log")
    parser.add_argument(
        "--quizzes", metavar="FILE", help="the FaRel CSV the logs were run on (default: the published FaRel-3 dataset)"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    return parser


def command_import(argv: Sequence[str], prog: str) -> int:
    """Import each log as a run, whatever the others hold; the exit is 2 when a log cannot be imported (bad input),
    else 1 when one's counts differ from its summary lines."""
    args = _parser(prog).parse_args(list(argv))
    dataset = read_dataset(args.quizzes) if args.quizzes else generated_dataset(3, 50, 42, shuffle=True)
    code = 0
    for path in log_files(args.paths):
        try:
            code = max(code, 0 if _import_one(path, dataset, args.results_dir) else 1)
        except EvaluatorError as exc:
            print(error_line(prog, exc, FLAGS), file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


def _import_one(path: Path, dataset: Dataset, results_dir: Path) -> bool:
    done = asyncio.run(import_log_file(path, dataset, results_dir))
    if done.already:
        print(printable(f"{path}: already imported in {done.run_dir}"))
        return True
    run_dir, source, farel = done.run_dir, done.summary.source_log, done.summary.scores.score
    assert source is not None
    head = f"{path}: {source.replies} replies, FaRel {farel:.2f}" if farel is not None else f"{path}:"
    if source.matches_log_summary is None:
        print(f"{head}; no summary lines in the log to check against ({'; '.join(source.notes)}); stored in {run_dir}")
        return True
    if source.matches_log_summary:
        print(f"{head}; re-scored counts match the log's summary lines; stored in {run_dir}")
        return True
    print(f"{head}; re-scored counts DIFFER from the log's summary lines (stored in {run_dir}):")
    for line in source.mismatches:
        print(f"  {line}")
    return False


IMPORT_FAREL = SuiteCommand(
    run=command_import, help="farel-bench log files, re-scored and checked", aliases=("import-farel",)
)
