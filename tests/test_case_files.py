"""Case files (promptfoo's test-case format, seed 003's difficulty-weighted score): reading and refusing files,
every assertion kind, the weighted score, an LLM judge's spend, repeats, statistics, and the command line
(TestModel, budgets and resume), driven through pydantic-ai's real agent loop with FunctionModel and TestModel."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

import evaluator
from evaluator import Case, EvaluationResult, RunSummary, SampleRecord
from tests.cli_run import run_cli
from tests.conftest import FAREL_FIXTURES, REPO
from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import EvaluatorError, TaskError
from typed_eval.core.scoring import score_records
from typed_eval.suites.case_files.assertions import Graded, Output, check_of, compile_assertion
from typed_eval.suites.case_files.js import comma_separated, js_number
from typed_eval.suites.case_files.suite import context_level, load_case_file, render, with_judge
from typed_eval.suites.judge import Judge

EXAMPLE = REPO / "examples" / "complex_cases.yaml"
IDS = [f"test-00{n}" for n in range(1, 8)]
WEIGHTS = [3.0, 5.0, 5.0, 5.0, 9.0, 4.0, 8.0]
"""D of each example test: reasoning + format + context (the ledger's prompt is 3,069 characters: context 2)."""
TEST_MODEL_SCORE = 100 * float(Fraction(43, 12) / 39)
"""TestModel on the example: R = 1/3, 0, 1/4, 0, 0, 1/3, missing, so sum(R x D) = 1 + 5/4 + 4/3 = 43/12 of 39."""


def load(text: str, tmp_path: Path, name: str = "cases.yaml") -> tuple[evaluator.Task[Any], list[Case]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    task, dataset = load_case_file(path)
    return task, dataset.load()


def refused(text: str, tmp_path: Path) -> str:
    with pytest.raises(EvaluatorError) as caught:
        load(text, tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    return message.replace(str(tmp_path / "cases.yaml"), "F")


# --- difficulty and the file ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "level"), [(0, 1), (2000, 1), (2001, 2), (5000, 2), (5001, 3), (30000, 3)])
def test_context_difficulty_follows_the_seed(length: int, level: int) -> None:
    assert context_level("x" * length) == level


def test_the_example_file_weighs_each_test_by_its_difficulty() -> None:
    task, dataset = load_case_file(EXAMPLE)
    cases = dataset.load()
    assert [c.id for c in cases] == IDS
    assert [c.weight for c in cases] == WEIGHTS
    assert [c.group for c in cases] == ["format 1", "format 2", "format 2", "format 3", "format 3", "format 1",
                                        "format 3"]  # fmt: skip
    assert cases[4].metadata["difficulty"] == {"reasoning": 4, "format": 3, "context": 2, "total": 9}
    assert len(cases[4].prompt) == 3069
    assert cases[4].prompt.startswith("LEDGER OF NORTHGATE SUPPLY CO.")
    assert cases[0].prompt == "Which city is the capital of Australia? Answer in one sentence."
    assert cases[2].expected[0] == {"type": "contains", "value": "access.log", "weight": 1.0}
    assert cases[4].metadata["output_name"] == "ledger_answer"
    assert cases[6].metadata["output_name"] == "schedule"
    kinds = {spec["type"] for case in cases for spec in case.expected}
    assert kinds == {"equals", "contains", "icontains", "not-contains", "regex", "is-json", "contains-json", "python",
                     "llm-rubric", "contains-any"}  # fmt: skip
    assert (dataset.info.suite, dataset.info.source, task.name) == ("complex_cases", "file", "complex_cases")


def test_prompts_tests_files_and_default_test(tmp_path: Path) -> None:
    (tmp_path / "intro.txt").write_text("Say hello to {{name}}.", encoding="utf-8")
    (tmp_path / "person.txt").write_text("Ada", encoding="utf-8")
    (tmp_path / "more.yaml").write_text("- vars: {name: Bob}\n  assert: [{type: equals, value: hi}]\n")
    _, cases = load(
        """
prompts: ["Greet {{name}}.", "file://intro.txt"]
providers: [anything]
defaultTest:
  vars: {name: nobody}
  assert: [{type: icontains, value: "{{name}}", weight: 0.5}]
tests:
  - description: first
    vars: {name: file://person.txt}
    assert: [{type: contains, value: hello}]
    metadata: {difficulty: {reasoning: 4}}
  - file://more.yaml
""",
        tmp_path,
    )
    assert [(c.id, c.prompt, c.weight) for c in cases] == [
        ("test-001.p1", "Greet Ada.", 6.0),
        ("test-001.p2", "Say hello to Ada.", 6.0),
        ("test-002.p1", "Greet Bob.", 3.0),
        ("test-002.p2", "Say hello to Bob.", 3.0),
    ]
    assert cases[0].expected == [
        {"type": "icontains", "value": "Ada", "weight": 0.5},
        {"type": "contains", "value": "hello", "weight": 1.0},
    ]
    assert cases[1].metadata == {"difficulty": {"reasoning": 4, "format": 1, "context": 1, "total": 6},
                                 "description": "first", "prompt": 2}  # fmt: skip


def test_templates_fill_names_and_keep_raw_blocks() -> None:
    variables = {"a": "x", "n": 2.0, "obj": {"k": [1, {"z": True}], "m": {"z": False}}}
    filled = render("{{a}}-{{ n }}-{{obj.m.z}}-{{obj}}-{{obj.k}}", variables, "w")
    assert filled == "x-2-false-[object Object]-1,[object Object]"  # as Nunjucks writes objects and lists
    assert render("{% raw %}{{a}}{% endraw %}{{a}}", variables, "w") == "{{a}}x"
    with pytest.raises(TaskError, match=r"^w: \{\{b\}\} names no var of this test$"):
        render("{{b}}", variables, "w")
    with pytest.raises(TaskError, match=r"^w: \{\{a \| upper\}\} is not a \{\{name\}\} placeholder"):
        render("{{ a | upper }}", variables, "w")
    with pytest.raises(TaskError, match=r"^w: \{\{obj.k.1\}\} is not a \{\{name\}\} placeholder"):
        render("{{obj.k.1}}", variables, "w")  # Nunjucks: "expected name as lookup value, got 1"


# --- assertions -------------------------------------------------------------------------------------------------

SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("spec", "output", "score"),
    # promptfoo's scores: a python number is not clamped, not-python keeps a number's score (only its pass flips),
    # and a dict must be a whole GradingResult
    [
        ({"type": "equals", "value": "YES"}, "YES", 1.0),
        ({"type": "equals", "value": "YES"}, "YES.", 0.0),
        ({"type": "equals", "value": 4}, "4", 1.0),
        ({"type": "equals", "value": {"a": [1, 2]}}, '{ "a": [1, 2] }', 1.0),
        ({"type": "not-equals", "value": {"a": 1}}, "not json", 1.0),
        ({"type": "contains", "value": "cat"}, "a cat sat", 1.0),
        ({"type": "contains", "value": "Cat"}, "a cat sat", 0.0),
        ({"type": "icontains", "value": "CAT"}, "a cat sat", 1.0),
        ({"type": "not-contains", "value": "dog"}, "a cat sat", 1.0),
        ({"type": "not-contains", "value": "cat"}, "a cat sat", 0.0),
        ({"type": "not-icontains", "value": "CAT"}, "a cat sat", 0.0),
        ({"type": "starts-with", "value": "a cat"}, "a cat sat", 1.0),
        ({"type": "contains-any", "value": "dog, sat"}, "a cat sat", 1.0),
        ({"type": "contains-all", "value": ["cat", "dog"]}, "a cat sat", 0.0),
        ({"type": "icontains-all", "value": ["CAT", "SAT"]}, "a cat sat", 1.0),
        ({"type": "regex", "value": r"^\d{3}$"}, "123", 1.0),
        ({"type": "regex", "value": r"c.t"}, "a cat sat", 1.0),
        ({"type": "not-regex", "value": r"\d"}, "a cat sat", 1.0),
        ({"type": "is-json"}, '{"n": 1}', 1.0),
        ({"type": "is-json"}, 'Here: {"n": 1}', 0.0),
        ({"type": "is-json", "value": SCHEMA}, '{"n": "one"}', 0.0),
        ({"type": "is-json", "value": json.dumps(SCHEMA)}, '{"n": 3}', 1.0),
        ({"type": "not-is-json"}, "plain", 1.0),
        ({"type": "contains-json"}, 'Here: {"n": 1} and {"n": "x"}', 1.0),
        ({"type": "contains-json", "value": SCHEMA}, 'Here: {"n": "x"} then {"n": 2}', 1.0),
        ({"type": "contains-json", "value": SCHEMA}, 'Here: {"n": "x"}', 0.0),
        ({"type": "contains-json"}, "no braces at all {", 0.0),
        ({"type": "python", "value": "output.upper() == 'OK'"}, "ok", 1.0),
        ({"type": "python", "value": "len(output) / 10"}, "abcd", 0.4),
        ({"type": "python", "value": "len(output)"}, "abcd", 4.0),
        ({"type": "python", "value": "-3"}, "abcd", -3.0),
        ({"type": "python", "value": "'0.25'"}, "abcd", 0.25),
        ({"type": "python", "value": "context['vars']['want'] in output"}, "I want pie", 1.0),
        (
            {"type": "python", "value": "x = len(output)\nreturn {'pass': x > 2, 'score': 0.5, 'reason': 'half'}"},
            "abcd",
            0.5,
        ),
        ({"type": "python", "value": "if output == 'a':\n  return {'pass': True}\nreturn {'pass': False}"}, "a", 0.0),
        ({"type": "not-python", "value": "0.25"}, "abcd", 0.25),
        ({"type": "python", "value": "json.loads(output)['n'] == 1"}, "not json", 0.0),
    ],
)
def test_each_assertion_gives_promptfoos_result(spec: dict[str, Any], output: str, score: float) -> None:
    graded = check(spec, output, {"vars": {"want": "pie"}})
    assert graded.score == score
    assert graded.passed is (score > 0 and spec["type"] != "not-python")


def check(spec: dict[str, Any], output: str, context: dict[str, Any] | None = None, base: Path = REPO) -> Graded:
    """An assertion read as a case file's, then checked in this process (as its child process checks it)."""
    assertion = compile_assertion(spec, render=lambda text: text, base=base, where="w")
    return check_of(assertion.spec)(Output(output, output), context or {})


def test_python_failures_score_0_with_the_reason() -> None:
    graded = check({"type": "python", "value": "json.loads(output)"}, "x")
    assert (graded.score, graded.passed) == (0.0, False)
    assert graded.reason == ("Python code execution failed: JSONDecodeError: Expecting value: line 1 column 1 (char 0)")


def test_python_files_run_get_assert_or_the_named_function(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text(
        "def get_assert(output, context):\n    return {'pass': True, 'score': 0.3, 'reason': context['config']['r']}\n"
        "def strict(output, context):\n    return output == 'exact'\n",
        encoding="utf-8",
    )
    by_default = compile_assertion({"type": "python", "value": "file://check.py", "config": {"r": "why"}},
                                   render=str, base=tmp_path, where="w")  # fmt: skip
    graded = check_of(by_default.spec)(Output("x", "x"), {"config": {"r": "why"}})
    assert (graded.score, graded.reason, graded.passed) == (0.3, "why", True)
    assert by_default.spec["file_md5"] == hashlib.md5((tmp_path / "check.py").read_bytes()).hexdigest()
    assert check({"type": "python", "value": "file://check.py:strict"}, "exact", base=tmp_path).score == 1.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "prompts: [p]\ntests: [{assert: [{type: javascript, value: output.length < 9}]}]",
            "case file F: test 1, assertion 1: javascript is out of scope: JavaScript is not run here (write it as a "
            "python assertion)",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: similar, value: x}]}]",
            "case file F: test 1, assertion 1: unknown assertion type 'similar' (known: equals, contains, icontains, "
            "starts-with, regex, contains-any, contains-all, icontains-any, icontains-all, is-json, contains-json, "
            "python, llm-rubric, and not-TYPE but not-llm-rubric)",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: not-llm-rubric, value: x}]}]",
            "case file F: test 1, assertion 1: unknown assertion type 'not-llm-rubric' (known: equals, contains, "
            "icontains, starts-with, regex, contains-any, contains-all, icontains-any, icontains-all, is-json, "
            "contains-json, python, llm-rubric, and not-TYPE but not-llm-rubric)",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: regex, value: '('}]}]",
            "case file F: test 1, assertion 1: regex /(/: missing ), unterminated subpattern at position 0",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: python, value: 'return ('}]}]",
            "case file F: test 1, assertion 1: invalid Python: invalid syntax (line 1)",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: python, value: file://nowhere.py}]}]",
            "case file F: test 1, assertion 1: cannot read file://nowhere.py: No such file or directory",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: is-json, value: {type: 12}}]}]",
            "case file F: test 1, assertion 1: not a valid JSON schema: 12 is not valid under any of the given schemas",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: contains, value: x, weight: -1}]}]",
            "case file F: test 1, assertion 1: weight must be a finite number of 0 or more, got -1",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: regex, value: '^(a)\\1$'}]}]",
            "case file F: test 1, assertion 1: regex /^(a)\\1$/: backreferences and octal escapes (\\1...) are not "
            "supported",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: is-json, value: {type: object, format: uri}}]}]",
            "case file F: test 1, assertion 1: format 'uri' is checked by ajv-formats' own pattern: not supported",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: is-json, value: {type: object, x-extra: 1}}]}]",
            "case file F: test 1, assertion 1: strict mode: unknown keyword 'x-extra' (promptfoo's Ajv refuses it)",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: contains-any, value: '\"a, b'}]}]",
            "case file F: test 1, assertion 1: contains-any's comma-separated value has an unterminated quoted field",
        ),
        (
            "prompts: [p]\ntests: [{vars: {d: {2024-01-01: x}}, assert: [{type: contains, value: x}]}]",
            "case file F is not valid YAML: the key 2024-01-01 is a date to promptfoo (a JavaScript Date), which it "
            "refuses as a key: quote it",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: contains, value: 2024-01-01}]}]",
            "case file F: test 1, assertion 1: contains needs a string or number value",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: contains, value: x}], assert: []}]",
            "case file F is not valid YAML: duplicated mapping key 'assert'",
        ),
        (
            "prompts: [p]\ntests: [{assert: [{type: contains, value: x, transform: output.trim()}]}]",
            "case file F: test 1, assertion 1: transform is JavaScript, out of scope here",
        ),
        (
            "prompts: [p]\ntests: [{vars: {a: 1}}]",
            "case file F: test 1: it has no assertions (assert: a list of type / value / weight)",
        ),
        (
            "prompts: ['{{b}}']\ntests: [{vars: {a: 1}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1, prompt 1: {{b}} names no var of this test",
        ),
        (
            "prompts: [p]\ntests: [{vars: {a: [1, 2]}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: var a is a list (promptfoo poses each value as its own test): write one test per "
            "value",
        ),
        (
            "prompts: [p]\ntests: [{metadata: {difficulty: {reasoning: 3}}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: difficulty reasoning must be 1, 2 or 4, got 3",
        ),
        (
            "prompts: [p]\ntests: [{metadata: {difficulty: {format: 4}}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: difficulty format must be 1, 2 or 3, got 4",
        ),
        (
            "prompts: [p]\ntests: [{metadata: {difficulty: {context: 2}}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: metadata.difficulty takes reasoning (1, 2 or 4) and format (1, 2 or 3); context is "
            "measured from the prompt",
        ),
        (
            "prompts: [p]\ntests: [{options: {transform: x}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: options.transform is not supported (it changes what is scored)",
        ),
        (
            "prompts: [p]\ntests: [{options: {output_schema: {type: array}}, assert: [{type: contains, value: x}]}]",
            "case file F: test 1: an output schema must be a JSON schema of type object",
        ),
        (
            "tests: [{assert: [{type: contains, value: x}]}]",
            "case file F: it needs prompts (templates with {{var}} placeholders, or file:// paths)",
        ),
        ("prompts: [p]\ntests: [{assert: [{type: contains, value: x}]\n", "case file F is not valid YAML: while"),
    ],
)
def test_bad_files_are_refused_in_one_line_before_any_request(text: str, message: str, tmp_path: Path) -> None:
    assert refused(text, tmp_path).startswith(message)


# --- evaluating the example with FunctionModel -----------------------------------------------------------------

LEDGER_ENTRIES = [
    {"date": "2024-02-14", "kind": "invoice paid", "amount": 2325.25, "reference": "NG-214-448"},
    {"date": "2024-02-16", "kind": "refund issued", "amount": 1879.75, "reference": "NG-216-662"},
    {"date": "2024-02-20", "kind": "invoice paid", "amount": 281.5, "reference": "NG-220-886"},
    {"date": "2024-02-27", "kind": "invoice paid", "amount": 1981.0, "reference": "NG-227-162"},
]
RIGHT: dict[str, Any] = {
    "capital of Australia": "The capital of Australia is Canberra.",
    "power of 10": "YES",
    "shell command": "grep -c ERROR access.log",
    "largest city of Japan": '{"city": "Tokyo", "country": "Japan", "population_millions": 37.4}',
    "From the ledger above": {"client": "Hallam & Sons", "entries": LEDGER_ENTRIES, "net_eur": 2708.0},
    "sky is blue": "Air molecules scatter short blue wavelengths most (Rayleigh scattering). At sunset the light "
    "crosses much more air, so the blue is scattered away and the red remains.",
    "Three meetings": {"budget": "09:00", "hiring": "10:00", "review": "10:30"},
}
PARTLY: dict[str, Any] = {
    **RIGHT,
    "capital of Australia": "Sydney is larger, but the capital is Canberra.",
    "power of 10": "Yes.",
    "From the ledger above": {"client": "Hallam & Sons", "entries": LEDGER_ENTRIES, "net_eur": 2700.0},
}


def prompt_of(messages: Sequence[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def answering(answers: dict[str, Any], first_try: dict[str, Any] | None = None) -> FunctionModel:
    """Answers each case by a phrase of its prompt: text, or a call of the case's output tool."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = prompt_of(messages)
        key = next(k for k in answers if k in prompt)
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        answer = (first_try or {}).get(key, answers[key]) if turn == 0 else answers[key]
        if isinstance(answer, str):
            assert info.output_tools == []
            return ModelResponse(parts=[TextPart(answer)])
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, answer)])

    return FunctionModel(respond)


def judging(score: float) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert prompt_of(messages).startswith("<Output>\nAir molecules scatter")
        assert "<Rubric>\nAttributes the blue sky to Rayleigh scattering" in prompt_of(messages)
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"reason": f"scored {score}", "score": score})])

    return FunctionModel(respond)


def run_example(model: Any, judge: Any, **options: Any) -> EvaluationResult:
    task, dataset = load_case_file(EXAMPLE)
    judged = with_judge(task, judge)
    return asyncio.run(evaluator.evaluate(judged, dataset.cases(), model, local=True, **options))


def test_a_model_that_passes_every_assertion_scores_100() -> None:
    result = run_example(answering(RIGHT), Judge(judging(1.0), "fn-judge", local=True))
    records = result.records
    assert [(r.case_id, r.mode, r.status, r.score, r.weight) for r in records] == [
        (case_id, mode, "correct", 1.0, weight)
        for case_id, mode, weight in zip(IDS, ["text"] * 4 + ["tool", "text", "tool"], WEIGHTS, strict=True)
    ]
    assert records[4].output == RIGHT["From the ledger above"]
    assert records[5].score_details == {"pass": True, "assertions": [
        {"type": "llm-rubric", "weight": 2.0, "score": 1.0, "pass": True, "reason": "scored 1.0", "judge": "fn-judge"},
        {"type": "python", "weight": 1.0, "score": 1.0, "pass": True, "reason": "Assertion passed"},
    ]}  # fmt: skip
    assert [r.usage.requests for r in records] == [1, 1, 1, 1, 1, 2, 1]  # the judge's request counts with its case
    assert (result.scores.score, result.scores.aggregate, result.scores.correct) == (100.0, "mean", 7)


def test_the_score_is_sum_of_r_times_d_over_sum_of_d() -> None:
    bad_times = {"Three meetings": {"budget": "9am", "hiring": "10:00", "review": "10:30"}}
    result = run_example(answering(PARTLY, bad_times), Judge(judging(0.5), "fn-judge", local=True))
    records = {r.case_id: r for r in result.records}
    r_values = [Fraction(2, 3), Fraction(0), Fraction(1), Fraction(1), Fraction(5, 8), Fraction(2, 3), Fraction(1)]
    assert [records[i].score for i in IDS] == [float(r) for r in r_values]
    assert [records[i].status for i in IDS] == ["partial", "incorrect", "correct", "correct", "partial", "partial",
                                                "correct"]  # fmt: skip
    weighted = sum(r * Fraction(int(d)) for r, d in zip(r_values, WEIGHTS, strict=True))
    assert weighted == Fraction(679, 24)
    assert result.scores.score == pytest.approx(100 * float(weighted / 39), abs=1e-12)  # 72.5427...
    assert [(g.group, g.score) for g in result.scores.groups] == [
        ("format 1", pytest.approx(100 * 2 / 3, abs=1e-12)),
        ("format 2", 50.0),
        ("format 3", pytest.approx(100 * (5 + 5.625 + 8) / 22, abs=1e-12)),
    ]
    ledger = records["test-005"].score_details
    assert ledger is not None and ledger["pass"] is False
    assert ledger["assertions"][0] == {
        "type": "python", "weight": 3.0, "score": 0.5, "pass": False,
        "reason": "4 of 4 entries, 0 wrong; net 2700.0, expected 2708.00",
    }  # fmt: skip
    schedule = records["test-007"]
    assert [(a.valid, a.invalid_kind) for a in schedule.attempts] == [(False, "invalid_value"), (True, None)]
    assert schedule.attempts[0].feedback == "output: budget: '9am' does not match '^[0-2][0-9]:[0-5][0-9]$'"


def test_a_structured_output_missing_a_field_is_retried_as_missing_field() -> None:
    wrong = {"From the ledger above": {"client": "Hallam & Sons", "entries": LEDGER_ENTRIES}}
    result = run_example(answering(RIGHT, wrong), Judge(judging(1.0), "fn-judge", local=True))
    ledger = result.records[4]
    assert [(a.valid, a.invalid_kind) for a in ledger.attempts] == [(False, "missing_field"), (True, None)]
    assert ledger.attempts[0].feedback == "output: output: 'net_eur' is a required property"
    assert result.scores.compliance.invalid_by_kind == {"missing_field": 1}


def test_the_judges_tokens_and_cost_count_with_the_sample() -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart(RIGHT["sky is blue"])], usage=RequestUsage(input_tokens=50, output_tokens=5)
        )

    def verdict(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = ToolCallPart(info.output_tools[0].name, {"reason": "fine", "score": 1.0})
        return ModelResponse(parts=[call], usage=RequestUsage(input_tokens=100, output_tokens=10))

    prices = UserPrices(1.0, 2.0)
    task, dataset = load_case_file(EXAMPLE)
    judged = with_judge(task, Judge(FunctionModel(verdict), "fn-judge", prices=prices))
    cases = [c for c in dataset.cases() if c.id == "test-006"]
    (record,) = asyncio.run(evaluator.evaluate(judged, cases, FunctionModel(answer), prices=prices)).records
    assert (record.usage.requests, record.usage.input_tokens, record.usage.output_tokens) == (2, 150, 15)
    assert (record.cost.usd, record.cost.source) == ((150 * 1.0 + 15 * 2.0) / 1e6, "user")


def test_llm_rubric_needs_a_judge() -> None:
    task, dataset = load_case_file(EXAMPLE)
    with pytest.raises(TaskError, match="llm-rubric needs a judge model"):
        asyncio.run(evaluator.evaluate(task, dataset.cases(), answering(RIGHT), local=True))


def test_repeats_average_the_passes() -> None:
    passes: dict[str, int] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = prompt_of(messages)
        key = next(k for k in RIGHT if k in prompt)
        passes[key] = passes.get(key, 0) + (not any(isinstance(m, ModelResponse) for m in messages))
        answer = PARTLY[key] if passes[key] == 2 else RIGHT[key]  # the second pass answers as PARTLY
        if isinstance(answer, str):
            return ModelResponse(parts=[TextPart(answer)])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, answer)])

    judges = iter([1.0, 0.5])

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"reason": "r", "score": next(judges)})])

    result = run_example(FunctionModel(respond), Judge(FunctionModel(judge), "j", local=True), repeats=2,
                         concurrency=1)  # fmt: skip
    assert [r.repeat for r in result.records] == [0] * 7 + [1] * 7
    second = 100 * float(Fraction(679, 24) / 39)  # PARTLY, as in the test above
    assert result.scores.score == pytest.approx((100.0 + second) / 2, abs=1e-12)


def test_statistics_and_comparisons_weigh_cases_as_the_score_does() -> None:
    right = run_example(answering(RIGHT), Judge(judging(1.0), "j", local=True))
    partly = run_example(answering(PARTLY), Judge(judging(0.5), "j", local=True))
    a, b = evaluator.analyse(right.records, "mean"), evaluator.analyse(partly.records, "mean")
    assert a.case_weights == dict(zip(IDS, WEIGHTS, strict=True))
    assert a.score_ci95() == (100.0, 100.0)
    low, high = b.score_ci95()  # type: ignore[misc]
    assert low < partly.scores.score < high  # type: ignore[operator]
    comparison = evaluator.compare(a, b)
    assert comparison.difference == pytest.approx(100.0 - partly.scores.score, abs=1e-12)  # type: ignore[operator]
    assert (comparison.test, comparison.a_better, comparison.b_better) == ("sign", 4, 0)
    stored = [SampleRecord.model_validate_json(r.model_dump_json()) for r in partly.records]
    assert score_records(stored, aggregate="mean").score == partly.scores.score


def test_weights_are_stored_and_unweighted_records_are_written_as_before() -> None:
    record = run_example(answering(RIGHT), Judge(judging(1.0), "j", local=True)).records[0]
    assert json.loads(record.model_dump_json())["weight"] == 3.0
    assert "weight" not in json.loads(record.model_copy(update={"weight": 1.0}).model_dump_json())
    assert (
        Case(id="c", prompt="p").model_dump_json() == '{"id":"c","prompt":"p","expected":null,"group":null,'
        '"metadata":{},"excluded":false}'
    )


def test_test_model_answers_every_case_offline() -> None:
    model = TestModel()
    result = run_example(model, Judge(TestModel(), "test", local=True))
    assert [r.status for r in result.records] == ["partial", "incorrect", "partial", "incorrect", "incorrect",
                                                  "partial", "missing"]  # fmt: skip
    assert result.scores.score == pytest.approx(TEST_MODEL_SCORE, abs=1e-12)


# --- the command line -------------------------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return run_cli("main.py", *args, env=env)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


def test_the_example_runs_from_the_command_line_with_test_model(tmp_path: Path) -> None:
    results = tmp_path / "results"
    done = cli("run", "--suite", str(EXAMPLE), "--model", "test", "--results-dir", str(results), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:4] == [
        "format 1: 33.33 (C: 0, I: 0, M: 0 A: 2, P: 2)",
        "format 2: 12.50 (C: 0, I: 1, M: 0 A: 2, P: 1)",
        "format 3: 0.00 (C: 0, I: 2, M: 1 A: 3)",
        "complex_cases score: 9.19  (test, tool mode)",
    ]
    (summary_file,) = results.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_file.read_text())
    assert (summary.suite, summary.task, summary.status) == ("complex_cases", "complex_cases", "finished")
    assert summary.scores.score == pytest.approx(TEST_MODEL_SCORE, abs=1e-12)
    assert summary.scores.totals.requests == 11  # 7 answers, 3 corrective retries, 1 judge verdict
    records = {  # records are written as cases finish, so read them by case
        record.case_id: record
        for line in (summary_file.parent / "samples.jsonl").read_text().splitlines()
        for record in [SampleRecord.model_validate_json(line)]
    }
    assert [records[case_id].mode for case_id in sorted(records)] == [
        "text", "text", "text", "text", "tool", "text", "tool"]  # fmt: skip
    assert records["test-006"].score_details["assertions"][0]["judge"] == "test"  # type: ignore[index]
    rows = run_cli("format_result.py", str(results), "--format", "json")
    rows.check_returncode()
    (row,) = json.loads(rows.stdout)
    assert (row["suite"], row["cases"], row["complete"]) == ("complex_cases", 7, True)
    assert row["score"] == pytest.approx(TEST_MODEL_SCORE, abs=1e-12)
    low, high = row["score_ci95"]
    assert low < row["score"] < high


def test_a_budget_stop_then_resume_gives_the_uninterrupted_score(tmp_path: Path) -> None:
    results = str(tmp_path / "results")
    common = ("run", "--suite", str(EXAMPLE), "--model", "test", "--results-dir", results, "--quiet",
              "--concurrency", "1", "--judge-model", "test", "--repeats", "2")  # fmt: skip
    stopped = cli(*common, "--max-requests", "3")
    assert stopped.returncode == 0, stopped.stderr
    (summary_file,) = Path(results).rglob("summary.json")
    partial = RunSummary.model_validate_json(summary_file.read_text())
    assert (partial.status, partial.reason, partial.scores.samples) == ("partial", "max_requests 3 reached", 3)
    replay = f"replay:{FAREL_FIXTURES / 'logs' / 'deepseek-v3.log'}"  # another judge, one that opens offline
    other_judge = cli(*common[:-4], "--judge-model", replay, "--repeats", "2", "--resume", str(summary_file.parent))
    assert other_judge.returncode == 2
    assert "judge_model 'test' != 'replay:deepseek-v3'" in other_judge.stderr
    resumed = cli(*common, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    final = RunSummary.model_validate_json(summary_file.read_text())
    assert (final.status, final.scores.samples, final.scores.totals.requests) == ("finished", 14, 22)
    assert final.scores.score == pytest.approx(TEST_MODEL_SCORE, abs=1e-12)
    assert final.settings.judge_model == "test"


def test_command_line_refusals_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("prompts: [p]\ntests: [{assert: [{type: javascript, value: 'output.length < 80'}]}]\n")
    dead = ("--model", "x", "--base-url", "http://127.0.0.1:9/v1")  # never asked: the file is refused first
    assert one_line_error(cli("run", "--suite", str(bad), *dead)) == (
        f"main.py: error: case file {bad}: test 1, assertion 1: javascript is out of scope: JavaScript is not run "
        "here (write it as a python assertion)"
    )
    assert one_line_error(cli("run", "--suite", "story-graph", "--model", "test", "--judge-model", "test")) == (
        "main.py: error: --judge-model: the story-graph task judges nothing: a judge grades the llm-rubric "
        "assertions of a case file and the answers of the novelty suite"
    )
    assert one_line_error(cli("run", "--suite", str(tmp_path / "none.yaml"), "--model", "test")) == (
        f"main.py: error: no case file {tmp_path / 'none.yaml'}"
    )


def test_refs_are_read_from_the_files_root_inlined_for_the_tool_and_recursive_ones_refused(tmp_path: Path) -> None:
    item = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    schema = {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"$ref": "#/definitions/item"}}},
    }
    file = {"definitions": {"item": item}, "prompts": ["p"],
            "tests": [{"options": {"output_schema": schema}, "assert": [{"type": "is-json"}]}]}  # fmt: skip
    task, cases = load(json.dumps(file), tmp_path, "cases.json")
    seen: list[dict[str, Any]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        (tool,) = info.output_tools
        seen.append(tool.parameters_json_schema)
        args = {"items": [{"n": "x"}]} if len(seen) == 1 else {"items": [{"n": 2}]}
        return ModelResponse(parts=[ToolCallPart(tool.name, args)])

    (record,) = asyncio.run(evaluator.evaluate(task, cases, FunctionModel(respond), local=True)).records
    assert seen[0]["properties"]["items"]["items"] == item
    assert [(a.invalid_kind, a.feedback) for a in record.attempts] == [
        ("wrong_type", "output: items.0.n: 'x' is not of type 'integer'"),
        (None, None),
    ]
    assert (record.output, record.score) == ({"items": [{"n": 2}]}, 1.0)
    file["definitions"] = {"n": {"type": "object", "properties": {"c": {"$ref": "#/definitions/n"}}}}
    file["tests"][0]["options"] = {
        "output_schema": {"type": "object", "properties": {"root": {"$ref": "#/definitions/n"}}}
    }  # type: ignore[index]
    assert refused(json.dumps(file), tmp_path) == (
        "case file F: $ref '#/definitions/n' refers to itself (a recursive schema is not supported)"
    )
    del file["definitions"]
    file["tests"][0]["options"] = {"output_schema": {"$defs": {"n": {}}, "type": "object",  # type: ignore[index]
                                                     "properties": {"root": {"$ref": "#/$defs/n"}}}}  # fmt: skip
    assert refused(json.dumps(file), tmp_path) == (
        "case file F: $ref '#/$defs/n' names nothing in the file (promptfoo reads it from the file's root)"
    )


def test_scores_are_means_weighted_by_case_weight() -> None:
    def record(case_id: str, group: str, score: float, weight: float) -> SampleRecord:
        status = "correct" if score == 1.0 else "incorrect" if score == 0.0 else "partial"
        return SampleRecord(case_id=case_id, group=group, mode="text", status=status, score=score, weight=weight,
                            attempts=[], corrective_retries=0, usage={}, cost={"usd": 0.0, "source": "local"},
                            latency_s=None)  # fmt: skip

    records = [record("a", "g1", 1.0, 1.0), record("b", "g1", 0.0, 3.0), record("c", "g2", 0.5, 2.0)]
    mean = score_records(records, aggregate="mean")
    assert [(g.group, g.score) for g in mean.groups] == [("g1", 25.0), ("g2", 50.0)]
    assert (mean.score, mean.macro_score, mean.mean_score) == (100 * 2.0 / 6.0, 37.5, 100 * 2.0 / 6.0)
    assert score_records(records, aggregate="macro").score == 37.5
    assert score_records(records[:2], aggregate="mean").score == 25.0


def test_yaml_is_read_as_yaml_1_2_and_quoted_dates_stay_the_text_written(tmp_path: Path) -> None:
    task, cases = load(
        "prompts: ['Say {{x}} on {{d}}: {{a}} {{b}} {{c}} {{e}} {{f}}']\n"
        "tests: [{vars: {x: hi, d: '2024-01-01', a: 1e3, b: yes, c: 017, e: 0x1F, f: 1_000},"
        " assert: [{type: equals, value: '2024-01-01'}]}]\n",
        tmp_path,
    )
    assert cases[0].prompt == "Say hi on 2024-01-01: 1000 yes 17 31 1_000"
    assert asyncio.run(task.grade(cases[0], "2024-01-01")).value == 1.0


@pytest.mark.parametrize(
    ("number", "written"),
    [(4.0, "4"), (0.1, "0.1"), (-0.0, "0"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"),
     (0.000001, "0.000001"), (123.456, "123.456"), (1.5e-10, "1.5e-10"), (2**53 + 2, "9007199254740994")],
)  # fmt: skip
def test_numbers_are_written_as_javascript_writes_them(number: float, written: str) -> None:
    assert js_number(number) == written


def test_comma_separated_values_keep_quoted_commas() -> None:
    assert comma_separated(' "Smith, John" ,, Doe ,"say ""hi""", "a\\"b"') == ["Smith, John", "Doe", 'say "hi"', 'a"b']
    with pytest.raises(ValueError, match=r"^text after a quoted field"):
        comma_separated('"a" b')


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [("^a$", "a\n", False), ("a$", "a", True), (r"^\d+$", "١٢", False), (r"\w", "é", False), ("^.$", "😀", False),
     ("^..$", "😀", True), (r"\A", "A", True), ("a{,2}", "a{,2}", True), ("[^]", "\n", True), ("[]", "x", False),
     (".", "\u2028", False), (r"\s", "\ufeff", True), (r"[\d-]", "-", True)],
)  # fmt: skip
def test_regexes_match_as_javascripts_do(pattern: str, text: str, found: bool) -> None:
    assert check({"type": "regex", "value": pattern}, text).passed is found
