"""Hostile input, round four, on the network side: the viewer's Host check on a loopback address spelled another way,
an outage met one request at a time, usage that cannot be read, 429s that ask for no wait, an error sent with
HTTP 200, and a cost budget over a server that reports no usage. Each driven the way it broke, against a loopback
server started by the test, with exact counts and messages."""

from __future__ import annotations

import ipaddress
import json
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, tool_call
from tests.fake_provider import Rationed
from tests.viewer_runs import Viewer
from typed_eval.contracts import RunSummary, SampleRecord

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)


def right(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def run_args(server: FakeOpenAI, results: Path, *args: str) -> list[str]:
    return ["main.py", "run", "--model", "m", "--base-url", server.url, "--api-key", "k", "--results-dir",
            str(results), *args]  # fmt: skip


def run_py(server: FakeOpenAI, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`main.py run` against `server` as a user types it."""
    return run_cli(*run_args(server, results, *args))


def run_py_process(server: FakeOpenAI, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`main.py run` against `server` in a child process: for `--workers`, which start processes of their own."""
    return subprocess.run([PYTHON, *run_args(server, results, *args)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (path,) = results.rglob("summary.json")
    lines = (path.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(path.read_text()), [SampleRecord.model_validate_json(x) for x in lines]


# --- 1: the viewer's Host check follows the bound socket -------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["127.1", "2130706433", "localhost"])
def test_loopback_in_any_spelling_keeps_the_host_check_and_warns_of_nothing(spelling: str, tmp_path: Path) -> None:
    server = Viewer(tmp_path, "--host", spelling)
    try:
        if server.host == "::1":
            assert server.line == f"serving http://[::1]:{server.port}/\n"
        else:
            assert server.line == f"serving http://127.0.0.1:{server.port}/\n"
        for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example"):
            refused = server.get("/api/runs", {"Host": host})
            assert (refused.status, refused.body) == (400, b"Invalid host header"), (spelling, host)
        for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"{spelling}:{server.port}"):
            reply = server.get("/api/runs", {"Host": host})
            assert (reply.status, reply.json()) == (200, []), (spelling, host)
        assert server.stop(signal.SIGTERM)[::2] == (143, "")  # no word of serving every network
    finally:
        server.close()


def test_every_network_is_said_once_and_answers_any_host(tmp_path: Path) -> None:
    server = Viewer(tmp_path, "--host", "0.0.0.0")
    try:
        assert server.line == f"serving http://0.0.0.0:{server.port}/\n"
        assert server.get("/api/runs", {"Host": "evil.example"}).status == 200
        assert server.stop(signal.SIGTERM)[::2] == (
            143, "main.py: serving every network on 0.0.0.0: anyone who reaches it sees the runs\n"
        )  # fmt: skip
    finally:
        server.close()


def test_an_address_of_another_network_is_said_as_it_is(tmp_path: Path) -> None:
    """Bound to one of this machine's own network addresses: not every network, yet beyond this machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route picks the local address
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if ipaddress.ip_address(address).is_loopback:
        pytest.skip("no network address here but loopback")
    server = Viewer(tmp_path, "--host", address)
    try:
        assert server.line == f"serving http://{address}:{server.port}/\n"
        assert server.get("/api/runs").status == 200
        assert server.stop(signal.SIGTERM)[::2] == (
            143, f"main.py: serving beyond this machine on {address}: anyone who reaches it sees the runs\n"
        )  # fmt: skip
    finally:
        server.close()


# --- 7: a stated wait of a millisecond still backs off ---------------------------------------------------------------


@pytest.mark.parametrize("stated", [{"retry-after-ms": "1"}, {"retry-after": "0.001"}, {}], ids=["1-ms", "1-ms-in-s",
                                                                                               "none"])  # fmt: skip
def test_429s_that_ask_for_no_wait_back_off_as_with_none(stated: dict[str, str], tmp_path: Path) -> None:
    """A backoff of 0.5 s doubling: sent at 0, 0.5, 1.5 and 3.5 s, then the max wait of 5 s is out (a slower machine
    sends fewer, never more)."""
    refused = Fault(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, stated)
    with FakeOpenAI(lambda _: refused) as server:
        done = run_py(server, tmp_path, "--limit", "1", "--max-wait", "5", "--quiet")
    assert done.returncode == 75, done.stderr
    assert 2 <= len(server.requests) <= 4, len(server.requests)
    summary, records = stored(tmp_path)
    assert (summary.status, records) == ("partial", [])
    assert summary.scores.totals.pacing is not None
    assert summary.scores.totals.pacing.rate_limited == len(server.requests)


# --- 3 and 8: usage that cannot be read is unknown usage, never a lost answer ---------------------------------------

UNREADABLE = [
    ({"prompt_tokens": 100.7}, '"prompt_tokens": 100.7'),
    ({"prompt_tokens": True, "completion_tokens": False}, '"prompt_tokens": true'),
    ({"completion_tokens": "12"}, '"completion_tokens": "12"'),
    ({"completion_tokens_details": {"reasoning_tokens": 2.5}}, '"reasoning_tokens": 2.5'),
    ({"prompt_tokens": -4}, '"prompt_tokens": -4'),
    ({"usage": "garbage"}, '"usage": "garbage"'),
    ({"usage": {}}, '"usage": {}'),
]


def with_usage(body: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """`body` with its usage changed: `usage` replaced whole, or some of its counts set."""
    if "usage" in change:
        return {**body, "usage": change["usage"]}
    return {**body, "usage": {**body["usage"], **change}}


@pytest.mark.parametrize(
    ("change", "quoted"),
    UNREADABLE,
    ids=["fraction", "booleans", "string", "detail-fraction", "negative", "not-an-object", "no-counts"],
)
def test_usage_that_cannot_be_read_keeps_every_answer_with_unknown_tokens_and_cost(
    change: dict[str, Any], quoted: str, tmp_path: Path
) -> None:
    with FakeOpenAI(lambda request: with_usage(right(request), change)) as server:
        done = run_py(server, tmp_path, "--limit", "5", "--concurrency", "1", "--price-in", "1", "--price-out", "2",
                      "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"main.py: note: the server sent usage that cannot be read ({quoted}): the tokens and cost of such answers "
        "are unknown"
    ]  # said once, for five answers
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.correct, len(server.requests)) == (
        "finished", 5, 5, 5,
    )  # fmt: skip
    assert {(r.usage.requests, r.usage.input_tokens, r.usage.output_tokens, r.cost.usd, r.cost.source)
            for r in records} == {(1, None, None, None, "unknown")}  # fmt: skip
    totals = summary.scores.totals
    assert (totals.input_tokens, totals.output_tokens, totals.cost_usd) == (None, None, None)
    assert totals.pacing is not None and totals.pacing.notes == [UNREADABLE_NOTE]


UNREADABLE_NOTE = "usage that cannot be read (those answers' tokens and cost unknown)"


def test_usage_that_cannot_be_read_is_said_once_by_all_the_workers_of_a_run(tmp_path: Path) -> None:
    with FakeOpenAI(lambda request: with_usage(right(request), {"prompt_tokens": 100.7})) as server:
        done = run_py_process(server, tmp_path, "--limit", "20", "--workers", "2", "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        'main.py: note: the server sent usage that cannot be read ("prompt_tokens": 100.7): the tokens and cost of '
        "such answers are unknown"
    ]
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.correct, len(records), len(server.requests)) == ("finished", 20, 20, 20)
    assert {(r.usage.input_tokens, r.usage.output_tokens) for r in records} == {(None, None)}
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.notes == [UNREADABLE_NOTE]


def test_boolean_counts_stop_a_cost_budget_as_unknown_usage(tmp_path: Path) -> None:
    """Three answers priced from true counts, then `true`/`false`: read as 1 and 0 before, a known cost that kept
    `--max-cost` from ever stopping."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if len(server.requests) <= 3:
            return right(request)
        return with_usage(right(request), {"prompt_tokens": True, "completion_tokens": False, "total_tokens": True})

    with FakeOpenAI(reply) as server:
        done = run_py(server, tmp_path, "--limit", "20", "--concurrency", "1", "--price-in", "1", "--price-out", "2",
                      "--max-cost", "0.01", "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    fourth = records[3].case_id
    reason = (f"stopped: max_cost cannot be enforced without usage ($0.01): the answer to case {fourth!r} came with "
              "no usage that can be read, so its cost is unknown")  # fmt: skip
    assert done.stderr.splitlines() == [
        'main.py: note: the server sent usage that cannot be read ("prompt_tokens": true): the tokens and cost of '
        "such answers are unknown",
        f"main.py: {reason} (run stored as partial in {summary_dir(tmp_path)})",
    ]
    assert (summary.status, summary.reason, len(records), len(server.requests)) == ("partial", reason, 4, 4)
    assert [(r.usage.input_tokens, r.usage.output_tokens, r.cost.usd) for r in records] == [
        *[(100, 10, 0.00012)] * 3, (None, None, None)
    ]  # fmt: skip
    assert summary.scores.totals.cost_complete is False


def summary_dir(results: Path) -> Path:
    (path,) = results.rglob("summary.json")
    return path.parent


# --- 9: an error sent with HTTP 200 -----------------------------------------------------------------------------------

QUOTA = {
    "error": {"message": "\x1b[31mquota \x1b]52;c;aGk=\x07exceeded\x1b[0m for\nthis key", "type": "insufficient_quota"}
}
SAID = ("HTTP 502 from m: {'message': 'the server sent this error with HTTP 200: quota exceeded for this key', "
        "'type': 'insufficient_quota'}")  # fmt: skip


def test_an_error_sent_with_200_says_what_the_server_said_in_one_line(tmp_path: Path) -> None:
    with FakeOpenAI(lambda _: QUOTA) as server:
        done = run_py(server, tmp_path, "--limit", "3", "--concurrency", "1", "--quiet")
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        f"main.py: error: model m at {server.url} answered every request with an error: {SAID} (run stored as DNF in "
        f"{summary_dir(tmp_path)})"
    ]
    summary, records = stored(tmp_path)
    assert (summary.status, summary.reason, len(server.requests)) == ("dnf", SAID, 3)  # none resent
    assert [(r.status, r.error, r.transport_retries) for r in records] == [("error", SAID, 0)] * 3


def test_one_error_sent_with_200_is_that_samples_error(tmp_path: Path) -> None:
    refused = QUIZZES[50].id
    with FakeOpenAI(lambda request: QUOTA if KEY(request).id == refused else right(request)) as server:
        done = run_py(server, tmp_path, "--limit", "60", "--concurrency", "4", "--quiet")
    assert (done.returncode, done.stderr) == (0, "")
    summary, records = stored(tmp_path)
    assert [(r.case_id, r.error) for r in records if r.status == "error"] == [(refused, SAID)]
    assert (summary.status, summary.scores.correct, summary.scores.errors, len(server.requests)) == (
        "finished", 59, 1, 60,
    )  # fmt: skip


# --- 10: a cost budget over a server that sends no usage -------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "note"),
    [({"usage": None}, None), ({"prompt_tokens": "many", "completion_tokens": "few"}, '"prompt_tokens": "many"')],
    ids=["no-usage", "invalid-usage-is-no-known-zero-cost"],
)
def test_max_cost_without_usage_says_it_cannot_be_enforced_and_keeps_the_run(
    change: dict[str, Any], note: str | None, tmp_path: Path
) -> None:
    with FakeOpenAI(lambda request: with_usage(right(request), change)) as server:
        done = run_py(server, tmp_path, "--limit", "10", "--concurrency", "1", "--price-in", "1", "--price-out", "2",
                      "--max-cost", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    (record,) = records
    reason = (f"stopped: max_cost cannot be enforced without usage ($1): the answer to case {record.case_id!r} came "
              "with no usage that can be read, so its cost is unknown")  # fmt: skip
    said = [line for line in done.stderr.splitlines() if not line.startswith("progress: ")]
    assert said == [
        *([] if note is None else [f"main.py: note: the server sent usage that cannot be read ({note}): the tokens "
                                   "and cost of such answers are unknown"]),
        f"main.py: {reason} (run stored as partial in {summary_dir(tmp_path)})",
    ]  # fmt: skip
    assert "Warning" not in done.stderr
    assert (summary.status, summary.reason, len(server.requests)) == ("partial", reason, 1)
    assert (record.status, record.usage.input_tokens, record.cost.usd, record.cost.source) == (
        "correct", None, None, "unknown",
    )  # fmt: skip
    assert f"stored in {summary_dir(tmp_path)}" in done.stdout
    assert json.loads((summary_dir(tmp_path) / "summary.json").read_text())["scores"]["totals"]["cost_usd"] is None


# --- 2: an outage met one request at a time ---------------------------------------------------------------------


def test_an_outage_at_concurrency_1_costs_no_sample(tmp_path: Path) -> None:
    """Requests one at a time, an outage of 4 s from 0.5 s on: the first samples it meets are set aside, not errors,
    the ones after make it an outage, which is waited out, and every sample is answered."""
    provider = Rationed(right, latency_s=0.02, outage=(0.5, 4.0))
    with FakeOpenAI(provider) as server:
        done = run_py(server, tmp_path, "--limit", "40", "--concurrency", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.correct, summary.scores.errors) == (
        "finished", 40, 40, 0,
    )  # fmt: skip
    assert len(records) == len({r.case_id for r in records}) == 40
    assert provider.served == 40 and provider.unavailable > 0
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.outages >= 1


def test_one_sample_that_keeps_failing_at_concurrency_1_is_still_its_error(tmp_path: Path) -> None:
    """Set aside once, posed again after the next sample's answer, failing again: its error, and no outage."""
    unavailable = Fault(503, {"error": {"message": "overloaded"}}, {"retry-after-ms": "20"})
    asked: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        asked.append(KEY(request).id)
        return unavailable if [asked[-1]] == list(dict.fromkeys(asked))[3:4] else right(request)  # the 4th asked

    with FakeOpenAI(reply) as server:
        done = run_py(server, tmp_path, "--limit", "10", "--concurrency", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    broken = list(dict.fromkeys(asked))[3]
    assert [(r.case_id, r.status, r.transport_retries) for r in records if r.status == "error"] == [
        (broken, "error", 2)
    ]
    assert (summary.status, summary.scores.correct, summary.scores.errors) == ("finished", 9, 1)
    assert asked.count(broken) == 6  # three sendings, set aside, three more after the next answer
    assert summary.scores.totals.pacing is not None and summary.scores.totals.pacing.outages == 0
