"""`main.py` and `format_result.py` as users run them: subprocesses against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PUBLISHED_CSV, PUBLISHED_MD5, PYTHON, REPO
from tests.fake_openai import FakeOpenAI, answer_key, completion, text, tool_call
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.suites.multiple_choice import DEFAULT_SYSTEM_PROMPT

SECRET = "sk-test-secret-0123456789abcdef"
QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)


def clean_env() -> dict[str, str]:
    drop = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")
    return {k: v for k, v in os.environ.items() if k not in drop}


def cli(script: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args, stdin=stdin, env=clean_env())


def only_run(results: Path) -> Path:
    (summary,) = results.rglob("summary.json")
    return summary.parent


def summary_of(results: Path) -> RunSummary:
    return RunSummary.model_validate_json((only_run(results) / "summary.json").read_text())


def records_of(results: Path) -> list[SampleRecord]:
    lines = (only_run(results) / "samples.jsonl").read_text().splitlines()
    return [SampleRecord.model_validate_json(line) for line in lines]


def correct_except_siblings(request: dict[str, Any]) -> dict[str, Any]:
    quiz = KEY(request)
    answer = quiz.correct if quiz.class_name != "sibling" else quiz.correct % len(quiz.options) + 1
    return completion(tool_call({"answer": answer}), prompt_tokens=120, completion_tokens=15, reasoning_tokens=5)


def test_tool_mode_run_is_recorded_scored_and_keeps_no_secret(tmp_path: Path) -> None:
    with FakeOpenAI(correct_except_siblings) as server:
        result = cli(
            "main.py",
            "run",
            "--model",
            "fake-model",
            "--base-url",
            server.url,
            "--api-key",
            SECRET,
            "--limit",
            "18",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
        requests = server.requests
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:10] == [
        "child: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "parent: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "grandchild: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "sibling: 0.00 (C: 0, I: 2, M: 0 A: 2)",
        "grandparent: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "great grandchild: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "niece or nephew: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "aunt or uncle: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "great grandparent: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "FaRel-3: 88.89  (fake-model, tool mode)",
    ]
    summary = summary_of(tmp_path)
    assert (summary.status, summary.mode, summary.model) == ("finished", "tool", "fake-model")
    assert summary.settings.base_url == server.url
    assert (summary.settings.tool_choice, summary.settings.retries, summary.settings.temperature) == (
        "required",
        3,
        0.01,
    )
    assert (summary.dataset.md5, summary.dataset.limit, summary.dataset.cases) == (PUBLISHED_MD5, 18, 450)
    totals = summary.scores.totals
    assert (totals.requests, totals.input_tokens, totals.output_tokens, totals.reasoning_tokens) == (18, 2160, 270, 90)
    assert (totals.cost_usd, totals.cost_sources) == (0.0, ["local"])
    records = records_of(tmp_path)
    assert len(records) == 18
    assert {r.status for r in records} == {"correct", "incorrect"}
    first = requests[0]
    assert (first["tool_choice"], first["temperature"], first["seed"]) == ("required", 0.01, 42)
    assert [t["function"]["name"] for t in first["tools"]] == ["select_answer"]
    stored = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert SECRET not in stored


def test_farel_pipeline_through_stdin_in_tag_mode(tmp_path: Path) -> None:
    def tagged(request: dict[str, Any]) -> dict[str, Any]:
        return completion(text(f"Reasoning...\n<ANSWER>{KEY(request).correct}</ANSWER>"))

    generated = subprocess.run(
        [PYTHON, "farel_bench.py", "-l", "3", "-n", "50", "-r", "42", "-s"], cwd=REPO, capture_output=True, check=True
    ).stdout
    with FakeOpenAI(tagged) as server:
        result = cli(
            "main.py",
            "run",
            "--quizzes",
            "-",
            "--mode",
            "tag",
            "--model",
            "fake-model",
            "--base-url",
            server.url,
            "--concurrency",
            "16",
            "--system-prompt",
            "--results-dir",
            str(tmp_path),
            "--quiet",
            stdin=generated,
        )
        system = server.requests[0]["messages"][0]
    assert result.returncode == 0, result.stderr
    assert "FaRel: 100.00  (fake-model, tag mode)" in result.stdout.splitlines()
    assert system == {"role": "system", "content": DEFAULT_SYSTEM_PROMPT}
    summary = summary_of(tmp_path)
    assert (summary.dataset.source, summary.dataset.md5, summary.scores.correct) == ("stdin", PUBLISHED_MD5, 450)
    assert summary.settings.retries == 0
    assert summary.settings.system_prompt == DEFAULT_SYSTEM_PROMPT


def test_server_refusing_forced_tool_choice_falls_back_to_auto(tmp_path: Path) -> None:
    def llama_cpp_like(request: dict[str, Any]) -> dict[str, Any] | tuple[int, dict[str, Any]]:
        if request.get("tool_choice") == "required":
            return 500, {"error": {"message": "AssertionError: tool_choice must be auto", "type": "server_error"}}
        return completion(tool_call({"answer": KEY(request).correct}))

    with FakeOpenAI(llama_cpp_like) as server:
        result = cli(
            "main.py",
            "run",
            "--model",
            "local-model",
            "--base-url",
            server.url,
            "--limit",
            "9",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
    assert result.returncode == 0, result.stderr
    summary = summary_of(tmp_path)
    assert summary.settings.tool_choice == "auto"
    assert summary.settings.tool_choice_reason == (
        "the server refused a forced tool choice (HTTP 500 from local-model: "
        "{'message': 'AssertionError: tool_choice must be auto', 'type': 'server_error'})"
    )
    assert (summary.scores.correct, summary.scores.errors) == (9, 0)


def test_compatible_servers_get_max_tokens_not_max_completion_tokens(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: completion(tool_call({"answer": KEY(r).correct}))) as server:
        result = cli(
            "main.py",
            "run",
            "--model",
            "m",
            "--base-url",
            server.url,
            "--limit",
            "1",
            "--max-tokens",
            "64",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
        request = server.requests[0]
    assert result.returncode == 0, result.stderr
    assert (request["max_tokens"], "max_completion_tokens" in request) == (64, False)
    assert summary_of(tmp_path).settings.max_tokens == 64


def test_tool_choice_auto_by_flag_never_forces(tmp_path: Path) -> None:
    with FakeOpenAI(lambda r: completion(tool_call({"answer": KEY(r).correct}))) as server:
        result = cli(
            "main.py",
            "run",
            "--model",
            "m",
            "--base-url",
            server.url,
            "--limit",
            "3",
            "--tool-choice",
            "auto",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
        choices = {r.get("tool_choice") for r in server.requests}
    assert result.returncode == 0, result.stderr
    assert choices == {"auto"}
    assert summary_of(tmp_path).settings.tool_choice == "auto"


def test_native_mode_asks_for_a_json_schema_and_reads_json_content(tmp_path: Path) -> None:
    def json_content(request: dict[str, Any]) -> dict[str, Any]:
        assert request["response_format"]["type"] == "json_schema"
        return completion(text(json.dumps({"answer": KEY(request).correct, "reasoning": "r"})))

    with FakeOpenAI(json_content) as server:
        result = cli(
            "main.py",
            "run",
            "--model",
            "m",
            "--base-url",
            server.url,
            "--mode",
            "native",
            "--limit",
            "9",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
    assert result.returncode == 0, result.stderr
    assert summary_of(tmp_path).scores.correct == 9
    assert {r.output["reasoning"] for r in records_of(tmp_path)} == {"r"}  # type: ignore[call-overload,index]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_a_one_line_error_and_a_stored_dnf(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = cli(
        "main.py", "run", "--model", "m", "--base-url", url, "--limit", "5", "--results-dir", str(tmp_path), "--quiet"
    )
    assert result.returncode == 3
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"main.py: error: model m at {url} could not be reached: ModelConnectionError")
    summary = summary_of(tmp_path)
    assert (summary.status, summary.scores.samples, summary.scores.errors) == ("dnf", 1, 1)
    board = cli("format_result.py", str(tmp_path), "--format", "json")
    (row,) = json.loads(board.stdout)
    assert (row["status"], row["score"], row["errors"], row["rank"]) == ("dnf", None, 1, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nope:model"], "main.py: error: --model: unknown model provider 'nope' in 'nope:model'"),
        (["--model", "gpt-4o"], "main.py: error: --model: unknown model 'gpt-4o': name it as provider:model"),
        (
            ["--model", "openai:gpt-4o-mini"],
            "main.py: error: --api-key: missing API key for openai:gpt-4o-mini: set OPENAI_API_KEY or pass one",
        ),
        (["--model", "test", "--quizzes", "missing.csv"], "main.py: error: cannot read quizzes from missing.csv"),
        (["--model", "test", "--length", "0"], "main.py run: error: argument --length: must be at least 1, got 0"),
        (["--model", "test", "--price-in", "1"], "main.py: error: give both --price-in and --price-out"),
        (
            ["--model", "test", "--grace", "-1"],
            "main.py run: error: argument --grace: must be 0 seconds or more, got -1",
        ),
    ],
)
def test_bad_input_gets_one_line_and_a_non_zero_exit(args: list[str], message: str, tmp_path: Path) -> None:
    result = cli("main.py", "run", *args, "--results-dir", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(message)
    assert not list(tmp_path.rglob("summary.json"))


def test_malformed_csv_names_the_line(tmp_path: Path) -> None:
    lines = PUBLISHED_CSV.read_text().splitlines()
    bad = "\n".join([*lines[:2], "2,sibling,1", *lines[3:5]]) + "\n"
    result = cli(
        "main.py", "run", "--model", "test", "--quizzes", "-", "--results-dir", str(tmp_path), stdin=bad.encode()
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "main.py: error: malformed CSV: standard input line 3: "
        "expected degree,relation,answer,quiz with the quiz as a quoted string"
    )


def test_leaderboard_json_has_the_contract_keys(tmp_path: Path) -> None:
    for mode in ("tool", "tag"):
        done = cli(
            "main.py",
            "run",
            "--model",
            "test",
            "--mode",
            mode,
            "--limit",
            "9",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
        assert done.returncode == 0, done.stderr
    board = cli("format_result.py", str(tmp_path), "--format", "json")
    assert board.returncode == 0, board.stderr
    rows = json.loads(board.stdout)
    required = {
        "model",
        "mode",
        "run_id",
        "status",
        "score",
        "title",
        "classes",
        "samples",
        "correct",
        "incorrect",
        "missing",
        "errors",
        "valid_first_try",
        "corrective_retries",
        "invalid_outputs",
        "requests",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "wall_s",
    }
    assert [required - set(row) for row in rows] == [set(), set()]
    assert sorted(row["mode"] for row in rows) == ["tag", "tool"]
    assert {row["samples"] for row in rows} == {9}
    assert all(len(row["classes"]) == 9 for row in rows)


def test_corrupt_result_file_is_a_one_line_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "m" / "run1"
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text('{"schema_version": 1, "model": ')
    result = cli("format_result.py", str(tmp_path))
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"format_result.py: error: corrupt result file {run_dir / 'summary.json'}:")


@pytest.mark.parametrize(
    ("parameter", "said"),
    [
        ("concurrency", "--concurrency: must be 7"),
        ("max_wait_s", "--max-wait: must be 7"),  # the flag's name differs from the parameter's
        ("seed", "--model-seed: must be 7"),  # --seed is the generator's
        ("prices", "--price-in/--price-out: must be 7"),
        ("task", "task: must be 7"),  # no flag sets it: named as the library names it
        (None, "must be 7"),
    ],
)
def test_a_library_error_names_the_flag_of_its_parameter(
    parameter: str | None, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flag comes from the error's `parameter` and the parser's actions; the message is not rewritten."""
    from typed_eval import cli as command_line
    from typed_eval.cli import run as run_command
    from typed_eval.core.errors import InputError

    async def refused(*_: Any, **__: Any) -> Any:
        raise InputError("must be 7", parameter=parameter)

    monkeypatch.setattr(run_command, "run", refused)
    monkeypatch.setattr("sys.argv", ["main.py"])
    assert command_line.main(["run", "--model", "test", "--limit", "1", "--quiet"]) == 2
    assert capsys.readouterr().err == f"main.py: error: {said}\n"
