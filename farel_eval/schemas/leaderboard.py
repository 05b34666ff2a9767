"""One leaderboard row per stored run: the data every table format is rendered from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from farel_eval.schemas.record import AnswerMode
from farel_eval.schemas.run import RunStatus

__all__ = ["LeaderboardRow"]


class LeaderboardRow(BaseModel):
    """A run as the leaderboard shows it (and as `format_result.py --format json` prints it)."""

    model_config = ConfigDict(extra="forbid")

    rank: int | None
    """Rank by score within the row's suite, ties sharing the smallest rank; None for runs without a score."""
    suite: str
    task: str
    model: str
    mode: AnswerMode
    run_id: str
    status: RunStatus
    imported: bool
    score: float | None
    """The headline, 0-100: macro accuracy for multiple-choice suites, mean score x 100 for scored tasks."""
    farel: float | None
    """FaRel rows: the FaRel score (macro accuracy, 0-100); None for other suites."""
    classes: dict[str, float | None]
    """Group (FaRel: class) name -> mean score (0-100)."""
    metrics: dict[str, float]
    """Task-specific figures (story-graph: edge precision, recall, F1)."""
    samples: int
    correct: int
    partial: int
    incorrect: int
    missing: int
    errors: int
    ambiguous: int
    """Cases recorded but left out of the score (FaRel: ambiguous quizzes)."""
    valid_first_try: float | None
    """Percent of answered samples whose first output was valid."""
    corrective_retries: int
    invalid_outputs: int
    requests: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    """None when unknown; a lower bound when `cost_complete` is False."""
    cost_complete: bool
    cost_sources: list[str]
    wall_s: float
    dataset_md5: str
    reason: str | None = None
    path: str
