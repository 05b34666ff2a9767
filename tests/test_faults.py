"""Runs that meet a flaky server, get killed or interrupted, run out of budget, or repeat themselves.

Every test drives `main.py` as a user runs it (in this process; a child process where it is killed or interrupted)
against a loopback server that fails on purpose, and checks exact final counts.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, tool_call
from typed_eval.contracts import Quiz, RunSummary, SampleRecord

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)
RATE_LIMITED = Fault(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"retry-after-ms": "20"})
UNAVAILABLE = Fault(503, {"error": {"message": "overloaded", "type": "server_error"}}, {"retry-after-ms": "20"})

Plan = Callable[[Quiz, int], Fault | None]
"""What the server does for a quiz's n-th request (from 0): a fault, or None for a correct answer."""


class Flaky:
    """A scripted server: each quiz's requests are counted, and the plan decides which of them fail."""

    def __init__(self, plan: Plan, delay_s: float = 0.0) -> None:
        self.plan = plan
        self.delay_s = delay_s
        self.calls: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | Fault:
        quiz = KEY(request)
        n = self.calls.get(quiz.id, 0)
        self.calls[quiz.id] = n + 1
        fault = self.plan(quiz, n)
        if fault is not None:
            return fault
        answer = completion(tool_call({"answer": quiz.correct}))
        return Fault(body=answer, delay_s=self.delay_s) if self.delay_s else answer


def main_py(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("main.py", "run", *args)


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (path,) = results.rglob("summary.json")
    lines = (path.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(path.read_text()), [SampleRecord.model_validate_json(x) for x in lines]


def run_against(server: FakeOpenAI, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return main_py("--model", "m", "--base-url", server.url, "--results-dir", str(results), "--quiet", *args)


def test_rate_limit_bursts_are_waited_out_not_spent_as_retries(tmp_path: Path) -> None:
    flaky = Flaky(lambda quiz, n: RATE_LIMITED if n < 2 else None)
    with FakeOpenAI(flaky) as server:
        done = run_against(server, tmp_path, "--limit", "9", "--max-transport-retries", "0")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert [(r.status, r.transport_retries, r.rate_limited) for r in records] == [("correct", 0, 2)] * 9
    totals = summary.scores.totals
    assert (summary.scores.correct, summary.scores.errors, totals.transport_retries) == (9, 0, 0)
    assert totals.pacing is not None and (totals.pacing.rate_limited, totals.pacing.outages) == (18, 0)
    assert (summary.scores.compliance.invalid_outputs, summary.scores.compliance.corrective_retries) == (0, 0)
    assert (totals.requests, sum(flaky.calls.values())) == (9, 27)


def test_retry_after_is_honoured_and_kept_out_of_latency(tmp_path: Path) -> None:
    wait = Fault(429, {"error": {"message": "rate limited"}}, {"retry-after": "1"})
    with FakeOpenAI(Flaky(lambda quiz, n: wait if n < 2 else None)) as server:
        done = run_against(server, tmp_path, "--limit", "1")
    assert done.returncode == 0, done.stderr
    summary, (record,) = stored(tmp_path)
    assert (record.status, record.transport_retries, record.rate_limited) == ("correct", 0, 2)
    assert 2.0 <= record.wait_s < 3.0
    assert record.latency_s is not None and record.latency_s < 1.0
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.waits == 2


def test_intermittent_500s_timeouts_and_dropped_connections_are_retried(tmp_path: Path) -> None:
    def plan(quiz: Quiz, n: int) -> Fault | None:
        number = int(quiz.id[1:])
        if n == 0 and number % 3 == 0:
            return UNAVAILABLE
        if n == 0 and number % 3 == 1:
            return Fault(body=completion(tool_call({"answer": quiz.correct})), delay_s=4.0)  # beyond the timeout
        if n == 0:
            return Fault(drop=True)
        return None

    with FakeOpenAI(Flaky(plan)) as server:
        done = run_against(server, tmp_path, "--limit", "9", "--request-timeout", "1.5", "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)  # one at a time, each failure is followed by an answer: no outage
    assert [(r.status, r.transport_retries) for r in records] == [("correct", 1)] * 9
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.outages == 0
    assert (summary.scores.errors, summary.scores.compliance.invalid_outputs) == (0, 0)
    assert summary.scores.totals.transport_retries == 9


def test_a_call_that_keeps_failing_is_an_error_and_the_run_goes_on(tmp_path: Path) -> None:
    broken = {QUIZZES[50].id}  # the first "parent" quiz
    malformed = {QUIZZES[100].id}  # the first "grandchild" quiz

    def plan(quiz: Quiz, n: int) -> Fault | None:
        if quiz.id in broken:
            return UNAVAILABLE
        return Fault(body=b'{"id": "x", "choices": [ broken') if quiz.id in malformed else None

    with FakeOpenAI(Flaky(plan)) as server:
        done = run_against(server, tmp_path, "--limit", "9", "--max-transport-retries", "2")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    errors = {r.case_id: (r.error, r.transport_retries, r.attempts) for r in records if r.status == "error"}
    assert errors == {
        QUIZZES[50].id: ("HTTP 503 from m: {'message': 'overloaded', 'type': 'server_error'}", 2, []),
        QUIZZES[100].id: (
            "ModelAPIError: Failed to decode response as JSON: Expecting value: line 1 column 26 (char 25)", 0, []
        ),
    }  # fmt: skip
    assert (summary.status, summary.scores.errors, summary.scores.correct) == ("finished", 2, 7)
    assert summary.scores.compliance.invalid_outputs == 0
    board = run_cli("format_result.py", str(tmp_path), "--format", "json")
    assert board.returncode == 0, board.stderr
    assert json.loads(board.stdout)[0]["errors"] == 2


def records_written(results: Path) -> int:
    return sum(p.read_text().count("\n") for p in results.rglob("samples.jsonl"))


def wait_until(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def comparable(summary: RunSummary) -> dict[str, Any]:
    """What an interrupted-and-resumed run must share with an uninterrupted one (timing aside)."""
    scores = summary.scores.model_dump()
    scores["totals"].pop("mean_latency_s")
    for timing in ("waits", "wait_s"):  # a request that waited for its pacer depends on the machine's load
        scores["totals"]["pacing"].pop(timing)
    return {"status": summary.status, "scores": scores, "dataset": summary.dataset.model_dump()}


def test_killed_run_resumes_to_the_same_summary(tmp_path: Path) -> None:
    flaky = Flaky(lambda quiz, n: None, delay_s=0.05)
    with FakeOpenAI(flaky) as server:
        whole = run_against(server, tmp_path / "whole", "--limit", "90", "--concurrency", "4")
        assert whole.returncode == 0, whole.stderr
        command = [PYTHON, "main.py", "run", "--model", "m", "--base-url", server.url, "--limit", "90",
                   "--concurrency", "4", "--results-dir", str(tmp_path / "cut"), "--quiet"]  # fmt: skip
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(lambda: records_written(tmp_path / "cut") >= 30)
        process.kill()
        process.wait()
        (jsonl,) = (tmp_path / "cut").rglob("samples.jsonl")
        with jsonl.open("a") as torn:
            torn.write('{"quiz_id": "q0')  # what a kill during a write leaves
        interrupted = RunSummary.model_validate_json((jsonl.parent / "summary.json").read_text())
        assert (interrupted.status, interrupted.reason) == (
            "partial",
            "running: not finished (resume it to carry on)",
        )
        resumed = run_cli("main.py", *command[2:], "--resume")
    assert resumed.returncode == 0, resumed.stderr
    whole_summary, whole_records = stored(tmp_path / "whole")
    cut_summary, cut_records = stored(tmp_path / "cut")
    assert comparable(cut_summary) == comparable(whole_summary)
    assert sorted(r.case_id for r in cut_records) == sorted(r.case_id for r in whole_records)
    assert len(cut_records) == len({r.case_id for r in cut_records}) == 90
    assert cut_summary.wall_s > 0
    # finished samples were not sent again: 90 + 90 requests, plus at most the 4 in flight at the kill
    assert 180 <= sum(flaky.calls.values()) <= 184


def test_retry_errors_poses_only_failed_calls_and_keeps_one_record_each(tmp_path: Path) -> None:
    down = True
    flaky = Flaky(lambda quiz, n: UNAVAILABLE if down and quiz.class_name == "sibling" else None)
    with FakeOpenAI(flaky) as server:
        first = run_against(server, tmp_path, "--limit", "45", "--max-transport-retries", "0")
        assert first.returncode == 0, first.stderr
        assert stored(tmp_path)[0].scores.errors == 5
        down = False
        calls_before = sum(flaky.calls.values())
        again = run_against(server, tmp_path, "--limit", "45", "--max-transport-retries", "0", "--retry-errors")
        assert again.returncode == 0, again.stderr
        assert sum(flaky.calls.values()) - calls_before == 5
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.errors, summary.scores.correct) == ("finished", 0, 45)
    assert [r.case_id for r in records] == sorted(r.case_id for r in records)
    assert len(records) == len({r.case_id for r in records}) == 45


def test_budgets_stop_new_samples_and_mark_the_run_partial(tmp_path: Path) -> None:
    with FakeOpenAI(Flaky(lambda quiz, n: None)) as server:
        by_requests = run_against(server, tmp_path / "r", "--limit", "45", "--concurrency", "1", "--max-requests", "5")
        by_cost = run_against(server, tmp_path / "c", "--limit", "45", "--concurrency", "1", "--price-in", "1",
                              "--price-out", "2", "--max-cost", "0.0005")  # fmt: skip
    assert (by_requests.returncode, by_cost.returncode) == (0, 0), by_requests.stderr + by_cost.stderr
    summary, records = stored(tmp_path / "r")
    assert (summary.status, summary.reason, len(records)) == ("partial", "max_requests 5 reached", 5)
    summary, records = stored(tmp_path / "c")
    assert (summary.status, len(records)) == ("partial", 4)  # 100 in + 10 out tokens: $0.00012 a request
    assert summary.reason == "max_cost $0.0005 reached: the next sample would pass it"
    assert summary.scores.totals.cost_usd == pytest.approx(0.00048)
    assert {r.cost.source for r in records} == {"user"}


def test_the_cost_budget_holds_at_high_concurrency(tmp_path: Path) -> None:
    """32 requests in flight do not all start past the budget: the overshoot stays under one sample's cost,
    and the summary's total is what the stored samples cost."""
    with FakeOpenAI(Flaky(lambda quiz, n: None, delay_s=0.05)) as server:
        done = run_against(server, tmp_path, "--limit", "45", "--concurrency", "32", "--price-in", "1",
                           "--price-out", "2", "--max-cost", "0.002")  # fmt: skip
        sent = len(server.requests)
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    spent = summary.scores.totals.cost_usd
    assert spent is not None and spent <= 0.002 + 0.00012
    assert spent == pytest.approx(sum(r.cost.usd or 0.0 for r in records))
    assert (summary.status, sent) == ("partial", len(records))


def test_cache_answers_a_repeated_run_without_requests(tmp_path: Path) -> None:
    flaky = Flaky(lambda quiz, n: None)
    with FakeOpenAI(flaky) as server:
        first = run_against(server, tmp_path, "--limit", "9", "--cache")
        sent = sum(flaky.calls.values())
        second = run_against(server, tmp_path, "--limit", "9", "--cache")
        assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
        assert (sent, sum(flaky.calls.values())) == (9, 9)
    runs = sorted(tmp_path.rglob("summary.json"))
    assert len(runs) == 2
    summaries = [RunSummary.model_validate_json(p.read_text()) for p in runs]
    assert sorted(s.scores.totals.cache_hits for s in summaries) == [0, 9]
    records = [[SampleRecord.model_validate_json(x) for x in (p.parent / "samples.jsonl").read_text().splitlines()]
               for p in runs]  # fmt: skip
    strip = {"latency_s", "cache_hits"}
    first_run, second_run = (
        [r.model_dump(exclude=strip) for r in sorted(rs, key=lambda r: r.case_id)] for rs in records
    )
    assert first_run == second_run


def test_ctrl_c_finishes_requests_in_flight_and_exits_130(tmp_path: Path) -> None:
    flaky = Flaky(lambda quiz, n: None, delay_s=0.3)
    with FakeOpenAI(flaky) as server:
        command = [PYTHON, "main.py", "run", "--model", "m", "--base-url", server.url, "--limit", "45",
                   "--concurrency", "4", "--results-dir", str(tmp_path), "--quiet"]  # fmt: skip
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: records_written(tmp_path) >= 5)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130, err
        summary, records = stored(tmp_path)
        assert (summary.status, summary.reason) == ("partial", "interrupted by the user")
        assert 5 <= len(records) < 45
        assert sum(flaky.calls.values()) == len(records)  # in-flight requests finished; nothing new was sent
        resumed = run_cli("main.py", *command[2:], "--resume")
    assert resumed.returncode == 0, resumed.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, len(records), summary.scores.correct) == ("finished", 45, 45)
