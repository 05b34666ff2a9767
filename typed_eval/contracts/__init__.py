"""Pydantic models that are the contracts between cases, agent, records, scores and tables."""

from typed_eval.contracts.case import Case, Quiz
from typed_eval.contracts.leaderboard_row import LeaderboardRow
from typed_eval.contracts.modes import GroupPair, ModeCell, ModeComparison, ModePair
from typed_eval.contracts.record import (
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
from typed_eval.contracts.summary import (
    SCHEMA_VERSION,
    Aggregate,
    ChosenSettings,
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
    "ChosenSettings",
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
