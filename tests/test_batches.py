"""`--batch`: a run sent through a provider's batch API, against a loopback OpenAI Files + Batches server and
pydantic-ai's in-memory batches: uploads, polls, output and error files, an expired batch, partial failures,
follow-up batches for corrective retries, batch prices, and a resume after kill -9 that pays nothing twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelHTTPError, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import evaluator
import farel_bench
from evaluator import Case, Task
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_batches import FakeBatches, function_call, is_retry, prompt_of
from typed_eval.contracts import Cost, RunSummary, SampleRecord
from typed_eval.core.attempts import sample_cost, sample_usage
from typed_eval.engine.evaluation import evaluate_samples
from typed_eval.providers.batches import BatchOptions, PendingRequests, describe_states

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
BY_QUESTION = {q.prompt.split("Select the correct answer:")[0]: q for q in QUIZZES}
SECRET = "sk-batch-secret-0123456789abcdef"
HALF_PRICE = 0.0000105  # gpt-4o-mini, 100 input and 10 output tokens: genai-prices' batch price, half of $0.000021
FAST = ("--batch-poll", "0.05")


def quiz_of(body: dict[str, Any]) -> Any:
    return BY_QUESTION[prompt_of(body).split("Select the correct answer:")[0]]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("main.py", *args, env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"})


def batch_run(fake: FakeBatches, results: Path, *extra: str) -> list[str]:
    return ["run", "--model", "gpt-4o-mini", "--base-url", fake.url, "--api-key", SECRET, "--limit", "9",
            "--results-dir", str(results), "--quiet", "--batch", *FAST, *extra]  # fmt: skip


def provider_batch_run(model: str, provider_env: dict[str, str], results: Path) -> subprocess.CompletedProcess[str]:
    """`main.py run --batch` of a provider's model on 9 quizzes, its SDK pointed at a fake by `provider_env` (no
    other provider key or URL taken from this environment)."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "GOOGLE_", "GEMINI_"))}
    return run_cli("main.py", "run", "--model", model, "--limit", "9", "--results-dir", str(results), "--quiet",
                   "--batch", *FAST, env=kept | provider_env)  # fmt: skip


def stored(results: Path) -> tuple[RunSummary, dict[str, SampleRecord]]:
    (summary,) = results.rglob("summary.json")
    lines = (summary.parent / "samples.jsonl").read_text().splitlines()
    records = {r.case_id: r for r in map(SampleRecord.model_validate_json, lines)}
    return RunSummary.model_validate_json(summary.read_text()), records


def test_a_batch_run_counts_every_request_fault_and_follow_up_batch(tmp_path: Path) -> None:
    """Of 9 quizzes: one answers out of range first (a corrective retry), one is refused (400), one the
    batch never ran (it expired), one met a server error (500): the last three go out again, with the retry,
    in one follow-up batch; the refusal is that sample's error."""
    invalid, refused, expired, failed = "child", "parent", "grandchild", "sibling"  # one quiz of each class
    seen: dict[str, int] = {}

    def answer(body: dict[str, Any]) -> Any:
        quiz = quiz_of(body)
        seen[quiz.class_name] = seen.get(quiz.class_name, 0) + 1
        if quiz.class_name == invalid and not is_retry(body):
            return function_call({"answer": 99})
        if quiz.class_name == refused:
            return 400, {"error": {"message": "Invalid schema for function", "type": "invalid_request_error"}}
        if quiz.class_name in (expired, failed) and seen[quiz.class_name] == 1:
            return (
                None
                if quiz.class_name == expired
                else (500, {"error": {"message": "overloaded", "type": "server_error"}})
            )
        return function_call({"answer": quiz.correct})

    with FakeBatches(answer) as fake:
        done = cli(*batch_run(fake, tmp_path))
        sizes, uploads = fake.batch_sizes(), len(fake.uploads)
    assert done.returncode == 0, done.stderr
    assert sizes == [9, 3]
    assert uploads == 2
    summary, records = stored(tmp_path)
    assert (summary.status, summary.settings.batch, summary.scores.samples) == ("finished", True, 9)
    by_prompt = {r.group: r for r in records.values()}
    retried = by_prompt[invalid]
    assert (retried.status, retried.corrective_retries, [a.valid for a in retried.attempts]) == (
        "correct", 1, [False, True])  # fmt: skip
    assert retried.attempts[0].invalid_kind == "out_of_range"
    error = by_prompt[refused]
    assert error.status == "error"
    assert error.error is not None and "Invalid schema for function" in error.error
    assert error.usage.requests == 1
    assert [(by_prompt[q].status, by_prompt[q].usage.requests) for q in (expired, failed)] == [("correct", 1)] * 2
    answered = [r for r in records.values() if r.status != "error"]
    assert sum(r.usage.requests for r in answered) == 9  # 7 first answers, 1 retry, 1 answer after a 500
    for record in answered:
        assert record.cost.usd == pytest.approx(HALF_PRICE * record.usage.requests, abs=1e-15)
        assert (record.cost.source, record.cost.batch_price) == ("genai-prices", "genai-prices batch price")
    run_dir = next(tmp_path.rglob("summary.json")).parent
    assert SECRET not in "".join(p.read_text() for p in run_dir.iterdir() if p.is_file())
    rows = run_cli("format_result.py", str(tmp_path), "--format", "json")
    assert rows.returncode == 0, rows.stderr
    (row,) = json.loads(rows.stdout)
    assert (row["batch"], row["requests"], row["errors"]) == (True, 10, 1)  # the refused request was sent too


def test_a_run_killed_while_its_batch_runs_resumes_that_batch_and_pays_once(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> Any:
        return function_call({"answer": quiz_of(body).correct})

    with FakeBatches(answer) as fake:
        fake.release.clear()  # the batch stays in progress until the first process is gone
        command = [PYTHON, "main.py", *batch_run(fake, tmp_path)]
        with subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as first:
            deadline = time.monotonic() + 120
            while fake.polls < 2 and time.monotonic() < deadline and first.poll() is None:
                time.sleep(0.05)
            assert fake.polls >= 2, first.communicate()
            pending = next(tmp_path.rglob("batches.jsonl")).read_text().splitlines()
            first.send_signal(signal.SIGKILL)
        assert first.returncode == -signal.SIGKILL
        assert len(pending) == 9
        assert {json.loads(line)["batch_id"] for line in pending} == {"batch_1"}
        fake.release.set()
        resumed = cli(*batch_run(fake, tmp_path, "--resume"))
        sizes, uploads = fake.batch_sizes(), len(fake.uploads)
    assert resumed.returncode == 0, resumed.stderr
    assert (sizes, uploads) == ([9], 1)  # the resume collected batch_1: no request was sent twice
    summary, records = stored(tmp_path)
    assert (summary.status, summary.scores.score) == ("finished", 100.0)
    assert len({r.group for r in records.values()}) == 9
    assert {(r.status, r.usage.requests) for r in records.values()} == {("correct", 1)}


def test_batch_refuses_what_it_cannot_honour_in_one_line(tmp_path: Path) -> None:
    with FakeBatches(lambda body: None) as fake:
        for extra, message in [
            (("--cache",), "--batch with --cache"),
            (("--max-cost", "1"), "--max-cost and --max-requests cannot stop it in time"),
        ]:
            done = cli(*batch_run(fake, tmp_path, *extra))
            assert done.returncode == 2
            assert "Traceback" not in done.stderr
            (line,) = done.stderr.strip().splitlines()
            assert message in line
        assert fake.batch_sizes() == []


# --- the library, with pydantic-ai's in-memory batches ------------------------------------------------------


class Count(BaseModel):
    n: int


def counting(replies: dict[str, list[str]]) -> tuple[FunctionModel, list[int]]:
    """A model answering each prompt with its next scripted tool-call arguments; records each batch's size."""
    sizes: list[int] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[0].parts[0].content)  # type: ignore[union-attr]
        args = replies[prompt].pop(0)
        if not info.output_tools:
            return ModelResponse(parts=[TextPart(args)])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    class Counting(FunctionModel):
        async def batch_create(self, requests: Any) -> Any:
            sizes.append(len(requests))
            return await super().batch_create(requests)

    return Counting(reply), sizes


TASK: Task[Count] = Task(name="count", output_type=Count, score=lambda case, out: float(out.n == case.expected))
QUICK = BatchOptions(poll_interval_s=0.01, max_wait_s=0.05)
BATCHED = evaluator.RunConfig(batch=True, batch_options=QUICK)


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text"])
def test_a_batched_run_records_what_a_live_run_records(mode: str) -> None:
    script = {"a": ['{"n": "x"}', '{"n": 3}'], "b": ['{"n": 3}'], "c": ['{"n": 4}']}
    cases = [Case(id=k, prompt=k, expected=3) for k in script]

    def run(batch: BatchOptions | None) -> tuple[list[Any], list[int]]:
        model, sizes = counting({k: list(v) for k, v in script.items()})
        result = asyncio.run(
            evaluator.evaluate(TASK, cases, model, mode=mode, batch=batch is not None, batch_options=batch)
        )
        return [(r.case_id, r.status, r.score, [a.valid for a in r.attempts], r.usage.requests, r.output)
                for r in result.records], sizes  # fmt: skip

    live, no_batches = run(None)
    batched, sizes = run(QUICK)
    assert batched == live
    assert live == [("a", "correct", 1.0, [False, True], 2, {"n": 3}), ("b", "correct", 1.0, [True], 1, {"n": 3}),
                    ("c", "incorrect", 0.0, [True], 1, {"n": 4})]  # fmt: skip
    assert (no_batches, sizes) == ([], [3, 1])  # the corrective retry is a follow-up batch of its own


def test_pending_requests_survive_a_torn_line_and_count_batch_states(tmp_path: Path) -> None:
    model, _ = counting({"a": ['{"n": 3}'], "b": ['{"n": 3}']})
    path = tmp_path / "batches.jsonl"
    store = PendingRequests(path)
    samples = [(Case(id="a", prompt="a", expected=3), 0)]
    result = asyncio.run(evaluate_samples(TASK, samples, model, BATCHED, batch_store=store))
    assert result.records[0].status == "correct"
    waited, done = path.read_text().splitlines()
    assert (json.loads(waited)["case_id"], json.loads(done)) == ("a", {"case_id": "a", "repeat": 0, "done": True})
    assert store.states() == {"ended": 1}
    path.write_text(waited + "\n" + waited[:100])  # killed while writing a second line
    reread = PendingRequests(path)
    assert reread.history(("a", 0)) is not None
    assert reread.history(("b", 0)) is None
    reread.wait(("a", 0), [*(reread.history(("a", 0)) or [])])
    reread.done(("a", 0))  # its line starts on a line of its own, not glued to the torn one
    assert path.read_text().splitlines()[2] == done
    assert PendingRequests(path).history(("a", 0)) is None
    assert describe_states({"in_progress": 2, "ended": 1, "waiting": 40}) == (
        "batches 1 ended, 2 in_progress (40 samples waiting)")  # fmt: skip
    assert describe_states({}) == ""


def test_a_sample_whose_batch_failed_it_is_sent_again_by_a_retry_of_errors(tmp_path: Path) -> None:
    calls: list[str] = []

    def refuse_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append("asked")
        if len(calls) == 1:
            raise ModelHTTPError(400, "m", {"error": "refused"})
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, '{"n": 3}')])

    path = tmp_path / "batches.jsonl"
    samples = [(Case(id="a", prompt="a", expected=3), 0)]
    for expected in ("error", "correct"):  # the first run, then a retry of its error with the run's file
        model = FunctionModel(refuse_then_answer)
        result = asyncio.run(evaluate_samples(TASK, samples, model, BATCHED, batch_store=PendingRequests(path)))
        assert result.records[0].status == expected
    assert calls == ["asked", "asked"]


def test_a_task_asking_in_a_loop_and_a_model_without_batches_are_refused() -> None:
    async def session(case: Case, conversation: Any) -> Any:
        return await conversation.ask(case.prompt)

    looping: Task[Count] = Task(name="loop", output_type=Count, score=lambda case, out: 1.0, session=session)
    model, _ = counting({"a": ['{"n": 3}']})
    with pytest.raises(evaluator.EvaluatorError, match="asks each case in a loop of its own"):
        asyncio.run(evaluator.evaluate(looping, [Case(id="a", prompt="a")], model, BATCHED))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    chat = OpenAIChatModel("m", provider=OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="x"))
    with pytest.raises(evaluator.EvaluatorError, match="has no batch API"):
        asyncio.run(evaluator.evaluate(TASK, [Case(id="a", prompt="a")], chat, BATCHED))


# --- batch prices ---------------------------------------------------------------------------------------------


def batch_answer(model_name: str, provider: str) -> list[ModelMessage]:
    response = ModelResponse(parts=[], model_name=model_name, provider_name=provider,
                             usage=RequestUsage(input_tokens=1_000_000, output_tokens=1_000_000),
                             provider_details={"processing": "batch"})  # fmt: skip
    response.usage.cost = response.cost().total_price  # what pydantic-ai fills in: the price data's batch price
    return [response]


DOCUMENTED = "documented batch discount x0.5: "


@pytest.mark.parametrize(
    ("model_name", "provider", "usd", "batch_price"),
    [
        ("claude-sonnet-4-5", "anthropic", 14.25, "genai-prices batch price"),  # live: 28.5 for 1M in + 1M out
        ("o1-mini", "openai", 2.75, DOCUMENTED + "https://platform.openai.com/docs/guides/batch"),  # live: 5.5
        ("gemini-2.0-flash", "google-gla", 0.25, DOCUMENTED + "https://ai.google.dev/gemini-api/docs/batch-mode"),
    ],
)
def test_a_batch_answer_costs_the_batch_price_with_its_source(
    model_name: str, provider: str, usd: float, batch_price: str
) -> None:
    messages = batch_answer(model_name, provider)
    cost = sample_cost(messages, sample_usage(messages), local=False, prices=None)
    assert cost == Cost(usd=usd, source="genai-prices", batch_price=batch_price)


def test_corrective_retries_are_the_sample_s_across_follow_up_batches() -> None:
    """Each follow-up batch is a new agent run from the conversation so far: the retries it may still use are
    what the sample has left, so a model that never answers validly stops where a live run stops."""
    case = Case(id="a", prompt="a", expected=3)

    def run(batch: BatchOptions | None) -> tuple[Any, list[int]]:
        model, sizes = counting({"a": ['{"n": "x"}'] * 10})
        config = evaluator.RunConfig(retries=2, batch=batch is not None, batch_options=batch)
        (record,) = asyncio.run(evaluator.evaluate(TASK, [case], model, config)).records
        return (record.status, [a.valid for a in record.attempts], record.corrective_retries), sizes

    assert run(None) == (("missing", [False] * 3, 2), [])
    assert run(QUICK) == (("missing", [False] * 3, 2), [1, 1, 1])
