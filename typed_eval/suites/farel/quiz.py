"""A FaRel quiz: a multiple-choice quiz that knows its relationship degree (the length of the family tree's path),
kept in its case's metadata after the options, as FaRel's records have always held it."""

from __future__ import annotations

from typing import Any

from typed_eval.contracts import Quiz

__all__ = ["FarelQuiz"]


class FarelQuiz(Quiz):
    degree: int | None = None
    """The relationship degree; None when the quiz's file does not say it."""

    def case_metadata(self) -> dict[str, Any]:
        metadata = super().case_metadata()
        if self.degree is not None:
            metadata["degree"] = self.degree
        return metadata
