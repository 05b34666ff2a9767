"""`import farel|lineage`: published results stored as runs, re-scored."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from typed_eval.cli.common import FLAG_OF, RESULTS_DIR, error_line
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import EvaluatorError
from typed_eval.core.terminal import printable
from typed_eval.reports.leaderboard import relaxed_score
from typed_eval.store.storage import latest_records
from typed_eval.suites.farel.importer import import_log_file
from typed_eval.suites.farel.logs import log_files
from typed_eval.suites.farel.suite import generated_dataset, read_dataset
from typed_eval.suites.lineage.importer import import_result_file, result_files

FLAGS = {"quizzes": "--quizzes", "results_dir": "--results-dir", **FLAG_OF}
"""The flags of the import commands, for an error about one file that the others outlive."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sources = commands.add_parser("import", help="store published results as runs, re-scored").add_subparsers(
        dest="source", required=True
    )
    _farel_arguments(sources.add_parser("farel", help="farel-bench log files, re-scored and checked"))
    results = sources.add_parser(
        "lineage", help="lineage-bench result CSVs: a run per model, problem size and reasoning effort"
    )
    results.add_argument("paths", nargs="+", metavar="PATH", help="result CSV files, or folders searched for *.csv")
    results.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    results.set_defaults(command=command_import_lineage)
    _farel_arguments(commands.add_parser("import-farel", help="the same as `import farel`"))


def _farel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, or folders searched for *.log")
    parser.add_argument(
        "--quizzes", metavar="FILE", help="the FaRel CSV the logs were run on (default: the published FaRel-3 dataset)"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    parser.set_defaults(command=command_import)


def command_import_lineage(args: argparse.Namespace) -> int:
    """Each (model, problem size, reasoning effort) of each result file as an imported run; importing a file again
    stores nothing new. A file that cannot be imported is one line and makes the exit 2; the others are imported."""
    code = 0
    for path in result_files(args.paths):
        try:
            asyncio.run(_import_results(path, args.results_dir))
        except EvaluatorError as exc:
            print(error_line(exc, FLAGS), file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


async def _import_results(path: Path, results_dir: Path) -> None:
    """One result file's runs, each stored unless the same content is already (a line each, as it goes)."""
    async for done in import_result_file(path, results_dir):
        head = f"{path}: {done.run.model}, lineage-{done.run.problem_size}"
        if done.already:
            print(printable(f"{head}: already imported in {done.run_dir}"))
            continue
        scores = done.summary.scores
        strict, relaxed = scores.score, relaxed_score(latest_records(done.run_dir), scores.aggregate)
        print(printable(f"{head}: {scores.samples} responses, score {_score(strict)}, relaxed {_score(relaxed)} "
                        f"(missing {scores.missing}); stored in {done.run_dir}"))  # fmt: skip


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def command_import(args: argparse.Namespace) -> int:
    """Import each log as a run, whatever the others hold; the exit is 2 when a log cannot be imported (bad input),
    else 1 when one's counts differ from its summary lines."""
    dataset = read_dataset(args.quizzes) if args.quizzes else generated_dataset(3, 50, 42, shuffle=True)
    code = 0
    for path in log_files(args.paths):
        try:
            code = max(code, 0 if _import_one(path, dataset, args.results_dir) else 1)
        except EvaluatorError as exc:
            print(error_line(exc, FLAGS), file=sys.stderr)
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
