"""Leaderboard rows of stored runs: scores with their intervals and baselines, rank groups, cost per correct answer
and the Pareto frontier, ranked by score, cost, value or frontier. Rendering is `farel_eval.tables`.

Each run's records are read once (`analysis.analyse`); a run stored without its records (a hand-made summary)
gets a row from its summary alone, with no interval.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from rich.console import Console

from farel_eval.analysis import Comparison, RunAnalysis, analyse, compare, tied_with_best
from farel_eval.errors import EvaluatorError, InputError, OneLineArgumentParser, ResultFileError
from farel_eval.html_report import invalid_examples, render_html
from farel_eval.schemas import Aggregate, LeaderboardRow, SampleRecord, is_text_mode
from farel_eval.scoring import score_records
from farel_eval.stats import pareto_front
from farel_eval.storage import RECORDS_FILE, SUMMARY_FILE, StoredRun, latest_records, load_runs, read_records
from farel_eval.suites.lineage import size_scores
from farel_eval.tables import comparison_json, render_comparison, render_csv, render_json, render_markdown, render_rich
from farel_eval.terminal import printable

__all__ = [
    "RANK_BY",
    "RankBy",
    "analyse_run",
    "build_rows",
    "compare_runs",
    "load_run",
    "main",
    "newest_runs",
    "relaxed_score",
]

RankBy = Literal["score", "cost", "value", "pareto"]
RANK_BY: tuple[RankBy, ...] = ("score", "cost", "value", "pareto")


def analyse_run(run: StoredRun) -> RunAnalysis | None:
    """The run's records reduced for statistics; None when the run was stored without them."""
    if not _has_records(run.path):
        return None
    return analyse(latest_records(run.path), run.summary.scores.aggregate)


def _with_relaxed_reading(record: SampleRecord) -> SampleRecord:
    if record.status != "missing" or record.relaxed_score is None:
        return record
    value = record.relaxed_score
    status = "correct" if value == 1.0 else "incorrect" if value == 0.0 else "partial"
    return record.model_copy(update={"status": status, "score": value, "output": record.relaxed_output})


def relaxed_score(records: Iterable[SampleRecord], aggregate: Aggregate) -> float | None:
    """The score (0-100) with the relaxed reading counted: each missing reply it reads scores what it reads, as
    lineage-bench's `compute_metrics.py --relaxed` counts them."""
    return score_records((_with_relaxed_reading(r) for r in records), aggregate=aggregate).score


def _score_relaxed(run: StoredRun, score: float | None) -> float | None:
    """Text modes: the score with the relaxed reading counted (the records are read only when it reads some)."""
    s = run.summary
    if score is None or not is_text_mode(s.mode):
        return None
    if not s.scores.compliance.relaxed_recoverable:
        return score
    if not _has_records(run.path):
        return None
    return relaxed_score(latest_records(run.path), s.scores.aggregate)


def _problem_size(run: StoredRun) -> int | None:
    """The one problem size of a run's cases (lineage); None for runs of several sizes, or of none."""
    sizes = run.summary.dataset.params.get("problem_sizes")
    return sizes[0] if isinstance(sizes, list) and len(sizes) == 1 and isinstance(sizes[0], int) else None


def load_run(path: Path) -> StoredRun:
    """One stored run, named by its folder or its summary file."""
    summary = path / SUMMARY_FILE if path.is_dir() else path
    if summary.name != SUMMARY_FILE or not summary.is_file():
        raise ResultFileError(f"{path} is not a stored run: name a run folder (it holds {SUMMARY_FILE})")
    (run,) = load_runs(summary)
    return run


def newest_runs(runs: Iterable[StoredRun]) -> list[StoredRun]:
    """The newest run per model, mode, suite, task, cases and settings (`--latest`): older runs of the same
    configuration are left out."""
    newest: dict[tuple[str, ...], StoredRun] = {}
    for run in runs:  # oldest first, as load_runs gives them
        s = run.summary
        settings = s.settings.model_dump_json(exclude={"concurrency", "tool_choice", "tool_choice_reason", "base_url"})
        key = (s.model, s.mode, s.suite, s.task, s.dataset.md5, str(s.dataset.limit), settings)
        newest.pop(key, None)
        newest[key] = run
    return list(newest.values())


def build_rows(
    runs: Sequence[StoredRun],
    *,
    rank_by: RankBy = "score",
    on_error: Callable[[ResultFileError], None] | None = None,
) -> list[LeaderboardRow]:
    """One row per run, a block per suite (FaRel first); runs of different suites are never ranked against each
    other. Complete runs are ranked (equal keys share the smallest rank); partial, limited and unscored runs
    follow them unranked, so a 2-case run never stands above a full one. A run whose records cannot be read raises
    `ResultFileError`, or with `on_error` is handed to it and left out."""
    rows: list[LeaderboardRow] = []
    analyses: list[RunAnalysis | None] = []
    for run in runs:
        try:
            analysis = analyse_run(run)
            rows.append(_row(run, analysis))
        except ResultFileError as exc:
            if on_error is None:
                raise
            on_error(exc)
            continue
        analyses.append(analysis)
    by_path = dict(zip((r.path for r in rows), analyses, strict=True))
    ordered: list[LeaderboardRow] = []
    for suite in sorted({r.suite for r in rows}, key=lambda name: (name != "farel", name)):
        mine = _with_frontier([r for r in rows if r.suite == suite])
        mine = _with_rank_groups(mine, by_path)
        ordered += _ranked(mine, rank_by)
    return ordered


def _known_cost(row: LeaderboardRow) -> bool:
    return row.cost_usd is not None and row.cost_complete


def _row(run: StoredRun, analysis: RunAnalysis | None) -> LeaderboardRow:
    s, scores = run.summary, run.summary.scores
    scored = s.status != "dnf"
    score = scores.score if scored else None
    repeats = max(s.settings.repeats, analysis.repeats if analysis else 1)
    complete = (
        s.status == "finished"
        and s.dataset.limit is None
        and scores.errors == 0
        and scores.samples >= s.dataset.cases * repeats
        and score is not None
    )
    known_cost = scores.totals.cost_usd is not None and scores.totals.cost_complete
    cost = scores.totals.cost_usd if known_cost else None
    per_case = None if cost is None or not scores.samples else cost / scores.samples
    correct_sum = analysis.score_sum if analysis else scores.correct + 0.0
    ci = analysis.score_ci95() if analysis and scored else None
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
        metrics=(scores.metrics | (size_scores(scores.groups) if s.suite == "lineage" else {})) if scored else {},
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
        batch=s.settings.batch,
        wall_s=s.wall_s,
        dataset_md5=s.dataset.md5,
        reason=s.reason,
        path=str(run.path),
        cases=s.dataset.cases,
        complete=complete,
        repeats=repeats,
        consistency=analysis.consistency if analysis else None,
        score_ci95=list(ci) if ci else None,
        class_ci95={k: list(v) for k, v in analysis.class_ci95().items()} if analysis and scored else {},
        chance=analysis.chance if analysis else None,
        positions=analysis.positions if analysis else {},
        favourite_position=analysis.favourite_position if analysis else None,
        favourite_position_score=analysis.favourite_position_score if analysis else None,
        cost_per_case_usd=per_case,
        cost_per_correct_usd=cost / correct_sum if cost is not None and correct_sum else None,
        score_per_usd=score / per_case if score is not None and per_case else None,
        latency_median_s=analysis.latency_median_s if analysis else None,
        latency_p95_s=analysis.latency_p95_s if analysis else None,
        rate_limited=scores.totals.pacing.rate_limited if scores.totals.pacing else None,
        wait_s=scores.totals.pacing.wait_s if scores.totals.pacing else None,
        valid_after_retries=scores.compliance.valid_after_retries,
        invalid_by_kind=dict(scores.compliance.invalid_by_kind),
        score_relaxed=_score_relaxed(run, score),
        problem_size=_problem_size(run),
    )


def _with_frontier(rows: Sequence[LeaderboardRow]) -> list[LeaderboardRow]:
    """Mark the complete runs with a known cost that no other such run beats on both cost per case and score."""
    eligible = [r for r in rows if r.complete and _known_cost(r)]
    front = pareto_front([(r.cost_per_case_usd, r.score) for r in eligible])
    on_front = {id(r): flag for r, flag in zip(eligible, front, strict=True)}
    return [r.model_copy(update={"pareto": on_front.get(id(r))}) for r in rows]


def _with_rank_groups(
    rows: Sequence[LeaderboardRow], analyses: Mapping[str, RunAnalysis | None]
) -> list[LeaderboardRow]:
    """Among complete runs on the same cases: rank group 1 for the best and every run a paired test
    (Holm-corrected) cannot tell from it, 2 for the rest."""
    groups: dict[str, int] = {}
    for md5 in dict.fromkeys(r.dataset_md5 for r in rows):
        candidates = sorted(
            (r for r in rows if r.complete and r.dataset_md5 == md5 and analyses.get(r.path) is not None),
            key=lambda r: -(r.score or 0),
        )
        if not candidates:
            continue
        best, others = candidates[0], candidates[1:]
        best_analysis = analyses[best.path]
        assert best_analysis is not None
        tied = tied_with_best(best_analysis, [analyses[r.path] for r in others])
        groups[best.path] = 1
        groups |= {r.path: 1 if flag else 2 for r, flag in zip(others, tied, strict=True) if flag is not None}
    return [r.model_copy(update={"rank_group": groups.get(r.path)}) for r in rows]


def _sort_key(rank_by: RankBy) -> Callable[[LeaderboardRow], tuple[float, ...] | None]:
    """The key a complete row is ranked by (smaller first), or None when the row cannot be ranked that way."""

    def score(row: LeaderboardRow) -> tuple[float, ...] | None:
        return None if row.score is None else (-round(row.score, 2),)

    def cost(row: LeaderboardRow) -> tuple[float, ...] | None:
        per_case = row.cost_per_case_usd
        return None if per_case is None or row.score is None else (per_case, -round(row.score, 2))

    def value(row: LeaderboardRow) -> tuple[float, ...] | None:
        if row.score is None or row.cost_per_case_usd is None:
            return None
        if row.cost_per_case_usd == 0:  # free (a local model): worth more than any paid run, best score first
            return (0, -round(row.score, 2))
        return (1, -(row.score_per_usd or 0))

    def pareto(row: LeaderboardRow) -> tuple[float, ...] | None:
        if row.pareto is None or row.score is None or row.cost_per_case_usd is None:
            return None
        return (0 if row.pareto else 1, row.cost_per_case_usd, -round(row.score, 2))

    return {"score": score, "cost": cost, "value": value, "pareto": pareto}[rank_by]


def _ranked(rows: Sequence[LeaderboardRow], rank_by: RankBy) -> list[LeaderboardRow]:
    key = _sort_key(rank_by)
    rankable = sorted((r for r in rows if r.complete and key(r) is not None), key=lambda r: (key(r), r.model, r.mode))
    ranked: list[LeaderboardRow] = []
    for position, row in enumerate(rankable, 1):
        tied = ranked and key(rankable[position - 2]) == key(row)
        ranked.append(row.model_copy(update={"rank": ranked[-1].rank if tied else position}))
    taken = {id(r) for r in rankable}
    unranked = [r for r in rows if id(r) not in taken]
    unranked.sort(key=lambda r: (r.score is None, -(r.score or 0), r.model, r.mode))
    return ranked + unranked


def _parser() -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog="format_result.py", description="Leaderboard of stored runs.")
    parser.add_argument("dir", nargs="?", type=Path, default=Path("result"), help="results folder (default result)")
    parser.add_argument(
        "--format",
        choices=["rich", "markdown", "csv", "json", "html"],
        help="output format (default: rich on a terminal, markdown otherwise; html needs -o)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write to this file (html: required)")
    parser.add_argument(
        "--farel-only",
        action="store_true",
        help="markdown with only the public FaRel table's columns (Nr, Model, FaRel, classes)",
    )
    parser.add_argument("--rank-by", choices=RANK_BY, default="score", help="rank runs by (default score)")
    parser.add_argument("--latest", action="store_true", help="only the newest run per model, mode, suite, settings")
    parser.add_argument("--wide", action="store_true", help="rich: one table with every column")
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"), help="paired comparison of two run folders"
    )
    return parser


def compare_runs(a: StoredRun, b: StoredRun) -> tuple[Comparison, LeaderboardRow, LeaderboardRow]:
    """Pair two stored runs case by case; refused in one line when they do not share their cases."""
    if a.summary.dataset.md5 != b.summary.dataset.md5:  # case ids alone can match on other cases (q00001...)
        raise InputError(
            f"the two runs were made on different cases (dataset MD5 {a.summary.dataset.md5} and "
            f"{b.summary.dataset.md5}): compare runs made on the same cases"
        )
    analysis_a, analysis_b = analyse_run(a), analyse_run(b)
    if analysis_a is None or analysis_b is None:
        raise ResultFileError("both runs need their records (samples.jsonl) to be compared case by case")
    return compare(analysis_a, analysis_b), _row(a, analysis_a), _row(b, analysis_b)


def _comparison(paths: Sequence[Path], fmt: str | None) -> str:
    comparison, row_a, row_b = compare_runs(*(load_run(path) for path in paths))
    if fmt == "json":
        return comparison_json(comparison, row_a, row_b)
    if fmt not in (None, "rich"):
        raise InputError(f"--compare prints text or json, not {fmt}")
    return render_comparison(comparison, row_a, row_b)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.compare:
            _write(_comparison(args.compare, args.format), args.output)
            return 0
        skipped: list[ResultFileError] = []

        def skip(exc: ResultFileError) -> None:
            print(f"format_result.py: error: {printable(str(exc))}", file=sys.stderr)  # and the others are shown
            skipped.append(exc)

        runs = load_runs(args.dir, skip)
        rows = build_rows(newest_runs(runs) if args.latest else runs, rank_by=args.rank_by, on_error=skip)
        if not rows and skipped:
            return ResultFileError.exit_code
        if not rows:
            raise ResultFileError(f"no stored runs under {args.dir}: run `python main.py run` first")
        fmt = args.format or ("rich" if sys.stdout.isatty() and args.output is None else "markdown")
        if fmt == "html":
            if args.output is None:
                raise InputError("--format html writes a file: name it with -o FILE")
            _write(_html(rows), args.output)
        elif fmt == "rich" and args.output is None:
            render_rich(rows, Console(width=100_000) if args.wide else Console(), wide=args.wide)
        else:
            _write(_text(rows, fmt, args.farel_only, args.wide), args.output)
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


def _text(rows: Sequence[LeaderboardRow], fmt: str, farel_only: bool, wide: bool) -> str:
    if fmt == "rich":
        console = Console(file=io.StringIO(), width=100_000 if wide else 100, color_system=None)
        render_rich(rows, console, wide=wide)
        return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]
    return {
        "markdown": lambda: render_markdown(rows, farel_only=farel_only),
        "csv": lambda: render_csv(rows),
        "json": lambda: render_json(rows),
    }[fmt]()


def _html(rows: Sequence[LeaderboardRow]) -> str:
    examples = {r.path: invalid_examples(read_records(Path(r.path))) for r in rows if _has_records(Path(r.path))}
    return render_html(rows, examples)


def _has_records(run_dir: Path) -> bool:
    """Whether a run was stored with its records (a hand-made summary may stand alone)."""
    return (run_dir / RECORDS_FILE).is_file()


def _write(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()  # here, where a reader that left is caught, not at exit
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
