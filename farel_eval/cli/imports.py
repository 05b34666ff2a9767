"""`import farel|lineage`: published results stored as runs, re-scored."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path

from farel_eval.cli.common import RESULTS_DIR, error_line
from farel_eval.datasets import Dataset
from farel_eval.errors import EvaluatorError
from farel_eval.farel_logs import log_files, parse_log
from farel_eval.leaderboard import relaxed_score
from farel_eval.runs import program_version
from farel_eval.schemas import RunSettings, RunSummary
from farel_eval.storage import RunWriter, imported_run_dir
from farel_eval.suites.farel import FAREL_TASK, generated_dataset, quiz_of, read_dataset
from farel_eval.suites.farel_import import import_log, imported_run_id
from farel_eval.suites.lineage_import import read_results, result_files, store_run
from farel_eval.terminal import printable


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
            _import_results(path, args.results_dir)
        except EvaluatorError as exc:
            print(error_line(exc, {}), file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


def _import_results(path: Path, results_dir: Path) -> None:
    """One result file's runs, each stored unless the same content is already (a line each, as it goes)."""
    for found in read_results(path):
        head = f"{path}: {found.model}, lineage-{found.problem_size}"
        stored_in, stored = found.run_dir(results_dir)
        if stored:
            print(printable(f"{head}: already imported in {stored_in}"))
            continue
        run_dir, summary, records = asyncio.run(store_run(found, results_dir))
        strict, relaxed = summary.scores.score, relaxed_score(records, summary.scores.aggregate)
        print(printable(f"{head}: {len(records)} responses, score {_score(strict)}, relaxed {_score(relaxed)} "
                        f"(missing {summary.scores.missing}); stored in {run_dir}"))  # fmt: skip


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
            print(error_line(exc, {"quizzes": "--quizzes"}), file=sys.stderr)
            code = max(code, exc.exit_code)
    return code


def _import_one(path: Path, dataset: Dataset, results_dir: Path) -> bool:
    log = parse_log(path)
    model = path.stem
    run_dir, stored = imported_run_dir(results_dir, model, imported_run_id(log))
    if stored:
        print(printable(f"{path}: already imported in {run_dir}"))
        return True
    started_at = datetime.now(UTC)
    quizzes = [quiz_of(case) for case in dataset.cases()]
    imported = asyncio.run(import_log(log, quizzes))
    complete = len(imported.records) == len(quizzes)
    summary = RunSummary(
        program_version=program_version(),
        run_id=run_dir.name,
        suite="farel",
        task=FAREL_TASK.name,
        model=model,
        mode="tag",
        status="finished" if complete else "partial",
        reason=None if complete else f"the log has {len(imported.records)} of the dataset's {len(quizzes)} quizzes",
        imported=True,
        source_log=imported.source,
        started_at=started_at,
        finished_at=datetime.now(UTC),
        wall_s=0.0,
        settings=RunSettings(
            model=model,
            mode="tag",
            retries=0,
            temperature=None,
            seed=None,
            max_tokens=None,
            system_prompt=imported.system_prompt,
            instructions=None,
            concurrency=1,
        ),
        dataset=dataset.info,
        scores=imported.scores,
        excluded_case_ids=[r.case_id for r in imported.records if r.excluded],
    )
    with RunWriter(run_dir) as writer:
        for record in imported.records:
            writer.append(record)
        writer.write_summary(summary)
    farel = summary.scores.score
    head = f"{path}: {imported.source.replies} replies, FaRel {farel:.2f}" if farel is not None else f"{path}:"
    source = imported.source
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
