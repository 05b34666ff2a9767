"""Case files against hostile replies and files, each the way it broke a run (issue #24): JSON nested 100,000
deep, a regex that backtracks catastrophically, python assertions that block or exit, a YAML alias bomb,
weights that overflow when summed. Each is run from the command line against a loopback server."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from evaluator import RunSummary, SampleRecord
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text
from typed_eval.suites.case_files import checks

DEEP = '{"a":' * 100_000 + "1" + "}" * 100_000
REPLIES = {"deep": DEEP, "plain": "fine", "letters": "a" * 41, "code": "print('hi')"}


def reply(request: dict[str, Any]) -> dict[str, Any]:
    return completion(text(REPLIES[prompt_of(request)]))


def case_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text("prompts: ['{{q}}']\ntests:\n" + body, encoding="utf-8")
    return path


def command(path: Path, url: str, results: Path, *extra: str) -> list[str]:
    return [PYTHON, "main.py", "run", "--suite", str(path), "--model", "m", "--base-url", url, "--api-key", "k",
            "--results-dir", str(results), "--quiet", *extra]  # fmt: skip


def run(path: Path, url: str, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*command(path, url, results, *extra)[1:])


def records(results: Path) -> dict[str, SampleRecord]:
    (samples,) = results.rglob("samples.jsonl")
    found = [SampleRecord.model_validate_json(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    return {r.case_id: r for r in found}


def verdicts(record: SampleRecord) -> list[tuple[float, bool, str]]:
    assert record.score_details is not None
    return [(a["score"], a["pass"], a["reason"]) for a in record.score_details["assertions"]]


def test_json_nested_100000_deep_scores_those_assertions_0_and_the_run_and_its_resume_go_on(tmp_path: Path) -> None:
    path = case_file(tmp_path, """\
  - vars: {q: deep}
    assert:
      - {type: is-json}
      - {type: contains-json}
      - {type: equals, value: {a: 1}}
      - {type: contains, value: '{"a":{"a"'}
  - vars: {q: plain}
    assert: [{type: equals, value: fine}]
""")  # fmt: skip
    results = tmp_path / "results"
    with FakeOpenAI(reply) as server:
        stopped = run(path, server.url, results, "--concurrency", "1", "--max-requests", "1")
        assert stopped.returncode == 0, stopped.stderr
        resumed = run(path, server.url, results, "--concurrency", "1", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    (summary,) = results.rglob("summary.json")
    assert RunSummary.model_validate_json(summary.read_text()).status == "finished"
    found = records(results)
    assert [(case_id, r.score) for case_id, r in sorted(found.items())] == [("test-001", 0.25), ("test-002", 1.0)]
    assert verdicts(found["test-001"]) == [
        (0.0, False, "cannot check: the reply is JSON nested too deeply to read"),
        (0.0, False, "cannot check: the reply holds JSON nested too deeply to read"),
        (0.0, False, "cannot check: the reply is JSON nested too deeply to read"),
        (1.0, True, "Assertion passed"),
    ]


def test_a_backtracking_regex_and_a_blocking_python_check_score_0_at_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit_s = 4.0  # the run's checks stopped after 4 s, not 10 (`CHECK_TIME_LIMIT_S`)
    monkeypatch.setattr(checks._POOL, "limit_s", limit_s)
    path = case_file(tmp_path, """\
  - vars: {q: letters}
    assert: [{type: regex, value: '^(a+)+$'}, {type: regex, value: '^(a+)+b$'}]
  - vars: {q: code}
    assert: [{type: python, value: "__import__('time').sleep(600)"}]
  - vars: {q: plain}
    assert: [{type: equals, value: fine}]
""")  # fmt: skip
    results = tmp_path / "results"
    started = time.monotonic()
    with FakeOpenAI(reply) as server:
        done = run(path, server.url, results, "--concurrency", "3")
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert took < 3 * limit_s  # two stopped checks (the first case posed alone, then the rest), not ten minutes
    found = records(results)
    stopped = f"the check ran past its time limit of {limit_s:g} s and was stopped"
    assert verdicts(found["test-001"]) == [(1.0, True, "Assertion passed"), (0.0, False, stopped)]
    assert verdicts(found["test-002"]) == [(0.0, False, stopped)]
    assert [found[c].score for c in ("test-001", "test-002", "test-003")] == [0.5, 0.0, 1.0]


def start_blocked_run(tmp_path: Path, server: FakeOpenAI, *extra: str) -> subprocess.Popen[str]:
    """A run whose only check blocks for ten minutes, once that check has started (it says so in a file first)."""
    started = tmp_path / "check-started"
    blocking = f"__import__('pathlib').Path({str(started)!r}).touch() or __import__('time').sleep(600)"
    check = json.dumps(blocking)
    path = case_file(tmp_path, f"  - vars: {{q: code}}\n    assert: [{{type: python, value: {check}}}]\n")
    process = subprocess.Popen(command(path, server.url, tmp_path / "results", *extra), cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the check did not start"
    return process


def test_sigterm_stops_a_run_within_the_grace_period_whatever_a_check_is_doing(tmp_path: Path) -> None:
    with FakeOpenAI(reply) as server:
        process = start_blocked_run(tmp_path, server, "--grace", "1")
        asked = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        waited = time.monotonic() - asked
    assert process.returncode == 143, stderr
    assert 1 <= waited < 6  # the 1 s grace period, not the check's 10 s limit nor its ten minutes


def test_two_ctrl_c_stop_a_run_at_once_whatever_a_check_is_doing(tmp_path: Path) -> None:
    with FakeOpenAI(reply) as server:
        process = start_blocked_run(tmp_path, server)
        asked = time.monotonic()
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        waited = time.monotonic() - asked
    assert (process.returncode, stderr) == (
        130,
        "main.py: interrupted; finished samples are kept (--resume continues)\n",
    )
    assert waited < 5


def test_python_that_exits_or_interrupts_fails_that_assertion_and_the_run_goes_on(tmp_path: Path) -> None:
    path = case_file(tmp_path, """\
  - vars: {q: code}
    assert:
      - {type: python, value: "__import__('sys').exit(0)"}
      - {type: python, value: "__import__('sys').exit('done')"}
      - type: python
        value: |
          raise KeyboardInterrupt
      - {type: python, value: "__import__('os')._exit(0)"}
      - {type: python, value: "output.startswith('print')"}
  - vars: {q: plain}
    assert: [{type: equals, value: fine}]
""")  # fmt: skip
    results = tmp_path / "results"
    with FakeOpenAI(reply) as server:
        done = run(path, server.url, results)
    assert done.returncode == 0, done.stderr
    assert "interrupted" not in done.stderr
    (summary,) = results.rglob("summary.json")
    assert RunSummary.model_validate_json(summary.read_text()).status == "finished"
    found = records(results)
    assert verdicts(found["test-001"]) == [
        (0.0, False, "Python code execution failed: SystemExit: 0"),
        (0.0, False, "Python code execution failed: SystemExit: done"),
        (0.0, False, "Python code execution failed: KeyboardInterrupt: "),
        (0.0, False, "the check ended its process (exit code 0)"),
        (1.0, True, "Assertion passed"),
    ]
    assert (found["test-001"].score, found["test-002"].score) == (0.2, 1.0)


def one_line_refusal(path: Path) -> str:
    done = run(path, "http://127.0.0.1:9/v1", path.parent / "results")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


def test_a_yaml_alias_bomb_is_refused_in_one_line(tmp_path: Path) -> None:
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for n, name in enumerate("bcdefghi"):
        previous = "abcdefghi"[n]
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    path = tmp_path / "cases.yaml"
    path.write_text("bomb:\n" + "".join(f"  {line}\n" for line in levels) + "prompts: [p]\ntests: [{assert: "
                    "[{type: contains, value: x}]}]\n", encoding="utf-8")  # fmt: skip
    assert one_line_refusal(path) == (
        f"main.py: error: case file {path} is not valid YAML: its aliases expand it by more than 100,000 nodes "
        "(refused: an alias bomb)"
    )


def test_weights_that_overflow_when_summed_are_refused_in_one_line(tmp_path: Path) -> None:
    path = case_file(tmp_path, "  - vars: {q: plain}\n    assert: [{type: contains, value: fine, weight: 1.0e+308},"
                     " {type: contains, value: dog, weight: 1.0e+308}]\n")  # fmt: skip
    assert one_line_refusal(path) == (
        f"main.py: error: case file {path}: test 1: its assertion weights add up to more than a double holds "
        "(promptfoo would score the test 0): make them smaller"
    )
