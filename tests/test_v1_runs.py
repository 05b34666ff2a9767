"""Runs stored by schema version 1 (FaRel only) load through the migration, score and rank exactly as before."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import format_result
from tests.cli_run import run_cli
from tests.conftest import REPO
from typed_eval.contracts import SampleRecord
from typed_eval.core.errors import ResultFileError
from typed_eval.core.scoring import score_records
from typed_eval.store.storage import load_runs, read_records

SHIPPED = REPO / "result"


def v1_record(quiz: str, cls: str, status: str, answer: str | None, **extra: Any) -> dict[str, Any]:
    """A record exactly as the schema-1 program wrote it (field order included)."""
    attempt = {"valid": answer is not None, "invalid_kind": None if answer else "out_of_range",
               "raw": f'{{"answer": {answer or 9}}}', "answer": answer, "feedback": None}  # fmt: skip
    return {
        "quiz_id": quiz, "degree": 1, "class_name": cls, "options": ["a", "b"], "correct": 1,
        "ambiguous": extra.pop("ambiguous", False), "mode": extra.pop("mode", "tool"), "answer": answer,
        "status": status, "reasoning": extra.pop("reasoning", None), "relaxed_answer": extra.pop("relaxed", None),
        "attempts": [] if status == "error" else [attempt], "corrective_retries": 0,
        "usage": {"requests": 1, "input_tokens": 100, "output_tokens": 10, "reasoning_tokens": None,
                  "cache_read_tokens": None, "cache_write_tokens": None},
        "cost": {"usd": 0.001, "source": "genai-prices"}, "latency_s": 1.5, "transport_retries": 0, "cache_hits": 0,
        "error": "HTTP 500 from m: boom" if status == "error" else None,
    }  # fmt: skip


def v1_run(folder: Path, records: list[dict[str, Any]], mode: str = "tool") -> Path:
    """A schema-1 run: the summary of the deepseek-v3 import with its dataset and scores made to fit `records`."""
    (shipped,) = (SHIPPED / "deepseek-v3").glob("*/summary.json")
    summary = json.loads(shipped.read_text())
    summary.update(run_id=folder.name, model="old-model", mode=mode, imported=False, source_log=None,
                   ambiguous_quiz_ids=[r["quiz_id"] for r in records if r["ambiguous"]])  # fmt: skip
    summary["settings"].update(model="old-model", mode=mode)
    classes = {}
    for r in records:
        c = classes.setdefault(
            r["class_name"],
            {
                "class_name": r["class_name"],
                "correct": 0,
                "incorrect": 0,
                "missing": 0,
                "errors": 0,
                "ambiguous": 0,
                "accuracy": None,
            },
        )
        key = "errors" if r["status"] == "error" else "ambiguous" if r["ambiguous"] else r["status"]
        c[key] += 1
    for c in classes.values():
        scored = c["correct"] + c["incorrect"] + c["missing"]
        c["accuracy"] = 100 * c["correct"] / scored if scored else None
    accuracies = [c["accuracy"] for c in classes.values() if c["accuracy"] is not None]
    totals = {key: sum(c[key] for c in classes.values()) for key in ("correct", "incorrect", "missing", "errors")}
    summary["scores"].update(classes=list(classes.values()), macro_accuracy=sum(accuracies) / len(accuracies),
                             samples=len(records), ambiguous=sum(c["ambiguous"] for c in classes.values()),
                             **totals)  # fmt: skip
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    (folder / "samples.jsonl").write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    return folder


RECORDS = [
    v1_record("q1", "child", "correct", "1", reasoning="a fits"),
    v1_record("q2", "child", "incorrect", "2"),
    v1_record("q3", "parent", "missing", None),
    v1_record("q4", "parent", "error", None),
    v1_record("q5", "parent", "correct", "1", ambiguous=True),
    v1_record("q6", "parent", "correct", "1"),
]


def test_every_shipped_v1_run_loads_scores_and_ranks_as_published() -> None:
    runs = load_runs(SHIPPED)
    assert {r.summary.schema_version for r in runs} == {2}  # migrated on load; the files stay version 1
    assert {json.loads(p.read_text())["schema_version"] for p in SHIPPED.rglob("summary.json")} == {1}
    for run in runs:
        rescored = score_records(read_records(run.path), [g.group for g in run.summary.scores.groups])
        assert rescored.groups == run.summary.scores.groups
        assert rescored.score == pytest.approx(run.summary.scores.score)
    rows = format_result.build_rows(runs)
    assert [(r.rank, r.model, r.suite, round(r.score or 0, 2), round(r.score or 0, 2)) for r in rows] == [
        (1, "deepseek-r1", "farel", 99.78, 99.78),
        (2, "deepseek-v3", "farel", 96.44, 96.44),
        (3, "minimax-01", "farel", 85.56, 85.56),
        (4, "Phi-4-Q8_0", "farel", 81.11, 81.11),
        (5, "command-r7b-12-2024", "farel", 60.22, 60.22),
    ]


def test_v1_records_migrate_field_by_field(tmp_path: Path) -> None:
    (run,) = load_runs(v1_run(tmp_path / "old", RECORDS) / "summary.json")
    records = list(read_records(run.path))
    first = records[0]
    assert (first.case_id, first.group, first.expected) == ("q1", "child", 1)
    assert first.metadata == {"options": ["a", "b"], "degree": 1}
    assert (first.output, first.score, first.status) == ({"reasoning": "a fits", "answer": 1}, 1.0, "correct")
    assert first.attempts[0].model_dump() == {"valid": True, "invalid_kind": None, "raw": '{"answer": 1}',
                                              "feedback": None}  # fmt: skip
    assert [(r.status, r.score, r.excluded) for r in records] == [
        ("correct", 1.0, False), ("incorrect", 0.0, False), ("missing", None, False), ("error", None, False),
        ("correct", 1.0, True), ("correct", 1.0, False),
    ]  # fmt: skip
    assert records[3].error == "HTTP 500 from m: boom"
    scores = run.summary.scores
    assert [(g.group, g.correct, g.incorrect, g.missing, g.errors, g.excluded, g.score) for g in scores.groups] == [
        ("child", 1, 1, 0, 0, 0, 50.0), ("parent", 1, 0, 1, 1, 1, 50.0),
    ]  # fmt: skip
    assert (scores.score, scores.macro_score, scores.mean_score, scores.excluded) == (50.0, 50.0, 50.0, 1)
    assert run.summary.excluded_case_ids == ["q5"]
    assert (run.summary.dataset.cases, run.summary.dataset.params) == (450, {"length": 3, "number": 50, "seed": 42,
                                                                              "shuffle": True})  # fmt: skip
    rescored = score_records(records, ["child", "parent"]).groups
    assert [g.cost_usd for g in rescored] == [0.002, 0.004]  # a v1 summary kept no group's cost
    assert [g.model_copy(update={"cost_usd": None}) for g in rescored] == scores.groups


def test_a_tag_mode_v1_record_keeps_its_tag_and_relaxed_reading(tmp_path: Path) -> None:
    tag = v1_record("q1", "child", "missing", None, mode="tag", relaxed="1")
    tag["attempts"] = [{"valid": False, "invalid_kind": "no_tag", "raw": "ANSWER: 1", "answer": None,
                        "feedback": "no <ANSWER> tag"}]  # fmt: skip
    wrong = v1_record("q2", "child", "incorrect", "2.", mode="tag")
    (run,) = load_runs(v1_run(tmp_path / "tag", [tag, wrong], mode="tag") / "summary.json")
    records = list(read_records(run.path))
    assert [(r.mode, r.output, r.relaxed_output, r.relaxed_score) for r in records] == [
        ("tag", None, "1", 1.0), ("tag", "2.", None, None),
    ]  # fmt: skip
    assert score_records(records).compliance.relaxed_recoverable_correct == 1


def test_a_resumed_v1_run_reads_its_v1_and_v2_lines(tmp_path: Path) -> None:
    folder = v1_run(tmp_path / "mixed", RECORDS[:2])
    later = SampleRecord.model_validate({
        "case_id": "q3", "group": "parent", "expected": 1, "metadata": {"options": ["a", "b"]}, "mode": "tool",
        "status": "correct", "output": {"answer": 1}, "score": 1.0, "attempts": [], "corrective_retries": 0,
        "usage": {"requests": 1}, "cost": {"usd": None, "source": "unknown"}, "latency_s": None,
    })  # fmt: skip
    with (folder / "samples.jsonl").open("a") as out:
        out.write(later.model_dump_json() + "\n")
    assert [(r.case_id, r.status) for r in read_records(folder)] == [
        ("q1", "correct"),
        ("q2", "incorrect"),
        ("q3", "correct"),
    ]


def test_a_newer_schema_and_a_broken_v1_summary_are_one_line_errors(tmp_path: Path) -> None:
    folder = v1_run(tmp_path / "new", RECORDS[:1])
    summary = json.loads((folder / "summary.json").read_text())
    newer = copy.deepcopy(summary) | {"schema_version": 3}
    (folder / "summary.json").write_text(json.dumps(newer))
    with pytest.raises(ResultFileError, match="has schema version 3, newer than this program's 2: upgrade"):
        load_runs(folder / "summary.json")
    del summary["scores"]["classes"]
    (folder / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(ResultFileError, match=r"a version 1 summary without 'classes'$"):
        load_runs(folder / "summary.json")


def test_the_leaderboard_reads_v1_runs_from_the_command_line(tmp_path: Path) -> None:
    shutil.copytree(SHIPPED / "minimax-01", tmp_path / "minimax-01")
    v1_run(tmp_path / "old-model" / "old", RECORDS)
    done = run_cli("format_result.py", str(tmp_path), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert [(r["rank"], r["model"], round(r["score"], 2)) for r in json.loads(done.stdout)] == [
        (1, "minimax-01", 85.56), (None, "old-model", 50.0),  # 6 records of 450 cases: not ranked
    ]  # fmt: skip
