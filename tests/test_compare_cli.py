"""Several models and repeats from the command line, against a loopback server that answers per model and seed."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import farel_bench
from tests.fake_openai import FakeOpenAI, completion, tool_call
from tests.test_cli import KEY, QUIZZES, cli
from typed_eval.contracts import RunSummary, SampleRecord

assert list(farel_bench.generate(3, 50, 42, shuffle=True)) == QUIZZES


def per_model(request: dict[str, Any]) -> dict[str, Any]:
    """`good` answers right; `lazy` always picks the last option; `flaky` is right on even seeds only."""
    quiz = KEY(request)
    answer = {
        "good": quiz.correct,
        "lazy": len(quiz.options),
        "flaky": quiz.correct if request["seed"] % 2 == 0 else quiz.correct % len(quiz.options) + 1,
    }[request["model"]]
    return completion(tool_call({"answer": answer}))


def runs(results: Path) -> dict[str, Path]:
    found = {}
    for summary in results.rglob("summary.json"):
        found[RunSummary.model_validate_json(summary.read_text()).model] = summary.parent
    return found


def records(run_dir: Path) -> list[SampleRecord]:
    return [SampleRecord.model_validate_json(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def run_models(results: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("main.py", "run", "--base-url", url, "--results-dir", str(results), "--quiet", *args)


def test_two_models_on_identical_cases_get_a_run_each_and_a_paired_comparison(tmp_path: Path) -> None:
    with FakeOpenAI(per_model) as server:
        done = run_models(tmp_path, server.url, "--model", "good", "--model", "lazy", "--limit", "36")
    assert done.returncode == 0, done.stderr
    stored = runs(tmp_path)
    assert sorted(stored) == ["good", "lazy"]
    good, lazy = records(stored["good"]), records(stored["lazy"])
    assert sorted(r.case_id for r in good) == sorted(r.case_id for r in lazy) and len(good) == 36
    lazy_right = sum(r.status == "correct" for r in lazy)
    p = min(1.0, 2 * sum(math.comb(36 - lazy_right, i) for i in range(1)) / 2 ** (36 - lazy_right))
    assert done.stdout.splitlines()[-3:] == [
        f"paired cases 36: both right {lazy_right}, only A {36 - lazy_right}, only B 0, neither 0",
        f"McNemar exact: p = {p:.4g} (a difference at 0.05)",
        done.stdout.splitlines()[-1],
    ]
    assert done.stdout.splitlines()[-1].startswith("difference A - B: +")
    board = json.loads(cli("format_result.py", str(tmp_path), "--format", "json").stdout)
    lazy_row = next(r for r in board if r["model"] == "lazy")
    # always answering the last option: the model's score is exactly its favourite position's baseline
    assert lazy_row["favourite_position_score"] == lazy_row["score"]
    assert lazy_row["favourite_position"] == "last"
    assert lazy_row["positions"] == {"2": 8, "3": 12, "4": 16, "last": 36}  # 4 quizzes of each class, 2-4 options
    assert [(r["model"], r["rank_group"], r["complete"]) for r in board] == [
        ("good", None, False), ("lazy", None, False),  # limited runs: listed, not ranked or grouped
    ]  # fmt: skip


def test_repeats_pose_every_case_k_times_and_resume_per_case_and_repeat(tmp_path: Path) -> None:
    with FakeOpenAI(per_model) as server:
        done = run_models(tmp_path, server.url, "--model", "flaky", "--limit", "9", "--repeats", "3",
                          "--max-requests", "20", "--concurrency", "1")  # fmt: skip
        assert done.returncode == 0, done.stderr
        (run_dir,) = runs(tmp_path).values()
        first = records(run_dir)
        assert [(r.case_id, r.repeat) for r in first] == [(r.case_id, 0) for r in first[:9]] + [
            (r.case_id, 1) for r in first[:9]
        ] + [(r.case_id, 2) for r in first[:2]]
        resumed = run_models(tmp_path, server.url, "--model", "flaky", "--limit", "9", "--repeats", "3", "--resume")
        seeds = [request["seed"] for request in server.requests]
    assert resumed.returncode == 0, resumed.stderr
    every = records(run_dir)
    assert len(every) == 27
    assert sorted((r.case_id, r.repeat) for r in every) == sorted((r.case_id, k) for r in first[:9] for k in range(3))
    assert seeds == [42] * 9 + [43] * 9 + [44] * 9  # repeat k samples with seed 42 + k
    # seeds 42 and 44 answer right, 43 wrong: each case scores 2/3, and no case is consistent over its repeats
    assert {r.repeat: r.status for r in every if r.case_id == first[0].case_id} == {
        0: "correct", 1: "incorrect", 2: "correct",
    }  # fmt: skip
    (row,) = json.loads(cli("format_result.py", str(tmp_path), "--format", "json").stdout)
    assert (row["repeats"], row["samples"], row["consistency"]) == (3, 27, 0.0)
    assert round(row["score"], 2) == 66.67


def test_resume_of_a_named_run_takes_one_model(tmp_path: Path) -> None:
    done = cli("main.py", "run", "--model", "a", "--model", "b", "--resume", str(tmp_path), "--quiet")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "--resume RUN_DIR continues one run: give one --model, or --resume alone for each model's"
    )


def refusing_bad(request: dict[str, Any]) -> dict[str, Any] | tuple[int, dict[str, Any]]:
    if request["model"] == "bad":
        return 401, {"error": {"message": "invalid key"}}
    return per_model(request)


def test_a_failed_model_does_not_hide_the_report_of_the_next(tmp_path: Path) -> None:
    with FakeOpenAI(refusing_bad) as server:
        done = run_models(tmp_path, server.url, "--model", "bad", "--model", "good", "--limit", "9")
    assert done.returncode == 3
    assert "error: model bad at" in done.stderr
    assert "FaRel-3: 100.00  (good, tool mode)" in done.stdout.splitlines()


def test_resume_of_several_models_continues_those_with_an_unfinished_run(tmp_path: Path) -> None:
    with FakeOpenAI(per_model) as server:
        assert run_models(tmp_path, server.url, "--model", "good", "--limit", "9").returncode == 0
        stopped = run_models(tmp_path, server.url, "--model", "lazy", "--limit", "9", "--max-requests", "4",
                             "--concurrency", "1")  # fmt: skip
        assert stopped.returncode == 0, stopped.stderr
        resumed = run_models(tmp_path, server.url, "--model", "good", "--model", "lazy", "--limit", "9", "--resume")
        again = run_models(tmp_path, server.url, "--model", "good", "--model", "lazy", "--limit", "9", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "main.py: good: nothing to resume (no unfinished run of good in tool mode" in resumed.stderr
    assert len(records(runs(tmp_path)["lazy"])) == 9
    assert again.returncode == 2
    assert again.stderr.splitlines()[-1] == (
        "main.py: error: none of the models has an unfinished run with these settings"
    )
