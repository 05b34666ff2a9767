"""Model strings to models, safe URLs, and provider-reported cost through pydantic-ai's OpenRouter model."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI
from pydantic_ai.models.openrouter import OpenRouterModel
from pydantic_ai.providers.openrouter import OpenRouterProvider

import farel_bench
from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, Route, answer_key, completion, text, tool_call
from typed_eval.contracts import RunSummary, SampleRecord
from typed_eval.core.errors import ModelSetupError
from typed_eval.providers.resolve import (
    forces_tool_choice,
    is_loopback,
    resolve_model,
    safe_url,
    without_forced_tool_choice,
)
from typed_eval.providers.transport import http_client
from typed_eval.suites.multiple_choice import evaluate_quizzes


def test_openrouter_reported_cost_is_the_most_trusted() -> None:
    quizzes = list(farel_bench.generate(1, 2, 7, shuffle=True))
    key = answer_key(quizzes)
    with FakeOpenAI(
        lambda r: completion(tool_call({"answer": key(r).correct}), cost=0.00125, provider="DeepSeek")
    ) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="k")
        model = OpenRouterModel("deepseek/deepseek-chat", provider=OpenRouterProvider(openai_client=client))
        result = asyncio.run(evaluate_quizzes(quizzes, model, concurrency=2))
    assert [(r.cost.usd, r.cost.source) for r in result.records] == [(0.00125, "provider")] * 4
    assert result.scores.totals.cost_usd == pytest.approx(0.005)
    assert (result.scores.totals.cost_complete, result.scores.totals.cost_sources) == (True, ["provider"])


def byok(fee: float | None, upstream: float) -> dict[str, object]:
    """A reply of OpenRouter with the user's own provider key: its fee (None: 0, which pydantic-ai drops) and the
    provider's own charge."""
    body = completion(tool_call({"answer": 1}), cost=fee, provider="DeepSeek")
    body["usage"] |= {"is_byok": True, "cost_details": {"upstream_inference_cost": upstream}}
    return body


@pytest.mark.parametrize(("fee", "upstream", "total"), [(0.0001, 0.002, 0.0021), (None, 0.002, 0.002)])
def test_openrouter_byok_cost_counts_the_upstream_charge(fee: float | None, upstream: float, total: float) -> None:
    quizzes = list(farel_bench.generate(1, 1, 7, shuffle=True))[:1]
    with FakeOpenAI(lambda _: byok(fee, upstream)) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="k")
        model = OpenRouterModel("deepseek/deepseek-chat", provider=OpenRouterProvider(openai_client=client))
        result = asyncio.run(evaluate_quizzes(quizzes, model))
    assert [(r.cost.usd, r.cost.source) for r in result.records] == [(pytest.approx(total), "provider")]


def test_model_strings_resolve_with_aliases_keys_and_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    google = resolve_model("google-gla:gemini-2.0-flash")
    assert (google.name, google.local) == ("google:gemini-2.0-flash", False)
    local = resolve_model("qwen", base_url="http://user:pw@127.0.0.1:8080/v1#frag")
    assert (local.name, local.base_url, local.local) == ("qwen", "http://127.0.0.1:8080/v1", True)
    with pytest.raises(ModelSetupError, match=r"base_url: 'http://127\.0\.0\.1:8080/v1' has a query string"):
        resolve_model("qwen", base_url="http://user:pw@127.0.0.1:8080/v1?token=x")
    remote = resolve_model("openai:m", base_url="https://api.example.com/v1", api_key="sk-x")
    assert (remote.base_url, remote.local) == ("https://api.example.com/v1", False)
    with pytest.raises(ModelSetupError, match="unknown model 'gpt-4o'"):
        resolve_model("gpt-4o")


def test_remote_base_url_without_a_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelSetupError, match=r"^api_key: missing API key for https://api\.example\.com/v1: pass one"):
        resolve_model("m", base_url="https://api.example.com/v1")


def test_urls_lose_their_secrets() -> None:
    assert safe_url("https://u:p@host.example:8443/v1?key=s#f") == "https://host.example:8443/v1"
    assert safe_url("http://[::1]:9/v1") == "http://[::1]:9/v1"
    assert (is_loopback("http://localhost:1/v1"), is_loopback("https://example.com"), is_loopback(None)) == (
        True,
        False,
        False,
    )


def test_turning_forced_tool_choice_off_leaves_the_original_alone() -> None:
    model = resolve_model("m", base_url="http://127.0.0.1:1/v1").model
    relaxed = without_forced_tool_choice(model)
    assert (forces_tool_choice(model), forces_tool_choice(relaxed)) == (True, False)
    assert relaxed.model_name == model.model_name


def test_google_models_resend_a_failed_request_twice_like_the_others() -> None:
    """google-genai retries nothing by default; the evaluator gives every provider the same 2 resends."""
    (quiz,) = list(farel_bench.generate(1, 1, 7, shuffle=True))[:1]
    bodies: list[dict[str, Any]] = []

    def generate(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        bodies.append(body)
        if len(bodies) <= 2:
            return 503, {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
        call = {"functionCall": {"name": "select_answer", "args": {"answer": quiz.correct}}}
        return 200, {"candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
                     "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
                     "modelVersion": "gemini-2.0-flash"}  # fmt: skip

    route: dict[str, Route] = {"POST /v1beta/models/gemini-2.0-flash:generateContent": generate}
    with FakeOpenAI(lambda r: completion(text("unused")), routes=route) as server:
        base = server.url.removesuffix("/v1")
        resolved = resolve_model("google:gemini-2.0-flash", base_url=base, api_key="k", http_client=http_client())
        (record,) = asyncio.run(evaluate_quizzes([quiz], resolved.model)).records
    assert (record.status, record.error, record.transport_retries, len(bodies)) == ("correct", None, 2, 3)


CHAT_USAGE = {"root": "usage", "api_flavor": "chat", "model_path": "model", "mappings": [
    {"path": "prompt_tokens", "dest": "input_tokens", "required": True},
    {"path": "completion_tokens", "dest": "output_tokens", "required": True},
]}  # fmt: skip
PRICE_DATA = [{"id": "openai", "name": "OpenAI", "api_pattern": r"https://api\.openai\.com", "extractors": [CHAT_USAGE],
               "models": [{"id": "gpt-4o-mini", "match": {"equals": "gpt-4o-mini"},
                           "prices": {"input_mtok": 1000, "output_mtok": 2000}}]}]  # fmt: skip
"""Price data as genai-prices publishes it, with a price no release ever had: $1,000 / $2,000 per million."""


class QuietFiles(SimpleHTTPRequestHandler):
    """Serves the folder's files without a line on stderr per request (which a command run in this process would
    find in its own standard error)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_update_prices_prices_the_run_with_the_downloaded_data_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text(json.dumps(PRICE_DATA))
    handler = functools.partial(QuietFiles, directory=str(tmp_path))
    prices = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=prices.serve_forever, args=(0.02,), daemon=True).start()
    url = f"http://127.0.0.1:{prices.server_address[1]}/data.json"
    quizzes = list(farel_bench.generate(3, 50, 42, shuffle=True))
    key = answer_key(quizzes)
    runs: dict[str, tuple[RunSummary, list[float | None]]] = {}
    try:
        with FakeOpenAI(lambda r: completion(tool_call({"answer": key(r).correct}), model="gpt-4o-mini")) as server:
            for name, extra in (("installed", ()), ("updated", ("--update-prices", url)), ("later", ())):
                results = tmp_path / name
                command = ["run", "--model", "gpt-4o-mini", "--base-url", server.url, "--api-key", "k", "--limit", "2",
                           "--results-dir", str(results), "--quiet", *extra]  # fmt: skip
                done = run_cli("main.py", *command)
                assert done.returncode == 0, done.stderr
                (summary,) = results.rglob("summary.json")
                lines = (summary.parent / "samples.jsonl").read_text().splitlines()
                costs = [SampleRecord.model_validate_json(line).cost.usd for line in lines]
                runs[name] = (RunSummary.model_validate_json(summary.read_text()), costs)
        missing = run_cli("main.py", "run", "--model", "test", "--results-dir", str(tmp_path / "no"), "--quiet",
                          "--update-prices", url.replace("data.json", "gone.json"))  # fmt: skip
    finally:
        prices.shutdown()
        prices.server_close()
    assert runs["later"][1] == runs["installed"][1]  # the installed data prices what this process prices next
    assert runs["installed"][0].settings.updated_prices is False
    assert runs["installed"][1] == [pytest.approx(0.000021, abs=1e-12)] * 2  # 100 input and 10 output tokens
    assert runs["updated"][0].settings.updated_prices is True
    assert runs["updated"][1] == [pytest.approx(0.12, abs=1e-12)] * 2  # 100 x $1,000/M + 10 x $2,000/M
    assert missing.returncode == 2
    (line,) = missing.stderr.strip().splitlines()
    assert line.startswith(f"main.py: error: --update-prices: cannot read price data from {url[:-9]}gone.json: ")
    assert not (tmp_path / "no").exists()
    for bad, message in [("http://127.0.0.1:abc/x", "not a URL (its port is not a number)"),
                         ("ftp://127.0.0.1/data.json", "give an http(s) URL of genai-prices' data")]:  # fmt: skip
        refused = run_cli("main.py", "run", "--model", "test", "--results-dir", str(tmp_path / "no"), "--quiet",
                          "--update-prices", bad)  # fmt: skip
        assert (refused.returncode, refused.stderr) == (2, f"main.py: error: --update-prices: {message}\n")
