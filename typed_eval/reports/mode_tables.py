"""The model x mode tables as text: each model's answer modes side by side, then every pair of them compared on
paired cases (`--modes`), in the terminal, markdown, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from typed_eval.core.terminal import json_printable, printable
from typed_eval.reports.formatting import interval, money_fixed, number, p_value, percent, signed
from typed_eval.reports.tables import csv_value, escape_cell
from typed_eval.schemas import ModeComparison

__all__ = [
    "MODE_HEADERS",
    "PAIR_HEADERS",
    "mode_table_lines",
    "render_modes_csv",
    "render_modes_json",
    "render_modes_markdown",
    "render_modes_rich",
]

MODE_HEADERS = ("Model", "Mode", "Score", "95% CI", "Valid 1st", "$/correct", "Best")
PAIR_HEADERS = ("Model", "A", "B", "Paired", "Only A", "Only B", "p", "p (Holm)", "A - B", "95% CI")


def mode_table_lines(comparisons: Sequence[ModeComparison]) -> tuple[list[list[str]], list[list[str]]]:
    """The table's two parts as text cells: a line per model and mode, then a line per pair of modes."""
    modes: list[list[str]] = []
    pairs: list[list[str]] = []
    for c in comparisons:
        for mode, cell in c.modes.items():
            cost = money_fixed(cell.cost_per_correct_usd)
            best = "best" if mode == c.best_mode else ""
            modes.append(
                [
                    c.model,
                    mode,
                    number(cell.score),
                    interval(cell.score_ci95, 2, " to "),
                    percent(cell.valid_first_try),
                    cost,
                    best,
                ]
            )
        for p in c.versus:
            difference = signed(p.difference)
            pairs.append(
                [
                    c.model,
                    p.a,
                    p.b,
                    str(p.paired),
                    str(p.only_a),
                    str(p.only_b),
                    p_value(p.p_value),
                    p_value(p.p_holm),
                    difference,
                    interval(p.difference_ci95, 2, " to "),
                ]
            )
    return modes, pairs


def _by_suite_modes(comparisons: Sequence[ModeComparison]) -> list[tuple[str, list[ModeComparison]]]:
    suites = list(dict.fromkeys(c.suite for c in comparisons))
    return [(suite, [c for c in comparisons if c.suite == suite]) for suite in suites]


def _pipe_table(headers: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    cells = [[escape_cell(cell) for cell in line] for line in [headers, *lines]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    text = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) + " |" for line in cells]
    text.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(text) + "\n"


def render_modes_markdown(comparisons: Sequence[ModeComparison]) -> str:
    """Per suite: a line per model and mode, then each pair of a model's modes compared on paired cases."""
    parts: list[str] = []
    for suite, mine in _by_suite_modes(comparisons):
        modes, pairs = mode_table_lines(mine)
        parts.append(
            f"### {printable(suite)}: modes\n\n{_pipe_table(MODE_HEADERS, modes)}\n{_pipe_table(PAIR_HEADERS, pairs)}"
        )
    return "\n".join(parts)


def render_modes_rich(comparisons: Sequence[ModeComparison], console: Console) -> None:
    for suite, mine in _by_suite_modes(comparisons):
        modes, pairs = mode_table_lines(mine)
        for title, headers, lines in (
            (f"{suite}: modes", MODE_HEADERS, modes),
            (f"{suite}: modes compared on paired cases (Holm over each model's pairs)", PAIR_HEADERS, pairs),
        ):
            table = Table(title=Text(printable(title)), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
            for index, header in enumerate(headers):
                table.add_column(Text(header), justify="left" if index < 3 else "right")
            for line in lines:
                table.add_row(*(Text(printable(cell)) for cell in line))
            console.print(table)


def render_modes_csv(comparisons: Sequence[ModeComparison]) -> str:
    """A line per pair of a model's modes, with each side's figures: one flat table."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "suite",
            "model",
            "a",
            "b",
            "run_a",
            "run_b",
            "score_a",
            "score_b",
            "valid_first_try_a",
            "valid_first_try_b",
            "cost_per_correct_usd_a",
            "cost_per_correct_usd_b",
            "paired",
            "only_a",
            "only_b",
            "p_value",
            "p_holm",
            "difference",
            "difference_ci95_low",
            "difference_ci95_high",
            "best_mode",
        ]
    )
    for c in comparisons:
        for p in c.versus:
            a, b = c.modes[p.a], c.modes[p.b]
            low, high = p.difference_ci95 or (None, None)
            writer.writerow(
                [
                    csv_value(v)
                    for v in (
                        c.suite,
                        c.model,
                        p.a,
                        p.b,
                        a.run,
                        b.run,
                        a.score,
                        b.score,
                        a.valid_first_try,
                        b.valid_first_try,
                        a.cost_per_correct_usd,
                        b.cost_per_correct_usd,
                        p.paired,
                        p.only_a,
                        p.only_b,
                        p.p_value,
                        p.p_holm,
                        p.difference,
                        low,
                        high,
                        c.best_mode,
                    )
                ]
            )
    return out.getvalue()


def render_modes_json(comparisons: Sequence[ModeComparison]) -> str:
    data = [c.model_dump(mode="json") for c in comparisons]
    return json_printable(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
