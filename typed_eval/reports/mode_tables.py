"""The model x mode tables as text: each model's answer modes side by side, then every pair of them compared on
paired cases (`--modes`), in the terminal, markdown, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.console import Console

from typed_eval.contracts import GroupPair, ModeComparison, ModePair
from typed_eval.core.terminal import json_printable, printable
from typed_eval.reports.exports import csv_value
from typed_eval.reports.formatting import interval, money_fixed, number, p_value, percent, signed
from typed_eval.reports.tables import escape_cell, print_table

__all__ = [
    "GROUP_HEADERS",
    "MODE_HEADERS",
    "PAIR_HEADERS",
    "group_pair_lines",
    "mode_table_lines",
    "render_modes_csv",
    "render_modes_json",
    "render_modes_markdown",
    "render_modes_rich",
]

MODE_HEADERS = ("Model", "Mode", "Score", "95% CI", "Valid 1st", "$/correct", "Best")
PAIR_HEADERS = ("Model", "A", "B", "Paired", "Only A", "Only B", "p", "p (Holm)", "A - B", "95% CI")
GROUP_HEADERS = ("Model", "A", "B", "Group", "Paired", "Only A", "Only B", "p", "p (Holm)", "A - B", "95% CI")


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


def group_pair_lines(comparisons: Sequence[ModeComparison]) -> list[list[str]]:
    """A line per pair of modes and group, for the suites that compare their modes group by group (Holm-corrected
    over each pair's groups)."""
    return [
        [
            c.model,
            p.a,
            p.b,
            g.group,
            str(g.paired),
            str(g.only_a),
            str(g.only_b),
            p_value(g.p_value),
            p_value(g.p_holm),
            signed(g.difference),
            interval(g.difference_ci95, 2, " to "),
        ]
        for c in comparisons
        for p in c.versus
        for g in p.by_group
    ]


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
        groups = group_pair_lines(mine)
        parts.append(
            f"### {printable(suite)}: modes\n\n{_pipe_table(MODE_HEADERS, modes)}\n{_pipe_table(PAIR_HEADERS, pairs)}"
            + (f"\n{_pipe_table(GROUP_HEADERS, groups)}" if groups else "")
        )
    return "\n".join(parts)


def render_modes_rich(comparisons: Sequence[ModeComparison], console: Console) -> None:
    """Per suite and model (named whole in the titles): its modes, then its pairs of modes; each table fits the
    console, its columns going on in another table when they do not (`print_table`)."""
    for comparison in comparisons:
        modes, pairs = mode_table_lines([comparison])
        groups = group_pair_lines([comparison])
        name = f"{comparison.suite} · {comparison.model}"
        for title, headers, lines, fixed in (
            (f"{name}: modes", MODE_HEADERS, modes, 1),
            (f"{name}: modes compared on paired cases (Holm over the model's pairs)", PAIR_HEADERS, pairs, 2),
            *(
                [(f"{name}: modes compared group by group (Holm over each pair's groups)", GROUP_HEADERS, groups, 3)]
                if groups
                else []
            ),
        ):
            cells = [[printable(cell) for cell in line[1:]] for line in lines]
            print_table(console, title, [(h, i < fixed) for i, h in enumerate(headers[1:])], cells, fixed=fixed)
            console.print()


def render_modes_csv(comparisons: Sequence[ModeComparison]) -> str:
    """A line per pair of a model's modes, with each side's figures: one flat table. When pairs are compared group
    by group too, a `group` column: empty on the pair's line, then a line per group."""
    grouped = any(p.by_group for c in comparisons for p in c.versus)
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
            *(["group"] if grouped else []),
        ]
    )
    for c in comparisons:
        for pair in c.versus:
            a, b = c.modes[pair.a], c.modes[pair.b]
            lines: list[tuple[str, ModePair | GroupPair]] = [("", pair), *((g.group, g) for g in pair.by_group)]
            for group, p in lines:
                low, high = p.difference_ci95 or (None, None)
                line = (
                    c.suite,
                    c.model,
                    pair.a,
                    pair.b,
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
                writer.writerow([csv_value(v) for v in (*line, *([group] if grouped else []))])
    return out.getvalue()


def render_modes_json(comparisons: Sequence[ModeComparison]) -> str:
    data = [c.model_dump(mode="json") for c in comparisons]
    return json_printable(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
