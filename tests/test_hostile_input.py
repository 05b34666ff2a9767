"""Hostile input, round three: files, logs, servers and tasks that broke the evaluator, each reproduced as it broke."""

from __future__ import annotations

import ast
import asyncio
import csv
import hashlib
import io
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from rich.console import Console

import evaluator
from tests.cli_run import run_cli
from tests.conftest import FAREL_FIXTURES, PYTHON, REPO
from tests.fake_openai import FakeOpenAI, Fault, completion, embeddings, tool_call
from tests.test_format_result import answers, store
from typed_eval.contracts import RunSummary
from typed_eval.core import datasets
from typed_eval.providers import ollama_models
from typed_eval.providers.embeddings import endpoint_embedder
from typed_eval.suites.judge import Judge
from typed_eval.suites.lineage.suite import csv_rows
from typed_eval.suites.lineage.suite import generate as lineage_generate
from typed_eval.suites.novelty.suite import NoveltyOutput, NoveltySettings, novelty_dataset, novelty_task


def cli(script: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args, stdin=stdin)


def python_c(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ARGS` in a fresh interpreter: what it measures is that process's own memory."""
    return subprocess.run([PYTHON, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


# --- 25: a FaRel length whose family outgrows the name lists -------------------------------------------------------


def test_a_farel_length_beyond_the_names_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datasets, "_PROGRESS_AFTER_S", math.inf)  # a slow machine's progress line is not the point
    run = cli("main.py", "run", "--length", "18", "--model", "test", "--results-dir", str(tmp_path))
    assert one_line_error(run) == (
        "main.py: error: degree 17 drew 101 female people of 171, more than the 100 female names: use a length of at "
        "most 12"
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
    generated = cli("main.py", "generate", "farel", "-l", "18", "-n", "1", "-r", "42")
    assert generated.returncode == 2
    assert generated.stderr.splitlines()[-1] == (
        "farel_bench.py: error: degree 18 drew 104 male people of 190, more than the 100 male names: use a length of "
        "at most 12"
    )
    assert "Traceback" not in generated.stderr
    assert len(generated.stdout.splitlines()) == 170  # degrees 1 to 17, one quiz per class, as the original writes


# --- 26: the leaderboard's reader leaves early (`| head`) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "code"), [("markdown", 141), ("csv", 141), ("json", 141), ("rich", 1)]
)  # rich's console handles a closed pipe itself, quietly, with exit 1
def test_the_leaderboard_ends_quietly_when_its_reader_leaves(fmt: str, code: int) -> None:
    shown = subprocess.Popen([PYTHON, "format_result.py", "result", "--format", fmt], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert shown.stdout is not None and shown.stderr is not None
    shown.stdout.close()  # the reader is gone before the first line is written
    with shown.stderr:
        stderr = shown.stderr.read()
    assert (shown.wait(timeout=60), stderr) == (code, b"")


# --- 20, 21: what a server or a stored file says is shown, never obeyed ---------------------------------------------

HOSTILE = "bad key\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;pwned\x07\x9b31m\r\u202eend"
"""An OSC 52 clipboard write, a clear screen, a window title, a C1 CSI, a carriage return, a right-to-left override."""
SHOWN = "bad key\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m \\u202eend"
"""As printed: each control character as its escape (the error line's whitespace, the carriage return, is a space)."""
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def test_a_server_error_is_printed_with_its_control_characters_shown(tmp_path: Path) -> None:
    with FakeOpenAI(lambda _: Fault(401, HOSTILE.encode())) as server:
        done = cli("main.py", "run", "--model", "m", "--base-url", server.url, "--api-key", "k", "--length", "1",
                   "--limit", "2", "--results-dir", str(tmp_path), "--max-transport-retries", "0",
                   "--quiet")  # fmt: skip
    (run_dir,) = (tmp_path / "m").iterdir()
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        f"main.py: error: model m at {server.url} could not be reached: HTTP 401 from m: {SHOWN} (run stored as DNF "
        f"in {run_dir})\n"
    )


HOSTILE_NAMES = {
    "link": "[link=https://evil.example/]click here[/link]",
    "closing": "org/a[/]b",
    "styled": "[bold red]vanish[/bold red] me",
    "controls": HOSTILE,
}


@pytest.fixture
def hostile_names(tmp_path: Path) -> Path:
    for minutes, name in enumerate(HOSTILE_NAMES.values()):
        store(tmp_path, name, answers({"child": ["correct", "incorrect"]}), minutes=minutes)
    return tmp_path


def test_model_names_are_shown_as_written_in_the_terminal_leaderboard(hostile_names: Path) -> None:
    done = cli("format_result.py", str(hostile_names), "--format", "rich", "--wide")
    assert (done.returncode, done.stderr) == (0, "")
    names = [line.split(" (tool)")[0].split(maxsplit=1)[1] for line in done.stdout.splitlines() if "(tool)" in line]
    assert names == [
        "[bold red]vanish[/bold red] me",
        "[link=https://evil.example/]click here[/link]",
        "bad key\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\r\\u202eend",
        "org/a[/]b",
    ]
    assert not any(raw in done.stdout for raw in RAW)


@pytest.mark.parametrize("fmt", ["markdown", "csv", "json"])
def test_no_leaderboard_format_prints_a_control_character(hostile_names: Path, fmt: str) -> None:
    done = cli("format_result.py", str(hostile_names), "--format", fmt)
    assert (done.returncode, done.stderr) == (0, "")
    assert not any(raw in done.stdout for raw in RAW)
    if fmt == "json":  # the same names, escaped the JSON way
        names = sorted(row["model"] for row in json.loads(done.stdout))
        assert names == sorted(HOSTILE_NAMES.values())
    else:  # in the model's name and its run's id
        assert done.stdout.count("bad key\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;pwned\\x07\\x9b31m\\r\\u202eend") == 2


# --- 27: scorer details that are not JSON ---------------------------------------------------------------------------

DETAILS_NOT_JSON = """\
import evaluator
TASK = evaluator.Task(name="t", output_type=int, score=lambda case, output: evaluator.Score(1.0, {"at": object()}))
CASES = [evaluator.Case(id="a", prompt="p"), evaluator.Case(id="b", prompt="q")]
"""


def test_scorer_details_that_are_not_json_are_the_tasks_error_naming_the_case(tmp_path: Path) -> None:
    suite = tmp_path / "details.py"
    suite.write_text(DETAILS_NOT_JSON)
    done = cli("main.py", "run", "--suite", str(suite), "--model", "test", "--results-dir", str(tmp_path / "out"),
               "--quiet")  # fmt: skip
    assert one_line_error(done) == (
        "main.py: error: the scorer of task 't' gave details that are not JSON for case 'a': Unable to serialize "
        "unknown type: <class 'object'>"
    )
    assert list((tmp_path / "out").rglob("samples.jsonl")) == []


# --- 12: a task figure that is not a finite number; a run that cannot be read ---------------------------------------

NON_FINITE_METRICS = """\
import evaluator
TASK = evaluator.Task(name="t", output_type=int, score=lambda case, output: evaluator.Score(1.0, {"n": 0}),
                      metrics=lambda sums: {"ratio": float("nan"), "big": float("-inf"), "runs": 2.0})
CASES = [evaluator.Case(id="a", prompt="p"), evaluator.Case(id="b", prompt="q")]
"""


def test_a_non_finite_task_figure_is_stored_as_null_and_the_leaderboard_reads_it(tmp_path: Path) -> None:
    suite = tmp_path / "figures.py"
    suite.write_text(NON_FINITE_METRICS)
    results = tmp_path / "results"
    done = cli("main.py", "run", "--suite", str(suite), "--model", "test", "--results-dir", str(results), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[2] == "metrics: ratio n/a, big n/a, runs 2.00"
    (summary,) = results.rglob("summary.json")
    assert json.loads(summary.read_text())["scores"]["metrics"] == {"ratio": None, "big": None, "runs": 2.0}
    shown = cli("format_result.py", str(results), "--format", "json")
    assert (shown.returncode, shown.stderr) == (0, "")
    assert [(row["model"], row["score"], row["metrics"]) for row in json.loads(shown.stdout)] == [
        ("test", 100.0, {"ratio": None, "big": None, "runs": 2.0})
    ]


def test_a_run_that_cannot_be_read_is_one_line_and_hides_no_other(tmp_path: Path) -> None:
    store(tmp_path, "good", answers({"child": ["correct", "incorrect"]}))
    torn = store(tmp_path, "torn-summary", answers({"child": ["correct"]}), minutes=1)
    (torn / "summary.json").write_text((torn / "summary.json").read_text()[:200])
    bad = store(tmp_path, "bad-records", answers({"child": ["correct"]}), minutes=2)
    (bad / "samples.jsonl").write_text('{"case_id": 3}\n')
    store(tmp_path, "also-good", answers({"child": ["correct", "correct"]}), minutes=3)
    done = cli("format_result.py", str(tmp_path), "--format", "json")
    assert done.returncode == 2
    rows = [(row["model"], row["score"]) for row in json.loads(done.stdout)]  # a damaged line leaves out the line
    assert rows == [("also-good", 100.0), ("bad-records", 100.0), ("good", 50.0)]
    assert done.stderr.splitlines() == [
        f"format_result.py: error: corrupt result file {torn}/summary.json: Unterminated string starting at: line 10 "
        "column 3 (char 199)",
        f"format_result.py: error: corrupt record at {bad}/samples.jsonl:1: Input should be a valid string",
    ]


# --- 16: usage that cannot be true ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt_tokens", "completion_tokens"), [(-1_000_000, -5), (100, -5), (10**15, 5)], ids=["negative", "one-negative",
                                                                                              "absurd"]
)  # fmt: skip
def test_usage_that_cannot_be_true_is_unknown_and_stops_a_cost_budget(
    prompt_tokens: int, completion_tokens: int, tmp_path: Path
) -> None:
    served: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        served.append(1)
        if len(served) <= 3:
            return completion(tool_call({"answer": 1}))
        return completion(tool_call({"answer": 1}), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    with FakeOpenAI(reply) as server:
        done = cli("main.py", "run", "--model", "m", "--base-url", server.url, "--api-key", "k", "--limit", "20",
                   "--concurrency", "1", "--price-in", "1", "--price-out", "2", "--max-cost", "0.01",
                   "--results-dir", str(tmp_path), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (summary_path,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_path.read_text())
    records = [json.loads(line) for line in (summary_path.parent / "samples.jsonl").read_text().splitlines()]
    assert (summary.status, summary.reason, len(records), len(served)) == (
        "partial", f"stopped: max_cost cannot be enforced without usage ($0.01): the answer to case "
                   f"{records[3]['case_id']!r} came with no usage that can be read, so its cost is unknown", 4, 4
    )  # fmt: skip
    assert [(r["usage"]["input_tokens"], r["usage"]["output_tokens"], r["cost"]) for r in records] == [
        *[(100, 10, {"usd": 0.00012, "source": "user", "batch_price": None})] * 3,
        (None, None, {"usd": None, "source": "unknown", "batch_price": None}),
    ]
    totals = summary.scores.totals
    assert (totals.input_tokens, totals.cost_usd, totals.cost_complete) == (300, pytest.approx(0.00036), False)


# --- 18: an embedder's NaN; a repeated answer's rounding -------------------------------------------------------------

PEGS = "What could you build with a hundred wooden clothes pegs?"
PEG_ANSWERS = ["A model of the Eiffel Tower.", "A trivet to set hot pans on.", "A bird feeder to hang from a tree."]
REPEATED = [0.6515929698944092, 0.788723349571228, 0.09385958313941956]
"""A float32 vector whose cosine with itself rounds to 1 + 2.2e-16."""


def novelty_run(vectors: dict[str, list[float]], answers: list[str]) -> evaluator.EvaluationResult:
    """The novelty loop of one question (cap 3) against an embeddings endpoint on loopback; the answerer repeats
    `answers` in turn and the judge finds each coherent."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        first = messages[0]
        assert isinstance(first, ModelRequest)
        asked = next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))
        shown = asked.count("\n1. ") + asked.count("\n2. ") + asked.count("\n3. ")
        return ModelResponse(parts=[TextPart(answers[shown])], usage=RequestUsage(input_tokens=30, output_tokens=10))

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"reason": "sensible", "score": 9})],
                             usage=RequestUsage(input_tokens=50, output_tokens=5))  # fmt: skip

    settings = NoveltySettings(max_answers=3)
    with FakeOpenAI(lambda _: (404, {}), {"POST /v1/embeddings": embeddings(vectors.__getitem__)}) as server:

        async def run() -> evaluator.EvaluationResult:
            embedder = endpoint_embedder("fake-embed", server.url)
            try:
                task = novelty_task(embedder, Judge(FunctionModel(judge), "fn-judge", local=True), settings)
                found = novelty_dataset([PEGS], embedder.name, settings).load()
                return await evaluator.evaluate(task, found, FunctionModel(answer), local=True)
            finally:
                await embedder.aclose()

        return asyncio.run(run())


def test_an_embedders_nan_is_the_samples_error_not_a_similar_answer() -> None:
    vectors = {PEG_ANSWERS[0]: [1.0, 0.0, 0.0], PEG_ANSWERS[1]: [math.nan, 1.0, 0.0]}
    result = novelty_run(vectors, PEG_ANSWERS)
    (record,) = result.records
    assert (record.status, record.output, record.score) == ("error", None, None)
    assert record.error == (
        "EmbeddingError: the embedding model fake-embed gave a vector that is not an embedding: nan at 1 of 3"
    )
    assert [a.raw for a in record.attempts] == PEG_ANSWERS[:2]
    assert record.usage.requests == 2 + 2 + 2  # answers, verdicts, and both embeddings requests
    assert (result.scores.errors, result.scores.score, result.status) == (1, None, "finished")


def test_a_repeated_answer_has_a_novelty_of_exactly_zero() -> None:
    vectors = {PEG_ANSWERS[0]: REPEATED, PEG_ANSWERS[1]: [0.0, 0.0, 1.0]}
    (record,) = novelty_run(vectors, [PEG_ANSWERS[0], PEG_ANSWERS[1], PEG_ANSWERS[0]]).records
    output = NoveltyOutput.model_validate(record.output)
    apart = 1 - REPEATED[2] / math.sqrt(math.fsum(x * x for x in REPEATED))
    assert [(a.novelty, a.accepted) for a in output.answers] == [
        (1.0, True),
        (pytest.approx(apart), True),
        (0.0, False),
    ]
    assert output.stop == "similar"


# --- 22, 23: farel-bench logs cut short, with content parts, or of many messages ------------------------------------

FIXTURE_LOG = FAREL_FIXTURES / "logs" / "deepseek-v3.log"


def test_a_folder_of_logs_imports_each_it_can_and_names_the_one_it_cannot(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    published = FIXTURE_LOG.read_text(encoding="utf-8")
    first, rest = published.split("\n", 1)
    (logs / "a-cut.log").write_text(first[:150], encoding="utf-8")  # cut short in its first record
    messages = ast.literal_eval(first)
    parts = [message | {"content": [{"type": "text", "text": message["content"]}]} for message in messages]
    (logs / "b-parts.log").write_text(repr(parts) + "\n" + rest, encoding="utf-8")  # content as a list of parts
    (logs / "c-whole.log").write_text(published, encoding="utf-8")
    done = cli("main.py", "import", "farel", str(logs), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr == (
        f"main.py: error: {logs}/a-cut.log: no whole record: the log is cut short in its first message list\n"
    )
    lines = done.stdout.splitlines()
    assert [line.split(";")[0] for line in lines] == [
        f"{logs}/b-parts.log: 450 replies, FaRel 96.44",
        f"{logs}/c-whole.log: 450 replies, FaRel 96.44",
    ]
    assert all("re-scored counts match the log's summary lines" in line for line in lines)


MEMORY_OF_PARSE = """\
import resource, sys
from pathlib import Path
from typed_eval.suites.farel.logs import parse_log
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
log = parse_log(Path(sys.argv[1]))
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(len(log.entries), log.entries[0].text[:25], grown)
"""


def test_a_message_list_of_12_mb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """260,000 short messages on one line: `ast.literal_eval` built a syntax tree of about 1.4 GB for it."""
    quiz = ast.literal_eval(FIXTURE_LOG.read_text(encoding="utf-8").split("\n", 1)[0])[0]["content"]
    turns = [{"role": "user", "content": quiz}]
    turns += [{"role": "assistant" if n % 2 else "user", "content": f"turn {n}"} for n in range(1, 260_000)]
    log = tmp_path / "long.log"
    log.write_text(repr(turns) + "\n<ANSWER>1</ANSWER>\n", encoding="utf-8")
    assert 11_000_000 < log.stat().st_size < 13_000_000
    done = python_c(MEMORY_OF_PARSE, str(log))
    assert done.returncode == 0, done.stderr
    entries, head, grown = done.stdout.rsplit(" ", 1)[0], quiz[:25], int(done.stdout.split()[-1])
    assert entries == f"1 {head}"
    assert grown < 150, f"parsing grew the process by {grown} MB"


# --- 24: a FaRel CSV field that is an expression, not a string ------------------------------------------------------

PUBLISHED_LINE = (FAREL_FIXTURES / "farel-bench.csv").read_text().split("\n")[0]


@pytest.mark.parametrize("field", ["quiz", "relation"])
def test_a_csv_field_of_a_million_unary_minus_signs_is_one_line(field: str, tmp_path: Path) -> None:
    degree, relation, correct, quiz = PUBLISHED_LINE.split(",", 3)
    deep = "'x'" + "-" * 1_000_000 + "1"  # Python's parser runs out of memory on it
    line = f"{degree},{relation},{correct},{deep}" if field == "quiz" else f"{degree},{deep},{correct},{quiz}"
    path = tmp_path / "deep.csv"
    path.write_text(line + "\n")
    done = cli("main.py", "run", "--model", "test", "--quizzes", str(path), "--results-dir", str(tmp_path / "r"))
    assert one_line_error(done) == (
        f"main.py: error: malformed CSV: {path} line 1: the {field} is not a Python string literal (one quoted string)"
    )
    assert not (tmp_path / "r").exists()


# --- 11 and the published lineage-bench files: models whose names fold alike; a reply of more than 131,072 chars -----

LINEAGE_QUIZ = next(iter(lineage_generate(8, 1, 42)))


def result_csv(path: Path, rows: list[tuple[str, str]]) -> str:
    """A lineage-bench result file of (model, reply) rows, all on one quiz of size 8; its SHA-1's first 12 digits."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for model, reply in rows:
            quiz = LINEAGE_QUIZ
            writer.writerow([8, quiz.metadata["relation"], quiz.expected, quiz.prompt, model, "p", "", "", reply])
    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def test_models_whose_names_fold_to_one_folder_are_both_imported(tmp_path: Path) -> None:
    right = f"<ANSWER>{LINEAGE_QUIZ.expected}</ANSWER>"
    path = tmp_path / "two.csv"
    wrong = f"<ANSWER>{1 if LINEAGE_QUIZ.expected != 1 else 2}</ANSWER>"
    sha = result_csv(path, [("vendor/model-a", right), ("vendor_model-a", wrong)])
    results = tmp_path / "r"
    done = cli("main.py", "import", "lineage", str(path), "--results-dir", str(results))
    hashed = "vendor_model-a-" + hashlib.sha256(b"vendor_model-a").hexdigest()[:8]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"{path}: vendor/model-a, lineage-8: 1 responses, score 100.00, relaxed 100.00 (missing 0); stored in "
        f"{results}/vendor_model-a/imported-{sha}-8",
        f"{path}: vendor_model-a, lineage-8: 1 responses, score 0.00, relaxed 0.00 (missing 0); stored in "
        f"{results}/{hashed}/imported-{sha}-8",
    ]
    stored = {json.loads(p.read_text())["model"]: p.parent.relative_to(results) for p in results.rglob("summary.json")}
    assert stored == {
        "vendor/model-a": Path("vendor_model-a", f"imported-{sha}-8"),
        "vendor_model-a": Path(hashed, f"imported-{sha}-8"),
    }
    again = cli("main.py", "import", "lineage", str(path), "--results-dir", str(results))
    assert (again.returncode, again.stdout.splitlines()) == (0, [
        f"{path}: vendor/model-a, lineage-8: already imported in {results}/vendor_model-a/imported-{sha}-8",
        f"{path}: vendor_model-a, lineage-8: already imported in {results}/{hashed}/imported-{sha}-8",
    ])  # fmt: skip


def test_a_reply_longer_than_the_csv_modules_field_limit_is_imported(tmp_path: Path) -> None:
    reply = "Let me think. " * 15_000 + f"<ANSWER>{LINEAGE_QUIZ.expected}</ANSWER>"  # 210,018 characters
    path = tmp_path / "long.csv"
    sha = result_csv(path, [("vendor/model-b", reply)])
    done = cli("main.py", "import", "lineage", str(path), "--results-dir", str(tmp_path / "r"))
    assert (done.returncode, done.stderr) == (0, "")
    run_dir = tmp_path / "r" / "vendor_model-b" / f"imported-{sha}-8"
    assert done.stdout == (
        f"{path}: vendor/model-b, lineage-8: 1 responses, score 100.00, relaxed 100.00 (missing 0); stored in "
        f"{run_dir}\n"
    )
    (record,) = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert (len(record["attempts"][0]["raw"]), record["status"]) == (210_018, "correct")
    before = csv.field_size_limit()
    assert [len(row[8]) for _, row in csv_rows(path.read_text(), str(path))] == [210_018]
    assert csv.field_size_limit() == before  # the module's setting is put back


# --- 7: a suite file's cases() generator ---------------------------------------------------------------------------

BIG_SUITE = """\
import evaluator

TASK = evaluator.Task(name="big", output_type=int, score=lambda case, output: 1.0)


def cases():
    for n in range(120_000):
        yield evaluator.Case(id=f"c{n:06d}", prompt=f"{n:06d} " + "x" * 800, group=f"g{n % 4}")
"""

MEMORY_OF_SUITE = """\
import resource, sys
from pathlib import Path
from typed_eval.suites.suite_file import load_suite_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
task, dataset = load_suite_file(Path(sys.argv[1]))
posed = [case.id for case in dataset.limited(8).cases()]
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(dataset.info.cases, dataset.group_sizes, posed[:4], grown)
"""


def test_a_suite_files_cases_generator_is_pulled_lazily(tmp_path: Path) -> None:
    """120,000 cases of 807 characters (97 MB of prompts): the dataset is surveyed and posed a case at a time."""
    suite = tmp_path / "big.py"
    suite.write_text(BIG_SUITE)
    done = python_c(MEMORY_OF_SUITE, str(suite))
    assert done.returncode == 0, done.stderr
    shown, grown = done.stdout.rsplit(" ", 1)[0], int(done.stdout.split()[-1])
    assert shown == (
        "120000 {'g0': 30000, 'g1': 30000, 'g2': 30000, 'g3': 30000} ['c000000', 'c000001', 'c000002', 'c000003']"
    )
    assert grown < 100, f"the dataset grew the process by {grown} MB"


def test_a_cases_generator_that_fails_midway_is_one_line(tmp_path: Path) -> None:
    suite = tmp_path / "midway.py"
    suite.write_text(
        "import evaluator\nTASK = evaluator.Task(name='t', output_type=int, score=lambda case, output: 1.0)\n"
        "def cases():\n    yield evaluator.Case(id='a', prompt='p')\n    raise KeyError('invoice 7')\n"
    )
    done = cli("main.py", "run", "--suite", str(suite), "--model", "test", "--results-dir", str(tmp_path / "r"))
    assert one_line_error(done) == f"main.py: error: suite file {suite}: cases() failed: KeyError: 'invoice 7'"
    assert not (tmp_path / "r").exists()


def test_an_ollama_servers_pull_status_is_shown_as_text() -> None:
    said = "[link=https://evil.example/]verifying[/link] \x1b]0;pwned\x07done"

    def pull(_: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
        return 200, [{"status": said, "digest": "sha256:1", "total": 1000, "completed": 1000}]

    screen = io.StringIO()
    with FakeOpenAI(lambda _: (404, {}), {"POST /api/pull": pull}) as server:
        ollama_models._pull(ollama_models._client(server.url.removesuffix("/v1")), "evil",
                            Console(file=screen, force_terminal=True, width=200))  # fmt: skip
    drawn = screen.getvalue()
    assert "pull evil: [link=https://evil.example/]verifying[/link] \\x1b]0;pwned\\x07done" in drawn
    assert "\x1b]0;" not in drawn and "\x1b]8;" not in drawn  # no window title, no live link
