"""Checked against pydantic_evals itself: one dataset file (built-in evaluators, an LLM judge, a custom evaluator giving
an assertion, a score and a label with reasons), one loopback OpenAI-compatible server answering both sides alike.
`main.py run --dataset` on one side, `Dataset.evaluate` of a pydantic-ai agent of the same output type on the other:
each case's assertions, scores and labels are equal, result for result (value, reason, source); and the run exported
with `format_result.py --format pydantic-evals` loads with pydantic_evals' own `EvaluationReportAdapter` and holds the
same results. The dataset's span-based evaluators (MaxModelRequests, MaxToolCalls, HasMatchingSpan, ToolCorrectness,
TrajectoryMatch) see the spans of each side's asking: ours recorded by the run, theirs by pydantic_evals from an
instrumented agent under an OpenTelemetry SDK tracer provider, as its users set one; a case that needed a corrective
retry made two model requests on both sides."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_evals")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_core import to_json
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import (
    Equals,
    EqualsExpected,
    EvaluationResult,
    HasMatchingSpan,
    IsInstance,
    LLMJudge,
    MaxDuration,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
    llm_as_a_judge,
)
from pydantic_evals.reporting import EvaluationReportAdapter

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, prompt_of, tool_call

EVALUATORS_MODULE = '''
from dataclasses import dataclass

from pydantic import BaseModel
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext


class Answer(BaseModel):
    city: str
    population: int


@dataclass
class CityCheck(Evaluator):
    """An assertion, a score and a label, each with a reason."""

    big: int = 2

    def evaluate(self, ctx: EvaluatorContext) -> dict:
        right = ctx.expected_output is not None and ctx.output.city == ctx.expected_output.city
        return {
            "right_city": EvaluationReason(right, reason=f"said {ctx.output.city}"),
            "size": EvaluationReason(ctx.output.population / 10, reason="a tenth of it"),
            "bigness": "big" if ctx.output.population >= self.big else "small",
        }
'''

REPLIES = {
    "What is the capital of France?": {"city": "Paris", "population": 2},
    json.dumps({"country": "Italy", "kind": "capital"}, indent=2): {"city": "Milan", "population": 1},
    "Largest city of Germany?": {"city": "Berlin", "population": 4},
    "Capital of Spain?": {"city": "Madrid", "population": 3},
}
"""The answer to each case's prompt (its inputs as the prompt renders them)."""
RETRIED = "Capital of Spain?"
"""The case whose first answer is invalid (a population that is not a number): answered again after the retry."""


def reply(request: dict[str, Any]) -> dict[str, Any]:
    system = " ".join(str(m.get("content")) for m in request["messages"] if m["role"] == "system")
    asked = prompt_of(request)
    if "You are grading output" in system:  # pydantic_evals' judge, on both sides
        passed = "Paris" in asked or "Berlin" in asked
        verdict = {"reason": f"judged {'well' if passed else 'badly'}", "pass": passed, "score": 0.9 if passed else 0.2}
        return completion(tool_call(verdict, name="final_result"))
    if asked == RETRIED and not any(m["role"] == "tool" for m in request["messages"]):
        return completion(tool_call({"city": "Madrid", "population": "many"}, name="final_result"))
    return completion(tool_call(REPLIES[asked], name="final_result"))


def write_dataset(folder: Path, suffix: str) -> Path:
    sys.path.insert(0, str(folder))
    try:
        from cross_evals import Answer, CityCheck  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(folder))
    dataset = Dataset[Any, Any, Any](
        name="capitals",
        cases=[
            Case(
                name="france",
                inputs="What is the capital of France?",
                expected_output=Answer(city="Paris", population=2),
                metadata={"continent": "Europe"},
                evaluators=[Equals(value="Paris")],
            ),
            Case(
                name="italy",
                inputs={"country": "Italy", "kind": "capital"},
                expected_output=Answer(city="Rome", population=3),
            ),
            Case(name="germany", inputs="Largest city of Germany?", metadata={"continent": "Europe"}),
            Case(name="spain", inputs=RETRIED, expected_output=Answer(city="Madrid", population=3)),
        ],
        evaluators=[
            EqualsExpected(),
            IsInstance(type_name="Answer"),
            MaxDuration(seconds=60),
            LLMJudge(rubric="The answer names the right city", include_input=True),
            CityCheck(big=2),
            MaxModelRequests(max_requests=1),
            MaxToolCalls(max_calls=0),
            HasMatchingSpan(
                query={"name_contains": "chat", "has_attributes": {"gen_ai.operation.name": "chat"}},
                evaluation_name="asked",
            ),
            HasMatchingSpan(query={"name_equals": "invoke_agent agent"}, evaluation_name="agent_ran"),
            ToolCorrectness(expected_tools=[]),
            ToolCorrectness(expected_tools=["final_result"], evaluation_name="output_tool_called"),
            TrajectoryMatch(expected_trajectory=[]),
        ],
    )
    path = folder / f"capitals.{suffix}"
    dataset.to_file(path, custom_evaluator_types=[CityCheck])
    return path


def theirs(path: Path, folder: Path, server_url: str) -> dict[str, dict[str, Any]]:
    """pydantic_evals' own results: the dataset file loaded and evaluated on an agent asking the same server."""
    sys.path.insert(0, str(folder))
    try:
        from cross_evals import Answer, CityCheck

        model = OpenAIChatModel("fake-model", provider=OpenAIProvider(base_url=server_url, api_key="sk-test"))
        agent = Agent(model, output_type=Answer)
        agent.instrument = True  # pydantic-ai's instrumentation on the process-wide provider (`sdk_tracer_provider`)

        async def task(inputs: Any) -> Answer:
            prompt = inputs if isinstance(inputs, str) else to_json(inputs, indent=2).decode()  # docs/pydantic-evals.md
            return (await agent.run(prompt)).output

        dataset = Dataset[Any, Answer, Any].from_file(path, custom_evaluator_types=[CityCheck])
        default = llm_as_a_judge._default_model
        llm_as_a_judge.set_default_judge_model(model)
        try:
            report = asyncio.run(dataset.evaluate(task, progress=False))
        finally:
            llm_as_a_judge._default_model = default
    finally:
        sys.path.remove(str(folder))
    assert not report.failures and all(not case.evaluator_failures for case in report.cases)
    return {case.name: _results(case.assertions, case.scores, case.labels) for case in report.cases}


RESULTS = TypeAdapter(dict[str, EvaluationResult])


def _results(*kinds: dict[str, Any]) -> dict[str, Any]:
    names = ("assertions", "scores", "labels")
    return {name: RESULTS.dump_python(kind, mode="json") for name, kind in zip(names, kinds, strict=True)}


@pytest.fixture(scope="module")
def sdk_tracer_provider() -> None:
    """The process-wide tracer provider pydantic_evals records a case's spans with (it records none without one):
    an OpenTelemetry SDK provider, as a user without Logfire sets it (set once per process: OpenTelemetry refuses
    to replace it)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_each_case_s_results_equal_pydantic_evals_own(tmp_path: Path, suffix: str, sdk_tracer_provider: None) -> None:
    (tmp_path / "cross_evals.py").write_text(EVALUATORS_MODULE, encoding="utf-8")
    path = write_dataset(tmp_path, suffix)
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--dataset", str(path), "--output-type", "cross_evals:Answer",
            "--evaluators", "cross_evals", "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test",
            "--results-dir", str(runs), "--concurrency", "1", env=env, text=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()
        expected = theirs(path, tmp_path, server.url)
    (run_dir,) = (runs / "fake-model").iterdir()
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    ours = {r["case_id"]: {k: r["score_details"]["evaluations"][k] for k in expected["france"]} for r in records}
    assert ours == expected
    assert expected["italy"]["assertions"]["EqualsExpected"]["value"] is False
    assert expected["france"]["assertions"]["LLMJudge"] == {
        "name": "LLMJudge", "value": True, "reason": "judged well", "evaluator_version": None,
        "source": {"name": "LLMJudge", "arguments": {"rubric": "The answer names the right city",
                                                      "include_input": True}},
    }  # fmt: skip
    assert expected["germany"]["labels"]["bigness"]["value"] == "big"
    # the headline: the mean over cases of each case's share of assertions passed
    # the judge's request counts with its case: one request for the answer (two for spain), one for the verdict
    # the span-based evaluators, alike on both sides: the retried case made two model requests; the output tool's
    # call is the answer, not a tool call (pydantic-ai makes no `execute_tool` span for it)
    spans = {
        case: {name: (result["value"], result["reason"]) for name, result in found["assertions"].items()
               if name in ("MaxModelRequests", "MaxToolCalls", "asked", "agent_ran", "ToolCorrectness",
                           "output_tool_called")}
        for case, found in expected.items()
    }  # fmt: skip
    missing, metric = (False, "missing tools: 'final_result' (x1)"), "ctx.metrics['requests']"
    for case, requests in {"france": 1, "italy": 1, "germany": 1, "spain": 2}.items():
        assert spans[case] == {
            "MaxModelRequests": (requests == 1, f"{requests} model request(s) (from {metric}), budget=1"),
            "MaxToolCalls": (True, "0 tool call(s), budget=0"),
            "asked": (True, None), "agent_ran": (True, None), "ToolCorrectness": (True, None),
            "output_tool_called": missing,
        }, case  # fmt: skip
        assert expected[case]["scores"]["TrajectoryMatch"]["value"] == 1.0
    assert {r["case_id"]: r["corrective_retries"] for r in records} == {
        "france": 0,
        "italy": 0,
        "germany": 0,
        "spain": 1,
    }
    assert {(r["usage"]["requests"], r["usage"]["input_tokens"], r["usage"]["output_tokens"]) for r in records} == {
        (2, 200, 20), (3, 300, 30)
    }  # fmt: skip
    shares = {r["case_id"]: r["score"] for r in records}
    assert shares == {"france": 10 / 12, "italy": 7 / 11, "germany": 8 / 10, "spain": 8 / 11}  # germany: no expected
    assert "capitals: assertions passed: 74.92  (fake-model, tool mode)" in done.stdout.decode()
    assert "headline: the mean over the cases of the share of each case's assertions that passed, in percent" in (
        done.stdout.decode()
    )
    exported = run_cli("format_result.py", "--format", "pydantic-evals", str(run_dir), text=False)
    exported.check_returncode()
    report = EvaluationReportAdapter.validate_json(exported.stdout)
    assert {case.name: _results(case.assertions, case.scores, case.labels) for case in report.cases} == expected
    assert report.dataset_name == "capitals" and report.failures == []
    assert {case.name: case.inputs for case in report.cases}["italy"] == {"country": "Italy", "kind": "capital"}
    assert report.averages() is not None
