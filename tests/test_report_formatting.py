"""The one formatting module: every figure a report writes, as it writes it."""

from __future__ import annotations

import pytest

from typed_eval.reports.formatting import (
    count,
    interval,
    metric,
    money,
    money_fixed,
    money_table,
    money_tick,
    number,
    p_value,
    percent,
    signed,
)


def test_numbers_percents_and_differences() -> None:
    assert [number(81.456), number(81.456, 1), number(None), number(float("nan")), number(0.0)] == [
        "81.46", "81.5", "", "", "0.00",
    ]  # fmt: skip
    assert [percent(87.54), percent(100.0), percent(None)] == ["87.5%", "100.0%", ""]
    assert [signed(1.254), signed(-0.5), signed(0.0), signed(-18.75, 1), signed(None)] == [
        "+1.25", "-0.50", "+0.00", "-18.8", "",
    ]  # fmt: skip


def test_p_values_keep_significant_digits() -> None:
    assert [p_value(0.031249), p_value(1.0), p_value(2 / 2**40), p_value(0.6251, 3), p_value(None)] == [
        "0.03125", "1", "1.819e-12", "0.625", "",
    ]  # fmt: skip


def test_intervals() -> None:
    assert interval([71.23, 80.45]) == "71.2-80.5"
    assert interval((2.625, 22.625), 2, " to ") == "2.62 to 22.62"
    assert interval([-37.5, 0.0], 2, " to ") == "-37.50 to 0.00"
    assert interval([74.0, 88.0], between="&ndash;") == "74.0&ndash;88.0"
    assert [interval(None), interval([])] == ["", ""]


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.000123456, "$0.000123"), (0.0123, "$0.0123"), (0.00012, "$0.000120"), (1.5, "$1.50"), (1234.5, "$1234.50"),
     (0.0, "$0"), (None, ""), (float("inf"), "")],
)  # fmt: skip
def test_money_to_three_significant_digits_in_the_html_views(value: float | None, shown: str) -> None:
    assert money(value) == shown


def test_money_in_the_text_tables_and_on_plot_axes() -> None:
    assert [money_table(0.0004), money_table(0.999999), money_table(1.0), money_table(12345.678)] == [
        "$0.000400", "$0.999999", "$1.00", "$12,345.68",
    ]  # fmt: skip
    assert [money_fixed(0.001234), money_fixed(12.5), money_fixed(None), money_fixed(0.5, 2)] == [
        "$0.001234", "$12.500000", "", "$0.50",
    ]  # fmt: skip
    assert [money_tick(0.0001), money_tick(0.0025), money_tick(1.5), money_tick(20.0), money_tick(0.0)] == [
        "$0.0001", "$0.0025", "$1.5", "$20", "$0",
    ]  # fmt: skip


def test_counts_are_plural_when_not_one() -> None:
    assert [count(1, "case"), count(0, "run"), count(2000, "case")] == ["1 case", "0 runs", "2,000 cases"]


def test_a_suites_figure_named_in_usd_is_written_as_money() -> None:
    assert (metric("bfcl-mt-solved-usd", 0.0123456), metric("bfcl-overall", 81.256)) == ("$0.0123", "81.26")
    assert (metric("bfcl-mt-solved-usd", None), metric("x-usd", 0.0)) == ("", "$0")
