"""The schemas suite on a whole benchmark: nothing compiled before the first case is posed, each case's schema
compiled just before its request and kept a bounded while; the cases listed and hashed without reading them as
JSON; and a root with object keywords and no `type` posed as JSONSchemaBench poses it, with `type: object` added,
in tool, native and prompted mode (not wrapped under `response`), its record saying so. Against a loopback
OpenAI-compatible server, through `main.py run`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, text, tool_call
from typed_eval.core.datasets import Dataset
from typed_eval.suites.schemas import validation
from typed_eval.suites.schemas.data import load_path
from typed_eval.suites.schemas.features import KEY
from typed_eval.suites.schemas.outputs import TYPED, sent_schema
from typed_eval.suites.schemas.prompts import load_shots, request_messages
from typed_eval.suites.schemas.suite import NOTES, SCHEMAS, WRAPPED, SchemasParams
from typed_eval.suites.schemas.validation import SchemaProblem, Validators

NAMED = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
UNTYPED = {"properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": False}
"""Object keywords and no type: JSONSchemaBench adds `"type": "object"` (its engines' `add_root_type_if_missing`)."""
CHOICE = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
"""No type and no object keyword: wrapped under `response`, as before."""
BY_REF = {"$ref": "#/definitions/a", "definitions": {"a": {"properties": {"id": {"type": "integer"}}}}}
"""A root `$ref` to a definition with object keywords and no type."""


def write(folder: Path, schemas: dict[str, Any]) -> Path:
    for name, schema in schemas.items():
        path = folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema if isinstance(schema, str) else json.dumps(schema), encoding="utf-8")
    return folder


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every schema compiled from now on, in order (the real compiler, counted)."""
    made: list[str] = []
    real = validation.compile_schema

    def counted(schema: Any) -> Any:
        made.append(json.dumps(schema))
        return real(schema)

    monkeypatch.setattr(validation, "compile_schema", counted)
    return made


# --- lazy compiling -------------------------------------------------------------------------------------------


def test_nothing_is_compiled_as_the_cases_are_listed_and_each_when_it_is_taken_to_be_posed(
    tmp_path: Path, compiles: list[str]
) -> None:
    folder = write(tmp_path / "data", {"Glaiveai2K/a": NAMED, "Glaiveai2K/b": UNTYPED, "Github_easy/c": {"type": 1}})
    task, dataset = SCHEMAS.build(SchemasParams(path=str(folder)))
    assert isinstance(dataset, Dataset)
    assert (compiles, dataset.info.cases, dataset.group_sizes) == ([], 3, {"Github_easy": 1, "Glaiveai2K": 2})
    md5 = hashlib.md5()  # over each file's id, group, size and bytes: read, never parsed
    for case_id, group in (
        ("Github_easy/c", "Github_easy"),
        ("Glaiveai2K/a", "Glaiveai2K"),
        ("Glaiveai2K/b", "Glaiveai2K"),
    ):
        data = (folder / f"{case_id}.json").read_bytes()
        md5.update(f"{case_id}\0{group}\0{len(data)}\0".encode() + data)
    assert dataset.info.md5 == md5.hexdigest()
    cases = dataset.cases()
    first = next(cases)
    assert (first.id, len(compiles), first.metadata["problem"]) == (
        "Github_easy/c",
        1,
        "not a valid JSON Schema (Draft202012Validator): type: 1 is not valid under any of the given schemas",
    )
    second = next(cases)
    assert (second.id, compiles[1:], second.metadata[KEY]["required"]) == ("Glaiveai2K/a", [json.dumps(NAMED)], 1)
    assert task.pose_as is not None
    posed, _ = task.pose_as(second, "tool")  # its task and its score reuse the validator compiled for it
    assert task.score(second, {"name": "Ann"}) == task.score(second, {"name": "Bo"})
    assert (posed.name, len(compiles)) == ("schemas", 2)


def test_a_run_compiles_each_schema_just_before_its_request_and_once(tmp_path: Path, compiles: list[str]) -> None:
    schemas = {f"Glaiveai2K/s{i}": {**NAMED, "title": f"s{i}"} for i in range(4)}
    folder = write(tmp_path / "data", schemas)
    compiled_at_request: list[int] = []

    def reply(request: dict[str, Any]) -> Any:
        compiled_at_request.append(len(compiles))
        return completion(tool_call({"name": "Ann"}, name=request["tools"][0]["function"]["name"]))

    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={folder}", "--mode", "tool", "--model", "fake-model",
            "--base-url", server.url, "--api-key", "sk-test", "--results-dir", str(tmp_path / "runs"),
            "--retries", "0", "--concurrency", "1", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert compiled_at_request == [1, 2, 3, 4]  # the first request after one schema compiled, not all four
    assert sorted(compiles) == sorted(json.dumps(schema) for schema in schemas.values())  # posed and scored: once
    (samples,) = (tmp_path / "runs").glob("*/*/samples.jsonl")
    assert [r["status"] for r in map(json.loads, samples.read_text().splitlines())] == ["correct"] * 4


def test_validators_keep_a_bounded_number_and_size_the_least_recently_used_dropped() -> None:
    schemas = [{"type": "object", "title": "x" * size} for size in (10, 20, 30)]
    texts = [json.dumps(schema) for schema in schemas]
    kept = Validators(kept=2)
    for schema_text in texts:
        kept.for_text(schema_text)
    assert (len(kept), kept.compiled) == (2, 3)
    kept.for_text(texts[2])
    kept.for_text(texts[1])
    assert kept.compiled == 3  # the two most recent, reused
    kept.for_text(texts[0])
    assert (len(kept), kept.compiled) == (2, 4)  # the first was dropped, compiled again
    sized = Validators(kept=10, chars=len(texts[1]) + len(texts[2]))
    for schema_text in texts:
        sized.for_text(schema_text)
    assert (len(sized), sized.compiled) == (2, 3)
    alone = Validators(kept=10, chars=1)  # the one asked for is kept, whatever its size
    alone.for_text(texts[2])
    alone.for_text(texts[2])
    assert (len(alone), alone.compiled) == (1, 1)
    problem = Validators(kept=1)
    for _ in range(2):
        with pytest.raises(SchemaProblem, match=r"^not a valid JSON Schema"):
            problem.for_text('{"type": 1}')
    assert problem.compiled == 1  # a schema that cannot be compiled is remembered as such
    held = Validators(kept=1)
    first = held.for_text(texts[0])  # held by its case's task while the case is posed and scored
    held.for_text(texts[1])
    assert (held.for_text(texts[0]) is first, held.compiled) == (True, 2)  # dropped from the kept, not compiled again
    del first
    held.for_text(texts[1])
    held.for_text(texts[0])
    assert held.compiled == 4  # held by nothing once dropped: each compiled again


def test_the_lazy_cases_are_those_the_files_make_in_the_same_order(tmp_path: Path) -> None:
    folder = write(
        tmp_path / "data",
        {"Glaiveai2K/b": NAMED, "Glaiveai2K/a": CHOICE, "a-b/c": UNTYPED, "a/d": BY_REF, "mine": NAMED, "x/bad": "{"},
    )
    _, dataset = SCHEMAS.build(SchemasParams(path=str(folder)))
    assert isinstance(dataset, Dataset)
    read = load_path(folder)
    cases = list(dataset.cases())
    assert (
        [c.id for c in cases]
        == [c.id for c in read]
        == ["Glaiveai2K/a", "Glaiveai2K/b", "a/d", "a-b/c", "mine", "x/bad"]
    )
    assert [(c.prompt, c.group) for c in cases] == [(c.prompt, c.group) for c in read]
    assert [c.id for c in dataset.cases()] == [c.id for c in cases]  # each pass reads the files afresh
    assert cases[-1].metadata["problem"].startswith("not JSON: Expecting property name enclosed in double quotes")


# --- a root with object keywords and no type ------------------------------------------------------------------


def test_a_root_with_object_keywords_and_no_type_is_posed_with_type_object_added() -> None:
    sent = sent_schema(UNTYPED)
    assert (sent.schema, sent.object_root, sent.notes) == ({**UNTYPED, "type": "object"}, True, [TYPED])
    referred = sent_schema(BY_REF)
    assert (referred.schema, referred.notes) == ({"properties": {"id": {"type": "integer"}}, "type": "object"}, [TYPED])
    choice = sent_schema(CHOICE)
    assert (choice.schema, choice.object_root, choice.notes) == (CHOICE, False, [])
    assert sent_schema({"type": ["object", "null"], "properties": {}}).object_root is False  # a type: kept as it is
    assert sent_schema(NAMED).notes == []


def _sent(request: dict[str, Any], mode: str) -> Any:
    """The schema a structured mode sends: the tool's parameters, the response format's, the prompted instructions'."""
    if mode == "tool":
        return request["tools"][0]["function"]["parameters"]
    if mode == "native":
        return request["response_format"]["json_schema"]["schema"]
    system = next(
        m["content"] for m in request["messages"] if m["role"] in ("system", "developer") and "{" in m["content"]
    )
    return json.loads(system[system.index("{") : system.rindex("}") + 1])


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text"])
def test_each_mode_poses_the_untyped_object_as_an_object_and_the_record_says_so(tmp_path: Path, mode: str) -> None:
    folder = write(
        tmp_path / "data", {"Glaiveai2K/untyped": UNTYPED, "Glaiveai2K/choice": CHOICE, "Glaiveai2K/by_ref": BY_REF}
    )
    values = {json.dumps(UNTYPED): {"name": "Ann"}, json.dumps(CHOICE): 7, json.dumps(BY_REF): {"id": 3}}
    seen: dict[str, Any] = {}

    def reply(request: dict[str, Any]) -> Any:
        schema = request["messages"][-1]["content"]
        value = values[schema]
        sent = _sent(request, mode) if mode != "text" else None
        seen[schema] = sent
        wrapped = isinstance(sent, dict) and set(sent.get("properties", {})) == {"response"}
        content = json.dumps({"response": value} if wrapped else value)
        if mode == "tool":
            return completion(tool_call(content, name=request["tools"][0]["function"]["name"]))
        return completion(text(f"```json\n{content}\n```" if mode == "prompted" else content))

    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={folder}", "--mode", mode, "--model", "fake-model",
            "--base-url", server.url, "--api-key", "sk-test", "--results-dir", str(tmp_path / "runs"),
            "--retries", "0", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    (samples,) = (tmp_path / "runs").glob("*/*/samples.jsonl")
    records = {r["case_id"]: r for r in map(json.loads, samples.read_text().splitlines())}
    assert {case_id: (r["status"], r["output"], r["metadata"].get(NOTES)) for case_id, r in records.items()} == {
        "Glaiveai2K/untyped": ("correct", {"name": "Ann"}, [TYPED]),
        "Glaiveai2K/choice": ("correct", 7, [WRAPPED]),
        "Glaiveai2K/by_ref": ("correct", {"id": 3}, [TYPED]),
    }
    if mode == "text":  # nothing but the benchmark's messages, the schema as it sends it the last
        shots = load_shots()["Glaiveai2K"]
        assert [r["messages"] for r in server.requests] == [request_messages(s, shots) for s in seen]
        assert [("tools" in r, "response_format" in r) for r in server.requests] == [(False, False)] * 3
        return
    untyped, choice, by_ref = (seen[json.dumps(schema)] for schema in (UNTYPED, CHOICE, BY_REF))
    assert (untyped["type"], untyped["properties"]["name"]["type"], untyped["required"]) == (
        "object",
        "string",
        ["name"],
    )
    assert (by_ref["type"], by_ref["properties"]["id"]["type"]) == ("object", "integer")
    assert (choice["properties"]["response"], choice["required"]) == (CHOICE, ["response"])
