"""Pydantic models that are the contracts between quizzes, agent, records, scores and tables."""

from schemas.leaderboard import LeaderboardRow
from schemas.quiz import Quiz
from schemas.record import AnswerMode, Attempt, Cost, CostSource, InvalidKind, SampleRecord, SampleStatus, TokenUsage
from schemas.run import (
    SCHEMA_VERSION,
    ClassScore,
    Compliance,
    DatasetInfo,
    RunSettings,
    RunStatus,
    RunSummary,
    Scores,
    SourceLog,
    Totals,
)

__all__ = [
    "SCHEMA_VERSION",
    "AnswerMode",
    "Attempt",
    "ClassScore",
    "Compliance",
    "Cost",
    "CostSource",
    "DatasetInfo",
    "InvalidKind",
    "LeaderboardRow",
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
]
