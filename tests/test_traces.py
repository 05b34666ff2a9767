"""`run --trace`: OpenTelemetry traces sent over OTLP/HTTP to a receiver of the test's own on loopback, which decodes
each POSTed `ExportTraceServiceRequest` with opentelemetry-proto: the spans named as pydantic_evals names its own,
their parents, and their attributes (case id, retries, invalid kinds, score, the model calls' `gen_ai.*`); no
credential in any of them; an endpoint that refuses or hangs costs the run one warning and a bounded wait."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from pydantic_ai import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
import farel_bench
from tests.cli_run import run_cli
from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI, answer_key, completion, text, tool_call
from typed_eval.contracts import SampleRecord
from typed_eval.core.tasks import TextReader
from typed_eval.engine.otlp import FLUSH_WAIT_S, WITHHELD

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
KEY = answer_key(QUIZZES)
API_KEY = "sk-test-traces-0123456789"
OTLP_TOKEN = "otlp-token-9876543210"
URL_PASSWORD = "url-password-5555"


@dataclass(frozen=True)
class Span:
    name: str
    span_id: bytes
    parent: bytes
    trace_id: bytes
    attributes: dict[str, Any]
    resource: dict[str, Any]
    status: str = ""
    """The status's description."""
    events: tuple[tuple[str, dict[str, Any]], ...] = ()


def value_of(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return getattr(value, kind) if kind is not None else None


class Receiver:
    """An OTLP/HTTP receiver on loopback: each POST to /v1/traces decoded; its spans, raw bodies and headers kept."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.bodies: list[bytes] = []
        self.authorizations: list[str | None] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                received.bodies.append(body)
                received.authorizations.append(self.headers.get("Authorization"))
                request = ExportTraceServiceRequest.FromString(body)
                for resource_spans in request.resource_spans:
                    resource = {a.key: value_of(a.value) for a in resource_spans.resource.attributes}
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            attributes = {a.key: value_of(a.value) for a in span.attributes}
                            events = tuple(
                                (e.name, {a.key: value_of(a.value) for a in e.attributes}) for e in span.events
                            )
                            ids = (span.span_id, span.parent_span_id, span.trace_id)
                            received.spans.append(
                                Span(span.name, *ids, attributes, resource, span.status.message, events)
                            )
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def named(self, name: str) -> list[Span]:
        return [span for span in self.spans if span.name == name]

    def children(self, parent: Span, name: str | None = None) -> list[Span]:
        return [s for s in self.spans if s.parent == parent.span_id and (name is None or s.name == name)]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def answering(retried: bool = False, latency_s: float = 0.0) -> Any:
    """Answers each quiz right, except the first request, with `retried`: an out-of-range option."""
    first = threading.Event()

    def reply(request: dict[str, Any]) -> Any:
        time.sleep(latency_s)
        quiz = KEY(request)
        wrong_first = retried and not first.is_set()
        first.set()
        return completion(
            tool_call({"answer": 99 if wrong_first else quiz.correct}), prompt_tokens=120, completion_tokens=15
        )

    return reply


def otel_env(endpoint: str, **extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and not k.endswith("_API_KEY")}
    return kept | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{OTLP_TOKEN}",
        **extra,
    }


def main_run(
    server: FakeOpenAI, results: Path, env: dict[str, str], *extra: str, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """`main.py run` in this process, or with `process` as a process of its own: a run forking `--workers`."""
    base_url = server.url.replace("http://", f"http://tracer:{URL_PASSWORD}@")
    command = ["run", "--model", "fake-model", "--base-url", base_url, "--api-key", API_KEY,
               "--results-dir", str(results), "--quiet", *extra]  # fmt: skip
    if process:
        return subprocess.run([sys.executable, "main.py", *command], cwd=REPO, capture_output=True, text=True,
                              env=env, timeout=300, check=False)  # fmt: skip
    return run_cli("main.py", *command, env=env)


def records(results: Path) -> dict[str, SampleRecord]:
    (samples,) = results.rglob("samples.jsonl")
    read = [SampleRecord.model_validate_json(line) for line in samples.read_text().splitlines()]
    return {record.case_id: record for record in read}


def test_a_traced_run_sends_its_cases_task_executions_and_model_calls_with_their_attributes(
    tmp_path: Path, receiver: Receiver
) -> None:
    with FakeOpenAI(answering(retried=True)) as server:
        done = main_run(server, tmp_path, otel_env(receiver.url), "--limit", "3", "--trace", "--concurrency", "1")
    assert (done.returncode, done.stderr) == (0, "")
    stored = records(tmp_path)
    assert sorted(record.corrective_retries for record in stored.values()) == [0, 0, 1]
    (run,) = receiver.named("evaluate {name}")
    assert run.parent == b""
    assert {k: v for k, v in run.attributes.items() if not k.startswith("logfire.")} == {
        "name": "farel",
        "task_name": "farel",
        "dataset_name": "farel",
        "n_cases": 3,
        "gen_ai.operation.name": "experiment",
        "typed_eval.model": "fake-model",
        "typed_eval.mode": "tool",
        "typed_eval.status": "finished",
        "typed_eval.samples": 3,
        "typed_eval.score": 100.0,
    }
    assert (run.attributes["logfire.msg_template"], run.attributes["logfire.msg"]) == (
        "evaluate {name}",
        "evaluate farel",
    )
    cases = receiver.children(run)
    assert sorted(span.name for span in cases) == ["case: {case_name}"] * 3
    assert sorted(span.attributes["typed_eval.case_id"] for span in cases) == sorted(stored)
    for span in cases:
        record = stored[span.attributes["typed_eval.case_id"]]
        retries = record.corrective_retries
        assert {k: v for k, v in span.attributes.items() if not k.startswith("logfire.")} == {
            "task_name": "farel",
            "case_name": record.case_id,
            "typed_eval.case_id": record.case_id,
            "typed_eval.repeat": 0,
            "typed_eval.status": "correct",
            "typed_eval.score": 1.0,
            "typed_eval.corrective_retries": retries,
            "typed_eval.invalid_kinds": ["out_of_range"] if retries else [],
            "typed_eval.attempts": 1 + retries,
            "typed_eval.group": record.group,
            "typed_eval.cost_usd": 0.0,
            "gen_ai.usage.input_tokens": 120 * (1 + retries),
            "gen_ai.usage.output_tokens": 15 * (1 + retries),
        }
        assert record.corrective_retries == retries
        (execute,) = receiver.children(span)
        assert (execute.name, execute.attributes["task"]) == ("execute {task}", "farel")
        (agent_run,) = receiver.children(execute)  # pydantic-ai's own span of the agent run, then its requests
        assert (agent_run.name, agent_run.attributes["gen_ai.aggregated_usage.input_tokens"]) == (
            "invoke_agent agent",
            120 * (1 + retries),
        )
        calls = receiver.children(agent_run)
        assert [call.name for call in calls] == ["chat fake-model"] * (1 + retries)
        for call in calls:
            assert call.attributes["gen_ai.request.model"] == "fake-model"
            assert call.attributes["gen_ai.response.model"] == "fake-model"
            assert (call.attributes["gen_ai.usage.input_tokens"], call.attributes["gen_ai.usage.output_tokens"]) == (
                120,
                15,
            )
            assert (call.attributes["server.address"], call.attributes["server.port"]) == (
                "127.0.0.1",
                int(server.url.rsplit(":", 1)[1].split("/")[0]),
            )
            assert call.attributes["gen_ai.input.messages"].startswith('[{"role":"user","parts":[{"type":"text"}]}')
    assert len(receiver.spans) == 1 + 3 + 3 + 3 + 4  # nothing else, none twice
    assert {span.trace_id for span in receiver.spans} == {run.trace_id}
    sent = b"".join(receiver.bodies)
    for secret in (API_KEY, OTLP_TOKEN, URL_PASSWORD, "tracer"):
        assert secret.encode() not in sent
    for record in stored.values():  # the prompts only with --trace-content
        assert record.prompt[:40].encode() not in sent
    assert set(receiver.authorizations) == {f"Bearer {OTLP_TOKEN}"}  # the standard headers variable is honoured


def test_with_content_the_prompts_and_replies_are_sent_but_a_key_a_server_echoes_is_not(
    tmp_path: Path, receiver: Receiver
) -> None:
    def echoing(request: dict[str, Any]) -> Any:  # a server that puts the caller's key in its reply
        arguments = {"reasoning": f"your key is {API_KEY}", "answer": KEY(request).correct}
        return completion(tool_call(arguments), prompt_tokens=120, completion_tokens=15)

    with FakeOpenAI(echoing) as server:
        done = main_run(server, tmp_path, otel_env(receiver.url), "--limit", "2", "--trace-content")
    assert (done.returncode, done.stderr) == (0, "")
    stored = records(tmp_path)
    cases = receiver.named("case: {case_name}")
    assert sorted(span.attributes["inputs"] for span in cases) == sorted(r.prompt for r in stored.values())
    for span in cases:
        output = json.loads(span.attributes["output"])
        assert output["reasoning"] == "your key is [REDACTED]"
        assert str(stored[span.attributes["case_name"]].expected) == span.attributes["expected_output"]
    calls = receiver.named("chat fake-model")
    assert len(calls) == 2
    for call in calls:
        assert "your key is [REDACTED]" in call.attributes["gen_ai.output.messages"]
        (asked,) = json.loads(call.attributes["gen_ai.input.messages"])
        ((part, question),) = [(p["type"], p["content"]) for p in asked["parts"]]  # the quiz, as tool mode asks it
        assert part == "text" and len(question) > 100 and stored[call_case(receiver, call)].prompt.startswith(question)
    sent = b"".join(receiver.bodies)
    assert API_KEY.encode() not in sent and OTLP_TOKEN.encode() not in sent and URL_PASSWORD.encode() not in sent


def call_case(receiver: Receiver, span: Span) -> str:
    """The case id of the case span a span is under."""
    by_id = {s.span_id: s for s in receiver.spans}
    while span.name != "case: {case_name}":
        span = by_id[span.parent]
    return str(span.attributes["typed_eval.case_id"])


def test_the_spans_of_worker_processes_go_under_the_run_span_of_their_owner(tmp_path: Path, receiver: Receiver) -> None:
    with FakeOpenAI(answering(latency_s=0.05)) as server:
        done = main_run(server, tmp_path, otel_env(receiver.url), "--limit", "45", "--trace", "--concurrency", "1",
                        "--workers", "2", process=True)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    (run,) = receiver.named("evaluate {name}")
    cases = receiver.named("case: {case_name}")
    assert sorted(span.attributes["typed_eval.case_id"] for span in cases) == sorted(records(tmp_path))
    assert {span.parent for span in cases} == {run.span_id}
    assert {span.trace_id for span in receiver.spans} == {run.trace_id}
    pids = {span.resource["process.pid"] for span in cases}
    assert len(pids) == 2 and run.resource["process.pid"] in pids  # the owner's and its worker's, each exported
    for span in cases:
        (execute,) = receiver.children(span)
        (agent_run,) = receiver.children(execute)
        assert [call.name for call in receiver.children(agent_run)] == ["chat fake-model"]
    assert len(receiver.spans) == 1 + 45 * 4


def test_a_case_asked_without_an_agent_run_has_its_model_call_traced_too(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in otel_env(receiver.url).items():
        if name.startswith("OTEL_"):
            monkeypatch.setenv(name, value)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("answer 42")], model_name="scripted")

    task = evaluator.Task(
        name="read",
        output_type=str,
        score=lambda case, output: 1.0 if output == "answer 42" else 0.0,
        reader=TextReader(lambda text: text.strip() if text.startswith("answer") else None),
        messages=lambda case, _: [{"role": "user", "content": case.prompt}],
    )
    cases = [evaluator.Case(id=f"c{k}", prompt=f"question {k}", expected="answer 42") for k in range(2)]
    model = FunctionModel(respond, model_name="scripted")
    outcome = asyncio.run(
        evaluator.run(task, cases, model, results_dir=tmp_path, mode="text", repeats=2, trace=True, trace_content=True)
    )
    assert outcome.summary.status == "finished"
    (run,) = receiver.named("evaluate {name}")
    assert (run.attributes["n_cases"], run.attributes["logfire.experiment.repeat"]) == (2, 2)
    cases_traced = receiver.children(run)
    assert sorted(span.attributes["case_name"] for span in cases_traced) == [  # as pydantic_evals names repeats
        "c0 [1/2]",
        "c0 [2/2]",
        "c1 [1/2]",
        "c1 [2/2]",
    ]
    stored = {(r.case_id, r.repeat): r for r in outcome_records(outcome.run_dir)}
    for span in cases_traced:
        record = stored[span.attributes["typed_eval.case_id"], span.attributes["typed_eval.repeat"]]
        assert (span.attributes["inputs"], span.attributes["output"]) == (record.prompt, '"answer 42"')
        (execute,) = receiver.children(span)
        (call,) = receiver.children(execute)  # no agent run: the request's span is the task's own child
        assert call.name == "chat scripted"
        assert call.attributes["gen_ai.request.model"] == "scripted"
        assert call.attributes["gen_ai.usage.input_tokens"] == record.usage.input_tokens
        assert call.attributes["gen_ai.usage.output_tokens"] == record.usage.output_tokens
        assert record.prompt in str(call.attributes["gen_ai.input.messages"])  # asked for: the content is there
    receiver.spans.clear()
    result = asyncio.run(evaluator.evaluate(task, cases, model, mode="text", trace=True))  # evaluate() alike
    (run,) = receiver.named("evaluate {name}")
    assert (run.attributes["typed_eval.status"], run.attributes["typed_eval.score"]) == ("finished", 100.0)
    assert sorted(s.attributes["typed_eval.case_id"] for s in receiver.children(run)) == ["c0", "c1"]
    assert result.scores.score == 100.0
    assert len(receiver.spans) == 1 + 2 * 3


def outcome_records(run_dir: Path) -> list[SampleRecord]:
    return evaluator.read_records(run_dir)


def refusing_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: a connection to it is refused


@pytest.fixture
def hanging() -> Iterator[str]:
    """An endpoint that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    listener.close()


@pytest.mark.parametrize(("down", "workers"), [("refusing", 1), ("hanging", 1), ("refusing", 2)])
def test_an_endpoint_that_refuses_or_hangs_costs_one_warning_and_a_bounded_wait(
    tmp_path: Path, down: str, workers: int, request: pytest.FixtureRequest
) -> None:
    endpoint = f"http://127.0.0.1:{refusing_port()}" if down == "refusing" else request.getfixturevalue("hanging")
    with_password = endpoint.replace("http://", f"http://otlp:{URL_PASSWORD}@")  # never said in the warning
    env = otel_env(with_password, OTEL_EXPORTER_OTLP_TIMEOUT="60")  # the exporter would wait a minute a batch
    cases = "45" if workers > 1 else "20"
    run = ("--limit", cases, "--concurrency", "1", "--workers", str(workers))
    with FakeOpenAI(answering(latency_s=0.02)) as server:
        started = time.monotonic()
        untraced = main_run(server, tmp_path / "untraced", env, *run, process=workers > 1)
        untraced_s, started = time.monotonic() - started, time.monotonic()
        done = main_run(server, tmp_path / "traced", env, *run, "--trace", process=workers > 1)
        traced_s = time.monotonic() - started
    assert (untraced.returncode, done.returncode) == (0, 0)
    assert done.stderr.splitlines() == [  # one line for the run, however many processes posed it
        f"typed-eval: traces: the OTLP endpoint {endpoint} did not take the spans within {FLUSH_WAIT_S:g} s; spans "
        "are dropped"
    ]
    assert len(records(tmp_path / "traced")) == int(cases)
    assert traced_s < untraced_s + workers * FLUSH_WAIT_S + 10  # a bounded wait at the end, never the exporter's minute


def test_a_run_that_does_not_trace_imports_no_opentelemetry_sdk(tmp_path: Path) -> None:
    script = (
        "import asyncio, sys, evaluator\n"
        "task = evaluator.Task(name='t', output_type=int, score=lambda case, output: 1.0)\n"
        "cases = [evaluator.Case(id='a', prompt='?', expected=1)]\n"
        "asyncio.run(evaluator.evaluate(task, cases, 'test'))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_the_extra_or_with_another_protocol_a_traced_run_stops_before_any_request(tmp_path: Path) -> None:
    script = (
        "import asyncio, sys, evaluator\n"
        "sys.modules['opentelemetry.sdk'] = None\n"
        "task = evaluator.Task(name='t', output_type=int, score=lambda case, output: 1.0)\n"
        "cases = [evaluator.Case(id='a', prompt='?', expected=1)]\n"
        "try:\n"
        "    asyncio.run(evaluator.evaluate(task, cases, 'test', trace=True))\n"
        "except evaluator.InputError as exc:\n"
        "    print(exc.parameter, exc.message.split(':')[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "trace traces need the otel extra (pip install 'typed-eval[otel]')"
    env = otel_env("http://127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    with FakeOpenAI(answering()) as server:
        done = main_run(server, tmp_path, env, "--limit", "2", "--trace")
    assert server.requests == []
    assert done.returncode == 2
    assert done.stderr.strip().endswith("OTEL_EXPORTER_OTLP_PROTOCOL: is 'grpc': traces are sent as http/protobuf")


@pytest.mark.parametrize(
    ("variables", "service"),
    [
        ({}, "typed-eval"),
        ({"OTEL_SERVICE_NAME": "my-evals"}, "my-evals"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "service.name=nightly,team=ml"}, "nightly"),
    ],
)
def test_the_service_is_the_one_the_standard_variables_name_else_typed_eval(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], service: str
) -> None:
    from typed_eval.engine.otlp import run_resource

    for name in ("OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    attributes = run_resource().attributes
    assert (attributes["service.name"], attributes["process.pid"]) == (service, os.getpid())


def test_without_content_an_error_that_quotes_the_request_sends_no_prompt_system_prompt_or_variable(
    tmp_path: Path, receiver: Receiver
) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "prompts: ['Describe {{place}} in one word.']\n"
        "tests:\n"
        "  - vars: {place: the ocean}\n"
        "    assert: [{type: contains, value: sea}]\n"
        "  - vars: {place: zanzibar-variable-text}\n"
        "    assert: [{type: contains, value: sea}]\n"
    )

    def quoting(request: dict[str, Any]) -> Any:  # a server whose error quotes what it was sent
        if "the ocean" in json.dumps(request):
            return completion(text("sea"))
        return 400, {"error": {"message": f"cannot serve {json.dumps(request)}", "type": "invalid_request_error"}}

    system = "system-prompt-text-of-the-run"
    with FakeOpenAI(quoting) as server:
        done = main_run(server, tmp_path / "runs", otel_env(receiver.url), "--suite", str(cases), "--mode", "text",
                        "--system-prompt", system, "--trace", "--concurrency", "1")  # fmt: skip
    stored = records(tmp_path / "runs")
    assert (done.returncode, sorted(record.status for record in stored.values())) == (0, ["correct", "error"])
    (failed,) = [record for record in stored.values() if record.status == "error"]
    assert "zanzibar-variable-text" in (failed.error or "")  # the record keeps the error as the server said it
    statuses = {span.attributes["typed_eval.status"]: span.status for span in receiver.named("case: {case_name}")}
    assert statuses == {"correct": "", "error": WITHHELD}  # the error said, its text withheld
    (call,) = [span for span in receiver.named("chat fake-model") if span.events]
    kept = {"exception.type": "pydantic_ai.exceptions.ModelRequestRejectedError", "exception.escaped": "False"}
    assert (call.status, call.events) == ("", (("exception", kept),))  # the type only: its message quotes the request
    sent = b"".join(receiver.bodies)
    for said in ("zanzibar-variable-text", system, "Describe", "in one word"):
        assert said.encode() not in sent
