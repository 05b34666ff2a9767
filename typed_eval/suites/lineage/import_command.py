"""`import lineage PATH...`: lineage-bench's published result CSVs stored as runs, one per model, problem size and
reasoning effort, re-scored."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from typed_eval.core.errors import EvaluatorError, OneLineArgumentParser
from typed_eval.core.scoring import relaxed_score
from typed_eval.core.suite import SuiteCommand
from typed_eval.core.terminal import printable
from typed_eval.store.storage import latest_records
from typed_eval.suites.importing import RESULTS_DIR, error_line, score_text
from typed_eval.suites.lineage.importer import import_result_file, result_files

__all__ = ["IMPORT_LINEAGE"]

FLAGS = {"results_dir": "--results-dir"}
"""The flags of the command, for an error about one file that the others outlive."""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog=f"{prog} import lineage", description="lineage-bench result CSVs, re-scored")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="result CSV files, or folders searched for *.csv")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    return parser


def command_import(argv: Sequence[str], prog: str) -> int:
    """Each (model, problem size, reasoning effort) of each result file as an imported run; importing a file again
    stores nothing new. A file that cannot be imported is one line and makes the exit 2; the others are imported."""
    args = _parser(prog).parse_args(list(argv))
    code = 0
    for path in result_files(args.paths):
        try:
            asyncio.run(_import_results(path, args.results_dir))
        except EvaluatorError as exc:
            print(error_line(prog, exc, FLAGS), file=sys.stderr)
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
        print(
            printable(
                f"{head}: {scores.samples} responses, score {score_text(strict)}, relaxed {score_text(relaxed)} "
                f"(missing {scores.missing}); stored in {done.run_dir}"
            )
        )


IMPORT_LINEAGE = SuiteCommand(
    run=command_import, help="lineage-bench result CSVs: a run per model, problem size and reasoning effort"
)
