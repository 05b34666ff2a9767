"""Ollama as users run it, against a loopback fake of the parts of Ollama's HTTP API the evaluator uses."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

import farel_bench
from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, Route, answer_key, completion, tool_call
from typed_eval.contracts import RunSummary
from typed_eval.core.errors import ModelSetupError
from typed_eval.suites.multiple_choice import evaluate_quizzes

KEY = answer_key(list(farel_bench.generate(3, 50, 42, shuffle=True)))
DETAILS = {"format": "gguf", "family": "qwen3", "parameter_size": "4B", "quantization_level": "Q4_K_M"}


class FakeOllama:
    """The state behind the fake: which models are pulled, what each can do, and what was pulled."""

    def __init__(self) -> None:
        self.models: dict[str, list[str]] = {"qwen3:4b": ["completion", "tools"], "gemma3:1b": ["completion"]}
        self.pulled: list[dict[str, Any]] = []

    def routes(self) -> dict[str, Route]:
        return {"GET /api/tags": self.tags, "POST /api/show": self.show, "POST /api/pull": self.pull}

    def tags(self, _: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        entry = {"modified_at": "2026-11-01T00:00:00Z", "size": 2_500_000_000, "digest": "sha256:0", "details": DETAILS}
        return 200, {"models": [{"name": name, "model": name, **entry} for name in self.models]}

    def show(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body["model"] not in self.models:
            return 404, {"error": f"model '{body['model']}' not found"}
        capabilities = self.models[body["model"]]
        return 200, {
            "capabilities": capabilities,
            "details": DETAILS,
            "model_info": {},
            "modelfile": "",
            "template": "",
        }

    def pull(self, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        self.pulled.append(body)
        self.models[body["model"] if ":" in body["model"] else f"{body['model']}:latest"] = ["completion", "tools"]
        return 200, [
            {"status": "pulling manifest"},
            {"status": "pulling sha256:1", "digest": "sha256:1", "total": 1000, "completed": 400},
            {"status": "pulling sha256:1", "digest": "sha256:1", "total": 1000, "completed": 1000},
            {"status": "success"},
        ]


def answering(request: dict[str, Any]) -> dict[str, Any]:
    return completion(tool_call({"answer": KEY(request).correct}))


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "OLLAMA_BASE_URL"} | (env or {})
    return run_cli("main.py", *args, env=environment)


def host_of(server: FakeOpenAI) -> str:
    return server.url.removesuffix("/v1")


def test_run_through_pydantic_ais_ollama_provider(tmp_path: Path) -> None:
    ollama = FakeOllama()
    with FakeOpenAI(answering, ollama.routes()) as server:
        done = cli(
            "run",
            "--model",
            "ollama:qwen3:4b",
            "--limit",
            "9",
            "--results-dir",
            str(tmp_path),
            "--quiet",
            env={"OLLAMA_BASE_URL": host_of(server)},
        )
        model_names = {r["model"] for r in server.requests}
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(path.read_text())
    assert (summary.model, summary.scores.correct, summary.settings.base_url) == ("ollama:qwen3:4b", 9, server.url)
    assert summary.scores.totals.cost_sources == ["local"]
    assert model_names == {"qwen3:4b"}


def test_missing_model_is_refused_unless_pulled(tmp_path: Path) -> None:
    ollama = FakeOllama()
    with FakeOpenAI(answering, ollama.routes()) as server:
        refused = cli("run", "--model", "ollama:llama3", "--base-url", host_of(server), "--results-dir", str(tmp_path))
        pulled = cli(
            "run",
            "--model",
            "ollama:llama3",
            "--base-url",
            host_of(server),
            "--pull",
            "--limit",
            "3",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        f"main.py: error: --pull: Ollama at {host_of(server)} has no model 'llama3': pull it here, or run "
        "`ollama pull llama3`"
    )
    assert pulled.returncode == 0, pulled.stderr
    assert [p["model"] for p in ollama.pulled] == ["llama3"]
    assert "llama3:latest" in ollama.models


def test_model_without_tools_is_refused_in_tool_mode_only(tmp_path: Path) -> None:
    def tagged(request: dict[str, Any]) -> dict[str, Any]:
        return completion({"role": "assistant", "content": f"<ANSWER>{KEY(request).correct}</ANSWER>"})

    with FakeOpenAI(tagged, FakeOllama().routes()) as server:
        tool = cli("run", "--model", "ollama:gemma3:1b", "--base-url", host_of(server), "--results-dir", str(tmp_path))
        tag = cli(
            "run",
            "--model",
            "ollama:gemma3:1b",
            "--base-url",
            host_of(server),
            "--mode",
            "tag",
            "--limit",
            "3",
            "--results-dir",
            str(tmp_path),
            "--quiet",
        )
    assert tool.returncode == 2
    assert tool.stderr.strip() == (
        "main.py: error: --mode: Ollama model 'gemma3:1b' does not support tools (capabilities: completion): "
        "use the tag or prompted mode, or a model with tool support"
    )
    assert tag.returncode == 0, tag.stderr


def test_server_down_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        host = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = cli("run", "--model", "ollama:qwen3:4b", "--base-url", host, "--results-dir", str(tmp_path))
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"main.py: error: --base-url: no Ollama server answers at {host}: start it (`ollama serve`)")
    assert not list(tmp_path.rglob("*.json"))


def test_models_lists_what_ollama_has() -> None:
    with FakeOpenAI(answering, FakeOllama().routes()) as server:
        done = cli("models", "--provider", "ollama", "--base-url", f"{server.url}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ollama:qwen3:4b\t2.5 GB\t4B\tQ4_K_M\ttools",
        "ollama:gemma3:1b\t2.5 GB\t4B\tQ4_K_M\tno tools",
    ]


@pytest.mark.parametrize("url", ["http://h:11434", "http://h:11434/", "http://h:11434/v1"])
def test_ollama_host_takes_either_form(url: str) -> None:
    from typed_eval.providers.ollama_models import ollama_host

    assert ollama_host(url) == "http://h:11434"


def test_the_library_runs_ollama_model_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    ollama = FakeOllama()
    quizzes = list(farel_bench.generate(3, 50, 42, shuffle=True))[:4]
    with FakeOpenAI(answering, ollama.routes()) as server:
        monkeypatch.setenv("OLLAMA_BASE_URL", host_of(server))
        result = asyncio.run(evaluate_quizzes(quizzes, "ollama:qwen3:4b", concurrency=2))
        with pytest.raises(ModelSetupError, match=r"^pull: Ollama at .* has no model 'llama3': pull it here"):
            asyncio.run(evaluate_quizzes(quizzes, "ollama:llama3"))
    assert [r.status for r in result.records] == ["correct"] * 4
    assert result.scores.totals.cost_sources == ["local"]
