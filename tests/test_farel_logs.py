"""Published farel-bench logs: import, check against their own summary lines, replay, and the public table."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

import evaluator
import farel_bench
from tests.cli_run import run_cli
from tests.conftest import FAREL_FIXTURES
from typed_eval.contracts import RunSettings, RunSummary
from typed_eval.store.storage import read_records
from typed_eval.suites.farel.importer import import_log_file
from typed_eval.suites.farel.logs import parse_log
from typed_eval.suites.farel.suite import FAREL_TASK, generated_dataset

LOGS = FAREL_FIXTURES / "logs"
PUBLISHED_FAREL = {"deepseek-r1": 99.78, "deepseek-v3": 96.44, "minimax-01": 85.56}
QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))


def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    results = tmp_path_factory.mktemp("imported")
    return results, cli("main.py", "import-farel", str(LOGS), "--results-dir", str(results))


def summaries(results: Path) -> dict[str, RunSummary]:
    runs = [RunSummary.model_validate_json(p.read_text()) for p in results.rglob("summary.json")]
    return {run.model: run for run in runs}


@pytest.mark.parametrize("log", sorted(p.stem for p in LOGS.glob("*.log")))
def test_every_fixture_log_rescores_to_its_own_summary_lines(
    imported: tuple[Path, subprocess.CompletedProcess[str]], log: str
) -> None:
    results, done = imported
    assert done.returncode == 0, done.stderr
    run = summaries(results)[log]
    published = parse_log(LOGS / f"{log}.log").summary
    assert len(published) == 9
    ours = {c.group: (c.correct, c.incorrect, c.missing) for c in run.scores.groups}
    assert ours == {name: (c.correct, c.incorrect, c.missing) for name, c in published.items()}
    assert run.source_log is not None
    assert (run.source_log.matches_log_summary, run.source_log.replies, run.source_log.mismatches) == (True, 450, [])
    assert (run.imported, run.mode, run.status, run.settings.retries) == (True, "tag", "finished", 0)
    assert (run.scores.totals.cost_usd, run.scores.totals.input_tokens) == (None, None)


def test_import_reports_each_log_and_is_idempotent(imported: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, done = imported
    lines = done.stdout.splitlines()
    assert len(lines) == 5
    (r1,) = [line for line in lines if line.startswith(str(LOGS / "deepseek-r1.log"))]
    assert r1.startswith(f"{LOGS / 'deepseek-r1.log'}: 450 replies, FaRel 99.78; re-scored counts match")
    again = cli("main.py", "import-farel", str(LOGS / "deepseek-r1.log"), "--results-dir", str(results))
    assert again.returncode == 0
    assert again.stdout.startswith(f"{LOGS / 'deepseek-r1.log'}: already imported in ")
    assert len(list(results.rglob("summary.json"))) == 5


def test_leaderboard_matches_the_published_farel_table(imported: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, _ = imported
    board = cli("format_result.py", str(results), "--format", "markdown", "--farel-only")
    assert board.returncode == 0, board.stderr
    header, rule, *rows = board.stdout.splitlines()
    published = (  # seed 000: farel-bench's README table; the Model column's width depends on the names
        "|   Nr | Model                                |   FaRel |   child |   parent |   grand-child |   sibling "
        "|   grand-parent |   great grand-child |   niece or nephew |   aunt or uncle |   great grand-parent |"
    )
    ours, theirs = header.split("|"), published.split("|")
    assert ours[:2] + ours[3:] == theirs[:2] + theirs[3:]
    assert rule.startswith("|-----:|:---")
    table = {row.split("|")[2].strip(): [c.strip() for c in row.split("|")[1:-1]] for row in rows}
    for model, farel in PUBLISHED_FAREL.items():
        assert table[f"{model} (tag, imported)"][2] == f"{farel:.2f}"
    assert [table[f"{m} (tag, imported)"][0] for m in ("deepseek-r1", "deepseek-v3", "minimax-01")] == ["1", "2", "3"]
    assert table["deepseek-v3 (tag, imported)"][3:] == [
        "100.00",
        "100.00",
        "100.00",
        "96.00",
        "100.00",
        "100.00",
        "82.00",
        "92.00",
        "98.00",
    ]


def test_local_and_imported_runs_share_one_table(imported: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results, _ = imported
    done = cli("main.py", "run", "--model", "test", "--mode", "tag", "--results-dir", str(results), "--quiet")
    assert done.returncode == 0, done.stderr
    rows = json.loads(cli("format_result.py", str(results), "--format", "json").stdout)
    assert [(r["model"], r["imported"], r["rank"]) for r in rows][-1] == ("test", False, 6)
    assert sum(r["imported"] for r in rows) == 5


@pytest.mark.parametrize("log", ["deepseek-v3", "Phi-4-Q8_0"])
def test_replaying_a_log_through_run_gives_its_counts(log: str, tmp_path: Path) -> None:
    path = LOGS / f"{log}.log"
    done = cli(
        "main.py", "run", "--model", f"replay:{path}", "--mode", "tag", "--results-dir", str(tmp_path), "--quiet"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:9] == path.read_text().rstrip("\n").splitlines()[-9:]


def api_log(replies: list[str], summary: str | None) -> str:
    """A log as farel-bench's API runners write it, for the first quizzes of the published dataset."""
    lines = []
    for quiz, reply in zip(QUIZZES, replies, strict=False):
        lines += [repr([{"role": "user", "content": quiz.prompt}]), reply]
    return "\n".join(lines + ([summary] if summary else [])) + "\n"


MESSY_REPLIES = [
    f"You asked:\n{QUIZZES[0].prompt}\nI think <ANSWER>1</ANSWER>",  # prompt echo: the instruction's tag comes first
    "<ANSWER>2</ANSWER> or maybe <ANSWER>1</ANSWER>",  # several tags: the first counts
    "<ANSWER>\n2\n</ANSWER>",  # a tag split over lines does not count
    "",  # empty reply
    "Odpowiedź: żółw 🐢 <ANSWER>1</ANSWER>",  # non-ASCII
]
"""Correct answers of the first five published quizzes: 1, 2, 2, 2, 2."""


def test_messy_replies_are_scored_as_farel_bench_did(tmp_path: Path) -> None:
    log = tmp_path / "messy.log"
    log.write_text(api_log(MESSY_REPLIES, "child: 20.00 (C: 1, I: 2, M: 2 A: 5)"), encoding="utf-8")
    done = cli("main.py", "import-farel", str(log), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr
    run = summaries(tmp_path / "r")["messy"]
    assert run.source_log is not None and run.source_log.matches_log_summary is True
    assert (run.status, run.reason) == ("partial", "the log has 5 of the dataset's 450 quizzes")
    records = [json.loads(line) for line in next((tmp_path / "r").rglob("samples.jsonl")).read_text().splitlines()]
    assert [(r["output"], r["status"]) for r in records] == [
        # farel-bench's non-greedy match starts at the echoed "<ANSWER> tag, for example: <ANSWER>1</ANSWER>"
        ("tag, for example: <ANSWER>1", "incorrect"),
        ("2", "correct"),
        (None, "missing"),
        (None, "missing"),
        ("1", "incorrect"),
    ]
    assert [r["relaxed_output"] for r in records] == [None, None, "2", None, None]


def test_an_import_is_a_run_stored_through_run_as_imports_always_were(tmp_path: Path) -> None:
    """`import farel` is `run()` of a replay model: the summary holds every field an import held before, and a second
    import finds the first and stores nothing."""
    log = tmp_path / "messy.log"
    log.write_text(api_log(MESSY_REPLIES, "child: 20.00 (C: 1, I: 2, M: 2 A: 5)"), encoding="utf-8")
    dataset, results = generated_dataset(3, 50, 42, shuffle=True), tmp_path / "r"
    done = asyncio.run(import_log_file(log, dataset, results))
    run_id = f"imported-{hashlib.sha1(log.read_bytes()).hexdigest()[:12]}"
    assert (done.run_dir, done.already) == (results / "messy" / run_id, False)
    summary = done.summary
    assert summary == RunSummary.model_validate_json((done.run_dir / "summary.json").read_text())
    assert summary.model_dump(exclude={"program_version", "started_at", "finished_at", "scores"}) == {
        "schema_version": 2, "run_id": run_id, "suite": "farel", "task": "farel", "model": "messy", "mode": "tag",
        "status": "partial", "reason": "the log has 5 of the dataset's 450 quizzes", "imported": True,
        "source_log": {"path": str(log), "format": "api", "replies": 5, "matches_log_summary": True, "mismatches": [],
                       "notes": []},
        "wall_s": 0.0,
        "settings": RunSettings(model="messy", mode="tag", retries=0, concurrency=1, local=False).model_dump(),
        "dataset": dataset.info.model_dump(), "excluded_case_ids": [],
    }  # fmt: skip
    scores, totals = summary.scores, summary.scores.totals
    assert [(g.group, g.correct, g.incorrect, g.missing) for g in scores.groups] == [("child", 1, 2, 2)]
    assert (scores.score, scores.aggregate, scores.metrics) == (20.0, "macro", {})
    assert (totals.requests, totals.input_tokens, totals.cost_usd, totals.mean_latency_s, totals.pacing) == (
        5, None, None, None, None
    )  # fmt: skip
    records = list(read_records(done.run_dir))
    assert [r.case_id for r in records] == [quiz.id for quiz in QUIZZES[:5]]  # in the log's order
    assert {r.latency_s for r in records} == {None}  # replay time is not the model's
    stored = (done.run_dir / "samples.jsonl").read_bytes()
    again = asyncio.run(import_log_file(log, dataset, results))
    assert (again.run_dir, again.already, again.summary) == (done.run_dir, True, summary)
    assert (done.run_dir / "samples.jsonl").read_bytes() == stored


def test_a_log_cut_short_keeps_its_whole_records(tmp_path: Path) -> None:
    text = api_log(MESSY_REPLIES, None)
    log = tmp_path / "cut.log"
    log.write_text(text[: text.rindex("[{'role'") + 40], encoding="utf-8")
    parsed = parse_log(log)
    assert (parsed.summary, len(parsed.entries)) == ({}, 4)
    assert parsed.notes == [
        "no summary lines: the log is cut short or not finished, counts cannot be checked",
        "line 20: a record cut short (its message list does not parse) was dropped",
    ]
    done = cli("main.py", "import-farel", str(log), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert "no summary lines in the log to check against" in done.stdout
    assert summaries(tmp_path / "r")["cut"].scores.samples == 4


def test_counts_that_differ_from_the_log_are_reported_never_hidden(tmp_path: Path) -> None:
    log = tmp_path / "tampered.log"
    log.write_text(api_log(MESSY_REPLIES, "child: 60.00 (C: 3, I: 1, M: 1 A: 5)"), encoding="utf-8")
    done = cli("main.py", "import-farel", str(log), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 1
    assert done.stdout.splitlines()[1:] == [
        "  child: the log says C 3, I 1, M 1, A 5; re-scored C 1, I 2, M 2, A 5",
    ]
    run = summaries(tmp_path / "r")["tampered"]
    assert run.source_log is not None and run.source_log.matches_log_summary is False


def test_logs_of_unknown_quizzes_are_refused_until_the_dataset_is_named(tmp_path: Path) -> None:
    other = list(farel_bench.generate(1, 3, 99, shuffle=True))
    log = tmp_path / "other.log"
    log.write_text("\n".join([repr([{"role": "user", "content": other[0].prompt}]), "<ANSWER>1</ANSWER>"]) + "\n")
    refused = cli("main.py", "import-farel", str(log), "--results-dir", str(tmp_path / "r"))
    assert refused.returncode == 2  # bad input
    assert refused.stderr.strip() == (
        f"main.py: error: --quizzes: {log}: the quiz at line 1 is not in the dataset; "
        "name the dataset this log was run on"
    )
    dataset = tmp_path / "other.csv"
    dataset.write_text("".join(farel_bench.csv_line(q) + "\n" for q in other))
    done = cli("main.py", "import-farel", str(log), "--quizzes", str(dataset), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert summaries(tmp_path / "r")["other"].scores.samples == 1


@pytest.mark.parametrize("log", ["Phi-4-Q8_0", "deepseek-v3"])
def test_the_library_replays_a_log_and_its_cost_is_the_imported_runs(
    imported: tuple[Path, subprocess.CompletedProcess[str]], log: str
) -> None:
    """`replay:` strings run in the library too, in every mode; a replay costs what the import does: unknown."""
    cases = [quiz.to_case() for quiz in QUIZZES[:20]]
    tagged = asyncio.run(evaluator.evaluate(FAREL_TASK, cases, f"replay:{LOGS / log}.log", mode="tag"))
    (summary_path,) = (imported[0] / log).rglob("summary.json")
    stored = {r.case_id: r for r in read_records(summary_path.parent)}
    assert [(r.status, r.output, r.cost) for r in tagged.records] == [
        (stored[r.case_id].status, stored[r.case_id].output, stored[r.case_id].cost) for r in tagged.records
    ]
    assert {r.cost.source for r in tagged.records} == {"unknown"}
    assert tagged.scores.totals.cost_usd is None
    structured = asyncio.run(evaluator.evaluate(FAREL_TASK, cases[:2], f"replay:{LOGS / log}.log", retries=0))
    assert [r.attempts[0].invalid_kind for r in structured.records] == ["no_tool_call", "no_tool_call"]


def test_an_import_stopped_midway_is_made_again_not_called_done(tmp_path: Path) -> None:
    log = LOGS / "deepseek-r1.log"
    first = cli("main.py", "import", "farel", str(log), "--results-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    (summary_file,) = tmp_path.rglob("summary.json")
    summary = RunSummary.model_validate_json(summary_file.read_text())
    cut = summary.model_copy(update={"status": "partial", "reason": "interrupted by the user"})
    summary_file.write_text(cut.model_dump_json())
    records = summary_file.parent / "samples.jsonl"
    records.write_text("".join(records.read_text().splitlines(keepends=True)[:100]))
    again = cli("main.py", "import", "farel", str(log), "--results-dir", str(tmp_path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{log}: 450 replies, FaRel 99.78; re-scored counts match")
    (made,) = tmp_path.rglob("summary.json")
    assert (made, RunSummary.model_validate_json(made.read_text()).status) == (summary_file, "finished")
    assert len(records.read_text().splitlines()) == 450
