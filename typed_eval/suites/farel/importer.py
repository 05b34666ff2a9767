"""Published farel-bench logs in, runs out: each log is a run of its replies replayed through tag mode (`run()` with a
replay model), stored as an import and checked against the log's own summary lines."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from typed_eval.contracts import GroupScore, RunSummary, Scores, SourceLog
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.run_config import RunConfig
from typed_eval.engine.runs import Imported, run
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.replay import replay_model
from typed_eval.providers.resolve import ResolvedModel
from typed_eval.store.storage import SUMMARY_FILE, imported_run_dir, load_runs
from typed_eval.suites.farel.dataset import FAREL_TASK, quiz_of
from typed_eval.suites.farel.logs import ClassCounts, FarelLog, match_replies, parse_log, replies_by_question

__all__ = ["LogImport", "count_mismatches", "import_log_file", "imported_run_id"]


def imported_run_id(log: FarelLog) -> str:
    """Derived from the log's bytes, so importing the same log twice finds the first import."""
    return f"imported-{hashlib.sha1(log.path.read_bytes()).hexdigest()[:12]}"


@dataclass(frozen=True)
class LogImport:
    """A log's import: where its run is stored and its summary (`source_log` says how the log was read and checked);
    `already`: the run was stored before, and nothing was imported."""

    run_dir: Path
    summary: RunSummary
    already: bool = False


def count_mismatches(published: dict[str, ClassCounts], classes: Sequence[GroupScore]) -> list[str]:
    """Each class whose re-scored C, I, M, A differ from the log's own summary line, with both sets of numbers."""
    ours = {c.group: c for c in classes}
    lines: list[str] = []
    for name, counts in published.items():
        score = ours.get(name)
        mine = (score.correct, score.incorrect, score.missing) if score else (0, 0, 0)
        if mine != (counts.correct, counts.incorrect, counts.missing) or sum(mine) != counts.total:
            lines.append(
                f"{name}: the log says C {counts.correct}, I {counts.incorrect}, M {counts.missing}, A {counts.total}; "
                f"re-scored C {mine[0]}, I {mine[1]}, M {mine[2]}, A {sum(mine)}"
            )
    lines.extend(f"{name}: re-scored but absent from the log's summary" for name in ours if name not in published)
    return lines


async def import_log_file(path: Path, dataset: Dataset, results_dir: Path) -> LogImport:
    """Store the log at `path` as a run of the model it names (its file name) on `dataset`, the quizzes it was run on:
    each reply matched to its quiz by content and replayed through tag mode, with no retries and one at a time, as
    farel-bench scored it. A log stored already (the same bytes) is found and stored again nothing. A log that
    answers only some of the dataset's quizzes makes a `partial` run of those."""
    log = parse_log(path)
    model, run_id = path.stem, imported_run_id(log)
    stored_in, stored = imported_run_dir(results_dir, model, run_id)
    if stored:
        (found,) = load_runs(stored_in / SUMMARY_FILE)
        return LogImport(stored_in, found.summary, already=True)
    quizzes = [quiz_of(case) for case in dataset.cases()]
    matched = match_replies(log, quizzes)
    asked = [quiz.to_case() for quiz, _ in matched.replies]
    sizes, _, source = survey(lambda: iter(asked), None)
    answered = Dataset(dataset.info, sizes, source)  # the dataset's, as far as the log answers it

    def checked(scores: Scores) -> SourceLog:
        mismatches = count_mismatches(log.summary, scores.groups) if log.summary else []
        return SourceLog(
            path=str(log.path),
            format=log.kind,
            replies=len(matched.replies),
            matches_log_summary=not mismatches if log.summary else None,
            mismatches=mismatches,
            notes=[*log.notes, *matched.notes],
        )

    lacking = None
    if len(asked) < len(quizzes):
        lacking = f"the log has {len(asked)} of the dataset's {len(quizzes)} quizzes"
    replayed = ResolvedModel(replay_model(replies_by_question(matched.replies), model), model, None, local=False)
    system = next((e.system_prompt for e in log.entries if e.system_prompt), None)
    settings = RunConfig(mode="tag", retries=0, concurrency=1, system_prompt=system, local=False)
    outcome = await run(
        FAREL_TASK,
        answered,
        PreparedModel(replayed),
        settings,
        results_dir=results_dir,
        imported=Imported(run_id, source_log=checked, lacking=lacking),
    )
    return LogImport(outcome.run_dir, outcome.summary, already=outcome.result is None)
