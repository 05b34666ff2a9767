"""`--workers N`: one run posed by N processes against a loopback server: the same records as one process,
one record per case, budgets over all of them, resume and retry-errors, and a worker that dies."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import evaluator
import farel_bench
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, answer_key, completion, tool_call
from tests.test_cli import clean_env
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.core.errors import EvaluatorError
from typed_eval.engine.workers import WorkerPool, WorkerProcesses
from typed_eval.suites.multiple_choice import multiple_choice_task

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)


class Server:
    """Answers right except on siblings, `latency_s` per request, and keeps the most requests it held at once."""

    def __init__(self, latency_s: float = 0.0, failing: set[str] | None = None) -> None:
        self.latency_s, self.failing = latency_s, failing or set()
        self.in_flight = self.most_in_flight = self.received = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        with self._lock:
            self.received += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        time.sleep(self.latency_s)
        with self._lock:
            self.in_flight -= 1
        quiz = KEY(request)
        if quiz.class_name in self.failing:
            return 400, {"error": {"message": "refused for this test", "type": "invalid_request_error"}}
        answer = quiz.correct if quiz.class_name != "sibling" else quiz.correct % len(quiz.options) + 1
        return completion(tool_call({"answer": answer}), prompt_tokens=120, completion_tokens=15)


def run(server: FakeOpenAI, results: Path, *extra: str) -> tuple[int, str]:
    """`main.py run` as a process of its own: `--workers` forks, which a test process with threads must not do."""
    done = process("main.py", "run", "--model", "fake-model", "--base-url", server.url, "--limit", "45",
               "--results-dir", str(results), "--quiet", *extra)  # fmt: skip
    return done.returncode, done.stderr


def process(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [PYTHON, script, *args]
    return subprocess.run(command, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=300, check=False)


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (summary,) = results.rglob("summary.json")
    lines = (summary.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(summary.read_text()), [SampleRecord.model_validate_json(x) for x in lines]


def comparable(record: SampleRecord) -> tuple[Any, ...]:
    return (record.case_id, record.status, record.score, record.output, record.usage, record.attempts)


def test_two_workers_pose_at_once_and_store_what_one_process_stores(tmp_path: Path) -> None:
    one, two = Server(), Server(latency_s=0.1)  # long enough for the two processes' requests to meet
    with FakeOpenAI(one) as server:
        assert run(server, tmp_path / "one", "--concurrency", "1") == (0, "")
    with FakeOpenAI(two) as server:
        assert run(server, tmp_path / "two", "--concurrency", "1", "--workers", "2") == (0, "")
    assert (one.most_in_flight, two.most_in_flight) == (1, 2)  # two processes, one request in flight each
    (single, alone), (shared, dealt) = stored(tmp_path / "one"), stored(tmp_path / "two")
    assert sorted(map(comparable, dealt)) == sorted(map(comparable, alone))
    assert len({r.case_id for r in dealt}) == len(dealt) == 45
    assert shared.status == "finished"
    assert shared.scores.model_dump(exclude={"totals"}) == single.scores.model_dump(exclude={"totals"})
    assert (shared.scores.totals.requests, shared.scores.totals.input_tokens) == (45, 5400)
    assert shared.scores.score == pytest.approx(88.888888, abs=1e-4)
    assert shared.settings.workers == 2
    assert not list((tmp_path / "two").rglob(".work*"))


def test_budgets_hold_over_all_workers_and_resume_finishes_the_run(tmp_path: Path) -> None:
    with FakeOpenAI(Server()) as server:
        code, _ = run(server, tmp_path, "--concurrency", "1", "--workers", "2", "--max-requests", "10")
        partial, first = stored(tmp_path)
        resumed = run(server, tmp_path, "--concurrency", "1", "--workers", "2", "--resume")
    assert code == 0
    assert (partial.status, partial.reason, len(first)) == ("partial", "max_requests 10 reached", 10)
    assert resumed == (0, "")
    final, records = stored(tmp_path)
    assert (final.status, len(records), len({r.case_id for r in records})) == ("finished", 45, 45)
    by_case = {r.case_id: r for r in records}  # one line per case, in dataset order, once the run finished
    assert [by_case[r.case_id] for r in first] == first  # what was stored stays as it was
    assert final.scores.score == pytest.approx(88.888888, abs=1e-4)


def test_retry_errors_in_workers_poses_only_the_failed_samples(tmp_path: Path) -> None:
    with FakeOpenAI(Server(failing={"grandparent", "aunt or uncle"})) as server:  # not the first case of a share
        assert run(server, tmp_path, "--workers", "2") == (0, "")
        first, failed = stored(tmp_path)
    with FakeOpenAI(Server()) as server:
        assert run(server, tmp_path, "--workers", "2", "--retry-errors") == (0, "")
    final, records = stored(tmp_path)
    assert sum(r.status == "error" for r in failed) == 10
    assert (first.status, len(failed)) == ("finished", 45)  # a part whose first sample failed posed its chunk still
    assert (final.status, len(records)) == ("finished", 45)
    assert [r.case_id for r in records] == sorted(r.case_id for r in records)  # rewritten in dataset order
    assert {r.status for r in records} == {"correct", "incorrect"}


def test_a_part_of_a_reached_model_poses_on_past_a_first_sample_the_provider_rejects() -> None:
    from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.exceptions import ModelHTTPError, ModelRequestRejectedError
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from typed_eval.core.run_config import RunConfig
    from typed_eval.engine.evaluation import pose_samples
    from typed_eval.engine.settings import resolve_settings
    from typed_eval.providers.prepared_model import PreparedModel
    from typed_eval.providers.resolve import ResolvedModel

    rejected = QUIZZES[0].prompt.split("Select the correct answer:")[0]

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked = " ".join(str(getattr(part, "content", "")) for message in messages for part in message.parts)
        if rejected in asked:  # the first sample, however often it is asked
            raise ModelHTTPError.for_category(ModelRequestRejectedError, status_code=400, model_name="m")
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"answer": 1})])

    def part(reached: bool) -> evaluator.EvaluationResult:
        samples = [(quiz.to_case(), 0) for quiz in QUIZZES[:8]]
        task = multiple_choice_task()
        prepared = PreparedModel(ResolvedModel(FunctionModel(reply), "m", None, local=False))
        settings = resolve_settings(RunConfig(), prepared, task, batch=False)
        return asyncio.run(pose_samples(task, samples, prepared, settings, reached=reached))

    alone, part_of_run = part(reached=False), part(reached=True)
    assert (alone.status, alone.scores.samples) == ("dnf", 1)  # a run's first sample: the model cannot answer
    assert (part_of_run.status, part_of_run.scores.samples, part_of_run.scores.errors) == ("finished", 8, 1)


def test_a_worker_that_dies_fails_the_run_and_keeps_what_was_stored(tmp_path: Path) -> None:
    cases, task = [quiz.to_case() for quiz in QUIZZES[:20]], multiple_choice_task()
    with WorkerPool(2, serve=lambda order: 3) as pool:  # a worker that fails its order
        dead = WorkerProcesses(pool, order=lambda work, _: str(work))
        with pytest.raises(EvaluatorError, match=r"worker 2 of 2 stopped without finishing its share \(exit 3\)"):
            asyncio.run(
                evaluator.run(task, cases, "test", control=evaluator.RunControl(workers=dead), results_dir=tmp_path)
            )
    summary, records = stored(tmp_path)
    assert summary.status == "partial"
    assert summary.reason is not None and summary.reason.startswith("stopped by an error: worker 2 of 2")
    assert sorted(r.case_id for r in records) == sorted(c.id for c in cases)  # the owner took the whole stream


def test_a_pool_serves_orders_in_turn_and_its_workers_end_with_it(tmp_path: Path) -> None:
    served = tmp_path / "served.txt"

    def serve(order: str) -> int:
        with served.open("a") as log:
            log.write(f"{os.getpid()} {order}\n")
        return 5 if order == "fail" else 0

    def lines(count: int) -> list[list[str]]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not served.exists() or served.read_text().count("\n") < count):
            time.sleep(0.01)
        return [line.split() for line in served.read_text().splitlines()]

    with WorkerPool(3, serve) as pool:
        assert pool.order(1, "first") and pool.order(2, "other")
        pool.stop(1)  # a stop that comes after its order ended is no order
        assert pool.order(1, "second")
        taken = lines(3)
        assert pool.order(2, "fail")
        assert asyncio.run(pool.exit_code(2)) == 5
        assert not pool.order(2, "too late")  # it is gone
    assert pool.exit_codes == [0, 5]  # the idle one ended by itself when the pool closed (not killed: -9)
    by_worker: dict[str, list[str]] = {}
    for pid, order in taken:
        by_worker.setdefault(pid, []).append(order)
    assert sorted(by_worker.values()) == [["first", "second"], ["other"]]
    assert str(os.getpid()) not in by_worker


def test_parts_taking_chunks_of_one_stream_pose_every_sample_once(tmp_path: Path) -> None:
    from typed_eval.engine.workers import CHUNK, _write_work, claimed_samples  # the stream the parts share

    samples = [(quiz.to_case(), repeat) for repeat in range(2) for quiz in QUIZZES[:30]]
    skipped = {(samples[3][0].id, 0), (samples[40][0].id, 1)}  # already recorded: not in the work file
    work, count = _write_work((s for s in samples if (s[0].id, s[1]) not in skipped), tmp_path)
    assert count == 58
    parts = [claimed_samples(iter(samples), work) for _ in range(3)]
    taken: list[list[tuple[str, int]]] = [[], [], []]
    turns = [0, 0, 1, 2, 2, 2, 0, 1] * 20  # parts asking at their own pace
    for turn in turns:
        sample = next(parts[turn], None)
        if sample is not None:
            taken[turn].append((sample[0].id, sample[1]))
    posed = [key for part in taken for key in part]
    assert sorted(posed) == sorted((c.id, r) for c, r in samples if (c.id, r) not in skipped)
    order = [tuple(json.loads(line)) for line in work.read_text().splitlines()]
    for part in taken:  # each part posed whole chunks of the stream, in the stream's order
        positions = [order.index(key) for key in part]
        assert positions == sorted(positions) and part
        chunks = {p // CHUNK for p in positions}
        assert len(positions) == sum(min(CHUNK, count - c * CHUNK) for c in chunks)


def test_ctrl_c_stops_every_part_and_resume_finishes(tmp_path: Path) -> None:
    """Ctrl-C in a terminal reaches the whole process group: every part stops, what finished is stored."""
    with FakeOpenAI(Server(latency_s=0.3)) as server:
        command = [sys.executable, "main.py", "run", "--model", "fake-model", "--base-url", server.url, "--limit",
                   "45", "--results-dir", str(tmp_path), "--quiet", "--concurrency", "1", "--workers", "2"]  # fmt: skip
        with subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True, start_new_session=True) as owner:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(list(tmp_path.rglob("samples.jsonl"))) == 0:
                time.sleep(0.1)
            (records_file,) = tmp_path.rglob("samples.jsonl")
            while time.monotonic() < deadline and len(records_file.read_text().splitlines()) < 8:
                time.sleep(0.1)
            os.killpg(owner.pid, signal.SIGINT)
            _, stderr = owner.communicate(timeout=60)
        assert owner.returncode == 130, stderr
        partial, first = stored(tmp_path)
        assert partial.status == "partial" and 8 <= len(first) < 45
        assert len({r.case_id for r in first}) == len(first)
        assert not list(tmp_path.rglob(".work*"))
        assert run(server, tmp_path, "--workers", "2", "--resume") == (0, "")
    final, records = stored(tmp_path)
    assert (final.status, len(records), len({r.case_id for r in records})) == ("finished", 45, 45)


def test_each_model_of_a_command_is_posed_by_the_same_workers_after_a_budget_stopped_one(tmp_path: Path) -> None:
    with FakeOpenAI(Server(latency_s=0.02)) as server:
        done = process("main.py", "run", "--model", "fake-model", "--model", "other-model", "--base-url", server.url,
                   "--limit", "45", "--results-dir", str(tmp_path), "--quiet", "--concurrency", "1", "--workers", "2",
                   "--max-requests", "10")  # fmt: skip
    assert done.returncode == 0, done.stderr
    runs = {}
    for summary_file in tmp_path.rglob("summary.json"):
        summary = RunSummary.model_validate_json(summary_file.read_text())
        records = (summary_file.parent / "samples.jsonl").read_text().splitlines()
        runs[summary.model] = (summary.status, summary.reason, len(records), summary.settings.workers)
    partial = ("partial", "max_requests 10 reached", 10, 2)
    assert runs == {"fake-model": partial, "other-model": partial}


def test_workers_die_with_their_owner_even_by_sigkill(tmp_path: Path) -> None:
    def running() -> list[int]:  # every process of this test's command: a forked worker has its owner's command line
        found = []
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and str(tmp_path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
        return found

    answers = Server(latency_s=0.2)
    with FakeOpenAI(answers) as server:
        command = [sys.executable, "main.py", "run", "--model", "fake-model", "--base-url", server.url, "--limit",
                   "45", "--results-dir", str(tmp_path), "--quiet", "--concurrency", "1", "--workers", "3"]  # fmt: skip
        with subprocess.Popen(command, cwd=REPO, stderr=subprocess.DEVNULL) as owner:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and answers.most_in_flight < 3:  # every part is posing
                time.sleep(0.05)
            assert len(running()) == 3
            owner.kill()
        sent = answers.received
        while time.monotonic() < deadline and running():
            time.sleep(0.05)
        assert running() == []
        assert answers.received - sent <= 2  # no new request once the owner is dead (one per worker on the way)


def test_no_worker_starts_when_the_model_cannot_be_reached(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    done = process("main.py", "run", "--model", "fake-model", "--base-url", url, "--limit", "45", "--workers", "2",
               "--results-dir", str(tmp_path), "--quiet", "--max-transport-retries", "0")  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "could not be reached" in done.stderr and "Traceback" not in done.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, len(records)) == ("dnf", 1)  # the first case alone, as in one process
