"""Pydantic models that are the contracts between cases, agent, records, scores and tables."""

from typed_eval.schemas.case import Case, Quiz
from typed_eval.schemas.leaderboard import LeaderboardRow
from typed_eval.schemas.modes import GroupPair, ModeCell, ModeComparison, ModePair
from typed_eval.schemas.record import (
    AnswerMode,
    Attempt,
    Cost,
    CostSource,
    InvalidKind,
    SampleRecord,
    SampleStatus,
    TokenUsage,
    is_text_mode,
)
from typed_eval.schemas.run import (
    SCHEMA_VERSION,
    Aggregate,
    Compliance,
    DatasetInfo,
    GroupScore,
    Pacing,
    RunSettings,
    RunStatus,
    RunSummary,
    Scores,
    SourceLog,
    Totals,
)

__all__ = [
    "SCHEMA_VERSION",
    "Aggregate",
    "AnswerMode",
    "Attempt",
    "Case",
    "Compliance",
    "Cost",
    "CostSource",
    "DatasetInfo",
    "GroupPair",
    "GroupScore",
    "InvalidKind",
    "LeaderboardRow",
    "ModeCell",
    "ModeComparison",
    "ModePair",
    "Pacing",
    "Quiz",
    "RunSettings",
    "RunStatus",
    "RunSummary",
    "SampleRecord",
    "SampleStatus",
    "Scores",
    "SourceLog",
    "TokenUsage",
    "Totals",
    "is_text_mode",
]
