"""The multiple-choice item every benchmark hands to the evaluator."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Quiz"]


class Quiz(BaseModel):
    """One multiple-choice question with exactly one correct option."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Stable identifier within its dataset (used to match records, replies and resumed runs)."""
    class_name: str
    """The class the quiz belongs to; accuracy is macro-averaged over classes (FaRel: the relation)."""
    prompt: str
    """The full text posed to the model."""
    options: tuple[str, ...] = Field(min_length=2)
    """Option texts in the order shown, numbered from 1."""
    correct: int
    """1-based number of the correct option."""
    degree: int | None = None
    """FaRel relationship degree; None for quizzes of other benchmarks."""

    @model_validator(mode="after")
    def _correct_is_an_option(self) -> Quiz:
        if not 1 <= self.correct <= len(self.options):
            raise ValueError(f"correct answer {self.correct} is not an option number 1..{len(self.options)}")
        return self

    @property
    def ambiguous(self) -> bool:
        """True when the correct option's text is repeated, so a second option is equally right."""
        return self.options.count(self.options[self.correct - 1]) > 1
