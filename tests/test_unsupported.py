"""A provider refusing the schema (an HTTP 400 about the response format or a tool's parameters): the record's status
is `unsupported`, neither an invalid output nor an error; it is sent once, left out of the score and counted in the
scores, the report and the leaderboard, never posed again by `--retry-errors`, and a run whose first case is refused
is no DNF. Any other 400 stays an `error`. Against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelHTTPError

import farel_bench
from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, answer_key, completion, tool_call
from typed_eval.contracts import Cost, SampleRecord, SampleStatus, TokenUsage
from typed_eval.core.counted_score import counted_score
from typed_eval.core.scoring import score_records
from typed_eval.providers.refusals import refuses_schema
from typed_eval.store.storage import load_runs, read_records

OPENAI_SCHEMA = {
    "message": "Invalid schema for response_format 'final_result': 'patternProperties' is not permitted.",
    "type": "invalid_request_error",
    "param": "response_format",
    "code": "invalid_json_schema",
}
OPENAI_TOOLS = {
    "message": "Invalid schema for function 'final_result': In context=(), 'additionalProperties' is required.",
    "type": "invalid_request_error",
    "param": "tools[0].function.parameters",
    "code": "invalid_function_parameters",
}
ANTHROPIC_TOOLS = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12.",
    },
}
GOOGLE_SCHEMA = {
    "error": {
        "code": 400,
        "message": "Invalid JSON payload received. Unknown name \"$schema\" at 'generation_config.response_schema'.",
        "status": "INVALID_ARGUMENT",
    }
}


def refusal(status: int, body: object) -> ModelHTTPError:
    return ModelHTTPError(status_code=status, model_name="m", body=body)


@pytest.mark.parametrize(
    "body",
    [
        OPENAI_SCHEMA,
        {"error": OPENAI_SCHEMA},  # the whole body, as another client may hand it on
        OPENAI_TOOLS,
        {**OPENAI_SCHEMA, "code": None},  # an older reply: the param alone says it
        {"type": "invalid_request_error", "param": "response_format.json_schema.schema", "message": "x"},
        ANTHROPIC_TOOLS,
        {"type": "error", "error": {"type": "invalid_request_error", "message": "output_format.schema: invalid"}},
        {"type": "error", "error": {"type": "invalid_request_error", "message": "The schema is too complex."}},
        GOOGLE_SCHEMA,
        {"error": {"message": "parameters of tools[0].function_declarations[0] invalid", "status": "INVALID_ARGUMENT"}},
    ],
)
def test_a_400_whose_body_says_the_schema_is_refused_is_a_refusal(body: object) -> None:
    assert refuses_schema(refusal(400, body)) is True


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"message": "bad messages", "type": "invalid_request_error", "param": "messages", "code": None}),
        (400, {"message": "tool_choice is unsupported", "type": "invalid_request_error", "param": "tool_choice"}),
        (400, {"message": "context too long", "type": "invalid_request_error", "code": "context_length_exceeded"}),
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "messages.0: empty"}}),
        (400, {"error": {"message": "contents[0].parts is empty", "status": "INVALID_ARGUMENT"}}),
        (400, "Invalid schema for response_format"),  # no fields to read: not a refusal by its wording alone
        (400, None),
        (422, OPENAI_SCHEMA),
        (429, OPENAI_SCHEMA),
        (500, OPENAI_SCHEMA),
    ],
)
def test_any_other_failure_is_no_refusal(status: int, body: object) -> None:
    assert refuses_schema(refusal(status, body)) is False
    assert refuses_schema(ValueError("Invalid schema")) is False


def sample(case_id: str, group: str, status: SampleStatus, **fields: Any) -> SampleRecord:
    return SampleRecord(case_id=case_id, group=group, mode="native", status=status, attempts=[], corrective_retries=0,
                        usage=TokenUsage(), cost=Cost(usd=0.0, source="local"), latency_s=None, **fields)  # fmt: skip


def test_a_refused_schema_is_counted_apart_and_left_out_of_the_score() -> None:
    records = [
        sample("a", "g", "correct", score=1.0),
        sample("b", "g", "missing"),
        sample("c", "g", "unsupported", error="HTTP 400"),
        sample("d", "h", "unsupported", error="HTTP 400"),
        sample("e", "h", "error", error="HTTP 500"),
    ]
    scores = score_records(records, aggregate="mean")
    assert [counted_score(r) for r in records] == [1.0, 0.0, None, None, None]
    assert (scores.samples, scores.correct, scores.missing, scores.errors, scores.unsupported) == (5, 1, 1, 1, 2)
    assert [(g.group, g.scored, g.errors, g.unsupported, g.score) for g in scores.groups] == [
        ("g", 2, 0, 1, 50.0),
        ("h", 0, 1, 1, None),
    ]
    assert scores.score == 50.0
    dumped = scores.model_dump(mode="json")
    assert (dumped["unsupported"], dumped["groups"][0]["unsupported"]) == (2, 1)
    assert "unsupported" not in score_records(records[:2]).model_dump(mode="json")  # none: stored as before


ALL = list(farel_bench.generate(3, 50, 42, shuffle=True))  # the default dataset, 50 quizzes of each class
KEY = answer_key(ALL)
QUIZZES = ALL[::50][:6]  # what `--limit 6` poses: the first quiz of each of six classes


def test_refused_schemas_are_unsupported_sent_once_counted_and_never_posed_again(tmp_path: Path) -> None:
    refused = {QUIZZES[0].id, QUIZZES[3].id}  # the first case among them: a refusal is an answer, no DNF
    failing = {QUIZZES[4].id}
    other = {"message": "messages: bad role", "type": "invalid_request_error", "param": "messages", "code": None}
    fixed = False

    def reply(request: dict[str, Any]) -> Any:
        quiz = KEY(request)
        if quiz.id in refused:
            return 400, {"error": OPENAI_TOOLS}
        if quiz.id in failing and not fixed:
            return 400, {"error": other}
        return completion(tool_call({"answer": quiz.correct}))

    runs = tmp_path / "runs"
    command = ["run", "--model", "fake-model", "--base-url", "", "--api-key", "sk-test",
               "--mode", "tool", "--limit", "6", "--concurrency", "1", "--results-dir", str(runs)]  # fmt: skip
    with FakeOpenAI(reply) as server:
        command[command.index("--base-url") + 1] = server.url
        done = run_cli("main.py", *command)
        assert done.returncode == 0, done.stderr
        asked = Counter(KEY(request).id for request in server.requests)
        assert asked == Counter({quiz.id: 1 for quiz in QUIZZES})  # each refusal sent once: no retry, no resend
        (stored,) = load_runs(runs)
        records = {r.case_id: r for r in read_records(stored.path)}
        assert {case_id: r.status for case_id, r in records.items() if r.status != "correct"} == {
            QUIZZES[0].id: "unsupported",
            QUIZZES[3].id: "unsupported",
            QUIZZES[4].id: "error",
        }
        assert records[QUIZZES[0].id].error == (
            "HTTP 400 from fake-model: {'message': \"Invalid schema for function 'final_result': In context=(), "
            "'additionalProperties' is required.\", 'type': 'invalid_request_error', 'param': "
            "'tools[0].function.parameters', 'code': 'invalid_function_parameters'}"
        )
        summary = stored.summary
        assert (summary.status, summary.settings.tool_choice) == ("finished", "required")
        scores = summary.scores
        assert (scores.samples, scores.correct, scores.errors, scores.unsupported, scores.score) == (6, 3, 1, 2, 100.0)
        assert "format: valid first try 100.0%, after retries 100.0%, corrective retries 0, invalid outputs 0 " in (
            done.stdout
        )
        assert "missing 0, errors 1, unsupported 2 (the provider refused the schema)\n" in done.stdout
        lines = done.stdout.splitlines()
        assert lines[:6] == [
            f"{QUIZZES[0].class_name}: n/a (C: 0, I: 0, M: 0 A: 0, U: 1)",
            f"{QUIZZES[1].class_name}: 100.00 (C: 1, I: 0, M: 0 A: 1)",
            f"{QUIZZES[2].class_name}: 100.00 (C: 1, I: 0, M: 0 A: 1)",
            f"{QUIZZES[3].class_name}: n/a (C: 0, I: 0, M: 0 A: 0, U: 1)",
            f"{QUIZZES[4].class_name}: n/a (C: 0, I: 0, M: 0 A: 0, E: 1)",
            f"{QUIZZES[5].class_name}: 100.00 (C: 1, I: 0, M: 0 A: 1)",
        ]

        fixed = True
        again = run_cli("main.py", *command, "--retry-errors")
        assert again.returncode == 0, again.stderr
        asked = Counter(KEY(request).id for request in server.requests)
    from typed_eval.store.case_store import CaseStore  # imported here, as in test_html_report (duckdb and gc.freeze)

    store = CaseStore(runs)
    keys = [entry.key for entry in store.runs()]
    assert sorted(store.case_ids(keys, filter="unsupported")) == sorted([QUIZZES[0].id, QUIZZES[3].id])
    assert store.case_ids(keys, filter="error") == []
    store.close()
    assert asked[QUIZZES[4].id] == 2  # the failed call, posed again
    assert (asked[QUIZZES[0].id], asked[QUIZZES[3].id]) == (1, 1)  # the refusals, not
    (stored,) = load_runs(runs)
    scores = stored.summary.scores
    assert (scores.samples, scores.correct, scores.errors, scores.unsupported) == (6, 4, 0, 2)
    board = run_cli("format_result.py", str(runs), "--format", "json")
    assert board.returncode == 0, board.stderr
    (row,) = json.loads(board.stdout)
    assert (row["samples"], row["correct"], row["errors"], row["unsupported"]) == (6, 4, 0, 2)
