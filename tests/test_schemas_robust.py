"""The schemas suite on bad input and hard schemas: each is its case's error with its reason, time-boxed, nothing
fetched, never the run's. Checked on the validator itself (formats, a pattern that backtracks without end, `$ref`
cycles no instance can end, remote references) and through `main.py run` against a loopback OpenAI-compatible server,
as a user runs it; and a text-mode corrective retry carries the validator's messages, as the structured modes' do."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, Route, completion, text
from typed_eval.contracts import Case
from typed_eval.suites.schemas.outputs import sent_schema
from typed_eval.suites.schemas.prompts import load_shots
from typed_eval.suites.schemas.suite import SchemaTasks
from typed_eval.suites.schemas.validation import SchemaProblem, Validators, problems

CATASTROPHIC = {"type": "string", "pattern": "^(a|aa)+$"}
"""A pattern `re` backtracks on without end against "aaa...a!" (40 a's: hours)."""
SLOW_KEYS = {"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "integer"}}, "additionalProperties": False}
LOOP = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}
TREE = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}, "required": ["kids"]}
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "born": {"type": "string", "format": "date-time"}},
    "required": ["name", "born"],
}


def exploding(levels: int) -> dict[str, Any]:
    """Definitions each using the one below twice: 2**levels nodes once the `$ref`s are written out."""
    defs: dict[str, Any] = {"d0": {"type": "integer"}}
    for level in range(1, levels + 1):
        below = {"$ref": f"#/$defs/d{level - 1}"}
        defs[f"d{level}"] = {"type": "object", "properties": {"l": below, "r": below}, "required": ["l"]}
    return {"$defs": defs, "$ref": f"#/$defs/d{levels}"}


META = "https://json-schema.org/draft/{}/schema"


def test_formats_are_checked_with_the_format_extras() -> None:
    validators = Validators()
    checks = {
        "date-time": ("2024-01-02T03:04:05Z", "yesterday"),
        "uri": ("https://example.com/a", "not a uri"),
        "hostname": ("example.com", "-bad-.com"),
        "duration": ("P1D", "one day"),
        "json-pointer": ("/a/b", "a/b"),
        "uri-template": ("https://x/{id}", "https://x/{id"),
    }
    for name, (good, bad) in checks.items():
        validator = validators.get({"type": "string", "format": name})
        assert (problems(validator, good), problems(validator, bad)) == ([], [f"(root): {bad!r} is not a {name!r}"])


@pytest.mark.parametrize("draft", ["draft-07", "2019-09", "2020-12"])
def test_iris_are_checked_from_draft_7_on_as_rfc_3987_writes_them(draft: str) -> None:
    validators = Validators()
    dialect = f"http://json-schema.org/{draft}/schema#" if draft == "draft-07" else META.format(draft)
    checks = {
        "iri": ("https://example.com/\u00e4pfel?q=\u00fc#f", ["/relative/path", "https://exa mple.com/"]),
        "iri-reference": ("../\u00e4pfel#f", ["https://exa mple.com/", "\\\\host"]),
    }
    for name, (good, bad) in checks.items():
        validator = validators.get({"$schema": dialect, "format": name})
        assert problems(validator, good) == []
        assert [problems(validator, b) for b in bad] == [[f"(root): {b!r} is not a {name!r}"] for b in bad]
        assert problems(validator, 7) == []  # a format says nothing of a value that is not a string


def test_before_draft_7_an_iri_format_is_an_annotation_only() -> None:
    validator = Validators().get({"$schema": "http://json-schema.org/draft-04/schema#", "format": "iri"})
    assert problems(validator, "not an iri") == []


def test_a_pattern_that_backtracks_without_end_is_time_boxed_and_the_case_s_error() -> None:
    validators = Validators()
    hard = "a" * 40 + "!"
    for schema, instance in [(CATASTROPHIC, hard), (SLOW_KEYS, {hard: 1})]:
        started = time.perf_counter()
        with pytest.raises(SchemaProblem, match=r"^pattern '\^\(a\|aa\)\+\$' did not finish matching a 41-character "
                           r"string in 0\.2 s \(it backtracks without end\)$"):  # fmt: skip
            problems(validators.get(schema), instance, seconds=0.2)
        assert time.perf_counter() - started < 5  # the regex module's timeout counts CPU seconds
    assert problems(validators.get(CATASTROPHIC), "aaaa") == []
    assert problems(validators.get(CATASTROPHIC), "ab") == ["(root): 'ab' does not match '^(a|aa)+$'"]
    keys = validators.get(SLOW_KEYS)
    assert problems(keys, {"aa": 1, "b": 2}) == ["(root): Additional properties are not allowed ('b' was unexpected)"]
    assert problems(keys, {"aa": "x"}) == ["aa: 'x' is not of type 'integer'"]


def test_a_ref_cycle_no_instance_can_end_is_found_when_compiled_a_recursion_with_a_base_case_is_not() -> None:
    validators = Validators()
    either = {"anyOf": [{"type": "string"}, {"$ref": "#"}]}  # endless for any instance that is not a string
    for schema, reference in [(LOOP, "#/$defs/a"), ({"$ref": "#"}, "#"), (either, "#")]:
        with pytest.raises(SchemaProblem) as raised:
            validators.get(schema)
        assert (
            str(raised.value)
            == f"$ref {reference!r} recurses without end (no keyword between that descends into the value)"
        )
    tree = validators.get(TREE)
    assert problems(tree, {"kids": [{"kids": []}]}) == []
    assert problems(tree, {"kids": [{}]}) == ["kids/0: 'kids' is a required property"]
    deep: Any = {"kids": []}
    for _ in range(2_000):
        deep = {"kids": [deep]}
    assert problems(tree, deep) == ["the instance is nested too deeply to be checked"]


def test_refs_that_blow_up_when_written_out_are_left_open_past_the_bound_and_quickly() -> None:
    started = time.perf_counter()
    sent = sent_schema(exploding(40))
    assert time.perf_counter() - started < 2
    assert sent.notes == ["$refs past 20,000 nodes written out left open (any value)"]
    assert len(json.dumps(sent.schema)) < 1_000_000
    assert problems(Validators().get(exploding(40)), {"l": {"l": 1}}) == ["l/l: 1 is not of type 'object'"]


def write(folder: Path, schemas: dict[str, Any]) -> Path:
    for name, schema in schemas.items():
        path = folder / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(schema if isinstance(schema, str) else json.dumps(schema), encoding="utf-8")
    return folder


def test_bad_input_through_main_py_each_case_s_error_with_its_reason_nothing_fetched(tmp_path: Path) -> None:
    fetched: list[Any] = []

    def schema_file(body: dict[str, Any]) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        fetched.append(body)
        return 200, {"type": "string"}

    routes: dict[str, Route] = {"GET /v1/a.json": schema_file}
    (tmp_path / "common.json").write_text(json.dumps({"a": {"type": "string"}}))
    big = {"type": "object", "description": "x" * 50_000_000}
    schemas: dict[str, Any] = {
        "Github_easy/invalid": {"type": "object", "required": "name"},
        "Github_easy/big": big,
        "Github_easy/loop": LOOP,
        "Github_easy/exploding": exploding(40),
        "Github_easy/pattern": CATASTROPHIC,
        "Github_easy/file": {"type": "object", "properties": {"a": {"$ref": str(tmp_path / "common.json") + "#/a"}}},
        "Glaiveai2K/person": PERSON,
    }
    answers = {
        json.dumps(CATASTROPHIC): ['"' + "a" * 40 + '!"'],
        json.dumps(exploding(40)): ['{"l": 1}', '{"l": 1}'],
        json.dumps(PERSON): ['{"name": "Ann", "born": "yesterday"}', '{"name": "Ann", "born": "2024-01-02T03:04:05Z"}'],
    }
    asked: dict[str, int] = {}

    def reply(request: dict[str, Any]) -> Any:
        schema = request["messages"][-1]["content"]
        schema = (
            next(m["content"] for m in request["messages"] if m["content"] in answers)
            if schema not in answers
            else schema
        )
        asked[schema] = asked.get(schema, 0) + 1
        return completion(text(answers[schema][asked[schema] - 1]))

    with FakeOpenAI(reply, routes) as server:
        schemas["Github_easy/url"] = {"type": "object", "properties": {"a": {"$ref": server.url + "/a.json"}}}
        folder = write(tmp_path / "data", schemas)
        started = time.perf_counter()
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={folder}", "--mode", "text",
            "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test",
            "--results-dir", str(tmp_path / "runs"), "--retries", "1", text=False,
        )  # fmt: skip
        elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert elapsed < 60
    (samples,) = (tmp_path / "runs").glob("*/*/samples.jsonl")
    records = {r["case_id"]: r for r in map(json.loads, samples.read_text().splitlines())}
    url = server.url + "/a.json"
    assert {case_id: (r["status"], r["error"]) for case_id, r in records.items()} == {
        "Github_easy/big": ("error", "SchemaProblem: the schema file has 50,000,037 bytes, more than "
                            "max_bytes=4,000,000"),
        "Github_easy/exploding": ("missing", None),
        "Github_easy/file": ("error", f"SchemaProblem: $ref '{tmp_path / 'common.json'}#/a' is not within the schema: "
                             "references are never fetched"),
        "Github_easy/invalid": ("error", "SchemaProblem: not a valid JSON Schema (Draft202012Validator): required: "
                                "'name' is not of type 'array'"),
        "Github_easy/loop": ("error", "SchemaProblem: $ref '#/$defs/a' recurses without end (no keyword between that "
                             "descends into the value)"),
        "Github_easy/pattern": ("error", "SchemaProblem: pattern '^(a|aa)+$' did not finish matching a 41-character "
                                "string in 2 s (it backtracks without end)"),
        "Github_easy/url": ("error", f"SchemaProblem: $ref '{url}' is not within the schema: references are never "
                            "fetched"),
        "Glaiveai2K/person": ("correct", None),
    }  # fmt: skip
    assert fetched == []
    assert records["Github_easy/exploding"]["metadata"]["posed_as"] == [
        "$refs past 20,000 nodes written out left open (any value)"
    ]
    assert asked == {json.dumps(CATASTROPHIC): 1, json.dumps(exploding(40)): 2, json.dumps(PERSON): 2}
    first = answers[json.dumps(PERSON)][0]
    (retry,) = [r for r in server.requests if any(m["content"] == first for m in r["messages"])]
    assert (
        "Your reply is not valid JSON of the requested shape: output: born: 'yesterday' is not a 'date-time'"
        in (retry["messages"][-1]["content"])
    )
    assert records["Glaiveai2K/person"]["attempts"][0]["feedback"] == (
        "Your reply is not valid JSON of the requested shape: output: born: 'yesterday' is not a 'date-time'"
    )


def test_a_check_out_of_time_when_scoring_is_a_0_with_its_reason_not_the_scorer_s_failure() -> None:
    tasks = SchemaTasks(load_shots())
    case = Case(id="Github_easy/pattern", prompt=json.dumps(CATASTROPHIC), group="Github_easy")
    verdict = tasks.score(case, "a" * 40 + "!")
    assert (verdict.value, verdict.details) == (0.0, {"errors": [
        "pattern '^(a|aa)+$' did not finish matching a 41-character string in 2 s (it backtracks without end)"
    ]})  # fmt: skip
