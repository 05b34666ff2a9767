"""A test's difficulty, seed 003's: reasoning (1, 2 or 4) and format (1, 2 or 3) as the file states them, context
measured from the prompt's length; their sum D is what the test weighs in the score."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typed_eval.core.errors import TaskError

__all__ = ["FORMAT_LEVELS", "REASONING_LEVELS", "Difficulty", "context_level", "difficulty_of"]


REASONING_LEVELS = (1, 2, 4)
FORMAT_LEVELS = (1, 2, 3)


def context_level(prompt: str) -> int:
    """Seed 003's context difficulty: 1 up to 2,000 characters, 2 up to 5,000, 3 beyond."""
    return 1 if len(prompt) <= 2000 else 2 if len(prompt) <= 5000 else 3


@dataclass(frozen=True)
class Difficulty:
    reasoning: int = 1
    format: int = 1
    context: int = 1

    @property
    def total(self) -> int:
        """D: what the test weighs in the score."""
        return self.reasoning + self.format + self.context

    def stored(self) -> dict[str, int]:
        return {"reasoning": self.reasoning, "format": self.format, "context": self.context, "total": self.total}


def difficulty_of(metadata: Any, prompt: str, where: str) -> Difficulty:
    given = metadata.get("difficulty") if isinstance(metadata, Mapping) else None
    if given is None:
        return Difficulty(context=context_level(prompt))
    if not isinstance(given, Mapping) or set(given) - {"reasoning", "format"}:
        raise TaskError(
            f"{where}: metadata.difficulty takes reasoning (1, 2 or 4) and format (1, 2 or 3); "
            "context is measured from the prompt"
        )
    reasoning, form = given.get("reasoning", 1), given.get("format", 1)
    if reasoning not in REASONING_LEVELS or isinstance(reasoning, bool):
        raise TaskError(f"{where}: difficulty reasoning must be 1, 2 or 4, got {reasoning!r}")
    if form not in FORMAT_LEVELS or isinstance(form, bool):
        raise TaskError(f"{where}: difficulty format must be 1, 2 or 3, got {form!r}")
    return Difficulty(int(reasoning), int(form), context_level(prompt))
