"""Flow control against providers that ration capacity or fail: loopback servers with token buckets, the headers a
real provider sends, outages and absurd headers, driven through `main.py` as a user runs it, and through the
library with one pacer shared by two runs. Counts are exact; durations are only ever bounded from below (a slower
machine makes them longer, never shorter)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import evaluator
import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, tool_call
from tests.fake_provider import Bucket, Rationed
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.providers.flow import Verdict, WaitedTooLong
from typed_eval.suites.multiple_choice import multiple_choice_task

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)


def right(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def main_py(server: FakeOpenAI, results: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`main.py run` in this process, or with `process` (a run forking `--workers`) as a process of its own."""
    command = ["run", "--model", "m", "--base-url", server.url, "--results-dir", str(results), "--quiet", *args]
    if process:
        return subprocess.run([PYTHON, "main.py", *command], cwd=REPO, capture_output=True, text=True, timeout=300,
                              check=False)  # fmt: skip
    return run_cli("main.py", *command)


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (path,) = results.rglob("summary.json")
    lines = (path.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(path.read_text()), [SampleRecord.model_validate_json(x) for x in lines]


def test_a_stated_limit_is_kept_and_its_429s_are_no_errors(tmp_path: Path) -> None:
    provider = Rationed(right, requests=Bucket(1200, capacity=5), latency_s=0.05)
    with FakeOpenAI(provider) as server:
        started = time.monotonic()
        done = main_py(server, tmp_path, "--limit", "60", "--concurrency", "16", "--max-transport-retries", "0")
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.correct, summary.scores.errors) == (
        "finished", 60, 60, 0,
    )  # fmt: skip
    pacing = summary.scores.totals.pacing
    assert pacing is not None and pacing.stated_rpm == 1200.0
    assert provider.served == 60
    assert pacing.rate_limited == provider.refused == sum(r.rate_limited for r in records)
    assert provider.refused <= 6  # at most 10% of the requests
    assert took >= (60 - 5) / 20  # the bucket's floor: nothing went faster than the provider allows
    assert summary.scores.totals.transport_retries == 0


def test_429s_with_nothing_stated_are_waited_out_by_the_whole_run(tmp_path: Path) -> None:
    provider = Rationed(right, requests=Bucket(600, capacity=3), headers=False)
    with FakeOpenAI(provider) as server:
        done = main_py(server, tmp_path, "--limit", "30", "--concurrency", "16", "--max-transport-retries", "0")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert (summary.scores.samples, summary.scores.correct, summary.scores.errors) == (30, 30, 0)
    assert provider.served == 30 and provider.refused > 0
    assert summary.scores.totals.pacing is not None
    assert summary.scores.totals.pacing.rate_limited == provider.refused == sum(r.rate_limited for r in records)
    assert "pacing: " in done.stdout and "answers 429 (waited out, none an error)" in done.stdout


def test_a_token_limit_is_read_from_the_headers_and_kept(tmp_path: Path) -> None:
    provider = Rationed(right, tokens=Bucket(66_000, capacity=550), latency_s=0.02)  # 110 tokens a request: 10/s
    with FakeOpenAI(provider) as server:
        started = time.monotonic()
        done = main_py(server, tmp_path, "--limit", "40", "--concurrency", "16")
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    summary, _ = stored(tmp_path)
    assert (summary.scores.samples, summary.scores.errors) == (40, 0)
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.stated_tpm == 66_000.0
    assert provider.refused <= 4
    assert took >= (40 - 5) / 10


def test_max_wait_stops_the_run_partial_and_resume_finishes_it(tmp_path: Path) -> None:
    starved = Rationed(right, requests=Bucket(6, capacity=3))  # three at once, then one every ten seconds
    # the pacer keeps one request of a stated bucket unused (its mirror of the bucket is an estimate): two go out
    with FakeOpenAI(starved) as server:
        done = main_py(server, tmp_path, "--limit", "9", "--max-wait", "1.5")
    assert done.returncode == 75, done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "main.py: stopped: the provider gave no capacity, or stayed out of service, for 1.5 s (the max wait)"
        )
    )
    summary, records = stored(tmp_path)
    assert (summary.status, len(records), summary.scores.errors) == ("partial", 2, 0)
    assert summary.reason is not None and summary.reason.startswith("stopped: the provider gave no capacity")
    assert (starved.served, starved.refused) == (2, 0)
    with FakeOpenAI(Rationed(right)) as server:
        resumed = main_py(server, tmp_path, "--limit", "9", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.correct) == ("finished", 9, 9)
    assert len(records) == len({r.case_id for r in records}) == 9  # the two kept, seven posed by the resume


def test_an_outage_holds_the_requests_and_costs_no_sample(tmp_path: Path) -> None:
    provider = Rationed(right, latency_s=0.05, outage=(0.5, 3.0))
    with FakeOpenAI(provider) as server:
        started = time.monotonic()
        done = main_py(server, tmp_path, "--limit", "80", "--concurrency", "8")
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    summary, _ = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.correct, summary.scores.errors) == (
        "finished", 80, 80, 0,
    )  # fmt: skip
    pacing = summary.scores.totals.pacing
    assert pacing is not None and pacing.outages >= 1 and pacing.outage_s > 2.0
    assert provider.into_outage <= 16  # the requests in flight when it began, then one probe at a time
    assert took > 3.5


def test_an_outage_longer_than_max_wait_is_partial_never_finished_with_errors(tmp_path: Path) -> None:
    with FakeOpenAI(Rationed(right, latency_s=0.1, outage=(0.3, 60.0))) as server:
        done = main_py(server, tmp_path, "--limit", "40", "--concurrency", "8", "--max-wait", "2")
    assert done.returncode == 75, done.stderr
    summary, records = stored(tmp_path)
    assert summary.status == "partial" and summary.scores.errors == 0
    assert 0 < len(records) < 40
    with FakeOpenAI(Rationed(right)) as server:
        assert main_py(server, tmp_path, "--limit", "40", "--resume").returncode == 0
    summary, _ = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.errors) == ("finished", 40, 0)


def test_one_sample_that_keeps_failing_is_its_error_while_the_others_answer(tmp_path: Path) -> None:
    broken = QUIZZES[3].id
    unavailable = Fault(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "20"})

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        return unavailable if KEY(request).id == broken else right(request)

    with FakeOpenAI(Rationed(reply, latency_s=0.05)) as server:
        done = main_py(server, tmp_path, "--limit", "30", "--concurrency", "8")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert [(r.case_id, r.transport_retries) for r in records if r.status == "error"] == [(broken, 2)]
    assert (summary.status, summary.scores.correct, summary.scores.errors) == ("finished", 29, 1)
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.outages == 0


def test_the_workers_of_a_run_keep_one_pace(tmp_path: Path) -> None:
    times: list[float] = []
    lock = threading.Lock()

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        with lock:
            times.append(time.monotonic())
        return right(request)

    with FakeOpenAI(reply) as server:
        done = main_py(server, tmp_path, "--limit", "60", "--concurrency", "8", "--workers", "2", "--rpm", "600",
                       process=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, _ = stored(tmp_path)
    assert (summary.scores.samples, summary.settings.workers, summary.settings.rpm) == (60, 2, 600.0)
    # 10 a second with a second's worth of burst, over both processes (two pacers of their own would send 20)
    assert len(times) == 60 and times[-1] - times[0] >= (60 - 11) / 10


def test_absurd_headers_are_clamped_said_and_do_not_stop_the_run(tmp_path: Path) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> Fault:
        calls.append(1)
        absurd = {
            "x-ratelimit-limit-requests": "lots" if len(calls) % 2 else "1000",
            "x-ratelimit-remaining-requests": "-5",
            "x-ratelimit-reset-requests": "8760h",
        }
        if len(calls) in (2, 3):
            past = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", **absurd}
            return Fault(429, {"error": {"message": "slow down"}}, past)
        return Fault(200, right(request), absurd)

    with FakeOpenAI(reply) as server:
        started = time.monotonic()
        done = main_py(server, tmp_path, "--limit", "12", "--concurrency", "4")
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    summary, _ = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.errors) == ("finished", 12, 0)
    assert summary.scores.totals.pacing is not None
    assert summary.scores.totals.pacing.notes == [
        "a rate-limit reset of more than an hour (read as one minute)",
        "a negative or impossible remaining count (read as 0)",
        "a Retry-After in the past (waited the backoff instead)",
        "an unreadable rate-limit header (ignored)",
    ]
    assert took < 60


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--rpm", "0", "argument --rpm: must be more than 0, got 0"),
        ("--rpm", "-1", "argument --rpm: must be more than 0, got -1"),
        ("--tpm", "nan", "argument --tpm: must be a finite number, got nan"),
        ("--max-wait", "nan", "argument --max-wait: must be a finite number, got nan"),
        ("--max-wait", "0", "argument --max-wait: must be more than 0 seconds, got 0"),
        ("--rpm", "many", "argument --rpm: invalid rate value: 'many'"),
    ],
)
def test_bad_pacing_flags_are_one_line(flag: str, value: str, says: str) -> None:
    done = run_cli("main.py", "run", "--model", "test", flag, value)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"main.py run: error: {says} (see --help)"]


def test_two_runs_in_one_process_share_the_pacer_they_are_handed() -> None:
    times: list[float] = []

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        times.append(time.monotonic())
        return right(request)

    pacer = evaluator.Pacer(rpm=600)
    cases = [quiz.to_case() for quiz in QUIZZES[:20]]
    task = multiple_choice_task()

    async def both(url: str) -> list[evaluator.EvaluationResult]:
        model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=url, api_key="k"))
        paced = evaluator.RunControl(pacer=pacer)
        return list(await asyncio.gather(*(evaluator.evaluate(task, cases, model, control=paced) for _ in range(2))))

    with FakeOpenAI(reply) as server:
        results = asyncio.run(both(server.url))
    assert [(r.status, r.scores.correct) for r in results] == [("finished", 20), ("finished", 20)]
    assert len(times) == 40 and times[-1] - times[0] >= (40 - 11) / 10  # one pace of 10 a second for both
    assert pacer.report().rate_limited == 0


def test_anthropic_states_its_limits_in_its_own_headers() -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    stated = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "0",
              "anthropic-ratelimit-requests-reset": reset}  # fmt: skip

    async def answered() -> tuple[Verdict, dict[str, str], float | None]:
        return "answered", stated, None

    async def twice(pacer: evaluator.Pacer) -> tuple[float, float]:
        return await pacer.send("a", 10, answered), await pacer.send("b", 10, answered)

    pacer = evaluator.Pacer()
    first, second = asyncio.run(twice(pacer))
    assert pacer.report().stated_rpm == 50.0
    assert first == 0.0 and second >= 1.2  # nothing left, refilled at 50 a minute: the next waits for one and more


def test_a_request_held_through_an_outage_stops_at_the_max_wait_however_often_it_is_resent() -> None:
    async def failing() -> tuple[Verdict, dict[str, str], float | None]:
        return "failed", {}, None

    async def sample(pacer: evaluator.Pacer, key: str) -> str:
        while True:  # as the SDK resends a failure handed back to it, after a backoff
            try:
                await pacer.send(key, 10, failing)
            except WaitedTooLong as exc:
                return str(exc)
            await asyncio.sleep(0.05)

    async def three(pacer: evaluator.Pacer) -> list[str]:
        return await asyncio.wait_for(asyncio.gather(*(sample(pacer, key) for key in "abc")), timeout=20)

    pacer = evaluator.Pacer(max_wait_s=1.5)
    started = time.monotonic()
    stops = asyncio.run(three(pacer))
    assert len(stops) == 3 and all(stop.startswith("stopped: the provider gave no capacity") for stop in stops)
    assert time.monotonic() - started < 8  # probes every 0.5 to 4 s no longer restart the clock
    assert pacer.report().outages == 1


def test_a_429_whose_headers_still_show_room_backs_off_instead_of_resending_at_once() -> None:
    room = {"x-ratelimit-limit-requests": "1000", "x-ratelimit-remaining-requests": "999",
            "x-ratelimit-reset-requests": "60ms"}  # fmt: skip
    sent: list[float] = []

    async def refused() -> tuple[Verdict, dict[str, str], float | None]:
        sent.append(time.monotonic())
        return "throttled", room, None

    async def for_a_while(pacer: evaluator.Pacer) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pacer.send("a", 10, refused), timeout=2.0)

    asyncio.run(for_a_while(evaluator.Pacer()))
    assert 2 <= len(sent) <= 3  # at once, after 0.5 s, after 1 s more (a daily quota's 429 is not resent in a loop)


def test_a_request_larger_than_a_token_budget_still_goes_and_the_budget_is_owed() -> None:
    async def answered() -> tuple[Verdict, dict[str, str], float | None]:
        return "answered", {}, None

    async def two(pacer: evaluator.Pacer) -> tuple[float, float]:
        first = time.monotonic()
        await pacer.send("a", 1500, answered)
        took = time.monotonic() - first
        return took, await asyncio.wait_for(pacer.send("b", 1500, answered), timeout=10)

    took, waited = asyncio.run(two(evaluator.Pacer(tpm=60_000)))  # a second's worth is 1,000 tokens
    assert took < 0.5 and 1.2 <= waited <= 2.5  # the first goes; the second waits for what the first owed
