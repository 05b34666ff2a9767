"""The terminal's tables at 80 and 120 columns: every line fits, nothing is cut to "…", and every model name and
every figure of the rows is printed whole (a name too long for its column is a key named in a legend)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from typed_eval.contracts import LeaderboardRow, ModeCell, ModeComparison, ModePair
from typed_eval.reports.leaderboard import build_board
from typed_eval.reports.mode_matrix import mode_comparisons
from typed_eval.reports.mode_tables import mode_table_lines, render_modes_rich
from typed_eval.reports.tables import print_table, render_rich
from typed_eval.store.storage import load_runs

STORED = Path(__file__).parent / "fixtures" / "stored_runs"
LONG = "local:smollm2-135m-instruct"
LONGER = "openrouter:some-provider/a-model-with-a-very-long-name-2026-11-25-preview"


def printed(width: int, draw: Any) -> str:
    console = Console(width=width, record=True, color_system=None)
    draw(console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    return text


def modes(model: str) -> ModeComparison:
    cells = {
        mode: ModeCell(run=f"m/{mode}", score=score, score_ci95=[score - 9.87, score + 10.12], valid_first_try=valid,
                       cost_per_correct_usd=cost)
        for mode, score, valid, cost in (("tool", 12.5, 100.0, 0.0), ("native", 31.25, 87.5, 0.001234),
                                         ("prompted", 6.25, 43.75, None), ("text", 0.0, 100.0, 12.5))
    }  # fmt: skip
    pairs = [
        ModePair(a=a, b=b, paired=16, only_a=3, only_b=1, p_value=0.0312, p_holm=0.0937, difference=-18.75,
                 difference_ci95=[-37.5, 0.0])
        for a, b in (("tool", "native"), ("tool", "prompted"), ("native", "prompted"), ("native", "text"))
    ]  # fmt: skip
    return ModeComparison(suite="farel", model=model, modes=cells, best_mode="native", versus=pairs)


def figures(lines: list[list[str]]) -> set[str]:
    """Every number a table's cells hold, as written."""
    return {token for line in lines for cell in line for token in re.findall(r"[-+$]?\d[\d.,%]*", cell)}


@pytest.mark.parametrize("width", [80, 120])
def test_the_modes_tables_name_each_model_whole_and_cut_no_figure(width: int) -> None:
    comparisons = [modes(LONG), modes(LONGER)]
    text = printed(width, lambda console: render_modes_rich(comparisons, console))
    assert f"farel · {LONG}: modes" in text
    assert LONGER in text
    words = set(text.split())
    for comparison in comparisons:
        mine, pairs = mode_table_lines([comparison])
        assert figures([line[1:] for line in mine + pairs]) <= words  # the model, in the title, aside
    assert "(Holm" in text and "Paired" in text


def test_at_120_columns_a_modes_table_is_one_table_and_at_80_too() -> None:
    text = printed(80, lambda console: render_modes_rich([modes(LONG)], console))
    assert "(continued)" not in text
    lines = text.splitlines()
    assert lines[0].rstrip() == f"farel · {LONG}: modes"
    assert lines[4].split() == ["tool", "12.50", "2.63", "to", "22.62", "100.0%", "$0.000000"]


def row(model: str, rank: int, score: float) -> LeaderboardRow:
    classes = {name: score for name in ("child", "parent", "grandchild", "sibling", "grandparent", "aunt or uncle")}
    return LeaderboardRow(
        rank=rank, rank_group=1, suite="farel", task="farel", model=model, mode="tool", run_id=f"run-{rank}",
        status="finished", imported=False, score=score, score_ci95=[score - 5.5, score + 4.25], classes=classes,
        metrics={}, samples=450, correct=0, partial=0, incorrect=0, missing=0, errors=0, ambiguous=0,
        valid_first_try=99.5, valid_after_retries=100.0, corrective_retries=3, invalid_outputs=3, requests=453,
        input_tokens=123456, output_tokens=7890, cost_usd=1.2345, cost_complete=True, cost_sources=["provider"],
        wall_s=10.0, dataset_md5="0" * 32, path=f"result/{rank}/run", cases=450, cost_per_case_usd=0.00274,
        cost_per_correct_usd=0.0031, pareto=True, chance=33.3, favourite_position="1", favourite_position_score=34.5,
        latency_median_s=1.25, latency_p95_s=12.5,
    )  # fmt: skip


@pytest.mark.parametrize("width", [80, 120])
def test_the_leaderboard_cuts_no_name_and_no_figure(width: int) -> None:
    rows = [row(LONG, 1, 81.25), row(LONGER, 2, 64.5), row("test", 3, 20.37)]
    text = printed(width, lambda console: render_rich(rows, console, suites={}))
    for name in (LONG, LONGER, "test"):
        assert name in text
    words = set(text.split())
    assert {"81.25", "64.50", "20.37", "75.8-85.5", "$1.23", "$0.003100", "1.2", "/", "12.5", "99.5%"} <= words
    assert {"123456", "7890", "453", "34.5", "33.3"} <= words


def test_a_name_that_does_not_fit_is_a_key_named_in_a_legend() -> None:
    text = printed(80, lambda console: render_rich([row(LONGER, 1, 81.25), row("test", 2, 20.0)], console, suites={}))
    lines = [line.rstrip() for line in text.splitlines()]
    assert lines.count(f"m1: {LONGER}") == 3  # under each table, the rest of the label on the next line
    assert [x for x in lines if x.startswith("m2")] == ["m2: test (tool) run-2", "m2: test (tool)", "m2: test (tool)"]
    header_and_rule = [line for line in text.splitlines() if line.startswith(("Nr Grp", " 1   1 m1"))]
    assert header_and_rule[1].split()[:5] == ["1", "1", "m1", "450", "81.25"]


def test_columns_that_do_not_fit_go_on_in_a_continued_table_repeating_the_first() -> None:
    headers = [("Name", True), *((f"Figure {n}", False) for n in range(12))]
    cells = [["alpha", *(f"{n * 1111.5:.2f}" for n in range(12))]]
    text = printed(80, lambda console: print_table(console, "wide", headers, cells, fixed=1))
    lines = text.splitlines()
    assert lines[0].rstrip() == "wide"
    assert [line.rstrip() for line in lines if line.startswith("wide")] == ["wide", "wide (continued)"]
    assert [line.split()[0] for line in lines if "alpha" in line] == ["alpha", "alpha"]
    assert figures(cells) <= set(text.split())


def test_the_stored_runs_fit_80_and_120_columns() -> None:
    runs = load_runs(STORED)
    board = build_board(runs)
    for width in (80, 120):
        text = printed(width, lambda console: render_rich(board.rows, console))
        assert {row.model for row in board.rows} <= set(re.findall(r"[\w:.-]+", text))
        printed(width, lambda console: render_modes_rich(mode_comparisons(runs, board=board), console))
