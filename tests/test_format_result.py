"""The leaderboard: ranking with ties, statistics and baselines from stored records, cost rankings, paired
comparisons, and each format rendered exactly (rich at a fixed width)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

import format_result
from typed_eval.contracts import Cost, DatasetInfo, RunSettings, RunStatus, RunSummary, SampleRecord, TokenUsage
from typed_eval.core.scoring import score_records
from typed_eval.store.storage import RunWriter, StoredRun, load_runs

WHEN = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Answer:
    """One hand-made record: the case, the option chosen and the correct one."""

    case: str
    group: str
    picked: int | None
    expected: int = 1
    options: int = 2
    repeat: int = 0
    error: bool = False


def record(a: Answer, cost: float | None, latency: float) -> SampleRecord:
    status = (
        "error" if a.error else "missing" if a.picked is None else "correct" if a.picked == a.expected else "incorrect"
    )
    return SampleRecord(
        case_id=a.case,
        repeat=a.repeat,
        group=a.group,
        expected=a.expected,
        metadata={"options": [f"o{i}" for i in range(a.options)], "degree": 1},
        mode="tool",
        output=None if a.picked is None else {"answer": a.picked},
        score={"correct": 1.0, "incorrect": 0.0, "missing": 0.0}.get(status),
        status=status,  # type: ignore[arg-type]
        attempts=[],
        corrective_retries=0,
        usage=TokenUsage(requests=1, input_tokens=100, output_tokens=10),
        cost=Cost(usd=cost, source="provider" if cost is not None else "unknown"),
        latency_s=latency,
    )


def answers(statuses: dict[str, list[str]]) -> list[Answer]:
    """`{"child": ["correct", "incorrect"]}` -> answers to cases child-0, child-1 (two options, 1 is right)."""
    picks = {"correct": 1, "incorrect": 2, "missing": None, "error": None}
    return [
        Answer(f"{group}-{i}", group, picks[s], error=s == "error")
        for group, ss in statuses.items()
        for i, s in enumerate(ss)
    ]


def store(
    root: Path,
    model: str,
    given: Sequence[Answer],
    *,
    status: RunStatus = "finished",
    cost: float | None = 0.001,
    cases: int | None = None,
    limit: int | None = None,
    repeats: int = 1,
    minutes: int = 0,
    md5: str = "0b08876d7a221c9b9812ea85d746449a",
    latencies: Sequence[float] = (1.0,),
) -> Path:
    records = [record(a, cost, latencies[i % len(latencies)]) for i, a in enumerate(given)]
    summary = RunSummary(
        program_version="0.1.0",
        run_id=f"run-{model}-{minutes}",
        suite="farel",
        task="farel",
        model=model,
        mode="tool",
        status=status,
        reason="Connection refused" if status == "dnf" else None,
        started_at=WHEN + timedelta(minutes=minutes),
        finished_at=WHEN + timedelta(minutes=minutes),
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
            repeats=repeats,
        ),
        dataset=DatasetInfo(
            suite="farel",
            source="generated",
            md5=md5,
            cases=len({a.case for a in given}) if cases is None else cases,
            limit=limit,
        ),
        scores=score_records(records),
    )
    with RunWriter(root / model / summary.run_id) as writer:
        for r in records:
            writer.append(r)
        writer.write_summary(summary)
    return writer.run_dir


@pytest.fixture
def results(tmp_path: Path) -> Path:
    store(tmp_path, "half-a", answers({"child": ["correct", "incorrect"], "grandparent": ["correct", "incorrect"]}))
    store(tmp_path, "best", answers({"child": ["correct", "correct"], "grandparent": ["correct", "incorrect"]}),
          cost=None, minutes=1)  # fmt: skip
    store(tmp_path, "half-b", answers({"child": ["correct", "correct"], "grandparent": ["incorrect", "incorrect"]}),
          minutes=2, latencies=(1.0, 2.0, 3.0, 10.0))  # fmt: skip
    store(tmp_path, "gone", answers({"child": ["error"]}), status="dnf", cost=None, cases=4, minutes=3)
    return tmp_path


def rows_of(root: Path, *args: str) -> list[dict[str, object]]:
    out = Path(str(root) + ".json")
    assert format_result.main([str(root), "--format", "json", "-o", str(out), *args]) == 0
    rows: list[dict[str, object]] = json.loads(out.read_text())
    return rows


def test_rows_rank_by_farel_with_ties_sharing_the_smallest_rank(results: Path) -> None:
    rows = format_result.build_rows(load_runs(results))
    assert [(r.rank, r.model, r.score, r.complete, r.rank_group) for r in rows] == [
        (1, "best", 75.0, True, 1),
        (2, "half-a", 50.0, True, 1),  # McNemar: 1 case only best got right, p = 1
        (2, "half-b", 50.0, True, 1),
        (None, "gone", None, False, None),
    ]


def test_rows_carry_intervals_baselines_cost_and_latency(results: Path) -> None:
    best, half_a, half_b, gone = format_result.build_rows(load_runs(results))
    # child is all right; grandparent's two cases resample to 0, 1/2 or 1: the macro score is 50, 75 or 100
    assert best.score_ci95 == [50.0, 100.0]
    assert best.class_ci95["child"] == [pytest.approx(34.238, abs=1e-3), 100.0]  # Wilson, 2 of 2
    assert (best.chance, best.favourite_position, best.favourite_position_score) == (50.0, "1", 100.0)
    assert best.positions == {"1": 3, "2": 1, "last": 1}
    assert (best.cost_per_case_usd, best.cost_per_correct_usd, best.score_per_usd, best.pareto) == (
        None, None, None, None,
    )  # fmt: skip
    assert half_a.cost_per_case_usd == pytest.approx(0.001)
    assert half_a.cost_per_correct_usd == pytest.approx(0.002)
    assert half_a.score_per_usd == pytest.approx(50_000)
    assert (half_a.pareto, half_b.pareto) == (True, True)  # equal cost and score: both on the frontier
    assert (half_a.latency_median_s, half_a.latency_p95_s) == (1.0, 1.0)
    assert (half_b.latency_median_s, half_b.latency_p95_s) == (2.5, pytest.approx(8.95))
    assert (gone.cases, gone.complete, gone.score_ci95) == (4, False, None)


def test_a_limited_run_is_flagged_and_never_ranked_above_complete_runs(tmp_path: Path) -> None:
    store(tmp_path, "full", answers({"child": ["correct"] * 3 + ["incorrect"]}))
    store(tmp_path, "tiny", answers({"child": ["correct"]}), cases=4, limit=1)
    store(tmp_path, "stopped", answers({"child": ["correct"] * 2}), cases=4, status="partial")
    store(tmp_path, "errored", answers({"child": ["correct"] * 3 + ["error"]}))
    rows = format_result.build_rows(load_runs(tmp_path))
    assert [(r.rank, r.model, r.score, r.complete) for r in rows] == [
        (1, "full", 75.0, True),
        (None, "errored", 100.0, False),
        (None, "stopped", 100.0, False),
        (None, "tiny", 100.0, False),
    ]
    table = format_result.render_markdown(rows).splitlines()
    assert [line.split("|")[2].strip() for line in table[2:]] == [
        "full (tool)", "errored (tool, incomplete)", "stopped (tool, partial)", "tiny (tool, incomplete)",
    ]  # fmt: skip
    assert [line.split("|")[7].strip() for line in table[2:]] == ["4", "3/4", "2/4", "1/4"]


def test_a_run_clearly_behind_the_best_is_in_the_second_rank_group(tmp_path: Path) -> None:
    store(tmp_path, "strong", answers({"child": ["correct"] * 40}))
    store(tmp_path, "close", answers({"child": ["correct"] * 39 + ["incorrect"]}))
    store(tmp_path, "weak", answers({"child": ["correct"] * 20 + ["incorrect"] * 20}))
    store(tmp_path, "other-cases", answers({"child": ["correct"] * 10}), md5="another")
    rows = format_result.build_rows(load_runs(tmp_path))
    # weak vs strong: 20 discordant pairs all one way, p = 2 / 2**20, x2 by Holm: far below 0.05
    assert [(r.model, r.rank, r.rank_group) for r in rows] == [
        ("other-cases", 1, 1), ("strong", 1, 1), ("close", 3, 1), ("weak", 4, 2),
    ]  # fmt: skip


def test_position_bias_shows_what_always_choosing_the_last_option_scores(tmp_path: Path) -> None:
    # four-option quizzes; the model always answers 4, which is right for 1 case of 4 in "a" and 2 of 4 in "b"
    given = [Answer(f"a{i}", "a", 4, expected=e, options=4) for i, e in enumerate([4, 1, 2, 3])] + [
        Answer(f"b{i}", "b", 4, expected=e, options=4) for i, e in enumerate([4, 4, 1, 2])
    ]
    store(tmp_path, "lazy", given)
    (row,) = format_result.build_rows(load_runs(tmp_path))
    assert (row.score, row.chance, row.positions) == (37.5, 25.0, {"4": 8, "last": 8})
    assert (row.favourite_position, row.favourite_position_score) == ("4", 37.5)  # a number before "last"


def test_always_last_over_quizzes_of_different_sizes_is_its_own_baseline(tmp_path: Path) -> None:
    # as FaRel: two-option and three-option classes; the model picks the last option of each quiz
    given = [Answer(f"a{i}", "a", 2, expected=e, options=2) for i, e in enumerate([2, 1, 1, 1])] + [
        Answer(f"b{i}", "b", 3, expected=e, options=3) for i, e in enumerate([3, 3, 1, 2])
    ]
    store(tmp_path, "last", given)
    (row,) = format_result.build_rows(load_runs(tmp_path))
    assert row.positions == {"2": 4, "3": 4, "last": 8}
    assert (row.score, row.favourite_position, row.favourite_position_score) == (37.5, "last", 37.5)
    assert row.chance == pytest.approx(100 * (1 / 2 + 1 / 3) / 2)
    assert format_result.render_markdown([row]).splitlines()[2].split("|")[10].strip() == "37.5 last"


def test_repeats_give_case_means_and_consistency(tmp_path: Path) -> None:
    given = [
        Answer("c0", "child", 1, repeat=0), Answer("c0", "child", 1, repeat=1),  # consistent, right
        Answer("c1", "child", 1, repeat=0), Answer("c1", "child", 2, repeat=1),  # inconsistent
        Answer("c2", "child", 2, repeat=0), Answer("c2", "child", 2, repeat=1),  # consistent, wrong
        Answer("c3", "child", 1, repeat=0), Answer("c3", "child", 1, repeat=1),
    ]  # fmt: skip
    store(tmp_path, "twice", given, repeats=2)
    (row,) = format_result.build_rows(load_runs(tmp_path))
    assert (row.score, row.repeats, row.consistency, row.complete, row.samples) == (62.5, 2, 75.0, True, 8)
    assert row.class_ci95 == {}  # repeats are not independent trials: no Wilson interval
    lines = format_result.render_markdown([row]).splitlines()
    assert lines[0].split("|")[7].strip() == "Cases"
    assert lines[2].split("|")[7].strip() == "4x2"


def test_rank_by_cost_value_and_pareto_list_unknown_costs_apart(tmp_path: Path) -> None:
    store(tmp_path, "cheap", answers({"child": ["correct"] + ["incorrect"] * 3}), cost=0.0001)
    store(tmp_path, "dear", answers({"child": ["correct"] * 4}), cost=0.01)
    store(tmp_path, "middling", answers({"child": ["correct"] * 2 + ["incorrect"] * 2}), cost=0.01)
    store(tmp_path, "secret", answers({"child": ["correct"] * 3 + ["incorrect"]}), cost=None)

    def order(by: str) -> list[tuple[object, object, object]]:
        return [(r["rank"], r["model"], r["pareto"]) for r in rows_of(tmp_path, "--rank-by", by)]

    assert order("score") == [(1, "dear", True), (2, "secret", None), (3, "middling", False), (4, "cheap", True)]
    assert order("cost") == [(1, "cheap", True), (2, "dear", True), (3, "middling", False), (None, "secret", None)]
    # value: score per dollar of one case's cost: cheap 25 / 0.0001, dear 100 / 0.01, middling 50 / 0.01
    assert order("value") == [(1, "cheap", True), (2, "dear", True), (3, "middling", False), (None, "secret", None)]
    assert order("pareto") == [(1, "cheap", True), (2, "dear", True), (3, "middling", False), (None, "secret", None)]


def test_latest_keeps_the_newest_run_of_each_configuration(tmp_path: Path) -> None:
    store(tmp_path, "m", answers({"child": ["incorrect"]}), minutes=0)
    store(tmp_path, "m", answers({"child": ["correct"]}), minutes=5)
    store(tmp_path, "m", answers({"child": ["incorrect"]}), minutes=9, md5="other-cases")
    assert [(r["run_id"], r["score"]) for r in rows_of(tmp_path, "--latest")] == [
        ("run-m-5", 100.0), ("run-m-9", 0.0),
    ]  # fmt: skip
    assert len(rows_of(tmp_path)) == 3


def test_compare_pairs_two_runs_case_by_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = store(tmp_path, "a", answers({"child": ["correct"] * 6 + ["incorrect"] * 2, "parent": ["correct"] * 4}))
    b = store(
        tmp_path, "b", answers({"child": ["incorrect"] * 6 + ["correct", "incorrect"], "parent": ["correct"] * 4})
    )
    assert format_result.main(["--compare", str(a), str(b), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {k: data[k] for k in ("paired", "both_correct", "only_a", "only_b", "neither", "test")} == {
        "paired": 12, "both_correct": 4, "only_a": 6, "only_b": 1, "neither": 1, "test": "mcnemar",
    }  # fmt: skip
    assert data["p_value"] == 0.125  # 2 * P(X <= 1), X ~ Binomial(7, 1/2) = 2 * 8/128
    assert data["difference"] == pytest.approx(31.25)  # macro: child 75.0 - 12.5, parent 0
    low, high = data["difference_ci95"]
    assert low < 31.25 < high
    assert format_result.main(["--compare", str(a), str(b), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["difference_ci95"] == [low, high]  # seeded
    assert format_result.main(["--compare", str(a), str(b)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "paired cases 12: both right 4, only A 6, only B 1, neither 1",
        "McNemar exact: p = 0.125 (no difference shown at 0.05)",
        f"difference A - B: +31.25 points, 95% CI {low:+.2f} to {high:+.2f} (paired bootstrap)",
    ]


def test_compare_refuses_runs_on_different_cases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = store(tmp_path, "a", answers({"child": ["correct"]}))
    b = store(tmp_path, "b", [Answer("elsewhere", "child", 1)])
    assert format_result.main(["--compare", str(a), str(b)]) == 2
    assert capsys.readouterr().err == (
        "format_result.py: error: the two runs have no scored case in common: compare runs made on the same cases\n"
    )
    assert format_result.main(["--compare", str(a), str(tmp_path)]) == 2
    assert "is not a stored run" in capsys.readouterr().err
    other = store(tmp_path, "c", answers({"child": ["correct"]}), md5="other-dataset")  # the same case ids
    assert format_result.main(["--compare", str(a), str(other)]) == 2
    assert capsys.readouterr().err == (
        "format_result.py: error: the two runs were made on different cases (dataset MD5 "
        "0b08876d7a221c9b9812ea85d746449a and other-dataset): compare runs made on the same cases\n"
    )


def test_markdown_is_the_farel_bench_table_with_our_columns_after_it(results: Path) -> None:
    lines = format_result.render_markdown(format_result.build_rows(load_runs(results))).splitlines()
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in lines]
    assert cells[0] == [
        "Nr", "Model", "FaRel", "child", "grand-parent", "95% CI", "Grp", "Cases", "Chance", "Fav. pos.", "Valid 1st",
        "Valid final", "Retries", "Invalid", "Missing", "Errors", "Cost", "$/correct", "Pareto", "p50 / p95 s",
        "Score, no retry", "Retry cost", "Req / In Tok / Out Tok", "Run",
    ]  # fmt: skip
    assert cells[2:] == [
        ["1", "best (tool)", "75.00", "100.00", "50.00", "50.0-100.0", "1", "4", "50.0", "100.0 #1", "", "", "0",
         "0", "0", "0", "unknown", "unknown", "", "1.0 / 1.0", "75.00", "", "4 / 400 / 40", "run-best-1"],
        ["2", "half-a (tool)", "50.00", "50.00", "50.00", "0.0-100.0", "1", "4", "50.0", "100.0 #1", "", "", "0",
         "0", "0", "0", "$0.004000", "$0.002000", "yes", "1.0 / 1.0", "50.00", "0.0%", "4 / 400 / 40", "run-half-a-0"],
        ["2", "half-b (tool)", "50.00", "100.00", "0.00", "50.0-50.0", "1", "4", "50.0", "100.0 #1", "", "", "0",
         "0", "0", "0", "$0.004000", "$0.002000", "yes", "2.5 / 9.0", "50.00", "0.0%", "4 / 400 / 40", "run-half-b-2"],
        ["", "gone (tool)", "DNF", "", "", "", "", "0/4", "", "", "DNF", "DNF", "0", "0", "0", "1",
         "DNF", "DNF", "", "1.0 / 1.0", "DNF", "", "1 / 100 / 10", "run-gone-3"],
    ]  # fmt: skip
    farel_only = format_result.render_markdown(format_result.build_rows(load_runs(results)), only="farel")
    assert farel_only.splitlines()[0] == "|   Nr | Model         |   FaRel |   child |   grand-parent |"
    assert farel_only.splitlines()[-1] == "|      | gone (tool)   |     DNF |         |                |"


def test_rich_tables_fit_100_columns_and_wide_shows_every_column(results: Path) -> None:
    rows = format_result.build_rows(load_runs(results))
    console = Console(width=100, record=True, color_system=None)
    format_result.render_rich(rows, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "…" not in text
    headline = [line.rstrip() for line in text.splitlines()[:13]]
    assert headline == [
        "FaRel",
        "                                                       Fav. Valid           p50 / p95",
        "Nr Grp Model / run   Cases FaRel     95% CI Chance     pos.   1st $/correct         s",
        "─" * 85,
        " 1   1 best (tool)       4 75.00 50.0-100.0   50.0 100.0 #1         unknown 1.0 / 1.0",
        "       run-best-1",
        " 2   1 half-a (tool)     4 50.00  0.0-100.0   50.0 100.0 #1       $0.002000 1.0 / 1.0",
        "       run-half-a-0",
        " 2   1 half-b (tool)     4 50.00  50.0-50.0   50.0 100.0 #1       $0.002000 2.5 / 9.0",
        "       run-half-b-2",
        "       gone (tool)     0/4   DNF                              DNF       DNF 1.0 / 1.0",
        "       run-gone-3",
        "Grp 1: tied with the best run (paired test at 0.05, Holm-corrected). Cases a/b: a partial or limited",
    ]
    wide = Console(width=100_000, record=True, color_system=None)
    format_result.render_rich(rows, wide, wide=True)
    header = wide.export_text().splitlines()[1]
    assert header.split()[:6] == ["Nr", "Model", "FaRel", "child", "grand-parent", "95%"]
    assert header.rstrip().endswith("Run")


def test_csv_and_json_carry_the_same_rows(results: Path) -> None:
    rows = format_result.build_rows(load_runs(results))
    lines = format_result.render_csv(rows).splitlines()
    assert lines[0].startswith("rank,suite,model,mode,run_id,status,imported,score,child,grandparent,samples,")
    assert lines[0].endswith(",valid_after_retries,consistency,rate_limited,wait_s")
    assert lines[1].startswith(
        "1,farel,best,tool,run-best-1,finished,False,75.00,100.00,50.00,4,3,1,0,0,,0,0,4,400,40,,12.5,"
    )
    data = json.loads(format_result.render_json(rows))
    assert [(d["rank"], d["model"], d["score"], d["cost_usd"], d["complete"]) for d in data] == [
        (1, "best", 75.0, None, True),
        (2, "half-a", 50.0, 0.004, True),
        (2, "half-b", 50.0, 0.004, True),
        (None, "gone", None, None, False),
    ]
    assert data[0]["classes"] == {"child": 100.0, "grandparent": 50.0}
    assert data[0]["score_ci95"] == [50.0, 100.0]


def test_a_pipe_in_a_name_does_not_break_the_markdown_table(tmp_path: Path) -> None:
    store(tmp_path, "org|model", answers({"a|b": ["correct", "incorrect"]}))
    lines = format_result.render_markdown(format_result.build_rows(load_runs(tmp_path)), only="farel").splitlines()
    assert lines == [
        "|   Nr | Model             |   FaRel |   a\\|b |",
        "|-----:|:------------------|--------:|-------:|",
        "|    1 | org\\|model (tool) |   50.00 |  50.00 |",
    ]


def test_repeats_that_choose_alike_are_consistent_whatever_their_reasoning(tmp_path: Path) -> None:
    run_dir = store(tmp_path, "m", [Answer("c0", "child", 2, repeat=0), Answer("c0", "child", 2, repeat=1)], repeats=2)
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    reasoned = [
        json.loads(line) | {"output": {"answer": 2, "reasoning": why}} for line, why in zip(lines, "ab", strict=True)
    ]
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reasoned))
    (row,) = format_result.build_rows(load_runs(tmp_path))
    assert row.consistency == 100.0


def test_a_record_cut_short_by_a_kill_does_not_hide_the_leaderboard(tmp_path: Path) -> None:
    run_dir = store(tmp_path, "m", answers({"child": ["correct", "incorrect"]}))
    text = (run_dir / "samples.jsonl").read_text()
    (run_dir / "samples.jsonl").write_text(text + text.splitlines()[0][:40])  # a third line, torn
    (row,) = format_result.build_rows(load_runs(tmp_path))
    assert (row.score, row.score_ci95) == (50.0, [0.0, 100.0])


def test_a_run_without_its_records_still_gets_a_row(tmp_path: Path) -> None:
    run_dir = store(tmp_path, "m", answers({"child": ["correct"]}))
    (run_dir / "samples.jsonl").unlink()
    (row,) = format_result.build_rows([StoredRun(run_dir, load_runs(tmp_path)[0].summary)])
    assert (row.rank, row.score, row.score_ci95, row.rank_group, row.chance) == (1, 100.0, None, None, None)


def test_html_report_from_the_command_line_shows_each_run_and_its_invalid_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "result"
    store(results, "steady", answers({"child": ["correct", "incorrect"]}))
    run_dir = store(results, "sloppy", answers({"child": ["correct", "missing"]}), minutes=1)
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    missing = json.loads(lines[1]) | {
        "attempts": [{"valid": False, "invalid_kind": "no_tool_call", "raw": "I think <b>2</b>", "feedback": "call it"}]
    }
    (run_dir / "samples.jsonl").write_text(lines[0] + "\n" + json.dumps(missing) + "\n")
    page = tmp_path / "report.html"
    assert format_result.main([str(results), "--format", "html", "-o", str(page)]) == 0
    html = page.read_text()
    assert html.count('<details class="run">') == 2
    assert "I think &lt;b&gt;2&lt;/b&gt;" in html and "call it" in html
    assert format_result.main([str(results), "--format", "html"]) == 2
    assert capsys.readouterr().err == "format_result.py: error: --format html writes a file: name it with -o FILE\n"


def test_each_group_carries_what_its_samples_cost_and_what_a_solved_case_cost() -> None:
    given = answers({"child": ["correct", "incorrect", "error"], "grandparent": ["incorrect"]})
    costs = [0.25, 0.5, 0.125, None]
    groups = score_records([record(a, c, 1.0) for a, c in zip(given, costs, strict=True)]).groups
    assert [(g.group, g.correct, g.cost_usd, g.cost_per_correct) for g in groups] == [
        ("child", 1, 0.875, 0.875),  # a failed call's cost counts too
        ("grandparent", 0, None, None),
    ]


def test_runs_of_a_suite_on_other_cases_are_ranked_in_their_own_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another version of a suite's data (or other parameters) makes other cases: those runs are never ranked
    beside the others without saying so."""
    from typed_eval.cli import main as typed_eval
    from typed_eval.cli.leaderboard_command import main as format_result

    for length in ("4", "8"):
        assert typed_eval(["run", "--suite", "lineage", "-S", f"length={length}", "-S", "number=1", "--model", "test",
                           "--results-dir", str(tmp_path), "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    assert format_result([str(tmp_path), "--format", "markdown"]) == 0
    headings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("### ")]
    assert len(headings) == 2 and all(re.fullmatch(r"### lineage \(cases [0-9a-f]{8}\)", h) for h in headings)
    assert format_result([str(tmp_path), "--format", "markdown", "--suite", "lineage"]) == 0
    assert len([line for line in capsys.readouterr().out.splitlines() if line.startswith("### ")]) == 2
