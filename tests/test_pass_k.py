"""pass^k: the estimator against hand-computed values, what counts as a trial (errors and refusals fail, a repeat
never posed is none, an excluded case is no task), its interval, and the figures wherever a run that repeats its cases
is reported: the run report, every leaderboard format, the paired comparison and the case viewer."""

from __future__ import annotations

import csv
import io
import json
from fractions import Fraction
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import evaluator
import format_result
from tests.test_format_result import Answer, store
from typed_eval import cli
from typed_eval.contracts import Cost, SampleRecord, SampleStatus, TokenUsage
from typed_eval.contracts.leaderboard_row import PassK
from typed_eval.reports.pass_k import pass_hat_k, task_pass_k
from typed_eval.reports.stats import bootstrap_ci
from typed_eval.reports.viewer.app import create_app

REPLAY = "replay:tests/fixtures/farel-bench/logs/deepseek-v3.log"


def trial(case: str, repeat: int, status: SampleStatus, score: float | None = None, **fields: object) -> SampleRecord:
    """A record of one trial: its score is the status's unless given."""
    given = {"correct": 1.0, "incorrect": 0.0}.get(status) if score is None else score
    return SampleRecord(
        case_id=case, repeat=repeat, group=str(fields.pop("group", "g")), mode="tool", status=status, score=given,
        attempts=[], corrective_retries=0, usage=TokenUsage(), cost=Cost(usd=None, source="unknown"), latency_s=None,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def trials(case: str, successes: int, n: int, group: str = "g") -> list[SampleRecord]:
    """`n` trials of a case, the first `successes` of them right."""
    return [trial(case, r, "correct" if r < successes else "incorrect", group=group) for r in range(n)]


def values(figures: list[PassK]) -> list[tuple[int, float, int]]:
    return [(f.k, f.value, f.tasks) for f in figures]


# The estimator ---------------------------------------------------------------------------------------------------


def test_one_task_of_four_trials_two_right() -> None:
    assert [task_pass_k(4, 2, k) for k in (1, 2, 3, 4)] == [Fraction(1, 2), Fraction(1, 6), 0, 0]
    found = pass_hat_k(trials("a", 2, 4))
    assert values(found.overall) == [(1, 50.0, 1), (2, 100 / 6, 1), (3, 0.0, 1), (4, 0.0, 1)]
    assert (found.trials, found.successes) == (4, 2)


def test_pass_k_is_the_mean_over_tasks_of_c_choose_k_over_n_choose_k() -> None:
    # a: 2 of 4 (1/2, 1/6, 0, 0); b: 4 of 4 (1, 1, 1, 1); c: 3 of 4 (3/4, 1/2, 1/4, 0)
    found = pass_hat_k([*trials("a", 2, 4), *trials("b", 4, 4), *trials("c", 3, 4)])
    assert values(found.overall) == [(1, 75.0, 3), (2, 500 / 9, 3), (3, 125 / 3, 3), (4, 100 / 3, 3)]


def test_k_beyond_a_case_s_trials_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be 1 to the trials"):
        task_pass_k(2, 1, 3)


def test_errors_missing_and_refusals_are_failed_trials_and_a_repeat_never_posed_is_none() -> None:
    records = [
        trial("x", 0, "correct"),
        trial("x", 1, "error", error="HTTP 500"),  # the call failed: left out of the score, a failed trial here
        trial("x", 2, "missing"),  # no valid output after the corrective retries
        trial("x", 3, "unsupported", error="invalid_json_schema"),
        trial("y", 0, "correct"),
        trial("y", 1, "incorrect"),
        trial("y", 1, "correct"),  # posed again (`--retry-errors`, a resume): the newest counts
        # y's repeats 2 and 3 were never posed (the run stopped): no trial, so K is y's 2 trials
        trial("z", 0, "correct", excluded=True),  # left out of the score: no task
        trial("z", 1, "correct", excluded=True),
    ]
    found = pass_hat_k(records)
    # x: 1 of 4 (1/4, 0); y: 2 of 2 (1, 1)
    assert values(found.overall) == [(1, 62.5, 2), (2, 50.0, 2)]
    assert (found.trials, found.successes) == (6, 3)


def test_a_trial_succeeds_with_a_score_of_one_within_a_millionth() -> None:
    records = [trial("a", 0, "partial", 0.9999995), trial("a", 1, "partial", 0.99), trial("a", 2, "partial", 0.5)]
    assert values(pass_hat_k(records).overall)[0] == (1, 100 / 3, 1)


def test_groups_have_their_own_figures() -> None:
    found = pass_hat_k([*trials("a", 2, 4, "child"), *trials("b", 4, 4, "child"), *trials("c", 3, 4, "parent")])
    assert values(found.groups["child"]) == [(1, 75.0, 2), (2, 175 / 3, 2), (3, 50.0, 2), (4, 50.0, 2)]
    assert values(found.groups["parent"]) == [(1, 75.0, 1), (2, 50.0, 1), (3, 25.0, 1), (4, 0.0, 1)]


def test_the_interval_is_the_stratified_bootstrap_over_tasks() -> None:
    # one right, one wrong task: resampled means are 0, 1/2 or 1, a quarter of them 0 and a quarter 1
    assert pass_hat_k([*trials("a", 1, 1), *trials("b", 0, 1)]).overall[0].ci95 == [0.0, 100.0]
    one = pass_hat_k(trials("a", 2, 4)).overall[1]
    assert one.ci95 == [pytest.approx(100 / 6), pytest.approx(100 / 6)]  # one task: nothing to resample
    records = [*trials("a", 2, 4, "child"), *trials("b", 4, 4, "child"), *trials("c", 3, 4, "parent")]
    low, high = bootstrap_ci({"child": [1 / 6, 1.0], "parent": [0.5]}, aggregate="mean")
    assert pass_hat_k(records).overall[1].ci95 == [100 * low, 100 * high]
    assert (100 * low, 100 * high) == (pytest.approx(250 / 9), pytest.approx(250 / 3))  # child's cases: a,a / b,b
    assert pass_hat_k(records, seed=0) == pass_hat_k(reversed(records), seed=0)


def test_the_library_exports_it() -> None:
    assert evaluator.pass_hat_k is pass_hat_k
    assert pass_hat_k([]).overall == []


# The leaderboard -------------------------------------------------------------------------------------------------


def repeated_run(root: Path, cost: float | None = 0.001) -> Path:
    """Four trials of three cases: a 2 right and b 4 right (child), c 3 right (parent)."""
    given = [
        Answer(case, group, 1 if r < right else 2, repeat=r)
        for case, group, right in (("a", "child", 2), ("b", "child", 4), ("c", "parent", 3))
        for r in range(4)
    ]
    return store(root, "four-times", given, repeats=4, cost=cost)


def test_leaderboard_rows_carry_pass_k_overall_and_per_group(tmp_path: Path) -> None:
    repeated_run(tmp_path)
    store(tmp_path, "once", [Answer("a", "child", 1), Answer("b", "child", 2), Answer("c", "parent", 1)], minutes=1)
    rows = {row["model"]: row for row in json.loads(json_board(tmp_path))}
    four = rows["four-times"]
    assert [(f["k"], f["value"], f["tasks"]) for f in four["pass_k"]] == [
        (1, 75.0, 3), (2, 500 / 9, 3), (3, 125 / 3, 3), (4, 100 / 3, 3),
    ]  # fmt: skip
    assert [f["ci95"] for f in four["pass_k"]] == [
        [pytest.approx(175 / 3), pytest.approx(275 / 3)],  # child's two cases resampled: a,a / b,b; c stays
        [pytest.approx(250 / 9), pytest.approx(250 / 3)],
        [pytest.approx(25 / 3), 75.0],
        [0.0, pytest.approx(200 / 3)],
    ]
    assert [f["value"] for f in four["pass_k_groups"]["child"]] == [75.0, 175 / 3, 50.0, 50.0]
    assert [f["value"] for f in four["pass_k_groups"]["parent"]] == [75.0, 50.0, 25.0, 0.0]
    assert "pass_k" not in rows["once"] and "pass_k_groups" not in rows["once"]  # no repeats: no figure


def test_cost_per_correct_answer_with_repeats_is_all_trials_cost_over_right_trials(tmp_path: Path) -> None:
    repeated_run(tmp_path)
    (row,) = json.loads(json_board(tmp_path))
    assert (row["samples"], row["correct"], row["cost_usd"]) == (12, 9, pytest.approx(0.012))
    assert row["cost_per_correct_usd"] == pytest.approx(0.012 / 9)


def json_board(root: Path, *args: str) -> str:
    out = root.parent / f"{root.name}.out"
    assert format_result.main([str(root), "-o", str(out), "--format", "json", *args]) == 0
    return out.read_text()


def board(root: Path, fmt: str) -> str:
    out = root.parent / f"{root.name}.{fmt}"
    assert format_result.main([str(root), "-o", str(out), "--format", fmt]) == 0
    return out.read_text()


def test_csv_and_markdown_carry_each_figure_and_its_interval(tmp_path: Path) -> None:
    repeated_run(tmp_path)
    (line,) = csv.DictReader(io.StringIO(board(tmp_path, "csv")))
    assert [line[f"pass^{k}"] for k in (1, 2, 3, 4)] == ["75.0", "55.555556", "41.666667", "33.333333"]
    assert [line[f"pass^{k}_tasks"] for k in (1, 2, 3, 4)] == ["3", "3", "3", "3"]
    assert (line["pass^2_ci95_low"], line["pass^2_ci95_high"]) == ("27.777778", "83.333333")
    table = board(tmp_path, "markdown").splitlines()
    heads = [cell.strip() for cell in table[0].split("|")]
    cells = [cell.strip() for cell in table[2].split("|")]
    assert [cells[heads.index(f"pass^{k}")] for k in (1, 2, 3, 4)] == [
        "75.00 (58.3-91.7)", "55.56 (27.8-83.3)", "41.67 (8.3-75.0)", "33.33 (0.0-66.7)",
    ]  # fmt: skip


def test_pass_k_goes_up_to_the_fewest_trials_of_a_case_as_tau_bench_caps_it(tmp_path: Path) -> None:
    given = [Answer("a", "child", 1, repeat=r) for r in range(3)] + [Answer("b", "child", 2, repeat=r) for r in (0, 1)]
    store(tmp_path, "stopped", given, repeats=3, status="partial")
    (line,) = csv.DictReader(io.StringIO(board(tmp_path, "csv")))
    assert [(line[f"pass^{k}"], line[f"pass^{k}_tasks"]) for k in (1, 2)] == [("50.0", "2"), ("50.0", "2")]
    assert "pass^3" not in line


def test_the_html_report_shows_pass_k_columns(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    repeated_run(tmp_path)
    page = board(tmp_path, "html")
    assert page.count('<button type="button">pass^') == 4
    assert '<td class="num" data-v="55.55555555555556">55.6<span class="ci">27.8\N{EN DASH}83.3</span></td>' in page


# The command line, on the offline test model -------------------------------------------------------------------


def run(results: Path, *args: str) -> None:
    assert cli.main(["run", "--results-dir", str(results), "--limit", "5", "--quiet", *args]) == 0


def test_a_run_with_repeats_reports_pass_k_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The test model always picks option 1: right on 2 of the first 5 quizzes, every time, so pass^k is 40 for
    every k, and the five quizzes are in five classes: the stratified bootstrap has nothing to resample."""
    results = tmp_path / "result"
    run(results, "--model", "test", "--repeats", "3")
    report = capsys.readouterr().out.splitlines()
    assert (
        "pass^k over 5 cases, 15 trials (6 with score 1; errors and refused schemas count as failed trials), 95% "
        "bootstrap intervals: pass^1 40.00 (40.0 to 40.0), pass^2 40.00 (40.0 to 40.0), pass^3 40.00 (40.0 to 40.0)"
    ) in report
    assert "pass^1..3 of child: 100.00, 100.00, 100.00 (1 case)" in report
    assert "pass^1..3 of grandchild: 0.00, 0.00, 0.00 (1 case)" in report
    (row,) = json.loads(json_board(results))
    expected = [{"k": k, "value": 40.0, "ci95": [40.0, 40.0], "tasks": 5} for k in (1, 2, 3)]
    assert row["pass_k"] == expected
    assert row["pass_k_groups"]["child"] == [
        {"k": k, "value": 100.0, "ci95": [100.0, 100.0], "tasks": 1} for k in (1, 2, 3)
    ]
    (line,) = csv.DictReader(io.StringIO(board(results, "csv")))
    assert [line[f"pass^{k}"] for k in (1, 2, 3)] == ["40.0", "40.0", "40.0"]
    assert "| 40.00 (40.0-40.0) | 40.00 (40.0-40.0) | 40.00 (40.0-40.0) |" in board(results, "markdown")


def test_a_run_without_repeats_shows_no_pass_k(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "result"
    run(results, "--model", "test")
    assert "pass^" not in capsys.readouterr().out
    (row,) = json.loads(json_board(results))
    assert "pass_k" not in row
    assert "pass^" not in board(results, "csv") and "pass^" not in board(results, "markdown")
    assert "pass^" not in board(results, "rich")


def test_two_models_with_repeats_compare_their_pass_k_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """deepseek-v3's published replies are right on the first five quizzes: pass^k 100 against the test model's 40."""
    results = tmp_path / "result"
    run(results, "--model", "test", "--model", REPLAY, "--mode", "tag", "--repeats", "3")
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        f"pass^{k}: A 40.00 (40.0 to 40.0) over 5 cases, B 100.00 (100.0 to 100.0) over 5 cases" for k in (1, 2, 3)
    ]
    runs = sorted(path.parent for path in results.rglob("summary.json"))
    replay, test = runs  # replay_deepseek-v3/ sorts before test/
    out = tmp_path / "compare.txt"
    assert format_result.main(["--compare", str(test), str(replay), "-o", str(out)]) == 0
    assert out.read_text().splitlines()[-3:] == lines[-3:]
    assert format_result.main(["--compare", str(test), str(replay), "--format", "json", "-o", str(out)]) == 0
    compared = json.loads(out.read_text())
    assert [f["value"] for f in compared["a"]["pass_k"]] == [40.0, 40.0, 40.0]
    assert [f["value"] for f in compared["b"]["pass_k"]] == [100.0, 100.0, 100.0]


def test_the_viewer_lists_each_run_s_pass_k(tmp_path: Path) -> None:
    repeated_run(tmp_path)
    store(tmp_path, "once", [Answer("a", "child", 1), Answer("b", "child", 2), Answer("c", "parent", 1)], minutes=1)
    with TestClient(create_app(tmp_path, hosts=["testserver"])) as client:
        listed = {run["model"]: run for run in client.get("/api/runs").json()}
        page = client.get("/").text
    four = listed["four-times"]
    assert four["repeats"] == 4
    assert [(f["k"], f["value"], f["tasks"]) for f in four["pass_k"]] == [
        (1, 75.0, 3), (2, 500 / 9, 3), (3, 125 / 3, 3), (4, 100 / 3, 3),
    ]  # fmt: skip
    assert [f["value"] for f in four["pass_k_groups"]["parent"]] == [75.0, 50.0, 25.0, 0.0]
    assert (listed["once"]["repeats"], listed["once"]["pass_k"], listed["once"]["pass_k_groups"]) == (1, [], {})
    assert page.count('<th title="the chance that k trials of a case all score 1') == 4
    assert '<td class="num">55.56 (27.8-83.3)</td>' in page
