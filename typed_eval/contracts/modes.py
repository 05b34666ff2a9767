"""The model x mode table (`format_result.py --modes`): each answer mode of a model on the same cases, and every
pair of its modes compared case by case."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GroupPair", "ModeCell", "ModeComparison", "ModePair"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModeCell(_Model):
    """One mode's run of the model."""

    run: str
    """The run's key: `<model-folder>/<run-folder>` under the results folder."""
    score: float | None
    score_ci95: list[float] | None
    """[low, high], 0-100 (stratified bootstrap over cases)."""
    valid_first_try: float | None
    """Percent of answered samples whose first output was valid."""
    cost_per_correct_usd: float | None


class GroupPair(_Model):
    """Two modes of the model on the paired cases of one group: as `ModePair`, Holm-corrected over the groups."""

    group: str
    paired: int
    only_a: int
    only_b: int
    p_value: float | None
    p_holm: float | None
    difference: float | None
    difference_ci95: list[float] | None


class ModePair(_Model):
    """Two modes of the model on the cases both scored: McNemar's exact test on right/wrong (the sign test for
    scored tasks), Holm-corrected over the model's pairs, and the difference a - b with its paired bootstrap
    interval; None where the runs share no scored case."""

    a: str
    b: str
    paired: int
    only_a: int
    """Cases only mode a got right (scored tasks: scored higher in)."""
    only_b: int
    p_value: float | None
    p_holm: float | None
    difference: float | None
    difference_ci95: list[float] | None
    by_group: list[GroupPair] = Field(default_factory=list, exclude_if=lambda groups: not groups)
    """The same, group by group, for a suite that asks for it (`Suite.pair_groups`); left out otherwise."""


class ModeComparison(_Model):
    """A model's modes in one suite, on the same cases."""

    suite: str
    model: str
    modes: dict[str, ModeCell]
    """Mode -> its run, in the order the modes were given (else tool, native, prompted, text, tag)."""
    best_mode: str | None
    """The mode with the highest score (the first given among equals); None when none was scored."""
    versus: list[ModePair]
