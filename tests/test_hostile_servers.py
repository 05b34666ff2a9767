"""Servers that misbehave in ways the red-team pass found: each reproduced against a loopback server."""

from __future__ import annotations

import asyncio
import base64
import json
import resource
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import evaluator
import farel_bench
from tests.cli_run import run_cli
from tests.conftest import FAREL_FIXTURES, PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, tool_call
from typed_eval.contracts import RunSummary
from typed_eval.suites.multiple_choice import evaluate_quizzes

QUIZZES = list(farel_bench.generate(1, 10, 42, shuffle=True))
KEY = answer_key(QUIZZES)


def right(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def model_at(server: FakeOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel("m", provider=OpenAIProvider(base_url=server.url, api_key="k"))


def run(server: FakeOpenAI, **options: Any) -> evaluator.EvaluationResult:
    settings = {"max_retries": 0}  # the SDK's own resends would hide each fault
    return asyncio.run(evaluate_quizzes(QUIZZES, model_at(server), model_settings=settings, **options))


@pytest.mark.parametrize(
    "body",
    [
        {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []},
        {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0}]},
        b"[]",
        b'{"choices": null}',
    ],
    ids=["no-choices", "choice-without-message", "a-list", "null-choices"],
)
def test_a_malformed_response_is_an_error_record_and_the_run_goes_on(body: dict[str, Any] | bytes) -> None:
    broken = QUIZZES[1].id

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        return Fault(200, body) if KEY(request).id == broken else right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    statuses = [(r.case_id, r.status) for r in result.records]
    assert statuses == [(QUIZZES[0].id, "correct"), (broken, "error"), *[(q.id, "correct") for q in QUIZZES[2:]]]
    assert result.status == "finished"
    assert result.scores.errors == 1
    assert result.records[1].error is not None


def test_a_passing_500_on_the_first_case_does_not_free_the_tool_choice() -> None:
    requests: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        requests.append(request["tool_choice"])
        if len(requests) == 1:
            return Fault(500, {"error": {"message": "upstream hiccup", "type": "server_error"}})
        return right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    assert (result.tool_choice, result.tool_choice_reason) == ("required", None)
    assert requests == ["required"] * (len(QUIZZES) + 1)
    assert [r.status for r in result.records] == ["correct"] * len(QUIZZES)
    assert [r.usage.requests for r in result.records] == [2] + [1] * (len(QUIZZES) - 1)  # the failed try counted


def test_a_refusal_that_repeats_frees_the_tool_choice_after_one_more_try() -> None:
    requests: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        requests.append(request["tool_choice"])
        if request["tool_choice"] == "required":
            return Fault(500, {"error": {"message": "AssertionError", "type": "server_error"}})
        return right(request)

    with FakeOpenAI(reply) as server:
        result = run(server, concurrency=1)
    assert result.tool_choice == "auto"
    assert requests == ["required", "required"] + ["auto"] * len(QUIZZES)
    assert [r.status for r in result.records] == ["correct"] * len(QUIZZES)
    assert [r.usage.requests for r in result.records] == [3] + [1] * (len(QUIZZES) - 1)  # both refusals counted


KEY_TEXT = "sk-test-0123456789abcdef"


@pytest.mark.parametrize("userinfo", ["alice:s3cret-pass@", ""], ids=["basic-auth", "bearer"])
def test_a_server_echoing_the_request_gets_no_secret_stored_or_printed(userinfo: str, tmp_path: Path) -> None:
    """The key (plain, base64) and the URL's user and password never reach a file or the screen, even when
    the server puts the whole request, headers and all, in its error body."""
    with FakeOpenAI(lambda _: Fault(400, echo=True)) as server:
        base = server.url.replace("http://", f"http://{userinfo}")
        done = run_cli("main.py", "run", "--model", "m", "--base-url", base, "--api-key", KEY_TEXT, "--length", "1",
                       "--limit", "3", "--results-dir", str(tmp_path), "--max-transport-retries", "0")  # fmt: skip
    assert done.returncode == 3, done.stderr
    stored = "".join(p.read_text() for p in tmp_path.rglob("*.json*"))
    assert "cannot serve POST" in stored
    assert f"uthorization': '{'Basic' if userinfo else 'Bearer'} [REDACTED]'" in stored
    secrets = [KEY_TEXT, base64.b64encode(KEY_TEXT.encode()).decode(), "s3cret-pass", "alice:s3cret-pass",
               base64.b64encode(b"alice:s3cret-pass").decode()]  # fmt: skip
    for text in (stored, done.stdout, done.stderr):
        assert [s for s in secrets if s in text] == []


def test_a_base_url_with_a_query_string_is_refused_in_one_line(tmp_path: Path) -> None:
    done = run_cli("main.py", "run", "--model", "m", "--base-url",
                   "http://127.0.0.1:9/v1?api-version=2024&key=abcd1234", "--results-dir", str(tmp_path))  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "main.py: error: --base-url: 'http://127.0.0.1:9/v1' has a query string, which the client would put in the "
        "middle of every request path: give the URL without it\n"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("signal_number", "code", "reason"),
    [
        (signal.SIGINT, 130, "interrupted by the user"),
        (signal.SIGTERM, 143, "terminated (SIGTERM)"),
        (signal.SIGHUP, 143, "terminated (SIGTERM)"),
    ],  # the terminal or ssh session closed: as SIGTERM
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_a_stop_during_the_first_case_ends_within_the_grace_period(
    signal_number: int, code: int, reason: str, tmp_path: Path
) -> None:
    """The first case is posed alone; a server that holds it for a minute no longer holds the stop with it."""
    with FakeOpenAI(lambda request: Fault(200, right(request), delay_s=60)) as server:
        process = subprocess.Popen(
            [PYTHON, "main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--limit", "3",
             "--results-dir", str(tmp_path), "--quiet", "--grace", "1"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        asked = time.monotonic()
        process.send_signal(signal_number)
        _, stderr = process.communicate(timeout=60)
        waited = time.monotonic() - asked
    assert process.returncode == code, stderr
    assert 1 <= waited < 6  # the 1 s grace period (--grace), not the server's 60 s
    (summary_path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.status, summary.reason, summary.scores.samples) == ("partial", reason, 0)
    assert stderr.splitlines()[-1].startswith(f"main.py: {reason}; finished samples are kept in")


def test_a_second_ctrl_c_stops_at_once_in_one_line(tmp_path: Path) -> None:
    with FakeOpenAI(lambda request: Fault(200, right(request), delay_s=60)) as server:
        process = subprocess.Popen(
            [PYTHON, "main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--limit", "3",
             "--results-dir", str(tmp_path), "--quiet"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert (process.returncode, stderr) == (
        130,
        "main.py: interrupted; finished samples are kept (--resume continues)\n",
    )
    (summary_path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.status, summary.reason) == ("partial", "interrupted by the user")


def test_the_request_timeout_bounds_a_server_that_drips_its_answer(tmp_path: Path) -> None:
    """A byte a second never trips a read timeout; `--request-timeout` bounds the whole request."""
    with FakeOpenAI(lambda request: Fault(200, right(request), drip_s=1.0)) as server:
        started = time.monotonic()
        done = run_cli("main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--limit", "1",
                       "--quiet", "--request-timeout", "2", "--max-transport-retries", "1", "--results-dir",
                       str(tmp_path))  # fmt: skip
        took = time.monotonic() - started
        sent = len(server.requests)
    assert took < 15, done.stderr  # two tries of 2 s and a backoff; a whole answer would take minutes
    assert sent == 2
    (summary_path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert summary.status == "dnf" and summary.reason is not None and "Timeout" in summary.reason


def test_a_key_revoked_mid_run_stops_the_run_as_partial(tmp_path: Path) -> None:
    """After 10 answers every request gets 401: the run stops there, is stored as partial with the reason,
    exits non-zero, and its score is never shown as a complete one."""
    answered: list[str] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | Fault:
        if len(answered) >= 10:
            return Fault(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
        answered.append(KEY(request).id)
        return right(request)

    with FakeOpenAI(reply) as server:
        done = run_cli("main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--number", "10",
                       "--quiet", "--concurrency", "1", "--results-dir", str(tmp_path))  # fmt: skip
        sent = len(server.requests)
    assert done.returncode == 3, done.stderr
    assert sent == 11
    (summary_path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.status, summary.scores.samples, summary.scores.correct, summary.scores.errors) == (
        "partial", 11, 10, 1,
    )  # fmt: skip
    assert summary.reason == (
        "stopped: the server refused the credentials mid-run: HTTP 401 from m: "
        "{'message': 'Incorrect API key provided', 'type': 'invalid_request_error'}"
    )
    assert done.stderr.splitlines()[-1].startswith(f"main.py: error: {summary.reason} (run stored as partial in")
    shown = run_cli("format_result.py", str(tmp_path), "--format", "json")
    shown.check_returncode()
    rows = json.loads(shown.stdout)
    assert [(r["status"], r["samples"]) for r in rows] == [("partial", 11)]


def test_a_second_process_on_a_run_is_refused_while_the_first_writes_it(tmp_path: Path) -> None:
    with FakeOpenAI(lambda request: Fault(200, right(request), delay_s=0.2)) as server:  # 4 s of writing in all
        command = [PYTHON, "main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--number",
                   "10", "--quiet", "--concurrency", "1", "--results-dir", str(tmp_path)]  # fmt: skip
        first = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        second = run_cli(*command[1:], "--resume")
        first.communicate(timeout=60)
    assert (first.returncode, second.returncode, second.stdout) == (0, 2, "")
    (summary_path,) = tmp_path.rglob("summary.json")
    run_dir = summary_path.parent
    assert second.stderr == (
        f"main.py: error: the run {run_dir} is being written by process {first.pid} on {socket.gethostname()}: "
        "wait for it to end or stop it\n"
    )
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.status, summary.scores.samples, summary.scores.correct) == ("finished", 20, 20)
    assert len((run_dir / "samples.jsonl").read_text().splitlines()) == 20


def test_a_case_written_twice_counts_once_the_newest_winning(tmp_path: Path) -> None:
    """What a retry of errors killed after rewriting nothing leaves: the error and its retried answer."""
    with FakeOpenAI(right) as server:
        command = ["main.py", "run", "--model", "m", "--base-url", server.url, "--length", "1", "--number", "10",
                   "--quiet", "--limit", "4", "--results-dir", str(tmp_path)]  # fmt: skip
        assert run_cli(*command).returncode == 0
        (summary_path,) = tmp_path.rglob("summary.json")
        records = summary_path.parent / "samples.jsonl"
        lines = records.read_text().splitlines()
        failed = json.loads(lines[0]) | {"status": "error", "output": None, "score": None, "error": "HTTP 500"}
        records.write_text("\n".join([json.dumps(failed), *lines[1:], lines[0], lines[1]]) + "\n")
        again = run_cli(*command, "--resume", str(summary_path.parent))
    assert again.returncode == 0, again.stderr
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.scores.samples, summary.scores.correct, summary.scores.errors) == (4, 4, 0)


def _write(path: Path, text: str | bytes) -> str:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


PUBLISHED_LINE = (FAREL_FIXTURES / "farel-bench.csv").read_text().splitlines()[0]


ARGUMENT = "main.py run: error: argument "
CSV_DIGITS = "main.py: error: malformed CSV: {tmp}/digits.csv line 1: the degree 999999999999... has 5000 digits"
CACHE_ON_A_FILE = "main.py: error: cannot open the response cache {tmp}/a-file/.cache/responses.sqlite: Not a directory"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--request-timeout", "nan"], ARGUMENT + "--request-timeout: must be a finite number, got nan (see --help)"),
        (["--request-timeout", "0"], ARGUMENT + "--request-timeout: must be more than 0 seconds, got 0 (see --help)"),
        (["--request-timeout", "-5"], ARGUMENT + "--request-timeout: must be more than 0 seconds, got -5 (see --help)"),
        (["--price-in", "nan"], ARGUMENT + "--price-in: must be a finite number, got nan (see --help)"),
        (["--price-out", "inf"], ARGUMENT + "--price-out: must be a finite number, got inf (see --help)"),
        (["--temperature", "nan"], ARGUMENT + "--temperature: must be a finite number, got nan (see --help)"),
        (["--quizzes", "{tmp}/digits.csv"], CSV_DIGITS),
        (["--cache", "--results-dir", "{tmp}/a-file"], CACHE_ON_A_FILE),
    ],
    ids=["timeout-nan", "timeout-0", "timeout-negative", "price-nan", "price-inf", "temperature-nan", "csv-digits",
         "cache-on-a-file"],
)  # fmt: skip
def test_bad_input_is_one_line_and_a_non_zero_exit(args: list[str], message: str, tmp_path: Path) -> None:
    _write(tmp_path / "digits.csv", "9" * 5000 + PUBLISHED_LINE[1:] + "\n")
    _write(tmp_path / "a-file", "not a folder")
    filled = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = run_cli("main.py", "run", "--model", "test", "--limit", "2", "--results-dir", str(tmp_path / "r"), *filled)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [message.replace("{tmp}", str(tmp_path))]


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.csv", "\ufeff".encode() + (PUBLISHED_LINE + "\n").encode())
    done = run_cli("main.py", "run", "--model", "test", "--quizzes", path, "--results-dir", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "child: 100.00 (C: 1, I: 0, M: 0 A: 1)"


def test_the_leaderboard_of_an_empty_folder_is_one_line(tmp_path: Path) -> None:
    done = run_cli("format_result.py", str(tmp_path), "--format", "markdown")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"format_result.py: error: no stored runs under {tmp_path}: run `python main.py run` first\n"


def test_a_full_disk_is_one_line_and_keeps_what_was_written(tmp_path: Path) -> None:
    """The records file meets the file-size limit (what a full disk looks like to a write): one line, and the
    records and summary on disk say how far the run got."""

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))

    command = [PYTHON, "main.py", "run", "--model", "m", "--length", "1", "--number", "10", "--quiet",
               "--concurrency", "1", "--results-dir", str(tmp_path)]  # fmt: skip
    with FakeOpenAI(right) as server:
        done = subprocess.run(
            [*command, "--base-url", server.url], cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
            preexec_fn=small_files,
        )  # fmt: skip
        (summary_path,) = tmp_path.rglob("summary.json")
        written = (summary_path.parent / "samples.jsonl").read_text()
        summary = RunSummary.model_validate_json(summary_path.read_text())
        resumed = run_cli(*command[1:], "--base-url", server.url, "--resume")  # no file-size limit here
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"main.py: error: cannot write to {summary_path.parent / 'samples.jsonl'}: File too large; "
        "the records written so far are kept"
    ]
    whole = written.split("\n")[:-1]  # the last line is cut where the disk filled
    assert 0 < len(whole) < 20 and all(json.loads(line)["status"] == "correct" for line in whole)
    assert summary.status == "partial"
    assert resumed.returncode == 0, resumed.stderr
    summary = RunSummary.model_validate_json(summary_path.read_text())
    assert (summary.status, summary.scores.samples, summary.scores.correct) == ("finished", 20, 20)
