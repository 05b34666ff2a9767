"""The leaderboard: ranking with ties, and each format rendered exactly (rich at a fixed width)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

import format_result
from evaluator import score_records
from farel_eval.schemas import Cost, DatasetInfo, RunSettings, RunStatus, RunSummary, SampleRecord, TokenUsage
from farel_eval.storage import StoredRun

WHEN = datetime(2026, 11, 1, tzinfo=UTC)


def record(n: int, class_name: str, status: str, cost: float | None) -> SampleRecord:
    return SampleRecord(
        case_id=f"q{n}",
        group=class_name,
        expected=1,
        metadata={"options": ["a", "b"], "degree": 1},
        mode="tool",
        output={"answer": 1 if status == "correct" else 2},
        score={"correct": 1.0, "incorrect": 0.0}.get(status),
        status=status,
        attempts=[],
        corrective_retries=0,  # type: ignore[arg-type]
        usage=TokenUsage(requests=1, input_tokens=100, output_tokens=10),
        cost=Cost(usd=cost, source="provider" if cost is not None else "unknown"),
        latency_s=1.0,
    )


def stored(
    model: str, statuses: dict[str, list[str]], *, status: RunStatus = "finished", cost: float | None = 0.001
) -> StoredRun:
    records = [record(i, name, s, cost) for name, ss in statuses.items() for i, s in enumerate(ss)]
    summary = RunSummary(
        program_version="0.1.0",
        run_id=f"run-{model}",
        model=model,
        mode="tool",
        status=status,
        reason="Connection refused" if status == "dnf" else None,
        started_at=WHEN,
        finished_at=WHEN,
        wall_s=12.5,
        settings=RunSettings(
            model=model,
            mode="tool",
            retries=3,
            temperature=0.01,
            seed=42,
            max_tokens=None,
            system_prompt=None,
            instructions=None,
            concurrency=8,
        ),
        dataset=DatasetInfo(source="generated", md5="0b08876d7a221c9b9812ea85d746449a", cases=4),
        scores=score_records(records),
    )
    return StoredRun(Path("result") / model / summary.run_id, summary)


RUNS = [
    stored("half-a", {"child": ["correct", "incorrect"], "grandparent": ["correct", "incorrect"]}),
    stored("best", {"child": ["correct", "correct"], "grandparent": ["correct", "incorrect"]}, cost=None),
    stored("half-b", {"child": ["correct", "correct"], "grandparent": ["incorrect", "incorrect"]}),
    stored("gone", {"child": ["error"]}, status="dnf", cost=None),
]


def test_rows_rank_by_farel_with_ties_sharing_the_smallest_rank() -> None:
    rows = format_result.build_rows(RUNS)
    assert [(r.rank, r.model, r.farel) for r in rows] == [
        (1, "best", 75.0),
        (2, "half-a", 50.0),
        (2, "half-b", 50.0),
        (None, "gone", None),
    ]


def test_markdown_is_the_farel_bench_table_with_compliance_columns() -> None:
    assert format_result.render_markdown(format_result.build_rows(RUNS)).splitlines() == [
        "|   Nr | Model         |   FaRel |   child |   grand-parent |   Valid 1st |   Retries |   Invalid |   Missing "
        "|   Errors |      Cost | Req / In Tok / Out Tok   |",
        "|-----:|:--------------|--------:|--------:|---------------:|------------:|----------:|----------:|----------:"
        "|---------:|----------:|:-------------------------|",
        "|    1 | best (tool)   |   75.00 |  100.00 |          50.00 |             |         0 |         0 |         0 "
        "|        0 |   unknown | 4 / 400 / 40             |",
        "|    2 | half-a (tool) |   50.00 |   50.00 |          50.00 |             |         0 |         0 |         0 "
        "|        0 | $0.004000 | 4 / 400 / 40             |",
        "|    2 | half-b (tool) |   50.00 |  100.00 |           0.00 |             |         0 |         0 |         0 "
        "|        0 | $0.004000 | 4 / 400 / 40             |",
        "|      | gone (tool)   |     DNF |         |                |         DNF |         0 |         0 |         0 "
        "|        1 |       DNF | 1 / 100 / 10             |",
    ]
    farel_only = format_result.render_markdown(format_result.build_rows(RUNS), farel_only=True).splitlines()
    assert farel_only[0] == "|   Nr | Model         |   FaRel |   child |   grand-parent |"
    assert farel_only[-1] == "|      | gone (tool)   |     DNF |         |                |"


def test_rich_tables_at_a_fixed_width() -> None:
    console = Console(width=100, record=True, color_system=None)
    format_result.render_rich(format_result.build_rows(RUNS), console)
    assert [line.rstrip() for line in console.export_text().splitlines()] == [
        "FaRel",
        "",
        " Nr   Model           FaRel    child   grand-parent",
        " " + "─" * 50,
        "  1   best (tool)     75.00   100.00          50.00",
        "  2   half-a (tool)   50.00    50.00          50.00",
        "  2   half-b (tool)   50.00   100.00           0.00",
        "      gone (tool)       DNF",
        "",
        "Format compliance and cost",
        "",
        "                                                                                     Req / In Tok /",
        " Nr   Model           Valid 1st   Retries   Invalid   Missing   Errors        Cost   Out Tok",
        " " + "─" * 98,
        "  1   best (tool)                       0         0         0        0     unknown   4 / 400 / 40",
        "  2   half-a (tool)                     0         0         0        0   $0.004000   4 / 400 / 40",
        "  2   half-b (tool)                     0         0         0        0   $0.004000   4 / 400 / 40",
        "      gone (tool)           DNF         0         0         0        1         DNF   1 / 100 / 10",
        "",
    ]


def test_csv_and_json_carry_the_same_rows() -> None:
    rows = format_result.build_rows(RUNS)
    lines = format_result.render_csv(rows).splitlines()
    assert lines[0].startswith("rank,suite,model,mode,run_id,status,imported,score,child,grandparent,samples,")
    assert lines[1] == "1,farel,best,tool,run-best,finished,False,75.00,100.00,50.00,4,3,1,0,0,,0,0,4,400,40,,12.5"
    data = json.loads(format_result.render_json(rows))
    assert [(d["rank"], d["model"], d["farel"], d["cost_usd"]) for d in data] == [
        (1, "best", 75.0, None),
        (2, "half-a", 50.0, 0.004),
        (2, "half-b", 50.0, 0.004),
        (None, "gone", None, None),
    ]
    assert data[0]["classes"] == {"child": 100.0, "grandparent": 50.0}


def test_a_pipe_in_a_name_does_not_break_the_markdown_table() -> None:
    piped = stored("org|model", {"a|b": ["correct", "incorrect"]})
    lines = format_result.render_markdown(format_result.build_rows([piped]), farel_only=True).splitlines()
    assert lines == [
        "|   Nr | Model             |   FaRel |   a\\|b |",
        "|-----:|:------------------|--------:|-------:|",
        "|    1 | org\\|model (tool) |   50.00 |  50.00 |",
    ]
