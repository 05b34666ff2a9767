"""Hostile input, round five (issue #44): what a user meets through the command line, each reproduced as it broke."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import farel_bench
from tests.bfcl_data import BFCL_SAMPLE, multi_turn_folder
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, answer_key, completion, text, tool_call
from typed_eval.cli.stop_signals import STUCK_S, UNHEARD_S
from typed_eval.suites.bfcl.literals import JS_ARRAY_2D, SlowLiteral, java_value

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, your messages resulted in 3000 "
        "tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def schemas_run(folder: Path, path: Path, server: FakeOpenAI) -> tuple[int, list[str]]:
    """`main.py run --suite schemas -S path=...`: its exit status and stderr lines."""
    done = run_cli("main.py", "run", "--suite", "schemas", "-S", f"path={path}", "--model", "fake", "--base-url",
                   server.url, "--api-key", "k", "--results-dir", str(folder / "runs"), "--quiet")  # fmt: skip
    return done.returncode, done.stderr.splitlines()


def test_a_run_none_of_whose_schemas_can_be_posed_says_so_in_one_line_exit_2(tmp_path: Path) -> None:
    schema = tmp_path / "my_schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}))
    with FakeOpenAI(lambda request: completion(tool_call({"a": "x"}))) as server:
        code, errors = schemas_run(tmp_path, schema, server)
    assert server.requests == []
    (run_dir,) = (tmp_path / "runs" / "fake").iterdir()
    assert (code, errors) == (2, [
        "main.py: error: no case could be posed: SchemaProblem: not a valid JSON Schema (Draft202012Validator): "
        f"required: 'a' is not of type 'array' (run stored as DNF in {run_dir})"
    ])  # fmt: skip
    folder = tmp_path / "two"  # one schema that can be posed: the run is the model's, the bad case its error
    folder.mkdir()
    (folder / "bad.json").write_text(schema.read_text())
    (folder / "good.json").write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string"}}}))
    with FakeOpenAI(lambda request: completion(tool_call({"a": "x"}))) as server:
        code, errors = schemas_run(folder, folder, server)
    (samples,) = (folder / "runs").rglob("samples.jsonl")
    statuses = {record["case_id"]: record["status"] for record in map(json.loads, samples.read_text().splitlines())}
    assert (code, errors, statuses["bad"]) == (0, [], "error")
    assert statuses["good"] != "error" and server.requests


def test_a_400_that_cannot_change_is_sent_once_counted_and_the_run_goes_on(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> Any:
        if KEY(request) is QUIZZES[0]:  # the first case posed: it used to end the run as DNF, sent three times
            return 400, TOO_LONG
        return completion(tool_call({"answer": KEY(request).correct}))

    def run(server: FakeOpenAI, *extra: str) -> tuple[int, str, int, int]:
        """The run's exit status, its output, and the requests sent so far: for the first case, in all."""
        done = run_cli("main.py", "run", "--limit", "3", "--concurrency", "1", "--model", "fake", "--base-url",
                       server.url, "--api-key", "k", "--results-dir", str(tmp_path), *extra)  # fmt: skip
        first = sum(KEY(request) is QUIZZES[0] for request in server.requests)
        return done.returncode, done.stdout, first, len(server.requests)

    with FakeOpenAI(reply) as server:
        assert run(server)[::2] == (0, 1)
        assert len(server.requests) == 3
        code, shown, first, sent = run(server, "--resume", "--retry-errors")
    assert (code, first, sent) == (0, 2, 4)  # asked for again: sent once again
    assert "totals: 3 requests, 200 input / 20 output tokens" in shown  # the report counts what was sent
    (samples,) = tmp_path.rglob("samples.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    (failed,) = [record for record in records if record["status"] == "error"]  # the retry's, in the first's place
    assert (failed["usage"]["requests"], failed["transport_retries"]) == (1, 0)
    assert failed["error"].startswith("HTTP 400 from fake: {'message': \"This model's maximum context length")


@pytest.mark.parametrize(("status", "sent", "resent"), [(400, 1, 0), (413, 1, 0), (409, 3, 2)])
def test_a_4xx_no_resend_can_change_is_sent_once_whatever_the_server_says(
    status: int, sent: int, resent: int, tmp_path: Path
) -> None:
    """The server marks its rejection `x-should-retry: true` (as OpenAI's may): the SDK obeyed it and sent a context
    length exceeded three times. A 4xx but 408, 409 and 429 is sent once per attempt, and the server's count, the
    record's counters and the progress line agree; a 409 keeps the SDK's resends, each counted."""

    def reply(request: dict[str, Any]) -> Any:
        if KEY(request) is QUIZZES[0]:
            return Fault(status, TOO_LONG, {"x-should-retry": "true"})
        return completion(tool_call({"answer": KEY(request).correct}))

    def run(server: FakeOpenAI, *extra: str) -> tuple[int, str, int]:
        done = run_cli("main.py", "run", "--limit", "3", "--concurrency", "1", "--model", "fake", "--base-url",
                       server.url, "--api-key", "k", "--results-dir", str(tmp_path), *extra)  # fmt: skip
        return done.returncode, done.stderr, sum(KEY(request) is QUIZZES[0] for request in server.requests)

    with FakeOpenAI(reply) as server:
        code, progress, first = run(server)
        assert (code, first, len(server.requests)) == (0, sent, sent + 2)
        assert f"| errors 1 | transport retries {resent} | 3 req," in progress
        code, progress, first = run(server, "--resume", "--retry-errors")
    assert (code, first, len(server.requests)) == (0, 2 * sent, 2 * sent + 2)  # asked for again: once more
    assert f"| errors 1 | transport retries {resent} | 1 req," in progress
    (samples,) = tmp_path.rglob("samples.jsonl")
    (failed,) = [
        record for line in samples.read_text().splitlines() if (record := json.loads(line))["status"] == "error"
    ]
    assert (failed["usage"]["requests"], failed["transport_retries"]) == (1, resent)
    assert failed["error"].startswith(f"HTTP {status} from fake: {{'message': \"This model's maximum context length")


@pytest.mark.parametrize(("fallback", "sent"), [("answers", 7), ("fails too", 9)])
def test_every_request_behind_the_forced_tool_choice_fallback_is_counted(
    fallback: str, sent: int, tmp_path: Path
) -> None:
    """The first case answered HTTP 500 while the tool choice is forced: two tries of 3 sends each (the SDK's
    resends), then one without it. The record kept for the case counts every request the server received."""

    def reply(request: dict[str, Any]) -> Any:
        if request["tool_choice"] == "required" or fallback == "fails too":
            return Fault(500, {"error": {"message": "upstream fault", "type": "server_error"}})
        return completion(tool_call({"answer": KEY(request).correct}))

    with FakeOpenAI(reply) as server:
        done = run_cli("main.py", "run", "--limit", "1", "--model", "fake", "--base-url", server.url, "--api-key",
                       "k", "--results-dir", str(tmp_path), "--max-wait", "1")  # fmt: skip
    (samples,) = tmp_path.rglob("samples.jsonl")
    (record,) = [json.loads(line) for line in samples.read_text().splitlines()]
    assert (done.returncode, len(server.requests)) == (0 if fallback == "answers" else 3, sent)
    assert record["usage"]["requests"] + record["transport_retries"] == sent
    assert (record["usage"]["requests"], record["transport_retries"]) == ((3, 4) if fallback == "answers" else (3, 6))


def unreadable(folder: Path, kind: str, name: str) -> Path:
    """`folder/name`: a link to /dev/zero (a device that never ends) or a FIFO with no writer (a read waits forever)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if kind == "device":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    return path


def quick(*args: str) -> tuple[int, list[str]]:
    """`main.py ARGS` in this process, failed when it takes 10 s: a device read whole or a FIFO waited on (the
    command, left in its thread, ends with the test process)."""
    done: list[subprocess.CompletedProcess[str]] = []
    thread = threading.Thread(target=lambda: done.append(run_cli("main.py", *args)), daemon=True)
    thread.start()
    thread.join(10)
    if not done:
        pytest.fail(f"main.py {' '.join(args)} still runs after 10 s")
    return done[0].returncode, done[0].stderr.splitlines()


@pytest.mark.parametrize("kind", ["device", "FIFO"])
def test_a_device_or_fifo_named_as_a_schema_file_or_bfcl_data_is_one_line_exit_2(tmp_path: Path, kind: str) -> None:
    schema = unreadable(tmp_path / "schemas", kind, "mine.json")
    (tmp_path / "schemas" / "fine.json").write_text('{"type": "object"}')
    run = ("run", "--model", "test", "--results-dir", str(tmp_path / "runs"))
    what = "a device" if kind == "device" else "a FIFO"
    code, errors = quick(*run, "--suite", "schemas", "-S", f"path={tmp_path / 'schemas'}")
    assert (code, errors) == (
        2,
        [f"main.py: error: cannot read schema file {schema}: it is {what}, not a regular file"],
    )
    bfcl = tmp_path / "bfcl"
    shutil.copytree(BFCL_SAMPLE, bfcl)
    (bfcl / "BFCL_v4_irrelevance.json").unlink()
    data = unreadable(bfcl, kind, "BFCL_v4_irrelevance.json")
    code, errors = quick(*run, "--suite", "bfcl", "-S", f"data={bfcl}", "-S", "categories=irrelevance")
    assert (code, errors) == (
        2,
        [f"main.py: error: cannot read BFCL data file {data}: it is {what}, not a regular file"],
    )
    cases = unreadable(tmp_path / "cases", kind, "cases.yaml")  # a case file: as its `file://` values are read
    code, errors = quick(*run, "--suite", str(cases))
    assert (code, errors) == (2, [f"main.py: error: case file {cases} is {what}, not a regular file: name a file"])


@pytest.mark.parametrize("kind", ["device", "FIFO"])
def test_a_dataset_whose_schema_reference_is_a_device_or_fifo_is_one_line_exit_2(tmp_path: Path, kind: str) -> None:
    unreadable(tmp_path, kind, "words_schema.json")
    dataset = tmp_path / "words.yaml"
    dataset.write_text("# yaml-language-server: $schema=words_schema.json\nname: words\ncases:\n- name: one\n"
                       "  inputs: Say one\n  expected_output: one\n")  # fmt: skip
    code, errors = quick("run", "--dataset", str(dataset), "--model", "test", "--results-dir", str(tmp_path / "r"))
    what = "a device" if kind == "device" else "a FIFO"
    assert (code, errors) == (
        2,
        [f"main.py: error: dataset {dataset}: its $schema 'words_schema.json': it is {what}, not a regular file"],
    )
    code, errors = quick("run", "--dataset", str(unreadable(tmp_path / "d", kind, "d.yaml")), "--model", "test")
    assert code == 2 and len(errors) == 1 and errors[0].endswith(f": it is {what}, not a regular file")


def test_a_rejected_bfcl_request_is_scored_as_bfcl_scores_it_and_counted_one_way_everywhere(tmp_path: Path) -> None:
    from tests.test_bfcl_suite import CASES, case_of, stored

    irrelevant = sorted(case for case in CASES if case.startswith("irrelevance_"))
    simple = sorted(case for case in CASES if case.startswith("simple_python_"))

    def reply(request: dict[str, Any]) -> Any:
        case = case_of(request)
        if case in (irrelevant[0], simple[0]):  # SmolLM2's context exceeded: BFCL's "Error during inference"
            return 400, TOO_LONG
        if case == irrelevant[1]:  # a failure a resend may pass: an error, left out
            return 503, {"error": {"message": "overloaded"}}
        return completion(text("I cannot help with that."))

    with FakeOpenAI(reply) as server:
        done = run_cli("main.py", "run", "--suite", "bfcl", "-S", "data=sample", "-S",
                       "categories=simple_python,irrelevance", "--model", "fake-model", "--base-url", server.url,
                       "--api-key", "k", "--results-dir", str(tmp_path), "--retries", "0")  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = stored(tmp_path)
    rejected = "HTTP 400 from fake-model: {'message': \"This model's maximum context length is 2048 tokens. However, "
    right, wrong, failed = records[irrelevant[0]], records[simple[0]], records[irrelevant[1]]
    assert (right["status"], right["score"], right["error"], right["usage"]["requests"]) == ("correct", 1.0, None, 1)
    assert right["score_details"]["failed_call"].startswith(rejected)
    assert right["score_details"]["scored_as"] == "no call made: right here, as BFCL scores a failed call"
    assert (wrong["status"], wrong["score"], wrong["score_details"]["error_type"]) == ("incorrect", 0.0, "failed_call")
    assert (failed["status"], failed["error"]) == ("error", "HTTP 503 from fake-model: {'message': 'overloaded'}")
    lines = done.stdout.splitlines()
    assert "irrelevance: 100.00 (C: 4, I: 0, M: 0 A: 4, E: 1)" in lines  # 4 of the 4 scored: one count everywhere
    assert "BFCL: 1 failed call that a resend may change left out of every figure here (BFCL would count it wrong): " \
        "--resume --retry-errors poses it again" in lines  # fmt: skip
    board = run_cli("format_result.py", str(tmp_path), "--format", "json")
    (row,) = json.loads(board.stdout)
    assert (row["metrics"]["bfcl-irrelevance"], row["metrics"]["bfcl-simple_python"], row["errors"]) == (100.0, 0.0, 1)


def bfcl_run(tmp_path: Path, categories: str, replies: dict[str, Any], *args: str) -> dict[str, dict[str, Any]]:
    """`main.py run --suite bfcl` of the sample's `categories`, a case's reply from `replies` (by case id; any other
    case answered "No."), its records by case id; asserted to end well and quickly."""
    from tests.test_bfcl_suite import stored
    from typed_eval.suites.bfcl.data import load_sample

    by_question = {
        [m["content"] for m in case.question if m["role"] == "user"][-1]: case.id
        for case in load_sample(tuple(categories.split(","))).cases
    }

    def reply(request: dict[str, Any]) -> Any:
        asked = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
        return completion(replies.get(by_question[asked], text("No.")))

    started = time.monotonic()
    with FakeOpenAI(reply) as server:
        done = run_cli("main.py", "run", "--suite", "bfcl", "-S", "data=sample", "-S", f"categories={categories}",
                       "--model", "fake-model", "--base-url", server.url, "--api-key", "k", "--results-dir",
                       str(tmp_path), "--retries", "0", "--quiet", *args)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert time.monotonic() - started < 30
    return stored(tmp_path)


def test_a_bfcl_literal_that_backtracks_is_the_cases_error_in_a_bounded_time(tmp_path: Path) -> None:
    hostile = "{a: [[1]" + ",[1]" * 44 + "}"  # 185 bytes: BFCL's array pattern backtracks without end on it
    arguments = {"element": "myButton", "callback": "handleButtonClick", "options": hostile}
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c",
                "type": "function",
                "function": {"name": "buttonAddClickHandler", "arguments": json.dumps(arguments)},
            }
        ],
    }
    records = bfcl_run(tmp_path, "simple_javascript", {"simple_javascript_20": call})
    failed = records.pop("simple_javascript_20")
    assert failed["status"] == "error" and failed["output"] is not None  # the model's calls kept
    pattern = "[BFCL's two-level array pattern]"
    assert failed["error"].replace(repr(JS_ARRAY_2D), pattern) == (
        f"CaseScoringError: SlowLiteral: BFCL's pattern {pattern} did not finish reading a 180-character literal in "
        "1 s (it backtracks without end)"
    )
    assert {record["status"] for record in records.values()} == {"incorrect"}  # every other case scored

    started = time.monotonic()
    with pytest.raises(SlowLiteral):  # a Java map opened and never closed, as the issue found it
        java_value("new HashMap<>() {" + " " * 2000, "HashMap")
    assert time.monotonic() - started < 10  # without its bound it never ends


def test_a_prompt_mode_reply_whose_arithmetic_would_fill_the_memory_is_the_cases_error(tmp_path: Path) -> None:
    bomb = "[calculate_triangle_area(base=[[0]*1000000]*1000000, height=5)]"  # 60 bytes: 10^12 items written out
    formatting = "[calculate_triangle_area(base='%0*d' % (300000000, 1), height=5)]"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    records = bfcl_run(tmp_path, "simple_python", {"simple_python_0": text(bomb), "simple_python_80": text(formatting)},
                       "--mode", "text")  # fmt: skip
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: not the 2.7 GB it took
    for case in ("simple_python_0", "simple_python_80"):
        assert (records[case]["status"], records[case]["error"]) == (
            "error",
            "CaseScoringError: TooLargeToCompute: the reply's arithmetic makes a value of over 1,000,000 items",
        )
    assert {records[case]["status"] for case in records} == {"error", "incorrect"}


def schema_replies(tmp_path: Path, schemas: dict[str, Any], replies: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`-S path=` a folder of `schemas` (by name), each answered with its reply in tool mode: the records by case id,
    the run asserted to end well and within 30 s."""
    folder = tmp_path / "schemas"
    folder.mkdir()
    for name, schema in schemas.items():
        (folder / f"{name}.json").write_text(json.dumps(schema))

    def reply(request: dict[str, Any]) -> Any:
        asked = next(message["content"] for message in request["messages"] if message["role"] == "user")
        (name,) = [name for name, schema in schemas.items() if json.dumps(schema) == asked]
        return completion(tool_call(replies[name], name="final_result"))

    started = time.monotonic()
    with FakeOpenAI(reply) as server:
        code, errors = schemas_run(tmp_path, folder, server)
    assert (code, errors) == (0, [])
    assert time.monotonic() - started < 30
    (samples,) = (tmp_path / "runs").rglob("samples.jsonl")
    return {record["case_id"]: record for record in map(json.loads, samples.read_text().splitlines())}


def test_a_huge_reply_against_unique_items_or_an_iri_is_checked_within_the_time_box(tmp_path: Path) -> None:
    unique = {"type": "object", "properties": {"rows": {"type": "array", "uniqueItems": True}}}
    iri = {"type": "object", "properties": {"link": {"type": "string", "format": "iri"}}}
    rows = [{"id": n, "on": n % 2 == 0} for n in range(10_000)]  # 200 kB: jsonschema compares every pair
    records = schema_replies(
        tmp_path,
        {"unique": unique, "repeated": {**unique, "title": "repeated"}, "iri": iri},
        {"unique": {"rows": rows}, "repeated": {"rows": [*rows, {"on": True, "id": 0}]},
         "iri": {"link": "http://example.com/" + "a" * 150_000}},
    )  # fmt: skip
    assert (records["unique"]["status"], records["repeated"]["status"]) == ("correct", "missing")  # invalid each time
    assert records["iri"]["status"] == "error"  # the check cannot be made in time: not held against the model
    assert records["iri"]["error"] == (
        "SchemaProblem: a 150,019-character string is too long to check as an iri within 2 s (the IRI grammar's "
        "parser checks at most 1,000)"
    )


def test_a_ref_cycle_through_an_anchor_or_a_dynamic_ref_is_the_cases_error_not_the_models(tmp_path: Path) -> None:
    records = schema_replies(
        tmp_path,
        {
            "anchor": {"type": "object", "$defs": {"n": {"$anchor": "node", "$ref": "#node"}}, "$ref": "#node"},
            "dynamic": {"type": "object", "$dynamicAnchor": "me", "$dynamicRef": "#me"},
            "tree": {"type": "object", "$defs": {"n": {"$anchor": "node", "properties": {"kid": {"$ref": "#node"}}}},
                     "$ref": "#node"},
        },
        {"anchor": {}, "dynamic": {}, "tree": {"kid": {"kid": {}}}},
    )  # fmt: skip
    said = {case: (record["status"], record["error"]) for case, record in records.items()}
    assert said == {
        "anchor": ("error", "SchemaProblem: $ref '#node' recurses without end (no keyword between that descends "
                   "into the value)"),
        "dynamic": ("error", "SchemaProblem: $ref '#me' recurses without end (no keyword between that descends "
                    "into the value)"),
        "tree": ("correct", None),  # a recursion with a base case is posed and checked
    }  # fmt: skip


BLOCKING_SUITE = """
import re, time
from pathlib import Path
import evaluator

BLOCK = Path(__file__).with_name("block")


def score(case, output):
    if case.id == "c2" and BLOCK.exists():
        if BLOCK.read_text() == "python":
            while True:  # a scorer that never gives the event loop back
                pass
        re.match(r"(a|aa)+$", "a" * 60 + "!")  # backtracks for ages in C: no Python handler runs meanwhile
    return 1.0


TASK = evaluator.Task(name="blocking", output_type=int, score=score, example=1)
CASES = [evaluator.Case(id=f"c{n}", prompt="Say 1.", expected=1) for n in range(5)]
"""


@pytest.mark.parametrize(
    ("blocking", "signum"), [("python", signal.SIGTERM), ("python", signal.SIGINT), ("C", signal.SIGTERM)]
)
def test_a_stop_signal_ends_a_run_whose_scorer_blocks_the_event_loop(
    tmp_path: Path, blocking: str, signum: int, request: pytest.FixtureRequest
) -> None:
    suite = tmp_path / "blocking.py"
    suite.write_text(BLOCKING_SUITE)
    (tmp_path / "block").write_text(blocking)
    command = [PYTHON, "main.py", "run", "--suite", str(suite), "--model", "test", "--concurrency", "1",
               "--results-dir", str(tmp_path / "runs"), "--quiet", "--grace", "1"]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
    request.addfinalizer(process.kill)  # a run the test failed to stop is not left spinning
    records = tmp_path / "runs" / "test"

    def kept() -> list[str]:
        found = list(records.glob("*/samples.jsonl"))
        return [json.loads(line)["case_id"] for line in found[0].read_text().splitlines()] if found else []

    while len(kept()) < 2:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        time.sleep(0.05)
    time.sleep(0.3)  # c2's scorer is blocking by now
    sent = time.monotonic()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    waited = time.monotonic() - sent
    reason = "interrupted by the user" if signum == signal.SIGINT else "terminated (SIGTERM)"
    if blocking == "python":  # raised where the scorer was: the run ends as a second Ctrl-C ends it, its summary said
        assert (process.returncode, kept(), stderr) == (130 if signum == signal.SIGINT else 143, ["c0", "c1"],
                                                        f"main.py: {reason}; finished samples are kept (--resume "
                                                        "continues)\n")  # fmt: skip
        assert UNHEARD_S <= waited < UNHEARD_S + 10  # never the minutes it would spin
        summary = json.loads(next(records.glob("*/summary.json")).read_text())
        assert (summary["status"], summary["reason"]) == ("partial", reason)
    else:  # a call that never returns to Python: the watchdog ends the process, its records kept
        assert (process.returncode, kept()) == (-signal.SIGKILL, ["c0", "c1"])
        assert stderr.splitlines() == [
            f"main.py: {reason}; the run did not stop within 8 s (a call that never "
            "returns): it is ended; finished samples are kept (--resume continues)"
        ]
        assert UNHEARD_S + STUCK_S <= waited < UNHEARD_S + STUCK_S + 10
    (tmp_path / "block").unlink()
    resumed = run_cli(*command[1:], "--resume")  # the resume is no test of processes: in this one
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(kept()) == [f"c{n}" for n in range(5)]


def test_bfcl_runs_the_call_names_this_backend_runs() -> None:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    from typed_eval.suites.bfcl.multi_turn.decoded_calls import literal_call

    calls = [" cd(folder='document')", "\uff43\uff44(folder='document')", "cd(folder='document')"]
    config = {"GorillaFileSystem": {"root": {"workspace": {"type": "directory", "contents": {
        "document": {"type": "directory", "contents": {}}}}}}}  # fmt: skip
    results, _ = execute_multi_turn_func_call(calls, config, ["GorillaFileSystem"], "round5", "names_0")
    ran = [not result.startswith("Error during execution") for result in results]
    assert (ran, results[1]) == ([True, False, True], "Error during execution: name 'cd' is not defined")
    assert [isinstance(literal_call(call, ["cd"]), tuple) for call in calls] == ran
    assert literal_call(calls[1], ["cd"]) == "name 'cd' is not defined"


@pytest.mark.parametrize("hostile", ["ground truth", "id"])
def test_a_bfcl_data_folder_whose_text_would_run_is_refused_in_one_line(tmp_path: Path, hostile: str) -> None:
    marker = tmp_path / "M"
    code = f"__import__('os').system('touch {marker}')"

    def change(question: dict[str, Any], answer: dict[str, Any]) -> None:
        if hostile == "ground truth":
            answer["ground_truth"][0][0] = f"cd(folder={code})"
        else:
            question["id"] = answer["id"] = f"x_{code}"

    folder = multi_turn_folder(tmp_path, change)
    done = run_cli("main.py", "run", "--suite", "bfcl", "-S", f"data={folder}", "-S", "categories=multi_turn_base",
                   "--model", "test", "--results-dir", str(tmp_path / "runs"))  # fmt: skip
    where = f"{folder / 'BFCL_v4_multi_turn_base.json'}:1"
    truth, case_id = f"cd(folder={code})", f"x_{code}"
    said = {
        "ground truth": f"the ground truth {truth[:80]!r} is refused: an argument that is not a literal (Call)",
        "id": f"the id {case_id[:80]!r} is refused: BFCL names objects after it and runs them (letters, digits and "
        "_.:/- only)",
    }[hostile]
    assert (done.returncode, done.stderr.splitlines()) == (2, [f"main.py: error: {where}: {said}"])
    assert not marker.exists()


class SteeringHub:
    """The stand-in Hub of `tests/test_schemas_sources.py`, its file answers changed: an ETag that is a path, a body
    sent a byte every `drip_s`, or `extra` bytes more than the file holds."""

    def __init__(self, files: dict[str, bytes], *, etag: str | None = None, drip_s: float = 0, extra: int = 0) -> None:
        from tests.test_schemas_sources import StandInHub

        self.hub = StandInHub(files)
        send = self.hub.send

        def sent(request: Any, status: int, body: bytes, headers: dict[str, str], with_body: bool) -> None:
            if "ETag" not in headers:
                return send(request, status, body, headers, with_body)
            headers = {**headers, "ETag": f'"{etag}"'} if etag is not None else headers
            body += b"\0" * extra
            if not drip_s or not with_body:
                return send(request, status, body, headers, with_body)
            request.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                request.send_header(name, value)
            request.end_headers()
            for byte in body:
                request.wfile.write(bytes([byte]))
                request.wfile.flush()
                time.sleep(drip_s)

        self.hub.send = sent  # type: ignore[method-assign]


def test_a_hub_mirror_cannot_steer_where_the_download_is_written(tmp_path: Path) -> None:
    from tests.test_schemas_sources import dataset_files, without_hf

    outside = tmp_path / "outside" / "blob"
    outside.parent.mkdir()
    steering = SteeringHub(dataset_files(tmp_path), etag=str(outside))
    with steering.hub.running() as hub:
        # a process: huggingface_hub reads HF_ENDPOINT and HF_HOME once, when first imported
        done = subprocess.run([PYTHON, "main.py", "run", "--suite", "schemas", "-S", "source=jsonschemabench", "-S",
                               "sets=Snowplow", "--model", "test", "--results-dir", str(tmp_path / "runs")],
                              cwd=REPO, capture_output=True, text=True, timeout=120,
                              env={**without_hf(), "HF_HOME": str(tmp_path / "hf"),
                                   "HF_ENDPOINT": hub.url})  # fmt: skip
    etag = f'"{outside}"'[:60]
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"main.py: error: JSONSchemaBench from {hub.url} is refused: the server's etag {etag!r} is not a hash: it "
        "would name the file written"
    ])  # fmt: skip
    assert list(outside.parent.iterdir()) == []  # nothing written outside the cache
    assert not list((tmp_path / "hf").rglob("*.incomplete"))


@pytest.mark.parametrize("hostile", ["slow", "large"])
def test_a_hub_download_is_bounded_in_time_and_size_and_leaves_nothing_partial(tmp_path: Path, hostile: str) -> None:
    from tests.test_schemas_sources import dataset_files
    from typed_eval.core.errors import InputError
    from typed_eval.suites.schemas.hub import download

    steering = SteeringHub(dataset_files(tmp_path), **({"drip_s": 0.2} if hostile == "slow" else {"extra": 10_000}))
    cache = tmp_path / "cache"
    started = time.monotonic()
    with steering.hub.running() as hub, pytest.raises(InputError) as refused:
        download(["Snowplow"], endpoint=hub.url, cache_dir=cache, deadline_s=2, most=20_000)
    assert time.monotonic() - started < 20  # the deadline, not the minutes a drip would take
    said = (
        "the download took more than 2 s"
        if hostile == "slow"
        else "the server sent more than 20,000 bytes, more than the sets hold"
    )
    assert str(refused.value) == f"JSONSchemaBench from {hub.url} is refused: {said}"
    blobs = [path for path in cache.rglob("*") if path.is_file() and "blobs" in path.parts]
    assert [blob for blob in blobs if blob.suffix == ".incomplete" or blob.stat().st_size > 20_000] == []


def test_multi_turn_prompt_mode_arithmetic_that_would_fill_the_memory_is_refused_before_it_is_made() -> None:
    from typed_eval.suites.bfcl.multi_turn.decoded_calls import decode_prompt_step
    from typed_eval.suites.bfcl.prompting import TooLargeToCompute

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TooLargeToCompute):  # the sample's error (its session raises it), not a 3 GB rendering
        decode_prompt_step("[cd(folder=[[0]*1000000]*1000000)]")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000
