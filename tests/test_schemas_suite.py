"""The schemas suite (JSONSchemaBench): its cases and the benchmark's request, validity as `jsonschema` judges it
against the original schema, the schema posed as the output type through pydantic-ai's real agent loop
(FunctionModel), JSONSchemaBench's coverage figures computed by hand, bad input, and `main.py run --suite schemas`
against a loopback OpenAI-compatible server that answers valid and invalid instances and refuses a schema (a record
`unsupported`, sent once), and fails a call (left out of the figures)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, text
from typed_eval.contracts import GroupScore, SampleRecord
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import InputError
from typed_eval.suites.schemas.data import load_path, load_sample
from typed_eval.suites.schemas.metrics import coverage
from typed_eval.suites.schemas.outputs import TYPED, sent_schema
from typed_eval.suites.schemas.prompts import SYSTEM, load_shots, request_messages
from typed_eval.suites.schemas.sampling import SETS, few_shots
from typed_eval.suites.schemas.suite import SCHEMAS, SchemasParams, show_instance
from typed_eval.suites.schemas.validation import SchemaProblem, Validators, problems

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}
COUNTS = {  # draft-04: a boolean exclusiveMinimum; not an object at the root
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
}
TAGS = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}, "required": ["tags"]}


def write(folder: Path, schemas: dict[str, Any]) -> Path:
    for name, schema in schemas.items():
        path = folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema if isinstance(schema, str) else json.dumps(schema), encoding="utf-8")
    return folder


def build(**params: Any) -> tuple[evaluator.Task[Any], list[evaluator.Case]]:
    task, dataset = SCHEMAS.build(SchemasParams(**params))
    assert isinstance(dataset, Dataset)
    return task, list(dataset.cases())


# --- validity -------------------------------------------------------------------------------------------------


def test_validity_is_jsonschema_s_verdict_in_the_schema_s_own_draft_formats_checked_nothing_fetched() -> None:
    validators = Validators()
    counts = validators.get(COUNTS)
    assert problems(counts, [1, 2]) == []
    assert problems(counts, [1, 0]) == ["1: 0 is less than or equal to the minimum of 0"]
    person = validators.get(PERSON)
    assert validators.get(json.loads(json.dumps(PERSON))) is person  # compiled once per schema
    assert validators.for_text(json.dumps(PERSON, sort_keys=True)) is person
    assert problems(person, {"name": "Ann", "age": -1}) == ["age: -1 is less than the minimum of 0"]
    assert problems(person, {"age": 3}) == ["(root): 'name' is a required property"]
    email = validators.get({"type": "string", "format": "email"})
    assert problems(email, "ann@example.com") == []
    assert problems(email, "no at sign") == ["(root): 'no at sign' is not a 'email'"]
    remote = validators.get({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}})
    assert problems(remote, {"a": 1}) == [
        "the schema's $ref 'https://example.com/a.json' cannot be resolved (nothing is fetched)"
    ]
    assert problems(remote, {}) == []  # the reference is never needed
    with pytest.raises(SchemaProblem, match=r"^not a valid JSON Schema \(Draft202012Validator\): type: 'objekt' is"):
        validators.get({"type": "objekt"})


def test_what_is_sent_has_local_references_written_out_and_recursion_cut() -> None:
    node = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}
    tree = {
        "type": "object",
        "definitions": {"node": node},
        "properties": {"root": {"$ref": "#/definitions/node", "description": "the top"}},
    }
    sent = sent_schema(tree)
    assert sent.schema == {
        "type": "object",
        "properties": {
            "root": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {}}},
                "description": "the top",
            }
        },
    }
    assert (sent.object_root, sent.notes) == (True, ["recursive $ref #/definitions/node cut to any value"])
    assert sent_schema(COUNTS).object_root is False
    for reference in ("https://example.com/a.json", "other.json#/definitions/a"):
        with pytest.raises(
            SchemaProblem, match=f"^\\$ref '{reference}' is not within the schema: references are never"
        ):
            sent_schema({"type": "object", "properties": {"a": {"$ref": reference}}})
    with pytest.raises(SchemaProblem, match=r"^\$ref '#/definitions/none' names nothing in the schema$"):
        sent_schema({"$ref": "#/definitions/none"})
    fifty = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(50)}}
    wide = {"definitions": {"a": fifty}, "properties": {f"q{i}": {"$ref": "#/definitions/a"} for i in range(50)}}
    cut = sent_schema(wide, max_nodes=1_000)  # written out while under the bound, then left open
    assert isinstance(cut.schema, dict)
    assert cut.notes == [TYPED, "$refs past 1,000 nodes written out left open (any value)"]
    assert [len(value) for value in cut.schema["properties"].values()].count(0) == 40
    assert (cut.object_root, cut.schema["type"]) == (True, "object")  # no type: asked for as an object


# --- cases and the benchmark's request ------------------------------------------------------------------------


def test_the_sample_is_thirty_schemas_of_each_set_reproduced_by_the_sampling_rule() -> None:
    cases = load_sample()
    assert [(name, sum(c.group == name for c in cases)) for name in SETS] == [(name, 30) for name in SETS]
    assert cases[0].id == "Github_easy/o10013"
    sample = Path(evaluator.__file__).parent / "typed_eval" / "suites" / "schemas" / "sample"
    assert sum(p.stat().st_size for p in sample.rglob("*.json")) < 3_000_000
    assert all(p.stat().st_size <= 65_536 for p in sample.rglob("*.json"))
    assert (sample / "LICENSE").read_text().startswith("MIT License")


def test_a_case_is_the_schema_as_the_benchmark_dumps_it_grouped_by_its_set(tmp_path: Path) -> None:
    folder = write(tmp_path / "data", {"Glaiveai2K/a": PERSON, "Github_easy/b": COUNTS, "mine": TAGS})
    cases = load_path(folder)
    assert [(c.id, c.group, c.prompt) for c in cases] == [
        ("Github_easy/b", "Github_easy", json.dumps(COUNTS)),
        ("Glaiveai2K/a", "Glaiveai2K", json.dumps(PERSON)),
        ("mine", "own", json.dumps(TAGS)),
    ]
    (single,) = load_path(folder / "mine.json")
    assert (single.id, single.group) == ("mine", "own")


def test_the_request_is_the_benchmark_s_system_message_two_shots_and_the_schema() -> None:
    shots = load_shots()
    assert sorted(shots) == sorted([*SETS, "default"])
    assert all(len(shots[name]) == 2 for name in SETS) and shots["default"] == []
    glaive = shots["Glaiveai2K"]
    assert glaive[0][0].startswith('{"properties": {"username": {"description": "The user\'s username"')
    assert glaive[0][1] == '{"username": "johndoe", "email": "john@example.com", "age": 30, "is_active": true} '
    assert request_messages("{}", glaive) == [
        {"role": "system", "content": "You need to generate a JSON object that matches the schema below."},
        {"role": "user", "content": glaive[0][0]},
        {"role": "assistant", "content": glaive[0][1]},
        {"role": "user", "content": glaive[1][0]},
        {"role": "assistant", "content": glaive[1][1]},
        {"role": "user", "content": "{}"},
    ]
    assert SYSTEM == "You need to generate a JSON object that matches the schema below."


def test_the_few_shots_are_read_as_data_out_of_the_benchmark_s_module() -> None:
    module = 'from x import y\nEXAMPLES_FOR_TASK: Dict = {("A", "B"): [("s1", "i1"), ("s2", "i2")], ("default",): []}\n'
    assert few_shots(module) == {"A": [["s1", "i1"], ["s2", "i2"]], "B": [["s1", "i1"], ["s2", "i2"]], "default": []}


def test_a_pydantic_model_is_a_case_of_its_own(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^give one of source, path and model, not path and model$"):
        build(model="typed_eval.contracts:TokenUsage", path=str(tmp_path))
    _, (case,) = build(model="typed_eval.contracts:TokenUsage")
    schema = json.loads(case.prompt)
    assert (case.id, case.group, schema["title"], schema["type"]) == (
        "typed_eval.contracts:TokenUsage",
        "model",
        "TokenUsage",
        "object",
    )


# --- posing through pydantic-ai's agent loop ------------------------------------------------------------------


def schema_asked(messages: list[ModelMessage]) -> Any:
    """The schema a request poses: its last user message (a retry's is a retry prompt), as JSON."""
    users = [
        p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
    ]
    return json.loads(str(users[-1]))


Seen = list[tuple[str, list[ModelMessage], AgentInfo]]


def posed(
    tmp_path: Path, schemas: dict[str, Any], answers: dict[str, list[Any]], mode: str = "tool", **options: Any
) -> tuple[dict[str, SampleRecord], Seen]:
    """Run the suite over `schemas` with FunctionModel answering, per schema (by its JSON text), the next of
    `answers[name]`; the records by case id, and each request's messages and tool parameters seen."""
    folder = write(tmp_path / "data", schemas)
    task, cases = build(path=str(folder))
    by_text = {json.dumps(schema): name for name, schema in schemas.items()}
    seen: Seen = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        name = by_text[json.dumps(schema_asked(messages))]
        seen.append((name, messages, info))
        value = answers[name][sum(1 for n, _, _ in seen if n == name) - 1]
        if mode == "tool":
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, value)])
        return ModelResponse(parts=[TextPart(value if isinstance(value, str) else json.dumps(value))])

    result = asyncio.run(evaluator.evaluate(task, cases, FunctionModel(answer), mode=mode, local=True, **options))
    return {record.case_id: record for record in result.records}, seen


def test_a_valid_instance_scores_1_an_invalid_one_is_sent_back_with_the_validator_s_messages(tmp_path: Path) -> None:
    records, seen = posed(
        tmp_path,
        {"Glaiveai2K/person": PERSON},
        {"Glaiveai2K/person": [{"name": "Ann", "age": -1}, {"name": "Ann", "age": 30}]},
        retries=1,
    )
    record = records["Glaiveai2K/person"]
    assert (record.status, record.score, record.output, record.corrective_retries) == (
        "correct",
        1.0,
        {"name": "Ann", "age": 30},
        1,
    )
    (_, _, info), (_, second, _) = seen
    assert info.output_tools[0].parameters_json_schema == PERSON
    retry = second[-1]
    assert isinstance(retry, ModelRequest) and isinstance(retry.parts[0], ToolReturnPart)
    assert retry.parts[0].content == [
        {
            "type": "json_schema",
            "loc": [],
            "msg": "age: -1 is less than the minimum of 0",
            "input": {"name": "Ann", "age": -1},
        }
    ]
    assert [a.valid for a in record.attempts] == [False, True]


def test_retries_run_out_on_invalid_instances_scored_0(tmp_path: Path) -> None:
    records, seen = posed(tmp_path, {"Glaiveai2K/person": PERSON}, {"Glaiveai2K/person": [{"age": 1}] * 2}, retries=1)
    record = records["Glaiveai2K/person"]
    assert (record.status, record.score, record.output, len(seen)) == ("missing", None, None, 2)
    assert record.attempts[-1].feedback == "output: (root): 'name' is a required property"


def test_a_root_that_is_not_an_object_is_wrapped_in_tool_mode_and_unwrapped(tmp_path: Path) -> None:
    records, seen = posed(
        tmp_path, {"Github_easy/counts": COUNTS}, {"Github_easy/counts": [{"response": [1, 0]}, {"response": [2, 3]}]},
        retries=1,
    )  # fmt: skip
    record = records["Github_easy/counts"]
    (_, _, info), (_, second, _) = seen
    assert info.output_tools[0].parameters_json_schema == {
        "type": "object",
        "properties": {"response": {"type": "array", "items": COUNTS["items"]}},
        "required": ["response"],
    }
    retry = second[-1]
    assert isinstance(retry, ModelRequest) and isinstance(retry.parts[0], ToolReturnPart)
    assert retry.parts[0].content == [
        {"type": "json_schema", "loc": [], "msg": "response/1: 0 is less than or equal to the minimum of 0",
         "input": {"response": [1, 0]}}
    ]  # fmt: skip
    assert (record.status, record.output, record.metadata["posed_as"]) == (
        "correct",
        [2, 3],
        ['the root is not an object: posed as {"response": <schema>} and unwrapped (structured modes)'],
    )
    assert [line.text for line in show_instance(record)] == [
        "[2, 3]",
        'posed: the root is not an object: posed as {"response": <schema>} and unwrapped (structured modes)',
    ]


def test_text_mode_reads_the_reply_as_json_and_validates_it(tmp_path: Path) -> None:
    records, seen = posed(
        tmp_path, {"Glaiveai2K/person": PERSON}, {"Glaiveai2K/person": ['```json\n{"name": "Bo", "age": 4}\n```']},
        mode="text",
    )  # fmt: skip
    assert (records["Glaiveai2K/person"].status, records["Glaiveai2K/person"].output) == (
        "correct",
        {"name": "Bo", "age": 4},
    )
    (_, messages, _) = seen[0]
    sent = [(type(p).__name__, getattr(p, "content", None)) for m in messages for p in m.parts]
    shots = load_shots()["Glaiveai2K"]
    assert sent == [
        ("SystemPromptPart", SYSTEM),
        ("UserPromptPart", shots[0][0]),
        ("TextPart", shots[0][1]),
        ("UserPromptPart", shots[1][0]),
        ("TextPart", shots[1][1]),
        ("UserPromptPart", json.dumps(PERSON)),
    ]


def test_a_schema_that_cannot_be_posed_is_its_case_s_error_and_the_run_goes_on(tmp_path: Path) -> None:
    schemas = {
        "Github_easy/bad": {"type": "objekt"},
        "Github_easy/remote": {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
        "Github_easy/file": {"type": "object", "properties": {"a": {"$ref": "common.json#/a"}}},
        "Github_easy/notjson": '{"type": ',
        "Glaiveai2K/person": PERSON,
    }
    records, seen = posed(tmp_path, schemas, {"Glaiveai2K/person": [{"name": "Ann", "age": 1}]})
    assert {case_id: (r.status, r.error) for case_id, r in records.items()} == {
        "Github_easy/bad": ("error", "SchemaProblem: not a valid JSON Schema (Draft202012Validator): type: 'objekt' is "
                            "not valid under any of the given schemas"),
        "Github_easy/remote": ("error", "SchemaProblem: $ref 'https://example.com/a.json' is not within the schema: "
                               "references are never fetched"),
        "Github_easy/file": ("error", "SchemaProblem: $ref 'common.json#/a' is not within the schema: references are "
                             "never fetched"),
        "Github_easy/notjson": ("error", "SchemaProblem: not JSON: Expecting value: line 1 column 10 (char 9)"),
        "Glaiveai2K/person": ("correct", None),
    }  # fmt: skip
    assert [name for name, _, _ in seen] == ["Glaiveai2K/person"]  # nothing was asked of the others


def test_a_schema_file_over_the_size_bound_is_its_case_s_error(tmp_path: Path) -> None:
    folder = write(tmp_path / "data", {"Github_easy/big": {"type": "object", "description": "x" * 5_000}})
    task, (case,) = build(path=str(folder), max_bytes=1_000)
    (record,) = asyncio.run(evaluator.evaluate(task, [case], "test", mode="tool", local=True)).records
    assert (record.status, record.error, record.prompt) == (
        "error",
        "SchemaProblem: the schema file has 5,037 bytes, more than max_bytes=1,000",
        "",
    )


# --- JSONSchemaBench's figures ----------------------------------------------------------------------------------


def test_coverage_and_compliance_are_the_benchmark_s_ratios_per_set_and_overall() -> None:
    groups = [  # posed 4, refused 1, valid 2; posed 5, refused 0, valid 4; posed 2, both refused; failed calls left out
        GroupScore(group="Glaiveai2K", correct=2, missing=1, unsupported=1, errors=3),
        GroupScore(group="Kubernetes", correct=4, incorrect=1, errors=1),
        GroupScore(group="Github_ultra", unsupported=2),
    ]
    per_set, total = coverage(groups)
    figures = {name: (c.declared, c.empirical, c.compliance) for name, c in [*per_set.items(), ("all", total)]}
    assert figures == {
        "Glaiveai2K": (3 / 4, 2 / 4, 2 / 3),
        "Kubernetes": (1.0, 4 / 5, 4 / 5),
        "Github_ultra": (0.0, 0.0, None),
        "all": (8 / 11, 6 / 11, 6 / 8),
    }


# --- the command line against a loopback server -------------------------------------------------------------

REFUSAL = {
    "error": {
        "message": "Invalid schema for response_format 'final_result': 'patternProperties' is not permitted.",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "invalid_json_schema",
    }
}


def test_a_run_on_the_command_line_reports_the_benchmark_s_figures(tmp_path: Path) -> None:
    refused = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
    failing = {"type": "object", "properties": {"id": {"type": "integer"}}}
    folder = write(
        tmp_path / "data",
        {"Glaiveai2K/person": PERSON, "Github_easy/counts": COUNTS, "Github_easy/refused": refused,
         "Github_easy/failing": failing},
    )  # fmt: skip
    answers = {json.dumps(PERSON): {"name": "Ann", "age": 30}, json.dumps(COUNTS): {"response": [0]}}
    other = {"message": "messages: bad role", "type": "invalid_request_error", "param": "messages", "code": None}

    def reply(request: dict[str, Any]) -> Any:
        schema = request["messages"][-1]["content"]
        if schema == json.dumps(refused):
            return 400, REFUSAL
        if schema == json.dumps(failing):
            return 400, {"error": other}
        return completion(text(json.dumps(answers[schema])))

    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={folder}", "--mode", "native",
            "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test",
            "--results-dir", str(tmp_path / "runs"), "--retries", "0", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode().splitlines()
    figures = [line for line in out if line.startswith("JSONSchemaBench: ")]
    assert figures == [
        "JSONSchemaBench: set          declared  empirical  compliance  (posed, refused, valid)",
        "JSONSchemaBench: Github_easy     50.00       0.00        0.00  (2, 1, 0)",
        "JSONSchemaBench: Glaiveai2K     100.00     100.00      100.00  (1, 0, 1)",
        "JSONSchemaBench: overall         66.67      33.33       50.00  (3, 1, 1)",
        "JSONSchemaBench: failed calls left out of the figures (not refused schemas): 1",
    ]
    board = run_cli("format_result.py", str(tmp_path / "runs"), "--format", "json")
    board.check_returncode()
    (row,) = json.loads(board.stdout)
    assert row["metrics"] == {
        "schemas-declared_coverage": 66.67,
        "schemas-empirical_coverage": 33.33,
        "schemas-compliance": 50.0,
        "schemas-Github_easy": 0.0,
        "schemas-Glaiveai2K": 100.0,
    }
    person = next(r for r in server.requests if r["messages"][-1]["content"] == json.dumps(PERSON))
    shots = load_shots()["Glaiveai2K"]
    assert person["messages"][:6] == request_messages(json.dumps(PERSON), shots)
    assert person["response_format"]["json_schema"]["schema"]["properties"] == PERSON["properties"]
    (samples,) = (tmp_path / "runs").glob("*/*/samples.jsonl")
    records = {r["case_id"]: r for r in map(json.loads, samples.read_text().splitlines())}
    assert {case_id: r["status"] for case_id, r in records.items()} == {
        "Github_easy/counts": "missing",
        "Github_easy/refused": "unsupported",
        "Github_easy/failing": "error",
        "Glaiveai2K/person": "correct",
    }
    assert records["Github_easy/refused"]["error"].startswith("HTTP 400 from fake-model: {'message': \"Invalid schema")
    sent = [r["messages"][-1]["content"] for r in server.requests]
    assert (sent.count(json.dumps(refused)), len(sent)) == (1, 4)  # the refusal sent once
    assert (
        records["Github_easy/counts"]["attempts"][0]["feedback"]
        == "output: response/0: 0 is less than or equal to the minimum of 0"
    )


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("path={missing}", "main.py: error: schema path '{missing}' does not exist"),
        ("path={empty}", "main.py: error: schema folder '{empty}' holds no .json file"),
        ("sets=Nosuch", "main.py: error: no schemas of set 'Nosuch'; the sets here are Github_easy, Github_hard, "),
        ("model=nosuchmodule:Model", "main.py: error: model='nosuchmodule:Model': cannot import 'nosuchmodule': "),
        ("model=Model", "main.py: error: model='Model': name a pydantic model as module:Class"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, setting: str, message: str) -> None:
    (tmp_path / "empty").mkdir()
    names = {"missing": tmp_path / "missing", "empty": tmp_path / "empty"}
    done = run_cli(
        "main.py", "run", "--suite", "schemas", "-S", setting.format(**names), "--model", "test",
        "--results-dir", str(tmp_path / "runs"), text=False,
    )  # fmt: skip
    lines = done.stderr.decode().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), lines
    assert lines[0].startswith(message.format(**names))


def test_sets_shots_and_system_choose_the_cases_and_the_request() -> None:
    task, cases = build(sets="Kubernetes, Snowplow", shots=0, system="Reply with JSON only.")
    assert [(g, sum(c.group == g for c in cases)) for g in ("Kubernetes", "Snowplow")] == [
        ("Kubernetes", 30),
        ("Snowplow", 30),
    ]
    assert len(cases) == 60
    assert task.messages is not None
    assert task.messages(cases[0], "tool") == [
        {"role": "system", "content": "Reply with JSON only."},
        {"role": "user", "content": cases[0].prompt},
    ]
    task, cases = build(sets="Snowplow", shots=1)
    assert task.messages is not None
    assert [m["role"] for m in task.messages(cases[0], "text")] == ["system", "user", "assistant", "user"]
