"""The statistics, against published values and exact integer arithmetic."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from typed_eval.reports.stats import (
    binomial_draw,
    binomial_two_sided_p,
    bootstrap_ci,
    holm_adjust,
    mcnemar_exact_p,
    pareto_front,
    percentile,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_interval_matches_newcombes_published_table(
    successes: int, trials: int, low: float, high: float
) -> None:
    result = wilson_interval(successes, trials)
    assert result == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_wilson_interval_of_all_right_ends_at_one_and_of_nothing_is_everything() -> None:
    assert wilson_interval(20, 20) == (pytest.approx(1 - 0.1611, abs=5e-5), 1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [(0, 5, 0.0625), (5, 0, 0.0625), (2, 8, 0.109375), (5, 5, 1.0), (0, 0, 1.0), (1, 9, 22 / 1024), (0, 1, 1.0)],
)
def test_mcnemar_exact_small_discordant_counts(only_a: int, only_b: int, p: float) -> None:
    assert mcnemar_exact_p(only_a, only_b) == p


def _exact_two_sided(k: int, n: int) -> float:
    tail = Fraction(sum(math.comb(n, i) for i in range(min(k, n - k) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(("only_a", "only_b"), [(450, 550), (1400, 1600), (2900, 3100), (30, 2970)])
def test_mcnemar_exact_large_discordant_counts_agree_with_integer_arithmetic(only_a: int, only_b: int) -> None:
    assert mcnemar_exact_p(only_a, only_b) == pytest.approx(_exact_two_sided(only_a, only_a + only_b), rel=1e-9)


def test_sign_test_is_symmetric() -> None:
    assert binomial_two_sided_p(3, 20) == binomial_two_sided_p(17, 20) == _exact_two_sided(3, 20)


def test_holm_adjusts_in_the_given_order() -> None:
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjust([0.5, 0.9]) == [1.0, 1.0]
    assert holm_adjust([]) == []


def test_pareto_front_with_ties_and_unknown_costs() -> None:
    points: list[tuple[float | None, float | None]] = [
        (1.0, 80.0),
        (2.0, 90.0),
        (2.0, 85.0),  # same cost as a better run
        (0.5, 60.0),
        (None, 99.0),  # unknown cost: neither on nor off, and blocks nothing
        (1.0, 80.0),  # a tie with the first: both stay on the front
        (3.0, 90.0),  # same score as a cheaper run
        (0.5, None),
    ]
    assert pareto_front(points) == [True, True, False, True, None, True, False, None]


def test_percentile_interpolates_linearly() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
    assert percentile([7.0], 95) == 7.0


def test_binomial_draws_follow_the_binomial_distribution() -> None:
    rng = random.Random(1)
    for trials, p in [(30, 0.4), (30, 0.8), (40, 0.1)]:
        draws = [binomial_draw(trials, p, rng) for _ in range(40_000)]
        for k in range(trials + 1):
            expected = math.comb(trials, k) * p**k * (1 - p) ** (trials - k)
            assert draws.count(k) / len(draws) == pytest.approx(expected, abs=0.006), (trials, p, k)


def test_binomial_draws_of_many_trials_have_the_binomial_mean_and_variance() -> None:
    rng = random.Random(2)
    draws = [binomial_draw(1_000_000, 0.3, rng) for _ in range(20_000)]
    mean = sum(draws) / len(draws)
    variance = sum((d - mean) ** 2 for d in draws) / (len(draws) - 1)
    assert mean == pytest.approx(300_000, abs=10)
    assert variance == pytest.approx(210_000, rel=0.04)
    assert binomial_draw(10, 0.0, rng) == 0
    assert binomial_draw(10, 1.0, rng) == 10


def test_bootstrap_is_reproducible_and_ignores_the_order_cases_come_in() -> None:
    values = {"a": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], "b": [0.5, 0.25, 1.0, 0.0]}
    first = bootstrap_ci(values, aggregate="macro")
    assert bootstrap_ci(values, aggregate="macro") == first
    assert bootstrap_ci({"b": values["b"][::-1], "a": values["a"][::-1]}, aggregate="macro") == first
    assert bootstrap_ci(values, aggregate="macro", seed=1) != first


def test_bootstrap_keeps_groups_apart() -> None:
    # every group is constant, so a stratified resample always gives the same score
    assert bootstrap_ci({"a": [1.0] * 10, "b": [0.0] * 30}, aggregate="macro") == (0.5, 0.5)
    assert bootstrap_ci({"a": [1.0] * 10, "b": [0.0] * 30}, aggregate="mean") == (0.25, 0.25)


def test_bootstrap_interval_of_a_proportion_has_the_binomial_width() -> None:
    low, high = bootstrap_ci({"a": [1.0] * 200 + [0.0] * 200}, aggregate="mean")
    assert (low, high) == (pytest.approx(0.451, abs=0.006), pytest.approx(0.549, abs=0.006))


def test_bootstrap_of_a_hundred_thousand_cases_draws_counts_not_cases() -> None:
    values = {str(g): [1.0] * 6000 + [0.0] * 4000 for g in range(10)}
    low, high = bootstrap_ci(values, aggregate="macro", resamples=500)
    assert (low, high) == (pytest.approx(0.597, abs=0.002), pytest.approx(0.603, abs=0.002))
