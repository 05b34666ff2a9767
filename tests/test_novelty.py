"""The novelty suite (seed 004, Aidan Bench): the answer loop end to end with FunctionModels for the answerer and the
judge and the real local embedder (all-MiniLM-L6-v2 from the `novelty` extra), each way a loop stops, the record and
its usage and cost, an OpenAI-compatible embeddings endpoint on a loopback server, and the command line (offline test
model, budgets and resume, the leaderboard, one-line refusals)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import math
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import evaluator
from evaluator import Case, RunSummary, SampleRecord
from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, embeddings, text, tool_call
from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import InputError, TaskError
from typed_eval.providers.embeddings import TextEmbedder, cosine, endpoint_embedder, local_embedder
from typed_eval.reports.exports import render_csv
from typed_eval.reports.html_report import render_html
from typed_eval.reports.leaderboard import build_rows, load_run
from typed_eval.reports.tables import render_markdown
from typed_eval.suites.judge import Judge, judge_name
from typed_eval.suites.novelty.suite import (
    QUESTIONS_FILE,
    NoveltyOutput,
    NoveltySettings,
    answer_prompt,
    novelty,
    novelty_dataset,
    novelty_task,
    read_questions,
)

MALL = "What could a small town do with an empty shopping mall?"
FOOD = "How might a restaurant throw away less food?"
PEGS = "What could you build with a hundred wooden clothes pegs?"
SCRIPTS = {
    MALL: [  # repeats itself: stops on similarity
        "Turn it into an indoor farm that grows vegetables all year.",
        "Open a climbing gym and a skate park inside it.",
        "Turn it into an indoor farm that grows vegetables all year.",
    ],
    FOOD: [  # the judge finds the third incoherent (a score of 3, the threshold: at or below stops)
        "Offer smaller portions at a lower price.",
        "Compost the scraps for the kitchen garden.",
        "Purple Tuesdays sing the forks backwards.",
    ],
    PEGS: [  # all different: stops at the cap of 3
        "A model of the Eiffel Tower.",
        "A trivet to set hot pans on.",
        "A bird feeder to hang from a tree.",
    ],
}
COHERENCE = {"Compost the scraps for the kitchen garden.": 4, "Purple Tuesdays sing the forks backwards.": 3}
"""The judge's scores (8 for any other answer)."""
ANSWER_USAGE = RequestUsage(input_tokens=30, output_tokens=10)
JUDGE_USAGE = RequestUsage(input_tokens=50, output_tokens=5)
PRICES = UserPrices(1.0, 2.0)


@dataclass(frozen=True)
class Loaded:
    embedder: TextEmbedder
    said: str
    """What the load wrote on stderr, transformers' progress bars on when it began."""
    bars_after: bool


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    """The embedder, loaded once for the module, as a process that imported huggingface_hub with its bars on (a
    caller, the schemas suite's download) loads it."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        embedder = local_embedder()
    return Loaded(embedder, said.getvalue(), transformers_logging.is_progress_bar_enabled())


@pytest.fixture(scope="module")
def embedder(loaded: Loaded) -> TextEmbedder:
    return loaded.embedder


def test_the_embedder_loads_without_a_progress_bar_whatever_the_process_imported_before(loaded: Loaded) -> None:
    """The bar stays off while the embedder loads (it came before a one-line error), and is on again after it."""
    assert (loaded.said, loaded.bars_after) == ("", True)


def prompt_of(messages: Sequence[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return next(str(p.content) for p in first.parts if isinstance(p, UserPromptPart))


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def shown_answers(prompt: str) -> list[str]:
    """The earlier answers an answer prompt lists (`1. ...`), in order."""
    if "<previous_answers>" not in prompt:
        return []
    return [
        line.split(". ", 1)[1] for line in between(prompt, "<previous_answers>\n", "\n</previous_answers>").split("\n")
    ]


def answerer(scripts: dict[str, list[str]], prompts: list[str] | None = None) -> FunctionModel:
    """Answers each question with its script's next line: the one after the answers it was shown."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = prompt_of(messages)
        if prompts is not None:
            prompts.append(prompt)
        script = scripts[between(prompt, "<question>", "</question>")]
        return ModelResponse(parts=[TextPart(script[len(shown_answers(prompt))])], usage=ANSWER_USAGE)

    return FunctionModel(respond)


def judging(scores: dict[str, Any], default: Any = 8) -> FunctionModel:
    """Rates each answer (read from the judge's prompt) as `scores` says, through the verdict tool."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = between(prompt_of(messages), "<answer>", "</answer>")
        score = scores.get(answer, default)
        (tool,) = info.output_tools
        return ModelResponse(parts=[ToolCallPart(tool.name, {"reason": f"rated {score}", "score": score})],
                             usage=JUDGE_USAGE)  # fmt: skip

    return FunctionModel(respond)


def expected_novelties(embedder: TextEmbedder, answers: list[str]) -> list[float]:
    """Each answer's novelty against those before it, computed apart from the suite (numpy)."""
    vectors = [np.asarray(v) for v in asyncio.run(embedder.embed(answers)).vectors]
    found = [1.0]
    for n in range(1, len(vectors)):
        found.append(
            1 - max(float(vectors[n] @ v / np.linalg.norm(vectors[n]) / np.linalg.norm(v)) for v in vectors[:n])
        )
    return found


def cases(*questions: str, settings: NoveltySettings, embedding: str = "all-MiniLM-L6-v2") -> list[Case]:
    return novelty_dataset(list(questions), embedding, settings).load()


# --- pieces ---------------------------------------------------------------------------------------------------


def test_novelty_is_one_minus_the_highest_cosine_similarity() -> None:
    assert cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
    assert cosine([3.0, 4.0], [6.0, 8.0]) == 1.0
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert novelty([1.0, 0.0], []) == 1.0  # the first answer, as in Aidan Bench
    assert novelty([1.0, 1.0], [[1.0, 0.0], [0.0, 1.0]]) == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-15)
    assert novelty([1.0, 0.0], [[-1.0, 0.0]]) == 2.0  # pointing away from every earlier answer


def test_the_answer_prompt_lists_the_accepted_answers() -> None:
    assert (
        answer_prompt("Why?", []) == "Answer the following question in one short sentence.\n<question>Why?</question>\n"
    )
    assert answer_prompt("Why?", ["Because.", "Just so."]) == (
        "Answer the following question in one short sentence.\n<question>Why?</question>\n"
        "Give an answer that differs from every answer you gave before; they are listed between the "
        "<previous_answers> tags.\n<previous_answers>\n1. Because.\n2. Just so.\n</previous_answers>\n"
    )


def test_questions_are_read_one_a_line_and_the_settings_go_with_each_case(tmp_path: Path) -> None:
    shipped = read_questions()
    assert len(shipped) == 12
    assert shipped[0] == "What could a small town do with a shopping mall that has stood empty for years?"
    assert QUESTIONS_FILE.relative_to(QUESTIONS_FILE.parents[3]).as_posix() == "typed_eval/suites/novelty/questions.txt"
    mine = tmp_path / "q.txt"
    mine.write_text("\ufeff# mine\nWhy?\n\n  How?  \n", encoding="utf-8")
    assert read_questions(mine) == ["Why?", "How?"]
    dataset = novelty_dataset(read_questions(mine), "all-MiniLM-L6-v2", NoveltySettings(max_answers=5), path=mine)
    (first, second) = dataset.load()
    assert (first.id, first.prompt, second.id) == ("q01", "Why?", "q02")
    stored = {
        "max_answers": 5,
        "coherence_threshold": 3,
        "novelty_threshold": 0.1,
        "embedding_model": "all-MiniLM-L6-v2",
    }
    assert first.metadata == stored
    assert dataset.info.params == {"questions": str(mine), **stored}
    other = novelty_dataset(read_questions(mine), "all-MiniLM-L6-v2", NoveltySettings(max_answers=6), path=mine)
    assert other.info.md5 != dataset.info.md5  # another cap is another dataset: a resume cannot mix them
    (tmp_path / "none.txt").write_text("# nothing\n\n")
    with pytest.raises(InputError, match=r"has no questions \(one a line; # starts a comment\)$"):
        read_questions(tmp_path / "none.txt")
    with pytest.raises(InputError, match="coherence_threshold: must be 0 to 10") as refused:
        NoveltySettings(coherence_threshold=11)
    assert refused.value.parameter == "coherence_threshold"
    with pytest.raises(InputError, match="novelty_threshold: must be 0 to 1, got nan"):
        NoveltySettings(novelty_threshold=math.nan)


# --- the loop, end to end -------------------------------------------------------------------------------------


def test_each_loop_stops_on_similarity_incoherence_or_the_cap(embedder: TextEmbedder) -> None:
    settings = NoveltySettings(max_answers=3)
    prompts: list[str] = []
    judge = Judge(judging(COHERENCE), "fn-judge", prices=PRICES)
    task = novelty_task(embedder, judge, settings)
    result = asyncio.run(evaluator.evaluate(task, cases(MALL, FOOD, PEGS, settings=settings),
                                            answerer(SCRIPTS, prompts), prices=PRICES, concurrency=1))  # fmt: skip
    mall, food, pegs = result.records
    outputs = [NoveltyOutput.model_validate(r.output) for r in result.records]
    assert [o.stop for o in outputs] == ["similar", "incoherent", "cap"]
    assert [[a.accepted for a in o.answers] for o in outputs] == [[True, True, False], [True, True, False], [True] * 3]
    assert [[a.text for a in o.answers] for o in outputs] == [SCRIPTS[MALL], SCRIPTS[FOOD], SCRIPTS[PEGS]]
    assert [a.coherence for a in outputs[1].answers] == [8, 4, 3]
    assert outputs[1].answers[2].judge_reason == "rated 3"
    assert outputs[1].answers[2].novelty is None  # an incoherent answer is not compared
    for output in outputs:
        compared = [a.text for a in output.answers if a.novelty is not None]
        assert [a.novelty for a in output.answers if a.novelty is not None] == pytest.approx(
            expected_novelties(embedder, compared), abs=1e-6
        )
    assert outputs[0].answers[2].novelty == pytest.approx(0.0, abs=1e-6)  # the repeat: below 0.1
    assert all(a.novelty is not None and a.novelty >= 0.1 for o in outputs for a in o.answers if a.accepted)
    # every answer was asked with the accepted answers before it, and every answer was judged
    assert len(prompts) == 9
    assert prompts[1] == answer_prompt(MALL, SCRIPTS[MALL][:1])
    assert prompts[2] == answer_prompt(MALL, SCRIPTS[MALL][:2])
    assert [r.case_id for r in result.records] == ["q01", "q02", "q03"]
    for record, question in zip(result.records, (MALL, FOOD, PEGS), strict=True):
        assert [(a.valid, a.raw) for a in record.attempts] == [(True, answer) for answer in SCRIPTS[question]]
        assert (record.mode, record.corrective_retries) == ("text", 0)
        assert record.usage.requests == 6  # 3 answers and 3 verdicts; the local embedder sends no request
        assert (record.usage.input_tokens, record.usage.output_tokens) == (3 * 30 + 3 * 50, 3 * 10 + 3 * 5)
        assert (record.cost.usd, record.cost.source) == ((240 * 1.0 + 45 * 2.0) / 1e6, "user")
    sums = [sum(a.novelty or 0.0 for a in o.answers if a.accepted) for o in outputs]
    assert [r.score_details for r in result.records] == [
        {"novelty": pytest.approx(sums[0], abs=1e-12), "answers": 2, "stop": "similar", "stop_similar": 1},
        {"novelty": pytest.approx(sums[1], abs=1e-12), "answers": 2, "stop": "incoherent", "stop_incoherent": 1},
        {"novelty": pytest.approx(sums[2], abs=1e-12), "answers": 3, "stop": "cap", "stop_cap": 1},
    ]
    normalised = [sum(min(a.novelty or 0.0, 1.0) for a in o.answers if a.accepted) / 3 for o in outputs]
    assert [r.score for r in (mall, food, pegs)] == pytest.approx(normalised, abs=1e-12)
    assert [r.status for r in result.records] == ["partial", "partial", "partial" if normalised[2] < 1 else "correct"]
    scores = result.scores
    assert scores.score == pytest.approx(100 * sum(normalised) / 3, abs=1e-9)
    assert scores.metrics == {
        "novelty": pytest.approx(sum(sums), abs=1e-9), "answers": 7.0, "stop_similar": 1.0, "stop_incoherent": 1.0,
        "stop_cap": 1.0,
    }  # fmt: skip
    assert (scores.totals.requests, scores.totals.input_tokens, scores.totals.output_tokens) == (18, 720, 135)
    assert scores.totals.cost_usd == pytest.approx(3 * 330e-6, abs=1e-15)
    assert judge_name(task) == "fn-judge"


def test_a_loop_stops_when_the_model_or_the_judge_gives_nothing_valid(embedder: TextEmbedder) -> None:
    settings = NoveltySettings(max_answers=3)
    silent = {MALL: ["  "] * 2, PEGS: SCRIPTS[PEGS]}
    judge = Judge(judging({SCRIPTS[PEGS][0]: 11}), "fn-judge", local=True)  # 11: out of range, every time
    task = novelty_task(embedder, judge, settings)
    result = asyncio.run(evaluator.evaluate(task, cases(MALL, PEGS, settings=settings), answerer(silent),
                                            retries=1, local=True))  # fmt: skip
    quiet, unjudged = result.records
    assert quiet.output == {"answers": [], "stop": "no_answer"}
    assert [(a.valid, a.invalid_kind) for a in quiet.attempts] == [(False, "empty")] * 2
    assert (quiet.status, quiet.score, quiet.corrective_retries, quiet.usage.requests) == ("incorrect", 0.0, 1, 2)
    output = NoveltyOutput.model_validate(unjudged.output)
    assert output.stop == "no_verdict"
    assert [(a.text, a.coherence, a.accepted) for a in output.answers] == [(SCRIPTS[PEGS][0], None, False)]
    assert unjudged.usage.requests == 1 + 3  # the answer, and the judge asked with its 2 retries
    assert (unjudged.status, unjudged.score) == ("incorrect", 0.0)
    assert result.scores.compliance.invalid_by_kind == {"empty": 2}


def test_the_loop_needs_a_judge(embedder: TextEmbedder) -> None:
    task = novelty_task(embedder)
    with pytest.raises(TaskError, match="the novelty suite needs a judge"):
        asyncio.run(evaluator.evaluate(task, cases(MALL, settings=NoveltySettings()), answerer(SCRIPTS), local=True))


def test_an_embeddings_endpoint_on_a_loopback_server() -> None:
    vectors = {SCRIPTS[PEGS][0]: [1.0, 0.0, 0.0], SCRIPTS[PEGS][1]: [0.0, 1.0, 0.0], SCRIPTS[PEGS][2]: [1.0, 1.0, 0.0]}
    calls: list[dict[str, Any]] = []
    settings = NoveltySettings(max_answers=3)
    with FakeOpenAI(lambda _: (404, {}), {"POST /v1/embeddings": embeddings(vectors.__getitem__, calls)}) as server:

        async def run() -> evaluator.EvaluationResult:
            embedder = endpoint_embedder("fake-embed", server.url)
            try:
                task = novelty_task(embedder, Judge(judging({}), "fn-judge", local=True), settings)
                found = cases(PEGS, settings=settings, embedding=embedder.name)
                return await evaluator.evaluate(task, found, answerer(SCRIPTS), local=True)
            finally:
                await embedder.aclose()

        (record,) = asyncio.run(run()).records
    output = NoveltyOutput.model_validate(record.output)
    assert [a.novelty for a in output.answers] == [1.0, 1.0, pytest.approx(1 - 1 / math.sqrt(2), abs=1e-7)]
    assert (output.stop, record.metadata["embedding_model"]) == ("cap", "fake-embed")
    assert [(c["model"], c["input"]) for c in calls] == [("fake-embed", [t]) for t in SCRIPTS[PEGS]]
    assert record.usage.requests == 3 + 3 + 3  # answers, verdicts and embeddings
    assert record.usage.input_tokens == 3 * 30 + 3 * 50 + (6 + 7 + 8)  # the endpoint's tokens: a word each
    assert (record.cost.usd, record.cost.source) == (0.0, "local")  # a loopback endpoint costs nothing


# --- the command line -------------------------------------------------------------------------------------------


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return run_cli("main.py", *args, env=clean | (env or {}))


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


def test_the_test_model_runs_offline_budgets_stop_and_resume_finishes(tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    questions.write_text(f"{MALL}\n{PEGS}\n")
    results = tmp_path / "results"
    common = ("run", "--suite", "novelty", "--model", "test", "--questions", str(questions), "--max-answers", "4",
              "--results-dir", str(results), "--quiet", "--concurrency", "1")  # fmt: skip
    stopped = cli(*common, "--max-requests", "4")  # one question: 2 answers (the test model repeats) and 2 verdicts
    assert stopped.returncode == 0, stopped.stderr
    (summary_file,) = results.rglob("summary.json")
    partial = RunSummary.model_validate_json(summary_file.read_text())
    assert (partial.status, partial.reason, partial.scores.samples) == ("partial", "max_requests 4 reached", 1)
    other = cli(*common[:7], "--max-answers", "5", *common[9:], "--resume", str(summary_file.parent))
    assert other.returncode == 2
    assert other.stderr.startswith(f"main.py: error: --resume: cannot continue {summary_file.parent} with other ")
    assert other.stderr.endswith(
        "with other settings: the dataset (its MD5 or limit) differs; suite parameter max_answers 4 != 5\n"
    )
    resumed = cli(*common, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[:3] == [
        "all: 25.00 (C: 0, I: 0, M: 0 A: 2, P: 2)",
        "novelty score: 25.00  (test, tool mode)",  # each question: 1 accepted answer of novelty 1, of a cap of 4
        "metrics: novelty 2.00, answers 2.00, stop_similar 2.00",
    ]
    final = RunSummary.model_validate_json(summary_file.read_text())
    assert (final.status, final.suite, final.task, final.scores.samples) == ("finished", "novelty", "novelty", 2)
    assert (final.scores.totals.requests, final.settings.judge_model) == (8, "test")
    assert final.dataset.params == {"questions": str(questions), "max_answers": 4, "coherence_threshold": 3,
                                    "novelty_threshold": 0.1, "embedding_model": "all-MiniLM-L6-v2"}  # fmt: skip
    lines = (summary_file.parent / "samples.jsonl").read_text().splitlines()
    records = [SampleRecord.model_validate_json(line) for line in lines]
    assert [NoveltyOutput.model_validate(r.output).stop for r in records] == ["similar", "similar"]
    assert [[a.coherence for a in NoveltyOutput.model_validate(r.output).answers] for r in records] == [[10, 10]] * 2
    (row,) = build_rows([load_run(summary_file.parent)])
    assert (row.suite, row.score, row.complete, row.samples) == ("novelty", 25.0, True, 2)
    assert row.metrics == {"novelty": 2.0, "answers": 2.0, "stop_similar": 2.0}
    table = render_markdown([row]).splitlines()
    cells = [[cell.strip() for cell in line.split("|")[1:6]] for line in (table[0], table[2])]
    assert cells == [["Nr", "Model", "Score", "novelty", "answers"], ["1", "test (tool)", "25.00", "2.00", "2.00"]]
    assert render_csv([row]).splitlines()[1].endswith(",2.0,2.0")
    page = render_html([row], {})
    assert (
        '<button type="button">Score</button></th><th scope="col" title="novelty: a figure the suite&#39;s task' in page
    )
    assert '<td class="num" data-v="2.0">2.00</td><td class="num" data-v="2.0">2.00</td>' in page


def test_a_model_judge_and_embeddings_served_over_http(tmp_path: Path) -> None:
    """The whole loop through real HTTP: answers, the judge's verdicts (the run's model) and embeddings."""
    answers = SCRIPTS[PEGS]
    vectors = {answers[0]: [1.0, 0.0, 0.0], answers[1]: [0.0, 1.0, 0.0], answers[2]: [0.0, 0.0, 1.0]}

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("tools"):  # the judge: its verdict tool
            name = request["tools"][0]["function"]["name"]
            return completion(tool_call({"reason": "sensible", "score": 9}, name=name))
        prompt = request["messages"][-1]["content"]
        return completion(text(answers[len(shown_answers(prompt))]))

    questions = tmp_path / "questions.txt"
    questions.write_text(f"{PEGS}\n")
    results = tmp_path / "results"
    with FakeOpenAI(reply, {"POST /v1/embeddings": embeddings(vectors.__getitem__)}) as server:
        done = cli("run", "--suite", "novelty", "--model", "fake-model", "--base-url", server.url, "--questions",
                   str(questions), "--max-answers", "3", "--embedding-model", "fake-embed", "--embedding-base-url",
                   server.url, "--results-dir", str(results), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:3] == [
        "novelty score: 100.00  (fake-model, tool mode)",
        "metrics: novelty 3.00, answers 3.00, stop_cap 1.00",
    ]
    (summary_file,) = results.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_file.read_text())
    totals = summary.scores.totals
    assert (totals.requests, totals.input_tokens, totals.output_tokens) == (9, 6 * 100 + (6 + 7 + 8), 6 * 10)
    assert (totals.cost_usd, totals.cost_sources) == (0.0, ["local"])
    assert (summary.settings.judge_model, summary.dataset.params["embedding_model"]) == ("fake-model", "fake-embed")
    rows = run_cli("format_result.py", str(results), "--format", "json")
    rows.check_returncode()
    (row,) = json.loads(rows.stdout)
    assert (row["score"], row["metrics"]) == (100.0, {"novelty": 3.0, "answers": 3.0, "stop_cap": 1.0})


def test_with_cache_a_second_run_asks_the_servers_nothing(tmp_path: Path) -> None:
    answers = SCRIPTS[PEGS]
    vectors = {answers[0]: [1.0, 0.0, 0.0], answers[1]: [0.0, 1.0, 0.0], answers[2]: [0.0, 0.0, 1.0]}
    calls: list[dict[str, Any]] = []

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        tools = request.get("tools")
        verdict = tool_call({"reason": "sensible", "score": 9}, name=tools[0]["function"]["name"]) if tools else None
        return completion(verdict or text(answers[len(shown_answers(request["messages"][-1]["content"]))]))

    questions = tmp_path / "questions.txt"
    questions.write_text(f"{PEGS}\n")
    results = tmp_path / "results"
    with FakeOpenAI(reply, {"POST /v1/embeddings": embeddings(vectors.__getitem__, calls)}) as server:
        args = ("run", "--suite", "novelty", "--model", "fake-model", "--base-url", server.url, "--questions",
                str(questions), "--max-answers", "3", "--embedding-model", "fake-embed", "--embedding-base-url",
                server.url, "--cache", "--results-dir", str(results), "--quiet")  # fmt: skip
        runs: list[set[Path]] = []
        for _ in range(2):
            done = cli(*args)
            assert done.returncode == 0, done.stderr
            runs.append(set(results.rglob("summary.json")))
        asked = (len(server.requests), len(calls))
    assert asked == (6, 3)  # the first run's 3 answers, 3 verdicts and 3 embeddings; the second's all cached
    (second,) = runs[1] - runs[0]  # its folder (run ids started in the same second sort by their random part)
    assert RunSummary.model_validate_json(second.read_text()).scores.totals.cache_hits == 9


def test_an_embeddings_server_echoing_credentials_leaves_no_secret_behind(tmp_path: Path) -> None:
    key, password = "sk-embed-secret-0123456789", "s3cretpassw0rd"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()

    def refuse(_: dict[str, Any]) -> tuple[int, dict[str, Any]]:  # as servers that echo the request's headers do
        return 401, {"error": {"message": f"bad credentials: Authorization: Bearer {key}; Basic {basic}"}}

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if request.get("tools"):
            return completion(
                tool_call({"reason": "sensible", "score": 9}, name=request["tools"][0]["function"]["name"])
            )
        return completion(text("An answer."))

    questions = tmp_path / "questions.txt"
    questions.write_text("What is a peg for?\n")
    results = tmp_path / "results"
    with FakeOpenAI(reply, {"POST /v1/embeddings": refuse}) as server:
        with_password = server.url.replace("http://", f"http://alice:{password}@")
        done = cli("run", "--suite", "novelty", "--model", "fake-model", "--base-url", server.url, "--questions",
                   str(questions), "--embedding-model", "fake-embed", "--embedding-base-url", with_password,
                   "--embedding-api-key", key, "--results-dir", str(results), "--quiet")  # fmt: skip
    assert done.returncode != 0
    assert "the embedding model fake-embed failed" in done.stderr
    stored = "".join(p.read_text() for p in results.rglob("*") if p.is_file()) + done.stdout + done.stderr
    assert "[REDACTED]" in stored
    assert [secret for secret in (key, password, basic) if secret in stored] == []


def test_command_line_refusals_are_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("# no questions yet\n")
    assert one_line_error(cli("run", "--suite", "farel", "--model", "test", "--max-answers", "3")) == (
        "main.py: error: --max-answers belongs to the novelty suite, not farel"
    )
    assert one_line_error(cli("run", "--suite", "novelty", "--model", "test", "--questions", str(empty))) == (
        f"main.py: error: questions file {empty} has no questions (one a line; # starts a comment)"
    )
    assert one_line_error(cli("run", "--suite", "novelty", "--embedding-base-url", "http://127.0.0.1:9/v1")) == (
        "main.py: error: --embedding-model: needed with an embeddings server's URL: the name of the model it serves"
    )
    assert one_line_error(cli("run", "--suite", "novelty", "--embedding-model", "text-embedding-3-small")) == (
        "main.py: error: --embedding-base-url: none given for embedding model 'text-embedding-3-small': give an "
        "OpenAI-compatible server's, or name one of OpenAI's models as openai:NAME"
    )
    assert one_line_error(cli("run", "--suite", "novelty", "--embedding-model", "openai:text-embedding-3-small")) == (
        "main.py: error: --embedding-api-key: missing API key for the embeddings at OpenAI: pass one or set "
        "OPENAI_API_KEY"
    )
    assert one_line_error(cli("run", "--suite", "novelty", "--coherence-threshold", "11")) == (
        "main.py run: error: argument --coherence-threshold: must be 0 to 10 (the judge scores 1 to 10), got 11 "
        "(see --help)"
    )
    without_extra = subprocess.run(
        [PYTHON, "-c", "import sys; sys.modules['sentence_transformers'] = None; import typed_eval.cli as c; "
         "sys.exit(c.main())", "run", "--suite", "novelty", "--model", "test"],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert one_line_error(without_extra) == (
        "typed-eval: error: the novelty suite compares answers by their embeddings: pip install -e '.[novelty]' "
        "(all-MiniLM-L6-v2, run on this machine), or name an OpenAI-compatible endpoint with --embedding-model NAME "
        "--embedding-base-url URL"
    )
