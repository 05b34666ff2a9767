"""What a benchmark hands to the evaluator: cases (a prompt and what a right output looks like)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Case", "Quiz"]


class Case(BaseModel):
    """One item of a benchmark: the prompt posed, and what the task's scorer compares the output with."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    """Stable within its dataset: matches records, resumed runs and paired comparisons."""
    prompt: str
    """The text posed to the model."""
    expected: Any = None
    """Whatever the scorer needs (a number, a pydantic model, a dict); stored with each record as JSON."""
    group: str | None = None
    """Scores are reported per group too, and multiple-choice suites average over groups (their classes)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else about the case, stored with its record (multiple choice: its options)."""
    excluded: bool = False
    """Pose and record the case, but leave it out of the score (e.g. an ambiguous quiz)."""
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False, exclude_if=lambda weight: weight == 1.0)
    """How much the case counts in the score: the headline is the weighted mean of the case scores (a case
    file: the test's difficulty D, so the score is sum(R x D) / sum(D)). Left out of the JSON when 1, so cases
    (and the MD5s of datasets) made before cases had weights stay the same bytes."""


class Quiz(BaseModel):
    """One multiple-choice question with exactly one correct option."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Stable identifier within its dataset (used to match records, replies and resumed runs)."""
    class_name: str
    """The class the quiz belongs to; accuracy is macro-averaged over classes."""
    prompt: str
    """The full text posed to the model."""
    options: tuple[str, ...] = Field(min_length=2)
    """Option texts in the order shown, numbered from 1."""
    correct: int
    """1-based number of the correct option."""

    @model_validator(mode="after")
    def _correct_is_an_option(self) -> Quiz:
        if not 1 <= self.correct <= len(self.options):
            raise ValueError(f"correct answer {self.correct} is not an option number 1..{len(self.options)}")
        return self

    @property
    def ambiguous(self) -> bool:
        """True when the correct option's text is repeated, so a second option is equally right."""
        return self.options.count(self.options[self.correct - 1]) > 1

    def case_metadata(self) -> dict[str, Any]:
        """What its case's metadata holds: the options (a benchmark's own quiz adds its fields)."""
        return {"options": list(self.options)}

    def to_case(self) -> Case:
        """The quiz as a multiple-choice case: expected is the correct number, options in the metadata."""
        return Case(
            id=self.id,
            prompt=self.prompt,
            expected=self.correct,
            group=self.class_name,
            metadata=self.case_metadata(),
            excluded=self.ambiguous,
        )
