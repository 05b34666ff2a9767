"""How money is written everywhere (reports, run reports, a suite's own lines): three significant digits."""

from __future__ import annotations

import math

__all__ = ["money"]


def money(value: float | None) -> str:
    """USD to three significant digits, never in scientific notation: `$0.000123`, `$0.0123`, `$1.50`, `$0`."""
    if value is None or not math.isfinite(value):
        return ""
    if value == 0:
        return "$0"
    return f"${value:.{max(2, 2 - math.floor(math.log10(abs(value))))}f}"
