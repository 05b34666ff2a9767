"""Per-category accuracy and BFCL v4's aggregates, computed as BFCL's leaderboard computes them.

BFCL averages its categories in three ways: unweighted (each category counts the same: non-live, irrelevance,
multi-turn, agentic), weighted by number of cases (live), and a fixed-weight overall score: non-live 10,
live 10, irrelevance 10, multi-turn 30, agentic 40 (out of 100). A category that was not run counts as
accuracy 0 (weighing its full size where sizes matter); BFCL then shows "N/A" for the sub-scores that contain it
but still gives a number for the group scores and the overall one. `shown` says which is which, and `missing`
names what was counted as 0, so a report can say beside the overall score which groups it really covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from typed_eval.suites.bfcl.data import CATEGORY_SIZES

__all__ = ["OVERALL_WEIGHTS", "Aggregate", "BfclSummary", "CategoryScore", "category_scores", "summarize"]

MULTI_TURN_CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
WEB_SEARCH_CATEGORIES = ("web_search_base", "web_search_no_snippet")
MEMORY_CATEGORIES = ("memory_kv", "memory_vector", "memory_rec_sum")
OTHER_SIZES: dict[str, int] = {  # cases of the categories this suite does not run yet, in bfcl-eval 2026.3.23
    **dict.fromkeys(MULTI_TURN_CATEGORIES, 200),
    **dict.fromkeys(WEB_SEARCH_CATEGORIES, 100),
    **dict.fromkeys(MEMORY_CATEGORIES, 155),
}
OVERALL_WEIGHTS: dict[str, int] = {"non_live": 10, "live": 10, "irrelevance": 10, "multi_turn": 30, "agentic": 40}


@dataclass(frozen=True)
class CategoryScore:
    """The cases of one category that were scored, and how many BFCL's checker counts as correct."""

    category: str
    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


@dataclass(frozen=True)
class Aggregate:
    """One of BFCL's aggregate scores."""

    name: str
    accuracy: float
    """As BFCL computes it: a category not run counts 0."""
    total: int
    """The cases it covers (a category not run counts with its full size, as in BFCL)."""
    shown: bool
    """False where BFCL's table shows N/A because a category in it was not run."""
    missing: tuple[str, ...]
    """The categories in it that were not run, in BFCL's order."""


@dataclass(frozen=True)
class BfclSummary:
    """BFCL's score table for one run: its sub-scores, group scores and overall score."""

    non_live_simple: Aggregate
    non_live_ast: Aggregate
    non_live: Aggregate
    live_ast: Aggregate
    live: Aggregate
    irrelevance: Aggregate
    relevance: Aggregate
    multi_turn: Aggregate
    agentic: Aggregate
    overall: Aggregate

    @property
    def groups_present(self) -> tuple[str, ...]:
        """The overall score's groups that have at least one category run (the others count 0 in it)."""
        groups = (self.non_live, self.live, self.irrelevance, self.multi_turn, self.agentic)
        return tuple(group.name for group in groups if len(group.missing) < group_size(group.name))


def group_size(name: str) -> int:
    return {"non_live": 6, "live": 4, "irrelevance": 2, "multi_turn": 4, "agentic": 5}[name]


def category_scores(verdicts: Iterable[tuple[str, bool]]) -> dict[str, CategoryScore]:
    """Per-category counts from (category, correct) pairs, one per case."""
    correct: dict[str, int] = {}
    total: dict[str, int] = {}
    for category, valid in verdicts:
        total[category] = total.get(category, 0) + 1
        correct[category] = correct.get(category, 0) + int(valid)
    return {name: CategoryScore(name, correct[name], total[name]) for name in total}


def leaf(scores: Mapping[str, CategoryScore], category: str) -> Aggregate:
    """A category as an aggregate of itself; not run: accuracy 0 over its full size, not shown."""
    score = scores.get(category)
    if score is None or score.total == 0:
        return Aggregate(category, 0.0, CATEGORY_SIZES.get(category, OTHER_SIZES.get(category, 0)), False, (category,))
    return Aggregate(category, score.accuracy, score.total, True, ())


def combine(name: str, parts: list[Aggregate], *, weighted: bool, always_shown: bool = False) -> Aggregate:
    """BFCL's unweighted (mean of accuracies) or weighted (by cases) average of parts."""
    total = sum(part.total for part in parts)
    if weighted:
        accuracy = sum(part.accuracy * part.total for part in parts) / total if total else 0.0
    else:
        accuracy = sum(part.accuracy for part in parts) / len(parts)
    missing = tuple(category for part in parts for category in part.missing)
    shown = always_shown or all(part.shown for part in parts)
    return Aggregate(name, accuracy, total, shown, missing)


def summarize(scores: Mapping[str, CategoryScore]) -> BfclSummary:
    """BFCL's aggregates over the categories scored."""
    simple_parts = [leaf(scores, c) for c in ("simple_python", "simple_java", "simple_javascript")]
    simple = combine("non_live_simple", simple_parts, weighted=False)
    ast_parts = [simple, *(leaf(scores, c) for c in ("multiple", "parallel", "parallel_multiple"))]
    live_parts = [leaf(scores, c) for c in ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")]
    irrelevance_parts = [leaf(scores, "irrelevance"), leaf(scores, "live_irrelevance")]
    irrelevance = combine("irrelevance", irrelevance_parts, weighted=False)
    relevance = leaf(scores, "live_relevance")
    multi_turn_parts = [leaf(scores, c) for c in MULTI_TURN_CATEGORIES]
    multi_turn = combine("multi_turn", multi_turn_parts, weighted=False, always_shown=True)
    web_search = combine("web_search", [leaf(scores, c) for c in WEB_SEARCH_CATEGORIES], weighted=False)
    memory = combine("memory", [leaf(scores, c) for c in MEMORY_CATEGORIES], weighted=False)
    agentic = combine("agentic", [web_search, memory], weighted=False, always_shown=True)
    non_live = combine("non_live", ast_parts, weighted=False, always_shown=True)
    live = combine("live", live_parts, weighted=True, always_shown=True)
    groups = {
        "non_live": non_live,
        "live": live,
        "irrelevance": irrelevance,
        "multi_turn": multi_turn,
        "agentic": agentic,
    }
    weight_sum = sum(OVERALL_WEIGHTS.values())
    overall = Aggregate(
        "overall",
        sum(groups[name].accuracy * weight / weight_sum for name, weight in OVERALL_WEIGHTS.items()),
        sum(group.total for group in groups.values()),
        True,
        tuple(category for group in groups.values() for category in group.missing),
    )
    return BfclSummary(
        non_live_simple=simple,
        non_live_ast=combine("non_live_ast", ast_parts, weighted=False),
        non_live=non_live,
        live_ast=combine("live_ast", live_parts, weighted=True),
        live=live,
        irrelevance=irrelevance,
        relevance=relevance,
        multi_turn=multi_turn,
        agentic=agentic,
        overall=overall,
    )
