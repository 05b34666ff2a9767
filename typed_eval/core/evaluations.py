"""pydantic_evals' verdicts kept on a record: a scorer that runs pydantic_evals evaluators stores their results under
`score_details[EVALUATIONS]`, in pydantic_evals' own JSON of `EvaluationResult`, so a report in its format is made
from the stored run alone, and the case viewer shows each assertion, score and label."""

from __future__ import annotations

__all__ = ["EVALUATIONS"]

EVALUATIONS = "evaluations"
"""`{"inputs", "metadata", "duration", "assertions", "scores", "labels"}`: the case's inputs and metadata as the
dataset gave them, the seconds its evaluators were told it took, and each kind of result by name."""
