"""Each sample's spans recorded for a scorer that reads them (`Task.spans`, the pydantic_evals suite's span-based
evaluators): pydantic-ai's instrumentation of every request the sample sent, in every mode, an agent run's or a first
request sent without one; samples asked together keep their own; in a traced run the spans are the ones sent, made
once; a task that does not ask for them gets None. Through `main.py run --dataset`, MaxModelRequests counts a
corrective retry's request in every mode and with `--workers 2`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from pydantic import BaseModel
from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text, tool_call
from typed_eval.core.tasks import TextReader


class Word(BaseModel):
    word: str


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A valid word, except the first answer of a prompt holding `retry`: a reply missing its field."""
    first = not any(isinstance(m, ModelResponse) for m in messages)
    body = {"wrd": "x"} if first and "retry" in str(messages[0]) else {"word": "ok"}
    if info.output_tools:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(body))], model_name="scripted")
    return ModelResponse(parts=[TextPart(json.dumps(body))], model_name="scripted")


def kept_by(seen: dict[str, Any]) -> Any:
    def score(case: evaluator.Case, output: Any, spans: Any = None) -> float:
        seen[case.id] = spans
        return 1.0

    return score


def shape(spans: Any) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's among them (None: a root of the sample's tree), in the order they ended."""
    names = {span.context.span_id: span.name for span in spans}
    return [(span.name, names.get(span.parent.span_id) if span.parent else None) for span in spans]


AGENT_RUN = {
    "tool": ["chat scripted"],
    "native": ["chat scripted"],
    "prompted": ["chat scripted"],
    "text": ["chat scripted", "execute_tool _read_reply"],  # the text modes read a reply with an output function
}


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text"])
def test_each_sample_s_spans_are_its_own_requests_in_every_mode(mode: str) -> None:
    seen: dict[str, Any] = {}
    task = evaluator.Task(name="words", output_type=Word, score=kept_by(seen), spans=True)
    cases = [evaluator.Case(id=f"plain{k}", prompt=f"say {k}") for k in range(3)]
    cases.append(evaluator.Case(id="retry", prompt="retry please"))
    result = asyncio.run(evaluator.evaluate(task, cases, FunctionModel(respond, model_name="scripted"), mode=mode))
    assert {r.case_id: r.corrective_retries for r in result.records} == {"plain0": 0, "plain1": 0, "plain2": 0,
                                                                           "retry": 1}  # fmt: skip
    request = [(name, "invoke_agent agent") for name in AGENT_RUN[mode]]
    for case in cases:
        asked = request * (2 if case.id == "retry" else 1)
        assert shape(seen[case.id]) == [*asked, ("invoke_agent agent", None)], case.id
        chats = [span for span in seen[case.id] if span.name == "chat scripted"]
        assert all(case.prompt in str(span.attributes["gen_ai.input.messages"]) for span in chats)  # its own
        assert [span.attributes["gen_ai.operation.name"] for span in chats] == ["chat"] * len(chats)


def test_a_first_request_sent_without_an_agent_run_is_in_the_spans_and_so_is_its_retry() -> None:
    seen: dict[str, Any] = {}
    task = evaluator.Task(
        name="read",
        output_type=str,
        score=kept_by(seen),
        spans=True,
        reader=TextReader(lambda text: text if '"word"' in text else None),
        messages=lambda case, _: [{"role": "user", "content": case.prompt}],
    )
    cases = [evaluator.Case(id="plain", prompt="say it"), evaluator.Case(id="retry", prompt="retry please")]
    result = asyncio.run(evaluator.evaluate(task, cases, FunctionModel(respond, model_name="scripted"), mode="text"))
    assert {r.case_id: (r.usage.requests, r.corrective_retries) for r in result.records} == {
        "plain": (1, 0),
        "retry": (2, 1),
    }
    # the direct request, then the agent run going on from its reply: the request it was handed is not made again
    assert shape(seen["plain"]) == [("chat scripted", None)]
    assert shape(seen["retry"]) == [("chat scripted", None), ("chat scripted", None)]


def test_a_task_that_does_not_ask_for_spans_gives_none_and_records_none() -> None:
    seen: dict[str, Any] = {}
    task = evaluator.Task(name="words", output_type=Word, score=kept_by(seen))
    asyncio.run(evaluator.evaluate(task, [evaluator.Case(id="a", prompt="say")], FunctionModel(respond), mode="tool"))
    assert seen == {"a": None}


def test_in_a_traced_run_the_spans_are_those_sent_each_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_traces import Receiver

    receiver = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    try:
        seen: dict[str, Any] = {}
        task = evaluator.Task(name="words", output_type=Word, score=kept_by(seen), spans=True)
        cases = [evaluator.Case(id="plain", prompt="say"), evaluator.Case(id="retry", prompt="retry please")]
        model = FunctionModel(respond, model_name="scripted")
        asyncio.run(evaluator.evaluate(task, cases, model, mode="tool", trace=True))
    finally:
        receiver.close()
    assert shape(seen["retry"]) == [("chat scripted", "invoke_agent agent")] * 2 + [("invoke_agent agent", None)]
    sent = {span.span_id: span for span in receiver.spans}
    for case, spans in seen.items():
        assert len({span.context.span_id for span in spans}) == len(spans)
        (execute,) = [s for s in receiver.spans if s.name == "execute {task}" and case in str(_case_of(s, sent))]
        for span in spans:  # each is a span the run sent, under its sample's task span
            found = sent[span.context.span_id.to_bytes(8, "big")]
            assert found.name == span.name
            assert span.name != "invoke_agent agent" or found.parent == execute.span_id


def _case_of(span: Any, sent: dict[bytes, Any]) -> Any:
    return sent[span.parent].attributes["typed_eval.case_id"]


DATASET = """\
name: spans
cases:
- name: plain
  inputs: say it
- name: retried
  inputs: retry please
evaluators:
- MaxModelRequests: 1
- MaxToolCalls: 0
- HasMatchingSpan:
    query: {name_contains: chat}
"""

MODULE = """
from pydantic import BaseModel


class Word(BaseModel):
    word: str
"""


def answer(mode: str) -> Any:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        again = any(m["role"] in ("assistant", "tool") for m in request["messages"])
        body = {"word": "ok"} if again or "retry" not in prompt_of(request) else {"wrd": "x"}
        return completion(tool_call(body, name="final_result") if mode == "tool" else text(json.dumps(body)))

    return reply


@pytest.mark.parametrize(
    ("mode", "workers"), [("tool", 1), ("native", 1), ("prompted", 1), ("text", 1), ("tool", 2)]
)  # fmt: skip
def test_a_dataset_s_span_based_evaluators_count_each_request_in_every_mode_and_with_workers(
    tmp_path: Path, mode: str, workers: int
) -> None:
    pytest.importorskip("pydantic_evals")
    (tmp_path / "span_words.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "spans.yaml").write_text(DATASET, encoding="utf-8")
    with FakeOpenAI(answer(mode)) as server:
        done = subprocess.run(
            [PYTHON, "main.py", "run", "--dataset", str(tmp_path / "spans.yaml"), "--output-type", "span_words:Word",
             "--mode", mode, "--workers", str(workers), "--model", "fake-model", "--base-url", server.url,
             "--api-key", "sk-test", "--results-dir", str(tmp_path / "runs"), "--concurrency", "1"],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs" / "fake-model").iterdir()
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    found = {
        r["case_id"]: {k: (v["value"], v["reason"]) for k, v in r["score_details"]["evaluations"]["assertions"].items()}
        for r in records
    }
    budget = "(from ctx.metrics['requests']), budget=1"
    assert found == {
        "plain": {
            "MaxModelRequests": (True, f"1 model request(s) {budget}"),
            "MaxToolCalls": (True, "0 tool call(s), budget=0"),
            "HasMatchingSpan": (True, None),
        },
        "retried": {
            "MaxModelRequests": (False, f"2 model request(s) {budget}"),
            "MaxToolCalls": (True, "0 tool call(s), budget=0"),
            "HasMatchingSpan": (True, None),
        },
    }
    assert {r["case_id"]: r["score"] for r in records} == {"plain": 1.0, "retried": 2 / 3}


def test_two_posers_recording_on_one_traced_provider_keep_each_span_once() -> None:
    """A run's fallback poser (a model refusing a forced tool choice) records on the traced run's provider too."""
    from opentelemetry.sdk.trace import TracerProvider

    from typed_eval.engine.memory_spans import MemorySpans

    provider = TracerProvider(shutdown_on_exit=False)
    first, second = MemorySpans(provider), MemorySpans(provider)
    with first.sample() as spans, provider.get_tracer("t").start_as_current_span("asked"):
        pass
    with second.sample() as later:
        pass
    assert [span.name for span in spans or []] == ["asked"] and later == []


CASE_SPANS = "  evaluators: [{HasMatchingSpan: {query: {name_contains: chat}}}]\n"


@pytest.mark.parametrize(
    ("own", "shared", "asked", "recorded"),
    [
        ("", "- EqualsExpected\n", False, False),
        ("", "- EqualsExpected\n", True, True),
        ("", "- MaxModelRequests: 1\n", False, True),
        (CASE_SPANS, "- EqualsExpected\n", False, True),
    ],
)
def test_spans_are_recorded_only_for_a_span_based_evaluator_or_when_asked(
    tmp_path: Path, own: str, shared: str, asked: bool, recorded: bool
) -> None:
    pytest.importorskip("pydantic_evals")
    from typed_eval.suites.evals.suite import PYDANTIC_EVALS, DatasetParams

    path = tmp_path / "d.yaml"
    path.write_text(f"name: d\ncases:\n- name: a\n  inputs: hi\n  expected_output: hi\n{own}evaluators:\n{shared}")
    task, _ = PYDANTIC_EVALS.build(DatasetParams(path=str(path), spans=asked))
    assert task.spans is recorded
