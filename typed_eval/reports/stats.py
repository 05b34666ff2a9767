"""The statistics behind intervals, paired tests, rank groups and the Pareto frontier, in plain Python.

Exact where exactness is cheap (binomial tails in integers for up to 1,000 trials, in log space beyond), and
fast where runs are large: a bootstrap resample of a group draws how many times each distinct value is picked
(a multinomial, through exact binomial draws) instead of picking every case, so 100,000 right/wrong cases
cost two binomial draws per group and resample.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from typed_eval.core.intervals import wilson_interval

__all__ = [
    "binomial_draw",
    "binomial_two_sided_p",
    "bootstrap_ci",
    "holm_adjust",
    "mcnemar_exact_p",
    "pareto_front",
    "percentile",
    "wilson_interval",
]

_EXACT_UP_TO = 1000
"""Binomial tails up to this many trials are summed in exact integers."""


def _lower_tail(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if n <= _EXACT_UP_TO:
        return float(Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n))
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)]
    top = max(logs)
    return math.exp(top + math.log(math.fsum(math.exp(v - top) for v in logs)))


def binomial_two_sided_p(successes: int, trials: int) -> float:
    """Exact two-sided p-value of `successes` in `trials` under a fair coin (the sign test); 1 with no trial."""
    if trials <= 0:
        return 1.0
    return min(1.0, 2 * _lower_tail(min(successes, trials - successes), trials))


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """McNemar's exact test: the discordant pairs (right in one run only) under a fair coin."""
    return binomial_two_sided_p(only_a, only_a + only_b)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (reject where adjusted < alpha)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - step) * p_values[index]))
        adjusted[index] = running
    return adjusted


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linearly interpolated between order statistics (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def binomial_draw(trials: int, p: float, rng: random.Random) -> int:
    """One draw from Binomial(trials, p): waiting times when few successes are expected, else Hormann's
    transformed rejection with squeeze (BTRS, 1993), so a draw costs the same for 10 or 10 million trials."""
    if trials <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    if p > 0.5:
        return trials - binomial_draw(trials, 1.0 - p, rng)
    if trials * p < 10:
        log_q = math.log1p(-p)
        successes = waited = 0
        while True:
            waited += math.floor(math.log(1.0 - rng.random()) / log_q) + 1
            if waited > trials:
                return successes
            successes += 1
    q = 1.0 - p
    spq = math.sqrt(trials * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = trials * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_odds = math.log(p / q)
    mode = math.floor((trials + 1) * p)
    h = math.lgamma(mode + 1) + math.lgamma(trials - mode + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        if us <= 0.0:
            continue
        k = math.floor((2 * a / us + b) * u + c)
        if k < 0 or k > trials:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        if v <= 0.0:
            continue
        accept = math.log(v * alpha / (a / (us * us) + b))
        if accept <= h - math.lgamma(k + 1) - math.lgamma(trials - k + 1) + (k - mode) * log_odds:
            return k


def _resampled_sums(
    counts: Sequence[tuple[tuple[float, float], int]], size: int, rng: random.Random
) -> tuple[float, float]:
    """Draw `size` cases with replacement from a group given as ((value, weight), count) pairs: the sums of
    weight x value and of weight over the draw."""
    total, weights, left, mass = 0.0, 0.0, size, size
    for index, ((value, weight), count) in enumerate(counts):
        if left == 0:
            break
        picked = left if index == len(counts) - 1 else binomial_draw(left, count / mass, rng)
        total += weight * value * picked
        weights += weight * picked
        left -= picked
        mass -= count
    return total, weights


def bootstrap_ci(
    values_by_group: Mapping[str, Sequence[float]],
    *,
    aggregate: Literal["macro", "mean"],
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    weights_by_group: Mapping[str, Sequence[float]] | None = None,
) -> tuple[float, float]:
    """Percentile interval of the aggregate of per-case values, resampling cases within each group (a stratified
    bootstrap: every group keeps its size). `macro` averages group means; `mean` averages all cases; with
    `weights_by_group` (each case's weight, in the order of its value) the means are weighted, as the score
    is. Same values and seed, same interval."""
    groups = [
        (
            sorted(
                Counter(
                    zip(values, weights_by_group[name] if weights_by_group else [1.0] * len(values), strict=True)
                ).items()
            ),
            len(values),
        )
        for name, values in sorted(values_by_group.items())
        if values
    ]
    if not groups:
        raise ValueError("bootstrap of no values")
    rng = random.Random(seed)
    statistics: list[float] = []
    for _ in range(resamples):
        sums = [_resampled_sums(counts, size, rng) for counts, size in groups]
        if aggregate == "macro":
            statistics.append(math.fsum(s / w for s, w in sums) / len(groups))
        else:
            statistics.append(math.fsum(s for s, _ in sums) / math.fsum(w for _, w in sums))
    tail = 100 * (1 - level) / 2
    return percentile(statistics, tail), percentile(statistics, 100 - tail)


def pareto_front(points: Sequence[tuple[float | None, float | None]]) -> list[bool | None]:
    """For each (cost, score): True when no other point costs no more and scores no less, and is better on one
    of them; None when the cost or the score is unknown (such points neither join nor block the front)."""
    known = [(cost, score) for cost, score in points if cost is not None and score is not None]
    front: list[bool | None] = []
    for cost, score in points:
        if cost is None or score is None:
            front.append(None)
            continue
        beaten = any(c <= cost and s >= score and (c < cost or s > score) for c, s in known)
        front.append(not beaten)
    return front
