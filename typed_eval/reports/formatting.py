"""How every report writes a figure: numbers, percents, money, intervals, p-values and counts, one function each.

The terminal tables, markdown, CSV, the HTML report and the viewer all write their figures through these, so a cost
or an interval reads the same wherever it is shown. The text outputs keep the exact formats they have always
printed (a leaderboard pasted from an earlier run compares line by line); the two HTML views share theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from typed_eval.core.money import money

__all__ = [
    "count",
    "interval",
    "metric",
    "money",
    "money_fixed",
    "money_table",
    "money_tick",
    "number",
    "p_value",
    "percent",
    "signed",
]


def number(value: float | None, digits: int = 2) -> str:
    """`value` with `digits` decimals; "" when there is none (or it is not a finite number)."""
    return "" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def metric(name: str, value: float | None) -> str:
    """A suite's figure: money when its name ends in `-usd` (`solved-usd`), else two decimals."""
    return money(value) if name.endswith("-usd") else number(value)


def percent(value: float | None) -> str:
    """A 0-100 figure as a percent with one decimal: `87.5%`."""
    return "" if value is None else f"{value:.1f}%"


def signed(value: float | None, digits: int = 2) -> str:
    """A difference, its sign always written: `+1.25`, `-0.50`."""
    return "" if value is None else f"{value:+.{digits}f}"


def p_value(value: float | None, digits: int = 4) -> str:
    """A p-value to `digits` significant digits: `0.0312`, `1.2e-05`."""
    return "" if value is None else f"{value:.{digits}g}"


def interval(values: Sequence[float] | None, digits: int = 1, between: str = "-") -> str:
    """A (low, high) interval: `71.2-80.4`, or with `between=" to "` `71.2 to 80.4`; "" when there is none."""
    return "" if not values else f"{values[0]:.{digits}f}{between}{values[1]:.{digits}f}"


def money_fixed(value: float | None, digits: int = 6) -> str:
    """USD with a fixed number of decimals, as the terminal's mode tables write it: `$0.001234`."""
    return "" if value is None else f"${value:.{digits}f}"


def money_table(value: float) -> str:
    """USD as the leaderboard's text tables write it: six decimals under a dollar, cents with thousands above."""
    return f"${value:.6f}" if value < 1 else f"${value:,.2f}"


def money_tick(value: float) -> str:
    """A dollar axis tick: three significant digits, trailing zeros dropped (`$0.0001`, `$0.0025`, `$1.5`)."""
    if value <= 0:
        return "$0"
    text = f"{value:.{max(0, 2 - math.floor(math.log10(value)))}f}"
    return "$" + (text.rstrip("0").rstrip(".") if "." in text else text)


def count(number: int, thing: str) -> str:
    """`1 case`, `2,000 cases`: a count and its noun, plural when it is not one."""
    return f"{number:,} {thing}{'s' * (number != 1)}"
