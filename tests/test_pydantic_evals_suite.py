"""The pydantic-evals suite as a user runs it (`main.py run --dataset FILE`, a loopback OpenAI-compatible server):
bad input in one line before any request, a custom evaluator that raises or hangs as that case's error, the judge from
the command line, a named score as the headline, text mode with repeats, the export's repeat names, and two runs of
one dataset compared in the leaderboard with the paired test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_evals")

from pydantic_evals.reporting import EvaluationReportAdapter

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text, tool_call
from typed_eval.contracts import SampleRecord
from typed_eval.core.suite import AnswerLine, answer_lines
from typed_eval.suites.evals.suite import PYDANTIC_EVALS

MODULE = '''
import time
from dataclasses import dataclass

from pydantic import BaseModel
from pydantic_evals.evaluators import Evaluator, EvaluatorContext


class Reply(BaseModel):
    word: str


class Where(BaseModel):
    country: str


@dataclass
class Asked(Evaluator):
    """Reads the inputs as their type."""

    def evaluate(self, ctx: EvaluatorContext) -> dict:
        return {"where": ctx.inputs.country.upper(), "typed": isinstance(ctx.inputs, Where)}


@dataclass
class Moody(Evaluator):
    """Raises on `boom`, hangs on `hang`, else scores the word's length."""

    def evaluate(self, ctx: EvaluatorContext) -> dict:
        if ctx.inputs == "boom":
            raise ValueError("no luck")
        if ctx.inputs == "hang":
            time.sleep(60)
        return {"length": len(str(ctx.output)), "long": len(str(ctx.output)) > 3}
'''

TEXT_DATASET = """\
# yaml-language-server: $schema=words_schema.json
name: words
cases:
- name: one
  inputs: Say one
  expected_output: one
- name: two
  inputs: Say two
  expected_output: two
- name: three
  inputs: Say three
  expected_output: three
evaluators:
- EqualsExpected
- Contains: t
"""


def run_main(
    args: list[str], tmp_path: Path, server: FakeOpenAI | None = None, model: str = "fake-model"
) -> subprocess.CompletedProcess[str]:
    where = ["--base-url", server.url, "--api-key", "sk-test"] if server is not None else []
    return run_cli(
        "main.py", "run", *args, "--model", model, *where, "--results-dir", str(tmp_path / "runs"),
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip


def records(tmp_path: Path, model: str = "fake-model") -> list[dict[str, Any]]:
    (run_dir,) = (tmp_path / "runs" / model).iterdir()
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def said(word: str) -> Any:
    return lambda request: completion(text(word))


@pytest.mark.parametrize(
    ("dataset", "flags", "error"),
    [
        ("name: x\ncases:\n- name: a\n  input: hi\n", [], "{path}: cases.0.inputs: Field required"),
        ("name: x\ncases: [\n", [], "{path}: ParserError: while parsing a flow node expected the node content, but "
         "found '<stream end>' in \"<unicode string>\", line 3, column 1: ^"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n  evaluators: [Nope]\n", [],
         "{path}: Evaluator 'Nope' is none of pydantic_evals' evaluators: name its module (--evaluators MODULE)"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n  evaluators: [{MaxDuration: {minutes: 1}}]\n", [],
         "{path}: Failed to instantiate evaluator 'MaxDuration' for case 'a': MaxDuration.__init__() got an "
         "unexpected keyword argument 'minutes'"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n", ["--output-type", "nowhere:Reply"],
         "output type 'nowhere:Reply': cannot import 'nowhere': ModuleNotFoundError: No module named 'nowhere'"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n", ["--evaluators", "moody:Missing"],
         "evaluator 'moody:Missing': 'moody' has no 'Missing'"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n  expected_output: {word: hi}\n", [],
         "{path}: cases.0.expected_output: Input should be a valid string (the output type is str unless "
         "--output-type module:Class or the file's $schema names one)"),
        ("name: x\ncases:\n- name: a\n  inputs: hi\n- name: a\n  inputs: ho\n", [],
         "{path}: ValueError: Duplicate case name: 'a'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2_before_any_request(
    tmp_path: Path, dataset: str, flags: list[str], error: str
) -> None:
    (tmp_path / "moody.py").write_text(MODULE, encoding="utf-8")
    path = tmp_path / "cases.yaml"
    path.write_text(dataset, encoding="utf-8")
    with FakeOpenAI(said("hi")) as server:
        done = run_main(["--dataset", str(path), *flags], tmp_path, server)
    assert done.returncode == 2
    message = error.format(path=f"dataset {path}")
    assert done.stderr == f"main.py: error: {message}\n"
    assert server.requests == []


def moods(tmp_path: Path, cases: list[str], evaluators: str, flags: list[str]) -> subprocess.CompletedProcess[str]:
    """A run of the `moods` dataset (`Moody` among its evaluators), each case answered with its word."""
    (tmp_path / "moody.py").write_text(MODULE, encoding="utf-8")
    path = tmp_path / "moods.yaml"
    listed = "".join(f"- {{name: {case}, inputs: {case}}}\n" for case in cases)
    path.write_text(f"name: moods\ncases:\n{listed}evaluators: {evaluators}\n", encoding="utf-8")
    replies = {"fine": {"word": "sunny"}, "boom": {"word": "x"}, "hang": {"word": "y"}}
    with FakeOpenAI(lambda r: completion(tool_call(replies[prompt_of(r)], name="final_result"))) as server:
        return run_main(
            ["--dataset", str(path), "--output-type", "moody:Reply", "--evaluators", "moody", "--score", "length",
             *flags],
            tmp_path, server,
        )  # fmt: skip


def test_an_evaluator_that_raises_or_hangs_is_that_case_s_error_and_the_run_goes_on(tmp_path: Path) -> None:
    done = moods(tmp_path, ["fine", "boom", "hang"], "[Moody]", ["-S", "evaluator_timeout=1", "--concurrency", "3"])
    assert "Traceback" not in done.stderr
    by_case = {r["case_id"]: r for r in records(tmp_path)}
    assert {case: (r["status"], r["error"], r["output"]) for case, r in by_case.items()} == {
        "fine": ("partial", None, {"word": "sunny"}),
        "boom": ("error", "CaseScoringError: case 'boom': evaluator Moody failed: ValueError: no luck", {"word": "x"}),
        "hang": ("error", "CaseScoringError: case 'hang': evaluator Moody took more than 1 s", {"word": "y"}),
    }
    assert by_case["fine"]["score"] == len("word='sunny'")  # the named score heads the run: `length`, unbounded
    assert "moods: length: 1200.00  (fake-model, tool mode)" in done.stdout
    assert "headline: the mean over the cases of the score 'length', 12 as its evaluator gives it (x 100 above)" in (
        done.stdout
    )
    (run_dir,) = (tmp_path / "runs" / "fake-model").iterdir()
    exported = run_cli("format_result.py", "--format", "pydantic-evals", str(run_dir), text=False)
    exported.check_returncode()
    report = EvaluationReportAdapter.validate_json(exported.stdout)
    assert [case.name for case in report.cases] == ["fine"]
    assert sorted((f.name, f.error_message) for f in report.failures) == [
        ("boom", "CaseScoringError: case 'boom': evaluator Moody failed: ValueError: no luck"),
        ("hang", "CaseScoringError: case 'hang': evaluator Moody took more than 1 s"),
    ]


def test_when_an_evaluator_fails_the_others_end_and_what_the_judge_spent_counts_with_the_case(tmp_path: Path) -> None:
    done = moods(tmp_path, ["fine", "boom"], "[Moody, {LLMJudge: says a word}]", ["--judge-model", "test"])
    assert "Traceback" not in done.stderr
    by_case = {r["case_id"]: r for r in records(tmp_path)}
    assert (by_case["boom"]["status"], by_case["fine"]["status"]) == ("error", "partial")
    assert [by_case[case]["usage"]["requests"] for case in ("fine", "boom")] == [2, 2]  # its request, the judge's
    judged = by_case["fine"]["usage"]["input_tokens"] - by_case["fine"]["attempts"][0]["input_tokens"]
    assert judged > 0
    assert by_case["boom"]["usage"]["input_tokens"] - by_case["boom"]["attempts"][0]["input_tokens"] == judged


def test_the_judge_is_the_command_line_s_and_a_text_run_with_repeats_exports_as_pydantic_evals_names_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "words.yaml"
    path.write_text(TEXT_DATASET + "- LLMJudge: says a number\n", encoding="utf-8")
    with FakeOpenAI(lambda r: completion(text(prompt_of(r).split()[-1]))) as server:
        done = run_main(
            ["--dataset", str(path), "--mode", "text", "--repeats", "2", "--judge-model", "test"], tmp_path, server
        )
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 6  # three cases twice; the judge is `test`, never the run's server
    rows = records(tmp_path)
    assert sorted((r["case_id"], r["repeat"], r["output"], r["score"]) for r in rows) == [
        ("one", 0, "one", 2 / 3), ("one", 1, "one", 2 / 3),
        ("three", 0, "three", 1.0), ("three", 1, "three", 1.0),
        ("two", 0, "two", 1.0), ("two", 1, "two", 1.0),
    ]  # fmt: skip
    judged = rows[0]["score_details"]["evaluations"]["assertions"]["LLMJudge"]
    assert judged == {"name": "LLMJudge", "value": True, "reason": "the offline test judge passes every output",
                      "evaluator_version": None,
                      "source": {"name": "LLMJudge", "arguments": ["says a number"]}}  # fmt: skip
    first = next(r for r in rows if (r["case_id"], r["repeat"]) == ("one", 0))
    assert answer_lines(PYDANTIC_EVALS, SampleRecord.model_validate(first)) == [  # as the case viewer shows it
        AnswerLine("one"),
        AnswerLine("EqualsExpected", "pass"),
        AnswerLine("Contains: Output string 'one' does not contain expected string 't'", "fail"),
        AnswerLine("LLMJudge: the offline test judge passes every output", "pass"),
    ]
    (run_dir,) = (tmp_path / "runs" / "fake-model").iterdir()
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["settings"]["judge_model"] == "test"
    exported = run_cli("format_result.py", "--format", "pydantic-evals", str(run_dir), text=False)
    exported.check_returncode()
    report = EvaluationReportAdapter.validate_json(exported.stdout)
    assert sorted((c.name, c.source_case_name) for c in report.cases) == [
        ("one [1/2]", "one"), ("one [2/2]", "one"), ("three [1/2]", "three"), ("three [2/2]", "three"),
        ("two [1/2]", "two"), ("two [2/2]", "two"),
    ]  # fmt: skip
    groups = report.case_groups()
    assert groups is not None and sorted(group.name for group in groups) == ["one", "three", "two"]


def test_two_runs_of_one_dataset_compare_with_the_paired_test(tmp_path: Path) -> None:
    path = tmp_path / "words.yaml"
    path.write_text(TEXT_DATASET, encoding="utf-8")
    with FakeOpenAI(lambda r: completion(text(prompt_of(r).split()[-1]))) as good:
        assert run_main(["--dataset", str(path), "--mode", "text"], tmp_path, good, model="good").returncode == 0
    with FakeOpenAI(said("none")) as bad:
        assert run_main(["--dataset", str(path), "--mode", "text"], tmp_path, bad, model="bad").returncode == 0
    (a,) = (tmp_path / "runs" / "good").iterdir()
    (b,) = (tmp_path / "runs" / "bad").iterdir()
    compared = run_cli("format_result.py", "--compare", str(a), str(b), "--format", "json", text=False)
    compared.check_returncode()
    comparison = json.loads(compared.stdout)
    assert (comparison["paired"], comparison["a_better"], comparison["b_better"]) == (3, 3, 0)
    assert (comparison["test"], comparison["p_value"], comparison["difference"]) == ("sign", 0.25, 250 / 3)


def test_a_scorer_taking_seconds_is_timed_and_its_case_scoring_error_is_that_case_s_only() -> None:
    """What the suite's scorer relies on, for any task: a scorer with a `seconds` parameter gets the sample's; its
    `CaseScoringError` makes that case an error (its output kept) and the run goes on."""
    import asyncio

    from pydantic import BaseModel

    import evaluator
    from typed_eval.core.errors import CaseScoringError

    class Word(BaseModel):
        word: str

    timed: dict[str, float | None] = {}

    def score(case: evaluator.Case, output: Word, seconds: float | None = None) -> float:
        timed[case.id] = seconds
        if case.id == "b":
            raise CaseScoringError("b: no verdict")
        return 1.0

    task = evaluator.Task(name="words", output_type=Word, score=score, example={"word": "x"})
    cases = [evaluator.Case(id="a", prompt="one"), evaluator.Case(id="b", prompt="two")]
    result = asyncio.run(evaluator.evaluate(task, cases, "test"))
    by_case = {r.case_id: r for r in result.records}
    assert {k: (r.status, r.score, r.output, r.error) for k, r in by_case.items()} == {
        "a": ("correct", 1.0, {"word": "x"}, None),
        "b": ("error", None, {"word": "x"}, "CaseScoringError: b: no verdict"),
    }
    assert sorted(timed) == ["a", "b"] and all(isinstance(s, float) and s >= 0 for s in timed.values())
    assert (result.scores.correct, result.scores.errors) == (1, 1)


def test_a_run_of_any_suite_exports_as_an_evaluation_report_with_its_score(tmp_path: Path) -> None:
    done = run_cli(
        "main.py", "run", "--model", "test", "--mode", "tag", "--limit", "3", "--quiet",
        "--results-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs" / "test").iterdir()
    exported = run_cli(
        "format_result.py", "--format", "pydantic-evals", str(run_dir), "-o", str(tmp_path / "report.json"), text=False
    )
    exported.check_returncode()
    assert exported.stdout == b""
    report = EvaluationReportAdapter.validate_json((tmp_path / "report.json").read_bytes())
    stored = {r["case_id"]: r for r in records(tmp_path, "test")}
    assert len(report.cases) + len(report.failures) == 3
    for case in report.cases:
        assert case.scores["score"].value == stored[case.name]["score"]
        assert (case.inputs, case.output) == (stored[case.name]["prompt"], stored[case.name]["output"])
    assert report.name == "test (tag mode)" and report.experiment_metadata is not None


def test_inputs_of_a_named_type_reach_the_evaluators_as_it_and_the_prompt_as_json(tmp_path: Path) -> None:
    (tmp_path / "moody.py").write_text(MODULE, encoding="utf-8")
    path = tmp_path / "where.yaml"
    path.write_text(
        "name: where\ncases:\n- {name: it, inputs: {country: Italy}}\nevaluators: [Asked]\n", encoding="utf-8"
    )
    with FakeOpenAI(said("Rome")) as server:
        done = run_main(
            ["--dataset", str(path), "-S", "inputs_type=moody:Where", "--evaluators", "moody:Asked", "--mode", "text"],
            tmp_path, server,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert prompt_of(server.requests[0]) == '{\n  "country": "Italy"\n}'
    (record,) = records(tmp_path)
    found = record["score_details"]["evaluations"]
    assert (found["labels"]["where"]["value"], found["assertions"]["typed"]["value"], record["score"]) == (
        "ITALY",
        True,
        1.0,
    )


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_with_no_output_type_the_schema_file_names_one(tmp_path: Path, suffix: str) -> None:
    """`to_file` writes the cases' JSON Schema beside the dataset: its expected output's object schema is posed."""
    from pydantic import BaseModel
    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import EqualsExpected, IsInstance

    class City(BaseModel):
        name: str
        people: int

    dataset = Dataset[str, City, Any](
        name="towns",
        cases=[Case(name="fr", inputs="Capital of France?", expected_output=City(name="Paris", people=2))],
        evaluators=[EqualsExpected(), IsInstance(type_name="City")],
    )
    path = tmp_path / f"towns.{suffix}"
    dataset.to_file(path)
    with FakeOpenAI(lambda r: completion(tool_call({"name": "Paris", "people": 2}, name="final_result"))) as server:
        done = run_main(["--dataset", str(path)], tmp_path, server)
    assert done.returncode == 0, done.stderr
    (tool,) = server.requests[0]["tools"]
    assert tool["function"]["parameters"]["properties"] == {
        "name": {"type": "string"},
        "people": {"type": "integer"},
    }  # as pydantic-ai sends a schema to OpenAI: titles left out
    (record,) = records(tmp_path)
    found = record["score_details"]["evaluations"]["assertions"]
    assert (found["EqualsExpected"]["value"], found["IsInstance"]["reason"]) == (True, "output is of type dict")


def test_an_export_of_a_record_whose_kept_results_were_edited_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from typed_eval.cli.leaderboard_command import main as format_result

    path = tmp_path / "words.yaml"
    path.write_text(TEXT_DATASET, encoding="utf-8")
    with FakeOpenAI(lambda r: completion(text(prompt_of(r).split()[-1]))) as server:
        assert run_main(["--dataset", str(path), "--mode", "text"], tmp_path, server).returncode == 0
    (run_dir,) = (tmp_path / "runs" / "fake-model").iterdir()
    rows = records(tmp_path)
    rows[0]["score_details"]["evaluations"]["assertions"]["EqualsExpected"]["value"] = "maybe\x1b[2J"
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert format_result(["--format", "pydantic-evals", str(run_dir)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"format_result.py: error: {run_dir}: case {rows[0]['case_id']!r}: its pydantic_evals results cannot be "
        "read: EqualsExpected.value: Input should be a valid boolean, unable to interpret input\n"
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"Case": {"properties": {"expected_output": True}}}},
        {"$defs": {"Case": {"properties": {"expected_output": {"$ref": "#/$defs/A"}}}, "A": "not a schema"}},
        {"$defs": [], "properties": {}},
    ],
)
def test_a_schema_file_edited_by_hand_names_no_output_type(tmp_path: Path, schema: dict[str, Any]) -> None:
    from typed_eval.suites.evals.schema_output import schema_output

    (tmp_path / "cases_schema.json").write_text(json.dumps(schema), encoding="utf-8")
    path = tmp_path / "cases.yaml"
    path.write_text("# yaml-language-server: $schema=cases_schema.json\nname: x\n", encoding="utf-8")
    assert schema_output(path) is None
