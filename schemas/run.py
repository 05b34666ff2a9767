"""Scores of a run and the versioned summary file that stores them with the run's settings."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.record import AnswerMode, InvalidKind

__all__ = [
    "SCHEMA_VERSION",
    "ClassScore",
    "Compliance",
    "DatasetInfo",
    "RunSettings",
    "RunStatus",
    "RunSummary",
    "Scores",
    "SourceLog",
    "Totals",
]

SCHEMA_VERSION = 1
"""Version of the summary and record files; bump it, and add a migration, on any breaking change."""

RunStatus = Literal["finished", "partial", "dnf"]
"""`dnf`: the model could not be reached at all (did not finish); `partial`: stopped before the end."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClassScore(_Model):
    """Counts and accuracy of one class, as farel-bench's `C, I, M, A` summary line."""

    class_name: str
    correct: int = 0
    incorrect: int = 0
    missing: int = 0
    errors: int = 0
    """Failed calls: left out of the accuracy and counted here."""
    ambiguous: int = 0
    """Ambiguous quizzes: left out of the accuracy and counted here."""
    accuracy: float | None = None
    """Percent correct of the scored quizzes (C + I + M), 0-100; None when none was scored."""


class Compliance(_Model):
    """How well the model kept to the answer format, next to how often it was right."""

    valid_first_try: float | None
    """Percent of answered samples whose first output was valid."""
    valid_after_retries: float | None
    """Percent of answered samples that ended with a valid output."""
    mean_corrective_retries: float | None
    corrective_retries: int
    invalid_outputs: int
    invalid_by_kind: dict[InvalidKind, int]
    relaxed_recoverable: int = 0
    """Tag mode: missing replies a relaxed reading would have answered (of which correct: next field)."""
    relaxed_recoverable_correct: int = 0


class Totals(_Model):
    """Run-wide sums."""

    requests: int
    input_tokens: int | None
    """None when no sample's count is known (imported logs)."""
    output_tokens: int | None
    reasoning_tokens: int | None
    cache_read_tokens: int | None
    cost_usd: float | None
    """Sum of the known costs; None when no sample's cost is known."""
    cost_complete: bool
    """False when some samples' cost is unknown, so `cost_usd` is a lower bound."""
    cost_sources: list[str]
    mean_latency_s: float | None
    transport_retries: int = 0
    cache_hits: int = 0


class Scores(_Model):
    """Accuracy per class, the macro average (FaRel-L), format compliance and totals."""

    classes: list[ClassScore]
    macro_accuracy: float | None
    """Plain mean of the class accuracies (0-100): the FaRel score."""
    samples: int
    correct: int
    incorrect: int
    missing: int
    errors: int
    ambiguous: int
    compliance: Compliance
    totals: Totals


class DatasetInfo(_Model):
    """Which quizzes were posed: enough to regenerate or recognise them."""

    source: Literal["generated", "file", "stdin"]
    path: str | None = None
    md5: str
    """MD5 of the dataset as farel-bench CSV bytes (the published FaRel-3 is 0b08876d...)."""
    quizzes: int
    length: int | None = None
    number: int | None = None
    seed: int | None = None
    shuffle: bool | None = None
    limit: int | None = None


class SourceLog(_Model):
    """Where an imported run came from, and whether re-scoring it gave the log's own counts."""

    path: str
    format: Literal["api", "llama.cpp"]
    replies: int
    matches_log_summary: bool | None
    """None when the log has no summary lines to check against."""
    mismatches: list[str] = Field(default_factory=list)
    """One line per class whose re-scored counts differ from the log's summary line."""
    notes: list[str] = Field(default_factory=list)


class RunSettings(_Model):
    """The settings a run was made with; never holds an API key."""

    model: str
    base_url: str | None = None
    mode: AnswerMode
    retries: int
    temperature: float | None
    seed: int | None
    max_tokens: int | None
    system_prompt: str | None
    instructions: str | None
    """What the evaluator adds to tell the model how to answer in this mode."""
    tool_choice: Literal["required", "auto"] | None = None
    """Tool mode: whether the output tool call was forced."""
    tool_choice_reason: str | None = None
    concurrency: int
    price_in: float | None = None
    price_out: float | None = None
    local: bool = False
    model_file: str | None = None
    """A local model's GGUF file."""
    chat_format: str | None = None
    """A local model's llama-cpp-python chat handler."""


class RunSummary(_Model):
    """The `summary.json` of a stored run."""

    schema_version: int = SCHEMA_VERSION
    program_version: str
    run_id: str
    model: str
    mode: AnswerMode
    status: RunStatus
    reason: str | None = None
    """Why the run is `dnf` or `partial`."""
    imported: bool = False
    """Made from a published log rather than run here."""
    source_log: SourceLog | None = None
    started_at: datetime
    finished_at: datetime
    wall_s: float
    settings: RunSettings
    dataset: DatasetInfo
    scores: Scores
    ambiguous_quiz_ids: list[str] = Field(default_factory=list)
