"""lineage-bench as a suite: its generator byte for byte, its strict and relaxed readings, runs in every mode, and
its published result CSVs imported with the scores `compute_metrics.py` prints.

The MD5s and readings below were taken from lineage-bench's own `lineage_bench.py` and `compute_metrics.py`
(fairydreaming/lineage-bench at f1fdd92, run with pandas 3.1.1), which are not part of this repository.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.cli_run import run_cli
from tests.conftest import FAREL_FIXTURES, PUBLISHED_MD5
from tests.fake_openai import FakeOpenAI, completion, prompt_of, text
from typed_eval.contracts import Case, RunSettings, RunSummary, SampleRecord
from typed_eval.engine.evaluation import evaluate
from typed_eval.store.storage import read_records
from typed_eval.suites.lineage import suite as lineage
from typed_eval.suites.lineage.importer import ResultImport, import_result_file
from typed_eval.suites.lineage.suite import (
    DEFAULT_LENGTHS,
    LINEAGE_TASK,
    generate,
    generated_dataset,
    relaxed_answer,
    strict_answer,
)

TAG = "Enclose the selected answer number in the <ANSWER> tag, for example: <ANSWER>1</ANSWER>."


def clean_env() -> dict[str, str]:
    drop = ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")
    return {k: v for k, v in os.environ.items() if k not in drop}


def cli(script: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli(script, *args, env=clean_env(), text=False)


def out(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().splitlines()


def one_line_error(done: subprocess.CompletedProcess[bytes]) -> str:
    """The single stderr line of a refused command (exit 2, no traceback)."""
    stderr = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, done.stdout, stderr)
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    return line


# --- the generator ---------------------------------------------------------------------------------------------

CUSTOM_PROMPT = (
    'Quiz "é" {quiz_relations}\\n{quiz_question}\\n{quiz_answers}\\nEnclose the selected answer number in the '
    "<ANSWER> tag, for example: <ANSWER>1</ANSWER>."
)
"""A template with quotes and a non-ASCII letter, as typed on a command line: `\\n` (backslash, n) is a new line."""

REFERENCE_MD5 = [
    (["-s", "-l", "8", "-n", "10", "-r", "42"], "a6839934a0d4e5eb1a1ac904fa60796e"),
    (["-s", "-l", "4", "-n", "10", "-r", "42"], "202d741224dfbf3eaf5c62065e33e7b8"),
    (["-l", "16", "-n", "5", "-r", "7"], "01e195581d1bc120cba2a39086a75bb9"),
    (["-s", "-l", "32", "-n", "3", "-r", "-5"], "69a980938739c8f5cb620c8cf8f232cb"),
    (["-s", "-l", "64", "-n", "50", "-r", "42"], "c3ef9dd1f0d19ed568f38d1cc5fb9f61"),
    (["-s", "-l", "200", "-n", "3", "-r", "42"], "e86c7bf4949f4cca4ddb75d8fae5ce1f"),
    (["-s", "-l", "201", "-n", "3", "-r", "42"], "2d0fee7ca055cc396e13b9516a506dba"),
    (["-l", "201", "-n", "2", "-r", "3"], "36f616d7138d284e80b9fde6e5c0235e"),
    (["-s", "-l", "2048", "-n", "2", "-r", "42"], "66f95b844222da57885e93515386deb4"),
    (["-l", "2048", "-n", "1", "-r", "0"], "b8add5b0a283c1383cd705556adcf4c2"),
    (["-s", "-l", "8", "-n", "2", "-r", "42", "-p", CUSTOM_PROMPT], "c41157e66f873ddc95ff1d850e6f03e6"),
    (["-s", "-l", "8", "-n", "0", "-r", "42"], "d41d8cd98f00b204e9800998ecf8427e"),
]
"""`lineage_bench.py ARGS | md5sum`: sizes 4 to 2048 (past 200 the names come from all 2,048), with and without
shuffle, a negative seed, a custom template, no quizzes at all."""


@pytest.mark.parametrize(("args", "md5"), REFERENCE_MD5, ids=[" ".join(a[:7]) for a, _ in REFERENCE_MD5])
def test_generator_writes_lineage_bench_bytes(
    args: list[str], md5: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert lineage.main(args) == 0
    assert hashlib.md5(capsysbinary.readouterr().out).hexdigest() == md5


def test_generate_commands_write_the_original_generators_bytes() -> None:
    lineage = cli("main.py", "generate", "lineage", "-s", "-l", "8", "-n", "10", "-r", "42")
    farel = cli("main.py", "generate", "farel", "-l", "3", "-n", "50", "-r", "42", "-s")
    assert hashlib.md5(lineage.stdout).hexdigest() == "a6839934a0d4e5eb1a1ac904fa60796e"
    assert hashlib.md5(farel.stdout).hexdigest() == PUBLISHED_MD5
    assert lineage.stdout.startswith(b'8,ANCESTOR,3,"Given the following lineage relationships:\n* ')
    assert lineage.stdout.count(b'</ANSWER>."\r\n') == 40  # 10 per class, each row ended as Python's csv ends it


def test_quizzes_are_five_option_cases_grouped_by_size_and_class() -> None:
    cases = list(generate(8, 1, 42, shuffle=True))
    assert [c.group for c in cases] == [
        "lineage-8 ANCESTOR", "lineage-8 DESCENDANT", "lineage-8 COMMON_ANCESTOR", "lineage-8 COMMON_DESCENDANT",
    ]  # fmt: skip
    first = cases[0]
    assert first.id == "8-" + hashlib.md5(first.prompt.encode()).hexdigest()[:12]
    assert (first.expected, first.metadata["problem_size"], first.metadata["relation"]) == (3, 8, "ANCESTOR")
    options = first.metadata["options"]
    assert len(options) == 5 and options[4] == "None of the above is correct."
    assert options[2].endswith("'s ancestor.") and first.prompt.endswith(TAG)
    assert first.prompt.count("\n* ") == 7  # 8 people, 7 relations


def test_a_run_poses_what_the_authors_loop_over_sizes_writes() -> None:
    """`for l in 8 16 32 64; do lineage_bench.py -s -l $l -n 50 -r 42; done | md5sum` (800 quizzes)."""
    dataset = generated_dataset(DEFAULT_LENGTHS, 50, 42, shuffle=True)
    assert (dataset.info.md5, dataset.info.cases) == ("60e5e8ccbd13fb496e29553c9fca4137", 800)
    assert dataset.info.params == {"problem_sizes": [8, 16, 32, 64], "number": 50, "seed": 42, "shuffle": True}
    assert list(dataset.group_sizes.values()) == [50] * 16


# --- readings --------------------------------------------------------------------------------------------------

READINGS = [
    ("Thinking...\n<ANSWER>3</ANSWER>", "3", None),
    ("x <ANSWER>4</ANSWER> y <ANSWER>2</ANSWER>", "4", None),  # the first tag
    ("<ANSWER>12</ANSWER>", None, None),  # two digits: no answer, strictly or not
    ("<ANSWER>12</ANSWER><ANSWER>3</ANSWER>", "3", None),  # the first single-digit tag
    ("<ANSWER>12</ANSWER> ANSWER: 3", None, "3"),
    ("<ANSWER>0</ANSWER>", None, None),  # 0 is lineage-bench's "no answer"
    ("<ANSWER>0</ANSWER> ANSWER: 3", None, None),  # a strict tag, even of 0, ends the reading
    ("", None, None),
    ("<ANSWER> 3</ANSWER>", None, None),
    ("<answer>3</answer>", None, None),
    ("<ANSWER>\n2\n</ANSWER>", None, None),
    ("\\boxed{2}", None, "2"),  # the relaxed patterns, each in turn
    ("\\boxed{\\text{4}}", None, "4"),
    ("\\mathbf{1}", None, "1"),
    ("</ANSWER>3</ANSWER>", None, "3"),
    ("ANSWER: 2", None, "2"),
    ("**ANSWER**: 4", None, "4"),
    ("**ANSWER>**2</ANSWER>", None, "2"),
    ("**ANSWER>2</ANSWER>**", None, "2"),
    ("**ANSWER:** 3", None, "3"),
    ("**ANSWER**\n1", None, "1"),  # the tenth pattern's case; the sixth (\s* takes the newline) reads it first
    ("ANSWER>2</ANSWER>", None, "2"),
    ("<ANSWER>3\\</ANSWER>", None, "3"),
    ("<ANSWER\\>4\\</ANSWER\\>", None, "4"),
    ("<ANSWER>2</ANSWER", None, "2"),
    ("**Correct Answer:** 3", None, "3"),
    ("<ACTION>1</ACTION>", None, "1"),
    ("\\boxed{3} ANSWER: 2", None, "3"),  # patterns are tried in their order, not by position
    ("ANSWER: 2 then \\boxed{4}", None, "4"),
    ("ANSWER: 0 and \\boxed{3}", None, "3"),
    ("ANSWER: 0 then **Correct Answer:** 3", None, None),  # the first pattern that matches decides, 0 included
    ("ANSWER: 10", None, "1"),
    ("**ANSWER**:\n\n5", None, "5"),
    ("answer: 3", None, None),
    ("\\boxed{ 3 }", None, None),
]
"""(reply, strict, relaxed): what `compute_metrics.py` and `compute_metrics.py --relaxed` read (0 is None here)."""


@pytest.mark.parametrize(("reply", "strict", "relaxed"), READINGS, ids=[repr(r[0])[:40] for r in READINGS])
def test_replies_are_read_as_compute_metrics_reads_them(reply: str, strict: str | None, relaxed: str | None) -> None:
    assert strict_answer(reply) == strict
    assert relaxed_answer(reply) == relaxed


def replying(answers: Callable[[Case, int], ModelResponse], cases: Sequence[Case]) -> FunctionModel:
    """A model that answers each case's prompt (in any mode) with `answers(case, attempt)`."""
    by_question = {case.prompt.split("Select the correct answer:")[0]: case for case in cases}
    asked: dict[str, int] = {}

    def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        case = by_question[prompt.split("Select the correct answer:")[0]]
        asked[case.id] = asked.get(case.id, 0) + 1
        return answers(case, asked[case.id])

    return FunctionModel(respond)


def test_tag_mode_counts_strict_answers_and_reports_relaxed_ones() -> None:
    cases = list(generate(8, 1, 42, shuffle=True))
    replies = {
        "ANCESTOR": lambda c: f"<ANSWER>{c.expected}</ANSWER>",
        "DESCENDANT": lambda c: f"**ANSWER**: {c.expected}",
        "COMMON_ANCESTOR": lambda c: f"<ANSWER>{c.expected}{c.expected}</ANSWER>",
        "COMMON_DESCENDANT": lambda c: f"<ANSWER>{c.expected % 4 + 1}</ANSWER>",
    }
    model = replying(lambda c, _: ModelResponse(parts=[TextPart(replies[c.metadata["relation"]](c))]), cases)
    result = asyncio.run(evaluate(LINEAGE_TASK, cases, model, mode="tag"))
    records = result.records
    assert [(r.status, r.output, r.relaxed_output, r.relaxed_score) for r in records] == [
        ("correct", "3", None, None),
        ("missing", None, str(cases[1].expected), 1.0),
        ("missing", None, None, None),
        ("incorrect", str(cases[3].expected % 4 + 1), None, None),
    ]
    assert [r.attempts[0].invalid_kind for r in records] == [None, "no_tag", "no_tag", None]
    assert result.scores.score == 25.0
    assert (result.scores.compliance.relaxed_recoverable, result.scores.compliance.relaxed_recoverable_correct) == (
        1,
        1,
    )


def test_tool_mode_validates_the_option_number_against_the_quiz() -> None:
    cases = list(generate(8, 1, 42, shuffle=True))[:1]

    def answers(case: Case, attempt: int) -> ModelResponse:
        choice = 6 if attempt == 1 else case.expected
        return ModelResponse(parts=[ToolCallPart("select_answer", {"answer": choice})])

    result = asyncio.run(evaluate(LINEAGE_TASK, cases, replying(answers, cases), mode="tool"))
    (record,) = result.records
    assert (record.status, record.output, record.corrective_retries) == ("correct", {"reasoning": None, "answer": 3}, 1)
    assert record.attempts[0].invalid_kind == "out_of_range"
    assert "6 is not an option number: choose a number from 1 to 5" in (record.attempts[0].feedback or "")


@pytest.mark.parametrize("mode", ["tool", "native", "prompted", "text", "tag"])
def test_every_mode_runs_offline(mode: str, tmp_path: Path) -> None:
    """The offline test model picks option 1 in every mode: the score is the share of quizzes whose answer is 1."""
    done = cli("main.py", "run", "--suite", "lineage", "--model", "test", "--mode", mode, "--length", "8,16",
               "--number", "2", "--results-dir", str(tmp_path), "--quiet")  # fmt: skip
    cases = generated_dataset([8, 16], 2, 42, shuffle=True).load()
    ones = {
        group: sum(c.expected == 1 for c in cases if c.group == group)
        for group in dict.fromkeys(c.group for c in cases)
    }
    assert list(ones.values()) == [0, 1, 0, 0, 0, 2, 2, 2]  # of 2 quizzes per group: lineage-8 12.50, lineage-16 75.00
    assert out(done)[8:10] == [
        f"lineage: 43.75  (test, {mode} mode)",
        "problem sizes: lineage-8 12.50, lineage-16 75.00",
    ]
    (summary,) = tmp_path.rglob("summary.json")
    stored = RunSummary.model_validate_json(summary.read_text())
    assert (stored.suite, stored.task, stored.status, stored.dataset.cases) == ("lineage", "lineage", "finished", 16)
    assert stored.dataset.md5 == "2e510d8ff72d95f3507c5a480154c209"  # lineage_bench.py -s -n 2 -r 42, -l 8 then 16


# --- a run against a server, in tag mode ----------------------------------------------------------------------


def test_tag_mode_run_reports_per_size_and_relaxed_scores(tmp_path: Path) -> None:
    cases = generated_dataset([8, 16], 2, 42, shuffle=True).load()
    by_question = {case.prompt: case for case in cases}

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        case = by_question[prompt_of(request)]
        right, relation = case.expected, case.metadata["relation"]
        if case.metadata["problem_size"] == 16 and relation == "ANCESTOR":
            return completion(text(f"Thinking.\n\\boxed{{{right}}}"))  # strictly missing, relaxed right
        if case.metadata["problem_size"] == 16 and relation == "DESCENDANT":
            return completion(text(f"<ANSWER>{right % 4 + 1}</ANSWER>"))
        return completion(text(f"Thinking.\n<ANSWER>{right}</ANSWER>"))

    with FakeOpenAI(reply) as server:
        done = cli("main.py", "run", "--suite", "lineage", "--length", "8,16", "--number", "2", "--mode", "tag",
                   "--model", "fake-model", "--base-url", server.url, "--results-dir", str(tmp_path),
                   "--quiet")  # fmt: skip
    lines = out(done)
    assert lines[4:11] == [
        "lineage-16 ANCESTOR: 0.00 (C: 0, I: 0, M: 2 A: 2)",
        "lineage-16 DESCENDANT: 0.00 (C: 0, I: 2, M: 0 A: 2)",
        "lineage-16 COMMON_ANCESTOR: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "lineage-16 COMMON_DESCENDANT: 100.00 (C: 2, I: 0, M: 0 A: 2)",
        "lineage: 75.00  (fake-model, tag mode)",
        "problem sizes: lineage-8 100.00, lineage-16 50.00",
        "format: valid first try 87.5%, after retries 87.5%, corrective retries 0, invalid outputs 2 (no_tag 2), "
        "missing 2, errors 0",
    ]
    assert lines[11] == (
        "relaxed reading: 2 missing replies state an answer without the tag (2 of them correct); not counted, "
        "the score with them: 87.50"
    )
    (row,) = json.loads(cli("format_result.py", str(tmp_path), "--format", "json").stdout)
    assert (row["suite"], row["score"], row["score_relaxed"], row["columns"]) == (
        "lineage",
        75.0,
        87.5,
        ["lineage-8", "lineage-16"],
    )
    assert row["metrics"] == {"lineage-8": 100.0, "lineage-16": 50.0}
    table = out(cli("format_result.py", str(tmp_path), "--format", "markdown"))
    assert [cell.strip() for cell in table[0].split("|")[1:8]] == [
        "Nr", "Model", "Lineage", "lineage-8", "lineage-16", "Relaxed", "95% CI",
    ]  # fmt: skip
    assert [cell.strip() for cell in table[2].split("|")[1:7]] == [
        "1", "fake-model (tag)", "75.00", "100.00", "50.00", "87.50",
    ]  # fmt: skip


# --- published results -----------------------------------------------------------------------------------------


def right(case: Case) -> int:
    return int(case.expected)


def wrong(case: Case) -> int:
    return right(case) % 4 + 1


MODEL_A_8: list[Callable[[Case], str]] = [
    lambda c: f"Reasoning...\nSo:\n<ANSWER>{right(c)}</ANSWER>",  # ANCESTOR: correct
    lambda c: f"<ANSWER>{wrong(c)}</ANSWER>",  # DESCENDANT: incorrect
    lambda c: "",  # COMMON_ANCESTOR: no response
    lambda c: f"**ANSWER**: {right(c)}",  # COMMON_DESCENDANT: missing; relaxed, correct
    lambda c: f"<ANSWER>{right(c)}{right(c)}</ANSWER>",  # ANCESTOR: two digits, missing either way
    lambda c: f"<ANSWER>0</ANSWER> no, ANSWER: {right(c)}",  # DESCENDANT: 0 is missing, relaxed too
    lambda c: f"\\boxed{{{wrong(c)}}}",  # COMMON_ANCESTOR: missing; relaxed, incorrect
    lambda c: f"First <ANSWER>{wrong(c)}</ANSWER> then <ANSWER>{right(c)}</ANSWER>",  # COMMON_DESCENDANT: incorrect
]
"""Strict: ANCESTOR 1/2, the others 0/2: 12.5. Relaxed: COMMON_DESCENDANT 1/2 as well: 25.0."""

MODEL_A_HIGH_8: list[Callable[[Case], str]] = [
    *[lambda c: f"<ANSWER>{right(c)}</ANSWER>"] * 7,
    lambda c: f"ANSWER:{right(c)}",
]
"""Strict: COMMON_DESCENDANT 1/2, the others 2/2: 87.5. Relaxed: 100."""

MODEL_A_16: list[Callable[[Case], str]] = [
    lambda c: f"<ANSWER>{right(c)}</ANSWER>",
    lambda c: f"<ANSWER>\n{right(c)}\n</ANSWER>",  # a tag over three lines: missing either way
    lambda c: f'He said "<ANSWER>{right(c)}</ANSWER>"',
    lambda c: "NA",  # pandas reads NA as a missing value
]
"""Strict and relaxed: 2 of 4 classes right: 50.0."""


def write_results(path: Path) -> tuple[list[Case], list[Case]]:
    """A result CSV as `run_openrouter.py` writes one: 8 responses of acme/model-a:free (no reasoning effort) and 8 of
    acme/model-a at high effort to `-s -l 8 -n 2 -r 42`, and 4 of acme/model-a:free to `-l 16 -n 1 -r 1`.

    `compute_metrics.py --csv` prints for it (`--relaxed` in brackets):
    acme/model-a (high): lineage 0.4375 (0.5), lineage-8 0.875 (1.0), lineage-16 0.0 (0.0);
    acme/model-a: lineage 0.3125 (0.375), lineage-8 0.125 (0.25), lineage-16 0.5 (0.5).
    """
    eight, sixteen = list(generate(8, 2, 42, shuffle=True)), list(generate(16, 1, 1))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for cases, replies, model, effort in (
            (eight, MODEL_A_8, "acme/model-a:free", None),
            (eight, MODEL_A_HIGH_8, "acme/model-a", "high"),
            (sixteen, MODEL_A_16, "acme/model-a:free", None),
        ):
            for case, reply in zip(cases, replies, strict=True):
                size, relation = case.metadata["problem_size"], case.metadata["relation"]
                writer.writerow([size, relation, case.expected, case.prompt, model, "Prov", effort, None, reply(case)])
    return eight, sixteen


def test_result_csv_is_imported_as_compute_metrics_scores_it(tmp_path: Path) -> None:
    csv_path, results = tmp_path / "model-a.csv", tmp_path / "result"
    eight, _ = write_results(csv_path)
    sha = hashlib.sha1(csv_path.read_bytes()).hexdigest()[:12]
    done = cli("main.py", "import", "lineage", str(tmp_path), "--results-dir", str(results))
    assert out(done) == [
        f"{csv_path}: acme/model-a, lineage-8: 8 responses, score 12.50, relaxed 25.00 (missing 5); "
        f"stored in {results}/acme_model-a/imported-{sha}-8",
        f"{csv_path}: acme/model-a (high), lineage-8: 8 responses, score 87.50, relaxed 100.00 (missing 1); "
        f"stored in {results}/acme_model-a_high/imported-{sha}-8-high",
        f"{csv_path}: acme/model-a, lineage-16: 4 responses, score 50.00, relaxed 50.00 (missing 2); "
        f"stored in {results}/acme_model-a/imported-{sha}-16",
    ]
    run_dir = results / "acme_model-a" / f"imported-{sha}-8"
    summary = RunSummary.model_validate_json((run_dir / "summary.json").read_text())
    assert (summary.model, summary.mode, summary.imported, summary.status) == ("acme/model-a", "tag", True, "finished")
    assert [(g.group, g.correct, g.incorrect, g.missing) for g in summary.scores.groups] == [
        ("lineage-8 ANCESTOR", 1, 0, 1),
        ("lineage-8 DESCENDANT", 0, 1, 1),
        ("lineage-8 COMMON_ANCESTOR", 0, 0, 2),
        ("lineage-8 COMMON_DESCENDANT", 0, 1, 1),
    ]
    assert summary.dataset.md5 == generated_dataset([8], 2, 42, shuffle=True).info.md5  # the same quizzes
    totals = summary.scores.totals
    assert (totals.requests, totals.input_tokens, totals.cost_usd, totals.mean_latency_s) == (8, None, None, None)
    records = [SampleRecord.model_validate_json(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert [r.case_id for r in records] == [c.id for c in eight]
    assert [r.attempts[0].raw for r in records] == [reply(c) for reply, c in zip(MODEL_A_8, eight, strict=True)]
    assert [r.attempts[0].invalid_kind for r in records] == [
        None, None, "empty", "no_tag", "no_tag", "no_tag", "no_tag", None,
    ]  # fmt: skip

    rows = json.loads(cli("format_result.py", str(results), "--format", "json").stdout)
    assert [(r["model"], r["score"], r["score_relaxed"], r["metrics"]) for r in rows] == [
        ("acme/model-a (high)", 87.5, 100.0, {"lineage-8": 87.5}),
        ("acme/model-a", 50.0, 50.0, {"lineage-16": 50.0}),
        ("acme/model-a", 12.5, 25.0, {"lineage-8": 12.5}),
    ]
    again = cli("main.py", "import", "lineage", str(csv_path), "--results-dir", str(results))
    assert out(again)[0] == f"{csv_path}: acme/model-a, lineage-8: already imported in {run_dir}"
    assert len(list(results.rglob("summary.json"))) == 3


def test_a_result_import_is_a_run_stored_through_run_as_imports_always_were(tmp_path: Path) -> None:
    """Each run of a result file is `run()` of a replay model, stored with the fields an import always had; a second
    import of the file finds each run and stores nothing."""
    csv_path, results = tmp_path / "model-a.csv", tmp_path / "result"
    eight, _ = write_results(csv_path)
    sha = hashlib.sha1(csv_path.read_bytes()).hexdigest()[:12]

    async def imported() -> list[ResultImport]:
        return [done async for done in import_result_file(csv_path, results)]

    first = asyncio.run(imported())
    assert [(d.run.model, d.run_dir.relative_to(results), d.already) for d in first] == [
        ("acme/model-a", Path("acme_model-a", f"imported-{sha}-8"), False),
        ("acme/model-a (high)", Path("acme_model-a_high", f"imported-{sha}-8-high"), False),
        ("acme/model-a", Path("acme_model-a", f"imported-{sha}-16"), False),
    ]
    summary = first[0].summary
    assert summary.model_dump(exclude={"program_version", "started_at", "finished_at", "scores", "dataset"}) == {
        "schema_version": 2, "run_id": f"imported-{sha}-8", "suite": "lineage", "task": "lineage",
        "model": "acme/model-a", "mode": "tag", "status": "finished", "reason": None, "imported": True,
        "source_log": None, "wall_s": 0.0,
        "settings": RunSettings(model="acme/model-a", mode="tag", retries=0, concurrency=1, local=False).model_dump(),
        "excluded_case_ids": [],
    }  # fmt: skip
    assert summary.dataset.model_dump(exclude={"md5"}) == {
        "suite": "lineage", "source": "file", "path": str(csv_path), "cases": 8, "params": {"problem_sizes": [8]},
        "limit": None,
    }  # fmt: skip
    totals = summary.scores.totals
    assert (totals.requests, totals.input_tokens, totals.cost_usd, totals.mean_latency_s, totals.pacing) == (
        8, None, None, None, None
    )  # fmt: skip
    records = list(read_records(first[0].run_dir))
    assert [(r.case_id, r.latency_s) for r in records] == [(c.id, None) for c in eight]
    again = asyncio.run(imported())
    assert [(d.run_dir, d.already, d.summary) for d in again] == [(d.run_dir, True, d.summary) for d in first]


def test_import_farel_is_the_import_command_for_farel_logs(tmp_path: Path) -> None:
    log = FAREL_FIXTURES / "logs" / "deepseek-v3.log"
    done = cli("main.py", "import", "farel", str(log), "--results-dir", str(tmp_path))
    assert out(done)[0].startswith(f"{log}: 450 replies, FaRel 96.44; re-scored counts match")
    again = cli("main.py", "import-farel", str(log), "--results-dir", str(tmp_path))
    assert out(again)[0].startswith(f"{log}: already imported in ")


# --- bad input -------------------------------------------------------------------------------------------------

QUIZ = next(iter(generate(8, 1, 42)))
GOOD = ["8", "ANCESTOR", "1", QUIZ.prompt, "m", "p", "", "", "<ANSWER>1</ANSWER>"]


def csv_text(*rows: Sequence[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([GOOD[:8]], "row 1: expected 9 fields (problem_size, relation_name, correct_answer, quiz, model_name, "
                     "provider_name, reasoning_effort, system_prompt, model_response), got 8"),
        ([GOOD, ["x", *GOOD[1:]]], "row 2: the problem size is 'x', not a whole number"),
        ([["8", "COUSIN", *GOOD[2:]]], "row 1: unknown relation 'COUSIN' (lineage-bench's are ANCESTOR, DESCENDANT, "
                                       "COMMON_ANCESTOR, COMMON_DESCENDANT)"),
        ([[*GOOD[:2], "6", *GOOD[3:]]], "row 1: the correct answer 6 is not an option number 1..5"),
        ([[*GOOD[:3], "no options here", *GOOD[4:]]], "row 1: no numbered answer options (1., 2., ...) in the quiz"),
        ([[*GOOD[:4], "", *GOOD[5:]]], "row 1: no model name"),
    ],
    ids=["fields", "size", "relation", "answer", "options", "model"],
)  # fmt: skip
def test_a_bad_result_csv_is_one_line(rows: list[list[str]], message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(csv_text(*rows))
    done = cli("main.py", "import", "lineage", str(path), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 2 and "Traceback" not in done.stderr.decode()
    assert done.stderr.decode().splitlines() == [f"main.py: error: malformed result CSV: {path} {message}"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "lineage", "-l", "3"], "main.py generate lineage: error: argument -l/--length: must be 4 to "
                                             "2048, got 3 (see --help)"),
        (["generate", "lineage", "-l", "8", "-p", "{quiz}"], "main.py generate lineage: error: bad prompt template: "
                                                             "KeyError: 'quiz'"),
        (["run", "--suite", "lineage", "--length", "8,3"], "main.py: error: a lineage quiz connects 4 to 2048 people, "
                                                           "not 3"),
        (["run", "--suite", "lineage", "--length", "8,8"], "main.py: error: a lineage problem size is named twice: "
                                                           "8,8"),
        (["run", "--suite", "lineage", "--unambiguous"], "main.py: error: --unambiguous belongs to the farel suite, "
                                                         "not lineage"),
        (["run", "--length", "3,4"],
         "main.py: error: suite farel: length=3,4: Input should be a valid integer, unable to parse string as an "
         "integer"),
        (["import", "lineage", "missing.csv"], "main.py: error: no result file or folder missing.csv"),
    ],
    ids=["generate-size", "generate-template", "run-size", "run-twice", "farel-flag", "farel-length", "no-file"],
)  # fmt: skip
def test_bad_lineage_input_is_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    extra = ["--model", "test", "--results-dir", str(tmp_path / "r")] if args[0] == "run" else []
    assert one_line_error(cli("main.py", *args, *extra)) == message
    assert not (tmp_path / "r").exists()
