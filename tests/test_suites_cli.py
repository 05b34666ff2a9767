"""Suites other than FaRel: examples/invoice_bench.py in-process (scorer, retries) and as users run it (a script
and a `--suite` file), story-graph from the command line, a mixed leaderboard, and bad suites in one line."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from evaluator import Case, EvaluationResult, RunSummary, SampleRecord
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO, without_usage
from typed_eval.contracts import AnswerMode, Attempt


def load_example() -> ModuleType:
    """examples/invoice_bench.py as a module (kept in sys.modules, where its pydantic models look it up)."""
    name = "invoice_bench_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "examples" / "invoice_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BENCH = load_example()
Invoice: Any = BENCH.Invoice
TASK: evaluator.Task[Any] = BENCH.TASK

# --- helpers ------------------------------------------------------------------------------------------------


def prompt_of(messages: Sequence[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def answer(expected: Any) -> dict[str, Any]:
    """An invoice as the tool-call arguments a model sends."""
    data: dict[str, Any] = Invoice.model_validate(expected).model_dump(mode="json")
    return data


def evaluate(cases: Sequence[Case], model: Any, **options: Any) -> EvaluationResult:
    return asyncio.run(evaluator.evaluate(TASK, cases, model, **options))


def clean_env() -> dict[str, str]:
    drop = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")
    return {k: v for k, v in os.environ.items() if k not in drop}


IN_PROCESS = ("main.py", "format_result.py")
"""The commands run_cli runs in this process; examples/invoice_bench.py has no entry there and starts a process."""


def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    if script in IN_PROCESS:
        return run_cli(script, *args, env=clean_env())
    return subprocess.run(
        [PYTHON, script, *args], cwd=REPO, capture_output=True, text=True, env=clean_env(), timeout=300, check=False
    )


def one_run(results: Path) -> Path:
    (summary,) = results.rglob("summary.json")
    return summary.parent


def summary_of(results: Path) -> RunSummary:
    return RunSummary.model_validate_json((one_run(results) / "summary.json").read_text())


def records_of(results: Path) -> list[SampleRecord]:
    lines = (one_run(results) / "samples.jsonl").read_text().splitlines()
    return [SampleRecord.model_validate_json(line) for line in lines]


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit 2, no traceback)."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


# --- the cases ----------------------------------------------------------------------------------------------


def test_cases_are_seeded_grouped_by_payment_and_state_what_the_invoice_says() -> None:
    made = BENCH.cases(8, seed=3)
    assert made == BENCH.cases(8, seed=3)
    assert made != BENCH.cases(8, seed=4)
    assert [c.id for c in made] == [f"invoice-{i}" for i in range(8)]
    assert {c.group for c in made} == {"card", "bank_transfer"}
    assert len({c.prompt for c in made}) == 8
    for c in made:
        invoice = c.expected
        assert isinstance(invoice, Invoice)
        assert c.group == invoice.payment.method
        assert invoice.vendor in c.prompt
        assert invoice.total == round(sum(i.quantity * i.unit_price for i in invoice.items), 2)
        for item in invoice.items:
            assert item.description in c.prompt
            assert f"{item.unit_price:.2f}" in c.prompt
        if invoice.payment.method == "card":
            assert invoice.payment.last4 in c.prompt
        else:
            assert invoice.payment.iban in c.prompt.replace(" ", "")
            assert f"within {invoice.payment.due_days} days" in c.prompt
    assert [c.id for c in BENCH.CASES] == [f"invoice-{i}" for i in range(10)]
    with pytest.raises(ValueError, match="number must be at least 1, got 0"):
        BENCH.cases(0)


def test_the_example_output_is_a_valid_invoice() -> None:
    assert Invoice.model_validate(TASK.example) == TASK.example
    assert (TASK.name, TASK.tool_name, TASK.aggregate) == ("invoices", "submit_invoice", "mean")


# --- the scorer ---------------------------------------------------------------------------------------------

EXPECTED: dict[str, Any] = {
    "vendor": "Acme Tools",
    "currency": "EUR",
    "items": [
        {"description": "claw hammer", "quantity": 3, "unit_price": 12.5},
        {"description": "aluminium ladder", "quantity": 1, "unit_price": 89.0},
    ],
    "payment": {"method": "bank_transfer", "iban": "DE44500105175407324931", "due_days": 30},
    "total": 126.5,
}
CASE = Case(id="hand-made", prompt="p", expected=Invoice.model_validate(EXPECTED), group="bank_transfer")


def changed(**changes: Any) -> Any:
    data = copy.deepcopy(EXPECTED)
    data.update(changes)
    return Invoice.model_validate(data)


def items(*rows: tuple[str, int, float]) -> list[dict[str, Any]]:
    return [{"description": d, "quantity": q, "unit_price": p} for d, q, p in rows]


HAMMERS = ("claw hammer", 3, 12.5)
LADDER = ("aluminium ladder", 1, 89.0)
COUNTS = ("items_expected", "items_found", "items_missing", "items_extra", "items_exact")


@pytest.mark.parametrize(
    ("output", "value", "counts", "wrong", "item_errors"),
    [
        (changed(), 1.0, (2, 2, 0, 0, 2), [], None),
        (
            changed(
                vendor="ACME tools",
                items=items(("Claw Hammers", 3, 12.5), ("Aluminium ladder", 1, 89.0)),
                payment={"method": "bank_transfer", "iban": "de44 5001 0517 5407 3249 31", "due_days": 30},
                total=126.509,
            ),
            1.0,
            (2, 2, 0, 0, 2),
            [],
            None,
        ),
        (
            changed(items=items(("claw hammer", 2, 12.5), LADDER), total=114.0),
            0.8125,
            (2, 2, 0, 0, 1),
            ["items", "total"],
            ["claw hammer: quantity 2, expected 3"],
        ),
        (
            changed(items=items(HAMMERS, ("hand saw", 1, 20.0)), total=57.5),
            0.625,
            (2, 1, 1, 1, 1),
            ["items", "total"],
            ["missing aluminium ladder", "extra hand saw"],
        ),
        (
            changed(
                currency="USD",
                items=items(HAMMERS, ("aluminium ladder", 1, 90.0)),
                payment={"method": "card", "last4": "4931"},
                total=127.5,
            ),
            0.4375,
            (2, 2, 0, 0, 1),
            ["currency", "items", "payment", "total"],
            ["aluminium ladder: unit price 90, expected 89"],
        ),
        (
            changed(payment={"method": "bank_transfer", "iban": "DE44500105175407324931", "due_days": 14}),
            0.75,
            (2, 2, 0, 0, 2),
            ["payment"],
            None,
        ),
        (
            changed(
                vendor="Someone Else", currency="GBP", items=[], payment={"method": "card", "last4": "0000"}, total=0.0
            ),
            0.0,
            (2, 0, 2, 0, 0),
            ["vendor", "currency", "items", "payment", "total"],
            ["missing claw hammer", "missing aluminium ladder"],
        ),
    ],
    ids=["exact", "same-in-other-words", "wrong-quantity", "missing-and-extra", "wrong-many", "due-days", "nothing"],
)
def test_scorer_gives_partial_credit_with_details(
    output: Any, value: float, counts: tuple[int, ...], wrong: list[str], item_errors: list[str] | None
) -> None:
    score = BENCH.grade(CASE, output)
    assert isinstance(score, evaluator.Score)
    assert score.value == value
    expected_details: dict[str, Any] = {**dict(zip(COUNTS, counts, strict=True)), "wrong": wrong}
    if item_errors is not None:
        expected_details["item_errors"] = item_errors
    assert score.details == expected_details


def test_scorer_reads_an_expected_invoice_stored_as_json() -> None:
    """A record stores `expected` as JSON: the scorer takes that form as well as the model."""
    stored = Case(id="c", prompt="p", expected=EXPECTED)
    assert BENCH.grade(stored, changed(total=1.0)) == evaluator.Score(
        0.875, {**dict(zip(COUNTS, (2, 2, 0, 0, 2), strict=True)), "wrong": ["total"]}
    )


def test_item_metrics_from_summed_counts() -> None:
    totals = {"items_expected": 8.0, "items_found": 6.0, "items_missing": 2.0, "items_extra": 2.0, "items_exact": 4.0}
    assert BENCH.item_metrics(totals) == {"item recall": 75.0, "item precision": 75.0, "items exact": 50.0}


# --- in-process evaluation ----------------------------------------------------------------------------------


def solver(cases: Sequence[Case], first_try: dict[str, dict[str, Any]] | None = None) -> FunctionModel:
    """Answers each case (looked up by its prompt) with its expected invoice; `first_try[id]` is sent instead
    on the first response to that case."""
    by_prompt = {c.prompt: c for c in cases}
    assert len(by_prompt) == len(cases)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert [t.name for t in info.output_tools] == ["submit_invoice"]
        case = by_prompt[prompt_of(messages)]
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        args = (first_try or {}).get(case.id) if turn == 0 else None
        return ModelResponse(parts=[ToolCallPart("submit_invoice", args or answer(case.expected))])

    return FunctionModel(respond)


def test_a_model_that_solves_every_invoice_scores_100() -> None:
    cases = BENCH.CASES
    result = evaluate(cases, solver(cases))
    assert [r.case_id for r in result.records] == [c.id for c in cases]
    assert [(r.score, r.status, r.corrective_retries) for r in result.records] == [(1.0, "correct", 0)] * 10
    assert all(r.output == answer(c.expected) for r, c in zip(result.records, cases, strict=True))
    sizes = [len(c.expected.items) for c in cases]
    assert [r.score_details for r in result.records] == [
        {**dict(zip(COUNTS, (n, n, 0, 0, n), strict=True)), "wrong": []} for n in sizes
    ]
    scores = result.scores
    assert (scores.score, scores.aggregate, scores.correct, scores.partial) == (100.0, "mean", 10, 0)
    assert [(g.group, g.score) for g in scores.groups] == [("bank_transfer", 100.0), ("card", 100.0)]
    assert scores.metrics == {"item recall": 100.0, "item precision": 100.0, "items exact": 100.0}
    assert (scores.compliance.valid_first_try, scores.totals.requests) == (100.0, 10)


def test_a_bad_payment_method_gets_a_corrective_retry_and_ends_correct() -> None:
    cases = BENCH.cases(4)
    target = next(c for c in cases if c.group == "bank_transfer")
    bad = answer(target.expected)
    bad["payment"]["method"] = "bank transfer"
    result = evaluate(cases, solver(cases, {target.id: bad}))
    record = next(r for r in result.records if r.case_id == target.id)
    good = answer(target.expected)
    assert [a.invalid_kind for a in record.attempts] == ["invalid_value", None]
    assert without_usage(record.attempts) == [
        Attempt(
            valid=False,
            invalid_kind="invalid_value",
            raw=json.dumps(bad),
            feedback="payment: Input tag 'bank transfer' found using 'method' does not match any of the expected "
            "tags: 'card', 'bank_transfer'",
        ),
        Attempt(valid=True, raw=json.dumps(good)),
    ]
    assert (record.status, record.score, record.corrective_retries, record.output) == ("correct", 1.0, 1, good)
    assert [r.corrective_retries for r in result.records if r.case_id != target.id] == [0, 0, 0]
    compliance = result.scores.compliance
    assert (compliance.valid_first_try, compliance.valid_after_retries) == (75.0, 100.0)
    assert (compliance.corrective_retries, compliance.invalid_by_kind) == (1, {"invalid_value": 1})
    assert (result.scores.score, result.scores.totals.requests) == (100.0, 5)


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text"])
def test_the_offline_test_model_answers_the_example_in_every_mode(mode: AnswerMode) -> None:
    cases = BENCH.cases(4)
    result = evaluate(cases, "test", mode=mode)
    example = answer(TASK.example)
    assert [(r.output, len(r.attempts), r.attempts[0].valid) for r in result.records] == [(example, 1, True)] * 4
    assert [r.score for r in result.records] == [BENCH.grade(c, TASK.example).value for c in cases]


# --- the example as users run it ----------------------------------------------------------------------------


def test_example_script_prints_groups_headline_compliance_and_cost() -> None:
    done = cli("examples/invoice_bench.py", "--model", "test")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "bank_transfer: 5.83 (C: 0, P: 2, I: 3, M: 0, E: 0)",
        "card: 13.54 (C: 0, P: 4, I: 1, M: 0, E: 0)",
        "invoices score: 9.69  (test, tool mode)",
        "metrics: item recall 23.53, item precision 20.00, items exact 0.00",
        "format: valid first try 100.0%, corrective retries 0, invalid outputs 0 (none)",
        "cost: $0.000000 (local), 10 requests, 828 input / 370 output tokens",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--model", "nope:x"],
            "invoice_bench: error: model: unknown model provider 'nope' in 'nope:x': use one of pydantic-ai's "
            "providers",
        ),
        (["--model", "openai:gpt-4o-mini"], "invoice_bench: error: api_key: missing API key for openai:gpt-4o-mini"),
    ],
)
def test_example_script_bad_model_is_one_line(args: list[str], message: str) -> None:
    assert one_line_error(cli("examples/invoice_bench.py", *args)).startswith(message)


def test_example_script_bad_number_is_refused_without_a_traceback() -> None:
    done = cli("examples/invoice_bench.py", "--number", "0")
    assert (done.returncode, done.stdout) == (2, "")
    assert "Traceback" not in done.stderr
    assert (
        done.stderr.strip().splitlines()[-1] == "invoice_bench.py: error: argument --number: must be at least 1, got 0"
    )


def invoice_run(results: Path) -> subprocess.CompletedProcess[str]:
    return cli(
        "main.py",
        "run",
        "--suite",
        "examples/invoice_bench.py",
        "--model",
        "test",
        "--results-dir",
        str(results),
        "--quiet",
    )


def test_invoice_suite_file_runs_stores_and_ranks(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    done = invoice_run(first)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "bank_transfer: 5.83 (C: 0, I: 3, M: 0 A: 5, P: 2)",
        "card: 13.54 (C: 0, I: 1, M: 0 A: 5, P: 4)",
        "invoice_bench score: 9.69  (test, tool mode)",
        "metrics: item recall 23.53, item precision 20.00, items exact 0.00",
        "format: valid first try 100.0%, after retries 100.0%, corrective retries 0, invalid outputs 0 (none), "
        "missing 0, errors 0",
    ]
    assert lines[5].startswith("totals: 10 requests, 828 input / 370 output tokens, cost $0.000000, ")
    assert lines[6] == f"stored in {one_run(first)}"
    raw = json.loads((one_run(first) / "summary.json").read_text())
    assert (raw["schema_version"], raw["suite"], raw["task"]) == (2, "invoice_bench", "invoices")
    summary = summary_of(first)
    assert (summary.status, summary.model, summary.mode) == ("finished", "test", "tool")
    assert (summary.dataset.suite, summary.dataset.source, summary.dataset.path, summary.dataset.cases) == (
        "invoice_bench",
        "file",
        "examples/invoice_bench.py",
        10,
    )
    md5 = hashlib.md5(b"".join(c.model_dump_json().encode() + b"\n" for c in BENCH.CASES)).hexdigest()
    assert summary.dataset.md5 == md5
    assert summary.settings.instructions == BENCH.instructions("tool")
    records = sorted(records_of(first), key=lambda r: (r.case_id, r.repeat))  # written as cases finish
    assert [r.case_id for r in records] == [f"invoice-{i}" for i in range(10)]
    assert [r.expected for r in records] == [answer(c.expected) for c in BENCH.CASES]
    assert {json.dumps(r.output) for r in records} == {json.dumps(answer(TASK.example))}
    assert [r.score for r in records] == [BENCH.grade(c, TASK.example).value for c in BENCH.CASES]

    again = invoice_run(second)
    assert again.returncode == 0, again.stderr
    assert summary_of(second).dataset.md5 == md5

    board = cli("format_result.py", str(first), "--format", "json")
    assert board.returncode == 0, board.stderr
    (row,) = json.loads(board.stdout)
    assert (row["suite"], row["task"], row["rank"], row["title"]) == ("invoice_bench", "invoices", 1, "Score")
    assert row["score"] == summary.scores.score
    assert 0 <= row["score"] <= 100
    assert round(row["score"], 2) == 9.69
    assert row["classes"] == {g.group: g.score for g in summary.scores.groups}
    assert row["metrics"] == summary.scores.metrics
    assert row["dataset_md5"] == md5


# --- story-graph --------------------------------------------------------------------------------------------


def test_story_graph_runs_from_the_command_line(tmp_path: Path) -> None:
    done = cli(
        "main.py", "run", "--suite", "story-graph", "--model", "test", "--count", "2", "--people", "5",
        "--results-dir", str(tmp_path), "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = summary_of(tmp_path)
    assert (summary.suite, summary.status, summary.dataset.suite, summary.dataset.source) == (
        "story-graph",
        "finished",
        "story-graph",
        "generated",
    )
    assert summary.dataset.params == {"people": 5, "count": 2, "seed": 42}
    assert len(records_of(tmp_path)) == 2
    assert summary.scores.samples == 2
    metrics = summary.scores.metrics
    assert sorted(metrics) == ["edge_f1", "edge_precision", "edge_recall"]
    assert all(0.0 <= v <= 100.0 for v in metrics.values())
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith(("story-graph score:", "metrics:"))] == [
        "story-graph score",
        "metrics",
    ]


# --- several suites in one results folder -------------------------------------------------------------------


def table_rows(lines: Sequence[str]) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_farel_and_invoice_runs_get_a_table_and_a_ranking_each(tmp_path: Path) -> None:
    farel = cli("main.py", "run", "--model", "test", "--limit", "9", "--results-dir", str(tmp_path), "--quiet")
    assert farel.returncode == 0, farel.stderr
    invoices = invoice_run(tmp_path)
    assert invoices.returncode == 0, invoices.stderr

    board = cli("format_result.py", str(tmp_path), "--format", "markdown")
    assert board.returncode == 0, board.stderr
    lines = board.stdout.splitlines()
    assert [line for line in lines if line.startswith("#")] == ["### farel", "### invoice_bench"]
    split = lines.index("### invoice_bench")
    farel_table, invoice_table = lines[2 : split - 1], lines[split + 2 :]
    assert lines[1] == lines[split + 1] == "" and lines[split - 1] == ""
    assert len(farel_table) == len(invoice_table) == 3
    farel_header, _, farel_row = table_rows(farel_table)
    invoice_header, _, invoice_row = table_rows(invoice_table)
    assert farel_header[:4] == ["Nr", "Model", "FaRel", "child"]
    assert invoice_header[:8] == ["Nr", "Model", "Score", "bank_transfer", "card", "95% CI", "Grp", "Cases"]
    assert invoice_header[10:] == [
        "Valid 1st", "Valid final", "Retries", "Invalid", "Missing", "Errors", "Cost", "$/correct", "Pareto",
        "p50 / p95 s", "Score, no retry", "Retry cost", "Req / In Tok / Out Tok", "Run",
    ]  # fmt: skip
    assert farel_row[:3] == ["", "test (tool, incomplete)", "22.22"]  # 9 of 450 quizzes: listed, not ranked
    assert invoice_row[:3] + invoice_row[6:8] + invoice_row[10:18] == [
        "1", "test (tool)", "9.69", "1", "10", "100.0%", "100.0%", "0", "0", "0", "0", "$0 (local)", "$0 (local)",
    ]  # fmt: skip

    rows = json.loads(cli("format_result.py", str(tmp_path), "--format", "json").stdout)
    assert [(r["suite"], r["rank"], r["title"]) for r in rows] == [
        ("farel", None, "FaRel"),
        ("invoice_bench", 1, "Score"),
    ]
    assert round(rows[0]["score"], 2) == 22.22


# --- bad suites ---------------------------------------------------------------------------------------------

GOOD_TASK = """\
import evaluator
TASK = evaluator.Task(name="t", output_type=int, score=lambda case, output: 1.0)
"""

BAD_FILES = {
    "no_task": ("CASES = []\n", "suite file {path} must define TASK = evaluator.Task(...): no TASK"),
    "task_not_a_task": (
        'TASK = "invoices"\nCASES = []\n',
        "suite file {path} must define TASK = evaluator.Task(...): TASK is a str",
    ),
    "no_cases": (GOOD_TASK, "suite file {path} must define CASES (a list of evaluator.Case) or a cases() function"),
    "syntax_error": (
        GOOD_TASK + "def cases(:\n    pass\n",
        "suite file {path} failed to load: SyntaxError: invalid syntax (syntax_error.py, line 3)",
    ),
    "cases_raises": (
        GOOD_TASK + "def cases():\n    raise ValueError('no invoices today')\n",
        "suite file {path}: cases() failed: ValueError: no invoices today",
    ),
    "duplicate_ids": (
        GOOD_TASK + "CASES = [evaluator.Case(id='a', prompt='p'), evaluator.Case(id='a', prompt='q')]\n",
        "suite file {path}: case id 'a' is used twice: ids must be unique",
    ),
    "not_a_case": (
        GOOD_TASK + "CASES = [evaluator.Case(id='a', prompt='p'), {'id': 'b', 'prompt': 'q'}]\n",
        "suite file {path}: a case must be an evaluator.Case, got dict",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_suite_file_is_one_line(name: str, tmp_path: Path) -> None:
    source, message = BAD_FILES[name]
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    done = cli("main.py", "run", "--suite", str(path), "--model", "test", "--results-dir", str(tmp_path / "out"))
    assert one_line_error(done) == "main.py: error: " + message.format(path=path)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--suite", "missing_suite.py"],
            "no suite file missing_suite.py: name an installed suite (main.py suites lists them) or a .py file",
        ),
        (
            ["--suite", "nope"],
            "unknown suite 'nope': use bfcl, case-file, farel, lineage, novelty, pydantic-evals, schemas, story-graph, "
            "suite-file, tau, or a file (.json .py .yaml .yml)",
        ),
        (
            ["--suite", "story-graph", "--quizzes", "x.csv"],
            "--quizzes belongs to the farel and lineage suites, not story-graph",
        ),
        (
            ["--suite", "examples/invoice_bench.py", "--mode", "tag"],
            "the suite-file suite has no tag mode: use --mode tool, native, prompted or text",
        ),
        (
            ["--suite", "story-graph", "--mode", "tag"],
            "the story-graph suite has no tag mode: use --mode tool, native, prompted or text",
        ),
    ],
    ids=["missing-file", "unknown-name", "farel-flag", "tag-mode-file", "tag-mode-story"],
)
def test_bad_suite_choice_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    done = cli("main.py", "run", *args, "--model", "test", "--results-dir", str(tmp_path / "out"))
    assert one_line_error(done) == "main.py: error: " + message
    assert not (tmp_path / "out").exists()
