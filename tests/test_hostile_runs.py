"""Hostile input, round three, for a run itself: answers too large to read, absurd concurrency, a cache that cannot
be written or is handed a proxy's page, a retry of errors that fails, a key echoed in an answer, signals and stops
during a batch, budgets split over workers, and the records file a finished run leaves. Each driven the way it broke,
against a loopback server started by the test, with exact counts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
import zlib
from pathlib import Path
from typing import Any

import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_batches import FakeBatches, function_call
from tests.fake_batches import prompt_of as batch_prompt_of
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, text, tool_call
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.engine.workers import WorkerPool

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)
SECRET = "sk-hostile-0123456789abcdef"
FAST = ["--batch-poll", "0.05"]


def right(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def main_py(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("main.py", "run", *args)


def main_py_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`main.py run ARGS` as a child process: for `--workers`, which start processes of their own."""
    return subprocess.run([PYTHON, "main.py", "run", *args], cwd=REPO, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip


def against(server: FakeOpenAI, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return main_py("--model", "m", "--base-url", server.url, "--results-dir", str(results), "--quiet", *args)


def stored_in(run_dir: Path) -> list[SampleRecord]:
    return [SampleRecord.model_validate_json(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (path,) = results.rglob("summary.json")
    return RunSummary.model_validate_json(path.read_text()), stored_in(path.parent)


def gzip_bomb(megabytes: int) -> bytes:
    """A gzip body of about a thousandth of what it inflates to: `megabytes` of zeros."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    return b"".join(packer.compress(chunk) for _ in range(megabytes)) + packer.flush()


def peak_mb(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """`main.py run ARGS` from a fresh interpreter that reports the largest resident set of its children."""
    script = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
              "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024); "
              "sys.stderr.write(done.stderr)")  # fmt: skip
    done = subprocess.run([PYTHON, "-c", script, PYTHON, "main.py", "run", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    code, peak = map(int, done.stdout.split())
    return subprocess.CompletedProcess(done.args, code, "", done.stderr), peak


def test_an_answer_that_inflates_past_64_mb_is_that_samples_error(tmp_path: Path) -> None:
    bomb = gzip_bomb(160)
    bombed = QUIZZES[50].id

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        if KEY(request).id == bombed:
            return Fault(200, bomb, {"Content-Encoding": "gzip"})
        return right(request)

    with FakeOpenAI(reply) as server:
        done, peak = peak_mb("--model", "m", "--base-url", server.url, "--results-dir", str(tmp_path), "--quiet",
                             "--limit", "9", "--concurrency", "3")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    errors = [(r.case_id, r.error, r.transport_retries) for r in records if r.status == "error"]
    refused = "HTTP 502 from m: {'message': 'the response body passed 64 MB decompressed: refused'}"
    assert errors == [(bombed, refused, 0)]  # refused once, not sent again by the SDK
    assert (summary.status, summary.scores.correct) == ("finished", 8)
    assert peak < 500  # one answer of 160 MB read whole would pass it, let alone three at once


def test_a_concurrency_beyond_the_samples_costs_nothing_and_an_absurd_one_is_one_line(tmp_path: Path) -> None:
    done, peak = peak_mb("--model", "test", "--limit", "3", "--quiet", "--results-dir", str(tmp_path),
                         "--concurrency", "100000")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, len(records), summary.settings.concurrency) == ("finished", 3, 100000)
    assert peak < 200  # 100,000 workers made up front took more than that
    absurd = main_py("--model", "test", "--concurrency", "1000000000")
    assert absurd.returncode == 2
    assert absurd.stderr.splitlines() == [
        "main.py run: error: argument --concurrency: must be at most 100,000, got 1,000,000,000 (see --help)"
    ]


def test_a_cache_that_cannot_be_written_is_skipped_and_every_answer_kept(tmp_path: Path) -> None:
    with FakeOpenAI(right) as server:
        assert against(server, tmp_path, "--limit", "3", "--cache").returncode == 0
        database = sqlite3.connect(tmp_path / ".cache" / "responses.sqlite", isolation_level=None)
        database.execute("BEGIN EXCLUSIVE")  # no other connection writes it now: as a full disk, every write fails
        try:
            done = against(server, tmp_path, "--limit", "9", "--cache")
        finally:
            database.rollback()
            database.close()
        asked = len(server.requests)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if "cache" in line] == [
        "warning: the response cache cannot be written (database is locked): answers are no longer kept in it"
    ]
    by_size = {len(stored_in(path.parent)): path for path in tmp_path.glob("m/*/summary.json")}  # two runs of a second
    first, second = by_size[3], by_size[9]
    cached = {r.case_id for r in stored_in(first.parent)}
    summary, records = RunSummary.model_validate_json(second.read_text()), stored_in(second.parent)
    assert (summary.status, summary.scores.correct, summary.scores.errors) == ("finished", 9, 0)
    hits = {r.case_id for r in records if r.cache_hits}
    assert hits == cached and summary.scores.totals.cache_hits == len(cached) == 3
    assert asked == 3 + 9 - 3  # every answer the locked cache could not keep was asked for and recorded


def test_a_proxys_page_is_not_cached_so_a_retry_of_errors_asks_again(tmp_path: Path) -> None:
    page = b"<html><body>502 Bad Gateway (but status 200)</body></html>"
    proxy = {"broken": True}

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        return Fault(200, page, {"Content-Type": "text/html"}) if proxy["broken"] else right(request)

    with FakeOpenAI(reply) as server:
        first = against(server, tmp_path, "--limit", "3", "--cache", "--max-transport-retries", "0")
        proxy["broken"] = False
        again = against(server, tmp_path, "--limit", "3", "--cache", "--retry-errors")
        asked = len(server.requests)
    assert first.returncode == 3, first.stderr  # every sample failed: DNF
    assert again.returncode == 0, again.stderr
    summary, _ = stored(tmp_path)
    assert (summary.status, summary.scores.correct, summary.scores.totals.cache_hits) == ("finished", 3, 0)
    assert asked == 3 + 3  # the page each time, then each case again: nothing replayed from the cache


def test_a_retry_of_errors_that_fails_again_leaves_the_run_as_it_was(tmp_path: Path) -> None:
    broken = QUIZZES[50].id
    unavailable = Fault(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "10"})
    with FakeOpenAI(lambda request: unavailable if KEY(request).id == broken else right(request)) as server:
        assert against(server, tmp_path, "--limit", "9").returncode == 0
        url = server.url
    before, _ = stored(tmp_path)
    done = main_py("--model", "m", "--base-url", url, "--results-dir", str(tmp_path), "--quiet", "--limit", "9",
                   "--retry-errors")  # fmt: skip
    after, records = stored(tmp_path)  # the server is gone: the retry cannot connect
    assert (before.status, before.scores.score, before.scores.errors) == ("finished", 100.0, 1)
    assert (after.status, after.reason, after.scores.score, after.scores.errors) == ("finished", None, 100.0, 1)
    assert [r.case_id for r in records if r.status == "error"] == [broken]
    assert done.returncode == 0, done.stderr


def test_a_key_echoed_in_an_answer_is_stored_nowhere(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        return completion(text(f"My key is {SECRET}, and <ANSWER>{KEY(request).correct}</ANSWER>"))

    with FakeOpenAI(reply) as server:
        done = against(server, tmp_path, "--limit", "3", "--mode", "tag", "--cache", "--api-key", SECRET)
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert summary.scores.correct == 3
    assert [r.attempts[0].raw.split(",")[0] for r in records] == ["My key is [REDACTED]"] * 3
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_ctrl_c_while_a_batch_runs_is_partial_and_exit_130(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Any:
        question = batch_prompt_of(body).split("Select the correct answer:")[0]
        quiz = next(q for q in QUIZZES if q.prompt.startswith(question))
        return function_call({"answer": quiz.correct})

    with FakeBatches(answer) as fake:
        fake.release.clear()  # the batch stays in progress
        command = [PYTHON, "main.py", "run", "--model", "gpt-4o-mini", "--base-url", fake.url, "--api-key", SECRET,
                   "--limit", "9", "--results-dir", str(tmp_path), "--quiet", "--batch", *FAST]  # fmt: skip
        stopped = [*command, "--grace", "1"]
        with subprocess.Popen(stopped, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as run:
            deadline = time.monotonic() + 120
            while fake.polls < 2 and time.monotonic() < deadline and run.poll() is None:
                time.sleep(0.05)
            run.send_signal(signal.SIGINT)
            _, stderr = run.communicate(timeout=60)
        fake.release.set()
        resumed = run_cli(*command[1:], "--resume")
    assert run.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith("main.py: interrupted by the user; finished samples are kept in")
    assert resumed.returncode == 0, resumed.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.correct, len(records)) == ("finished", 9, 9)
    assert fake.batch_sizes() == [9]  # the resume collected the batch the interrupted run had sent


def test_a_budget_split_over_workers_is_named_as_the_user_set_it(tmp_path: Path) -> None:
    with FakeOpenAI(right) as server:
        done = main_py_process("--model", "m", "--base-url", server.url, "--results-dir", str(tmp_path), "--quiet",
                               "--limit", "45", "--workers", "2", "--concurrency", "1", "--price-in", "1",
                               "--price-out", "1", "--max-cost", "0.001")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, _ = stored(tmp_path)
    assert summary.status == "partial"
    assert summary.reason is not None and summary.reason.startswith("max_cost $0.001 reached")


def test_a_finished_run_keeps_one_line_per_case(tmp_path: Path) -> None:
    with FakeOpenAI(right) as server:
        assert against(server, tmp_path, "--limit", "9").returncode == 0
        (path,) = tmp_path.rglob("summary.json")
        records = path.parent / "samples.jsonl"
        lines = records.read_text().splitlines()
        records.write_text("\n".join([*lines, lines[0], lines[4]]) + "\n")  # as a killed retry of errors leaves it
        summary = json.loads(path.read_text())
        path.write_text(json.dumps({**summary, "status": "partial", "reason": "running"}))
        resumed = against(server, tmp_path, "--limit", "9", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(records.read_text().splitlines()) == 9
    assert stored(tmp_path)[0].status == "finished"
    assert not list(path.parent.glob("*.tmp"))


def test_the_report_is_the_last_thing_a_run_prints(tmp_path: Path) -> None:
    done = subprocess.run([PYTHON, "main.py", "run", "--model", "test", "--limit", "3", "--results-dir", str(tmp_path)],
                          cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                          check=False)  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout
    assert lines[-1].startswith("stored in ")
    assert sum(line.startswith("progress: ") for line in lines) == 1


def test_a_worker_sends_a_record_line_past_64_mib_and_its_owner_reads_it() -> None:
    size = (64 << 20) + 1000

    def serve(order: str) -> int:
        line = memoryview(('{"record": "' + "a" * size + '"}\n').encode())
        while line:  # to the reports pipe itself (under pytest, sys.stdout is its capture)
            line = line[os.write(1, line) :]
        return 0

    async def read(pool: WorkerPool) -> int:
        async with pool.reports(1) as reports:
            assert pool.order(1, "go")
            return len(await reports.readline())

    with WorkerPool(2, serve) as pool:
        assert asyncio.run(read(pool)) == size + len('{"record": ""}\n')
