"""Published farel-bench logs in, runs out: each reply is replayed through tag mode and checked against the log."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from farel_eval.engine import evaluate
from farel_eval.farel_logs import ClassCounts, FarelLog, match_replies, replay_model
from farel_eval.schemas import GroupScore, Quiz, SampleRecord, Scores, SourceLog
from farel_eval.scoring import score_records
from farel_eval.suites.farel import FAREL_TASK

__all__ = ["ImportedLog", "count_mismatches", "import_log", "imported_run_id"]


def imported_run_id(log: FarelLog) -> str:
    """Derived from the log's bytes, so importing the same log twice finds the first import."""
    return f"imported-{hashlib.sha1(log.path.read_bytes()).hexdigest()[:12]}"


@dataclass(frozen=True)
class ImportedLog:
    records: list[SampleRecord]
    scores: Scores
    source: SourceLog
    system_prompt: str | None


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


async def import_log(log: FarelLog, quizzes: Sequence[Quiz]) -> ImportedLog:
    """Replay every reply of `log` through tag mode (no retries), as farel-bench scored it."""
    matched = match_replies(log, quizzes)
    replies = matched.replies
    asked = [quiz for quiz, _ in replies]
    result = await evaluate(
        FAREL_TASK, [quiz.to_case() for quiz in asked], replay_model(replies, log.path.stem), mode="tag",
        retries=0, concurrency=16, local=False,
    )  # fmt: skip
    records = [r.model_copy(update={"latency_s": None}) for r in result.records]  # replay time is not the model's
    scores = score_records(records)
    mismatches = count_mismatches(log.summary, scores.groups) if log.summary else []
    source = SourceLog(
        path=str(log.path),
        format=log.kind,
        replies=len(replies),
        matches_log_summary=not mismatches if log.summary else None,
        mismatches=mismatches,
        notes=[*log.notes, *matched.notes],
    )
    system = next((e.system_prompt for e in log.entries if e.system_prompt), None)
    return ImportedLog(records, scores, source, system)
