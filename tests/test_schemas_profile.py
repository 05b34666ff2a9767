"""The schema-feature profile: the features of hand-written schemas, the profile's counts, rates, Wilson intervals and
per-feature paired tests on runs built record by record, the suite's intervals and cost per valid instance, and a
run of two modes through `main.py` against a loopback server: its report's lines and the viewer's tables."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, text
from typed_eval.contracts import Cost, GroupScore, RunSummary, SampleRecord, SampleStatus, Scores, TokenUsage, Totals
from typed_eval.core.suite import CaseFacets
from typed_eval.reports.analysis import analyse
from typed_eval.reports.facet_profile import (
    FacetLine,
    FacetPair,
    Share,
    facet_pairs,
    facet_profile,
    placed_cases,
    profile_lines,
)
from typed_eval.reports.viewer.app import create_app
from typed_eval.suites.schemas.features import facet_names, record_facets, schema_features
from typed_eval.suites.schemas.metrics import schemas_report_lines
from typed_eval.suites.schemas.suite import SCHEMAS, SchemasParams

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}
TREE = {  # recursion through $defs, a pattern, a closed object, an array of objects
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "value": {"type": "string", "pattern": "^a"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}
LEVEL_4 = {"type": "object", "properties": {"x": {"type": "string", "format": "date", "maxLength": 10}}}
WIDE = {  # 4 levels, 22 properties, 5 required names, the combinators, enum and const
    "type": "object",
    "properties": {
        "a": {"type": "object", "properties": {"b": {"type": "object", "properties": {"c": LEVEL_4}}}},
        "p0": {"anyOf": [{"const": "x"}, {"oneOf": [{"type": "integer"}, {"type": "null"}]}]},
        "p1": {"allOf": [{"type": "string"}]},
        **{f"p{i}": {"enum": [1, 2]} for i in range(2, 17)},
        "pattern": {"type": "string", "default": {"format": "not a keyword here"}},
    },
    "required": ["a", "p0", "p1", "p2", "p3"],
}
NONE = dict.fromkeys(
    ["$ref", "recursion", "anyOf", "oneOf", "allOf", "enum", "const", "pattern", "format", "numeric bounds",
     "length bounds", "additionalProperties false", "array of objects"],
    False,
)  # fmt: skip


@pytest.mark.parametrize(
    ("schema", "counts", "having"),
    [
        (PERSON, (1, 2, 2), {"numeric bounds"}),
        (TREE, (2, 2, 0), {"$ref", "recursion", "pattern", "additionalProperties false", "array of objects"}),
        (WIDE, (4, 22, 5), {"anyOf", "oneOf", "allOf", "enum", "const", "format", "length bounds"}),
        ({"type": "array", "items": {"type": "integer", "minimum": 0}}, (1, 0, 0), {"numeric bounds"}),
        ({"$ref": "https://example.com/s.json"}, (0, 0, 0), {"$ref"}),
        (True, (0, 0, 0), set()),
        ({"type": "array", "items": {"type": ["object", "null"]}, "$ref": 5}, (1, 0, 0), {"$ref", "array of objects"}),
        ({"type": "object", "additionalProperties": False}, (0, 0, 0), {"additionalProperties false"}),
    ],
)
def test_a_schema_s_features_are_its_counts_and_the_keywords_it_uses(
    schema: Any, counts: tuple[int, int, int], having: set[str]
) -> None:
    found = schema_features(schema)
    assert found == {"depth": counts[0], "properties": counts[1], "required": counts[2],
                     **NONE, **dict.fromkeys(having, True)}  # fmt: skip


def test_the_binary_features_cut_the_counts_at_their_thresholds() -> None:
    assert facet_names(schema_features(WIDE)) == (
        "anyOf", "oneOf", "allOf", "enum", "const", "format", "length bounds", "depth>=4", "properties>=20",
        "required>=5",
    )  # fmt: skip
    assert facet_names({"depth": 3, "properties": 19, "required": 4, "pattern": True}) == ("pattern",)


def test_the_features_ride_on_the_case_and_own_schemas_are_placed(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "Glaiveai2K").mkdir(parents=True)
    (folder / "Glaiveai2K" / "tree.json").write_text(json.dumps(TREE))
    (folder / "mine.json").write_text(json.dumps(PERSON))
    (folder / "broken.json").write_text("{")
    _, dataset = SCHEMAS.build(SchemasParams(path=str(folder)))
    cases = {case.id: case for case in dataset.cases()}  # type: ignore[union-attr]
    assert cases["Glaiveai2K/tree"].metadata["features"] == schema_features(TREE)
    assert "features" not in cases["broken"].metadata
    record = record_of("mine", "own", 1.0, PERSON)
    assert record_facets(record) == CaseFacets(("numeric bounds",), placed=True)
    assert record_facets(record.model_copy(update={"group": "model"})) == CaseFacets(("numeric bounds",), True)
    assert record_facets(record_of("Glaiveai2K/tree", "Glaiveai2K", 1.0, TREE)) == CaseFacets(
        ("$ref", "recursion", "pattern", "additionalProperties false", "array of objects")
    )
    assert record_facets(record.model_copy(update={"metadata": {}})) is None


# --- the profile on runs built record by record -----------------------------------------------------------------

PATTERN = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}}}
BOUNDED = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}, "n": {"maximum": 9}}}
PLAIN = {"type": "object", "properties": {"note": {"type": "string"}}}


def record_of(
    case_id: str, group: str, score: float | None, schema: Any, status: SampleStatus | None = None
) -> SampleRecord:
    found: SampleStatus = status or ("correct" if score == 1.0 else "incorrect")
    return SampleRecord(
        case_id=case_id, group=group, metadata={"features": schema_features(schema)}, mode="native", status=found,
        score=score, attempts=[], corrective_retries=0, usage=TokenUsage(), cost=Cost(usd=None, source="unknown"),
        latency_s=None,
    )  # fmt: skip


def run_a() -> list[SampleRecord]:
    return [
        record_of("s/1", "s", 1.0, PATTERN),
        record_of("s/2", "s", 1.0, BOUNDED),
        record_of("s/3", "s", 0.0, BOUNDED),
        record_of("s/4", "s", 1.0, PLAIN),
        record_of("s/5", "s", 0.0, PLAIN),
        record_of("s/6", "s", None, PATTERN, "unsupported"),  # refused: out of compliance
        record_of("s/7", "s", None, PLAIN, "error"),  # a failed call: out too
        record_of("mine", "own", 0.0, BOUNDED),
    ]


def test_the_profile_counts_the_cases_with_and_without_each_feature_with_wilson_intervals() -> None:
    analysis = analyse(run_a(), "mean", facets=record_facets)
    profile = facet_profile(analysis)
    assert [(line.facet, line.having.right, line.having.cases, line.lacking.right, line.lacking.cases)
            for line in profile] == [("pattern", 2, 3, 1, 2), ("numeric bounds", 1, 2, 2, 3)]  # fmt: skip
    pattern = profile[0]
    assert pattern.having.rate == pytest.approx(200 / 3) and pattern.lacking.rate == 50.0
    assert pattern.difference == pytest.approx(200 / 3 - 50)
    assert pattern.having.ci95 == pytest.approx((20.765, 93.851), abs=1e-3)
    assert pattern.lacking.ci95 == pytest.approx((9.453, 90.547), abs=1e-3)
    (mine,) = placed_cases(analysis, profile)
    assert (mine.case_id, mine.group, mine.score, mine.facets) == (
        "mine", "own", 0.0, (("pattern", pattern.having), ("numeric bounds", profile[1].having))
    )  # fmt: skip
    assert profile_lines(analysis) == [
        "feature profile: feature         with  |  without  |  with - without",
        "feature profile: pattern         66.7 (20.8-93.9, 2/3)  |  50.0 (9.5-90.5, 1/2)  |  +16.7",
        "feature profile: numeric bounds  50.0 (9.5-90.5, 1/2)  |  66.7 (20.8-93.9, 2/3)  |  -16.7",
        "feature profile, own case mine: score 0.00; its features: pattern 66.7 (20.8-93.9, 2/3); numeric bounds "
        "50.0 (9.5-90.5, 1/2)",
    ]


def test_two_runs_are_paired_on_the_cases_with_each_feature_holm_over_the_features() -> None:
    b = [r.model_copy(update={"score": 0.0, "status": "incorrect"}) if r.case_id in ("s/1", "s/2") else r
         for r in run_a()]  # fmt: skip
    pairs = facet_pairs(analyse(run_a(), "mean", facets=record_facets), analyse(b, "mean", facets=record_facets))
    assert [(p.facet, p.paired, p.only_a, p.only_b, p.p_value, p.p_holm, p.difference) for p in pairs] == [
        ("pattern", 3, 2, 0, 0.5, 1.0, pytest.approx(200 / 3)),
        ("numeric bounds", 2, 1, 0, 1.0, 1.0, 50.0),
    ]
    assert isinstance(pairs[0], FacetPair)


def test_scores_that_are_not_right_or_wrong_get_no_interval() -> None:
    records = [record_of("s/1", "s", 0.5, PATTERN), record_of("s/2", "s", 1.0, PLAIN)]
    (line,) = facet_profile(analyse(records, "mean", facets=record_facets))
    assert line == FacetLine("pattern", Share(1, 50.0), Share(1, 100.0), -50.0)
    assert line.having.text() == "50.0 (n=1)"
    better = [record_of("s/1", "s", 1.0, PATTERN), record_of("s/2", "s", 1.0, PLAIN)]
    (pair,) = facet_pairs(analyse(better, "mean", facets=record_facets), analyse(records, "mean", facets=record_facets))
    assert pair == FacetPair("pattern", 1, 1, 0, 1.0, 1.0, 50.0)  # the sign test: a scored higher on one case


def test_the_report_gives_each_figure_s_wilson_interval_and_the_cost_of_a_valid_instance() -> None:
    groups = [
        GroupScore(group="Glaiveai2K", correct=2, missing=1, unsupported=1, cost_usd=0.003),
        GroupScore(group="Kubernetes", unsupported=2),
    ]
    totals: dict[str, Any] = {"cost_usd": 0.006, "cost_complete": True}  # all the lines read of a summary
    scores: dict[str, Any] = {"groups": groups, "totals": Totals.model_construct(**totals)}
    summary: dict[str, Any] = {"scores": Scores.model_construct(**scores)}
    lines = schemas_report_lines(RunSummary.model_construct(**summary))
    assert lines[4:] == [
        "JSONSchemaBench 95% intervals (Wilson): Glaiveai2K  declared 30.06-95.44  empirical 15.00-85.00  "
        "compliance 20.77-93.85",
        "JSONSchemaBench 95% intervals (Wilson): Kubernetes  declared 0.00-65.76  empirical 0.00-65.76  compliance n/a",
        "JSONSchemaBench 95% intervals (Wilson): overall     declared 18.76-81.24  empirical 9.68-70.00  "
        "compliance 20.77-93.85",
        "JSONSchemaBench cost per valid instance: $0.00300 (Glaiveai2K $0.00150, Kubernetes n/a)",
    ]


# --- a run of two modes on the command line, its report and the viewer --------------------------------------------

CODED = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["code"]}
BOTH = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}, "n": {"type": "integer",
        "maximum": 9}}, "required": ["id", "n"]}  # fmt: skip
MINE = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^x"}}, "required": ["id"]}
ANSWERS = {  # schema -> (native mode's instance, text mode's): text mode gets every pattern wrong
    json.dumps(PERSON): ({"name": "Ann", "age": 30}, {"name": "Ann", "age": 30}),
    json.dumps(CODED): ({"code": "ABC"}, {"code": "abc"}),
    json.dumps(BOTH): ({"id": "x1", "n": 3}, {"id": "y", "n": 3}),
    json.dumps(PLAIN): ({"note": "hi"}, {"note": "hi"}),
    json.dumps(MINE): ({"id": "x"}, {"id": "y"}),
}


def answer(request: dict[str, Any]) -> Any:
    schema = next(m["content"] for m in reversed(request["messages"]) if m["content"] in ANSWERS)
    native, in_text = ANSWERS[schema]
    return completion(text(json.dumps(native if "response_format" in request else in_text)), cost=0.001)


@pytest.fixture(scope="module")
def two_modes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("profile")
    data = folder / "data"
    for name, schema in {"Glaiveai2K/person": PERSON, "Glaiveai2K/coded": CODED, "Github_easy/both": BOTH,
                         "Github_easy/plain": PLAIN, "mine": MINE}.items():  # fmt: skip
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / f"{name}.json").write_text(json.dumps(schema), encoding="utf-8")
    with FakeOpenAI(answer) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--mode", "native", "--mode",
            "text", "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test", "--results-dir",
            str(folder / "runs"), "--retries", "0", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return folder / "runs", done.stdout.decode().splitlines()


def test_the_run_report_shows_the_profile_per_mode_and_the_modes_paired_on_each_feature(
    two_modes: tuple[Path, list[str]],
) -> None:
    _, out = two_modes
    assert [line for line in out if line.startswith("feature profile")] == [
        "feature profile: feature         with  |  without  |  with - without",
        "feature profile: pattern         100.0 (34.2-100.0, 2/2)  |  100.0 (34.2-100.0, 2/2)  |  +0.0",
        "feature profile: numeric bounds  100.0 (34.2-100.0, 2/2)  |  100.0 (34.2-100.0, 2/2)  |  +0.0",
        "feature profile, own case mine: score 1.00; its features: pattern 100.0 (34.2-100.0, 2/2)",
        "feature profile: feature         with  |  without  |  with - without",
        "feature profile: pattern         0.0 (0.0-65.8, 0/2)  |  100.0 (34.2-100.0, 2/2)  |  -100.0",
        "feature profile: numeric bounds  50.0 (9.5-90.5, 1/2)  |  50.0 (9.5-90.5, 1/2)  |  +0.0",
        "feature profile, own case mine: score 0.00; its features: pattern 0.0 (0.0-65.8, 0/2)",
        "feature profile, fake-model native vs fake-model text: pattern: 2 paired, only a 2, only b 0, p 0.5 "
        "(Holm 1), a - b +100.0",
        "feature profile, fake-model native vs fake-model text: numeric bounds: 2 paired, only a 1, only b 0, p 1 "
        "(Holm 1), a - b +50.0",
    ]
    intervals = [line for line in out if line.startswith("JSONSchemaBench 95% intervals (Wilson): overall")]
    assert intervals == [
        "JSONSchemaBench 95% intervals (Wilson): overall      declared 56.55-100.00  empirical 56.55-100.00  "
        "compliance 56.55-100.00",
        "JSONSchemaBench 95% intervals (Wilson): overall      declared 56.55-100.00  empirical 11.76-76.93  "
        "compliance 11.76-76.93",
    ]


def test_the_viewer_shows_each_mode_s_profile_the_own_case_on_it_and_the_pairs(
    two_modes: tuple[Path, list[str]],
) -> None:
    runs, _ = two_modes
    with TestClient(create_app(runs, hosts=["testserver"])) as client:
        page = client.get("/")
    assert page.status_code == 200
    assert re.findall(r"<h3>Feature profile, (.*?) <span class=\"muted\">(.*?)</span>", page.text) == [
        ("fake-model", "native"),
        ("fake-model", "text"),
    ]
    assert table_rows(page.text, "profile") == [
        ["pattern", "100.0", "34.2-100.0", "2", "100.0", "34.2-100.0", "2", "+0.0"],
        ["numeric bounds", "100.0", "34.2-100.0", "2", "100.0", "34.2-100.0", "2", "+0.0"],
        ["pattern", "0.0", "0.0-65.8", "2", "100.0", "34.2-100.0", "2", "-100.0"],
        ["numeric bounds", "50.0", "9.5-90.5", "2", "50.0", "9.5-90.5", "2", "+0.0"],
    ]
    assert table_rows(page.text, "placed") == [
        ["mine", "own", "1.00", "pattern 100.0 (34.2-100.0, 2/2)"],
        ["mine", "own", "0.00", "pattern 0.0 (0.0-65.8, 0/2)"],
    ]
    assert table_rows(page.text, "facet-pairs") == [
        ["fake-model native", "fake-model text", "pattern", "2", "2", "0", "0.5", "1", "+100.0"],
        ["fake-model native", "fake-model text", "numeric bounds", "2", "1", "0", "1", "1", "+50.0"],
    ]


def table_rows(page: str, kind: str) -> list[list[str]]:
    """The body rows of the page's tables of a class, each a list of its cells' text."""
    bodies = re.findall(rf'<table class="board {kind}">.*?<tbody>(.*?)</tbody>', page, re.S)
    rows = [row for body in bodies for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    return [[re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in rows]


def test_an_own_schema_run_alone_is_placed_on_the_profile_of_the_model_s_benchmark_run(
    two_modes: tuple[Path, list[str]], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(two_modes[0], runs)
    (tmp_path / "mine.json").write_text(json.dumps(MINE), encoding="utf-8")
    with FakeOpenAI(answer) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={tmp_path / 'mine.json'}", "--mode",
            "native", "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test", "--results-dir",
            str(runs), "--retries", "0", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode().splitlines()
    assert [line for line in out if line.startswith("feature profile")] == [
        "feature profile, own case mine: score 1.00; its features: pattern n/a"  # no benchmark case in this run
    ]
    with TestClient(create_app(runs, hosts=["testserver"])) as client:
        page = client.get("/").text
    (benchmark,) = [path.name for path in two_modes[0].glob("fake-model/*-native-*")]
    placed = ["mine", "own", "1.00", "pattern 100.0 (34.2-100.0, 2/2)"]  # in the benchmark's run, and alone
    assert (table_rows(page, "placed").count(placed), len(table_rows(page, "placed"))) == (2, 3)
    assert page.count(f"(on fake-model native ({benchmark}))") == 1


def test_the_html_report_has_the_profile_tables(two_modes: tuple[Path, list[str]], tmp_path: Path) -> None:
    page = tmp_path / "board.html"
    run_cli("format_result.py", str(two_modes[0]), "--format", "html", "-o", str(page)).check_returncode()
    tables = re.findall(r'<table class="sortable profile">.*?<tbody>(.*?)</tbody>', page.read_text(), re.S)
    rows = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", row)] for t in tables
            for row in re.findall(r"<tr>(.*?)</tr>", t)]  # fmt: skip
    assert rows == [
        ["fake-model", "native", "pattern", "100.0 (34.2-100.0, 2/2)", "100.0 (34.2-100.0, 2/2)", "+0.0"],
        ["fake-model", "native", "numeric bounds", "100.0 (34.2-100.0, 2/2)", "100.0 (34.2-100.0, 2/2)", "+0.0"],
        ["fake-model", "text", "pattern", "0.0 (0.0-65.8, 0/2)", "100.0 (34.2-100.0, 2/2)", "-100.0"],
        ["fake-model", "text", "numeric bounds", "50.0 (9.5-90.5, 1/2)", "50.0 (9.5-90.5, 1/2)", "+0.0"],
        ["fake-model", "native", "mine", "own", "1.00", "", "pattern 100.0 (34.2-100.0, 2/2)"],
        ["fake-model", "text", "mine", "own", "0.00", "", "pattern 0.0 (0.0-65.8, 0/2)"],
        ["fake-model native", "fake-model text", "pattern", "2", "2", "0", "0.5", "1", "+100.0"],
        ["fake-model native", "fake-model text", "numeric bounds", "2", "1", "0", "1", "1", "+50.0"],
    ]


def test_the_figures_are_also_given_as_they_were_on_the_first_attempt(tmp_path: Path) -> None:
    data = tmp_path / "data" / "Glaiveai2K"
    data.mkdir(parents=True)
    (data / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    (data / "plain.json").write_text(json.dumps(PLAIN), encoding="utf-8")

    replies = {  # schema -> (its first instance, the one after the validator's messages): valid only when asked again
        json.dumps(PERSON): ({"name": "Ann"}, {"name": "Ann", "age": 30}),
        json.dumps(PLAIN): ({"note": 1}, {"note": "hi"}),
    }

    def reply(request: dict[str, Any]) -> Any:
        schema = next(m["content"] for m in request["messages"] if m["content"] in replies)
        first, again = replies[schema]
        return completion(text(json.dumps(first if len(request["messages"]) == 6 else again)))

    with FakeOpenAI(reply) as server:
        done = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={tmp_path / 'data'}", "--mode", "native",
            "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test", "--results-dir",
            str(tmp_path / "runs"), "--retries", "1", text=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    out = [line for line in done.stdout.decode().splitlines() if "JSONSchemaBench: overall" in line
           or "JSONSchemaBench 95% intervals (Wilson): overall" in line]  # fmt: skip
    assert out == [
        "JSONSchemaBench: overall       100.00     100.00      100.00  (2, 0, 2)",
        "JSONSchemaBench 95% intervals (Wilson): overall     declared 34.24-100.00  empirical 34.24-100.00  "
        "compliance 34.24-100.00",
        "with no corrective retry, JSONSchemaBench: overall       100.00       0.00        0.00  (2, 0, 0)",
        "with no corrective retry, JSONSchemaBench 95% intervals (Wilson): overall     declared 34.24-100.00  "
        "empirical 0.00-65.76  compliance 0.00-65.76",
    ]
