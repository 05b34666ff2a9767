"""BFCL's aggregates: unweighted non-live and irrelevance, live weighted by cases, the 10/10/10/30/40 overall, and a
category not run counted 0 (its full size where sizes weigh), named, and shown as N/A where BFCL shows N/A."""

from __future__ import annotations

import pytest

from typed_eval.suites.bfcl.scores import Aggregate, CategoryScore, category_scores, summarize

FULL = {
    name: CategoryScore(name, correct, total)
    for name, correct, total in [
        ("simple_python", 300, 400),
        ("simple_java", 50, 100),
        ("simple_javascript", 25, 50),
        ("multiple", 100, 200),
        ("parallel", 150, 200),
        ("parallel_multiple", 50, 200),
        ("irrelevance", 240, 240),
        ("live_simple", 129, 258),
        ("live_multiple", 1053, 1053),
        ("live_parallel", 8, 16),
        ("live_parallel_multiple", 0, 24),
        ("live_irrelevance", 442, 884),
        ("live_relevance", 16, 16),
    ]
}
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
AGENTIC = ("web_search_base", "web_search_no_snippet", "memory_kv", "memory_vector", "memory_rec_sum")


def test_category_scores_count_each_case_once() -> None:
    verdicts = [("parallel", True), ("parallel", False), ("irrelevance", True), ("parallel", True)]
    assert category_scores(verdicts) == {
        "parallel": CategoryScore("parallel", 2, 3),
        "irrelevance": CategoryScore("irrelevance", 1, 1),
    }
    assert CategoryScore("x", 0, 0).accuracy == 0.0


def test_every_single_turn_category_run() -> None:
    summary = summarize(FULL)
    simple = (0.75 + 0.5 + 0.5) / 3
    non_live = (simple + 0.5 + 0.75 + 0.25) / 4
    live = (129 + 1053 + 8 + 0) / (258 + 1053 + 16 + 24)
    assert summary.non_live_simple == Aggregate("non_live_simple", pytest.approx(simple), 550, True, ())
    assert summary.non_live_ast == Aggregate("non_live_ast", pytest.approx(non_live), 1150, True, ())
    assert summary.non_live == Aggregate("non_live", pytest.approx(non_live), 1150, True, ())
    assert summary.live_ast == Aggregate("live_ast", pytest.approx(live), 1351, True, ())
    assert summary.live == Aggregate("live", pytest.approx(live), 1351, True, ())
    assert summary.irrelevance == Aggregate("irrelevance", 0.75, 1124, True, ())
    assert summary.relevance == Aggregate("live_relevance", 1.0, 16, True, ())
    assert summary.multi_turn == Aggregate("multi_turn", 0.0, 800, True, MULTI_TURN)
    assert summary.agentic == Aggregate("agentic", 0.0, 665, True, AGENTIC)
    assert summary.overall.accuracy == pytest.approx(0.1 * non_live + 0.1 * live + 0.1 * 0.75)
    assert summary.overall.missing == MULTI_TURN + AGENTIC
    assert summary.groups_present == ("non_live", "live", "irrelevance")


def test_a_category_not_run_counts_zero_and_hides_the_sub_scores_holding_it() -> None:
    summary = summarize(
        {"simple_python": CategoryScore("simple_python", 1, 2), "live_parallel": CategoryScore("live_parallel", 4, 4)}
    )
    assert summary.non_live_simple == Aggregate(
        "non_live_simple", pytest.approx(0.5 / 3), 152, False, ("simple_java", "simple_javascript")
    )
    assert summary.non_live_ast.shown is False
    assert summary.non_live.shown is True
    assert summary.non_live.accuracy == pytest.approx(0.5 / 3 / 4)
    assert summary.live_ast.shown is False
    assert summary.live == Aggregate(
        "live",
        pytest.approx(4 / (258 + 1053 + 4 + 24)),
        1339,
        True,
        ("live_simple", "live_multiple", "live_parallel_multiple"),
    )
    assert summary.irrelevance == Aggregate("irrelevance", 0.0, 1124, False, ("irrelevance", "live_irrelevance"))
    assert summary.relevance.shown is False
    assert summary.overall.accuracy == pytest.approx(0.1 * (0.5 / 3 / 4) + 0.1 * 4 / 1339)
    assert summary.groups_present == ("non_live", "live")
    assert summarize({}).groups_present == ()
    assert summarize({}).overall.accuracy == 0.0
