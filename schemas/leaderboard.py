"""One leaderboard row per stored run: the data every table format is rendered from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from schemas.record import AnswerMode
from schemas.run import RunStatus

__all__ = ["LeaderboardRow"]


class LeaderboardRow(BaseModel):
    """A run as the leaderboard shows it (and as `format_result.py --format json` prints it)."""

    model_config = ConfigDict(extra="forbid")

    rank: int | None
    """Rank by FaRel, ties sharing the smallest rank; None for runs without a score (DNF)."""
    model: str
    mode: AnswerMode
    run_id: str
    status: RunStatus
    imported: bool
    farel: float | None
    """Macro accuracy, 0-100."""
    classes: dict[str, float | None]
    """Class name -> accuracy (0-100)."""
    samples: int
    correct: int
    incorrect: int
    missing: int
    errors: int
    ambiguous: int
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
