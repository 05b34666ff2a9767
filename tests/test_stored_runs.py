"""Runs stored by the code before the house plan (package `farel_eval`, commit dc35fdb) read, score, rank and compare
exactly as that code did: `tests/fixtures/stored_runs_expected/` holds what it printed for them (HOW.md says how)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import REPO
from typed_eval.store.storage import load_runs, read_records

RUNS = Path("tests/fixtures/stored_runs")
EXPECTED = REPO / "tests/fixtures/stored_runs_expected"
FULL = {"retry_suite", "complex_cases", "story-graph"}
PAIR = (str(RUNS / "test/20261125T151806Z-tool-012a"), str(RUNS / "replay_deepseek-v3/20261125T151817Z-tag-29a1"))


def printed(*args: str) -> str:
    done = run_cli("format_result.py", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((str(RUNS), "--format", "json"), "leaderboard.json"),
        ((str(RUNS), "--format", "csv"), "leaderboard.csv"),
        ((str(RUNS), "--format", "markdown"), "leaderboard.md"),
        ((str(RUNS), "--modes", "--format", "json"), "modes.json"),
        ((str(RUNS), "--modes", "--format", "markdown"), "modes.md"),
        (("--compare", *PAIR, "--format", "json"), "compare.json"),
        (("--compare", *PAIR), "compare.txt"),
        (("result", "--format", "json"), "v1_leaderboard.json"),
    ],
)
def test_format_result_prints_what_the_code_that_stored_them_printed(args: tuple[str, ...], expected: str) -> None:
    assert printed(*args) == (EXPECTED / expected).read_text(encoding="utf-8")


def loaded(directory: Path, full: bool) -> dict[str, Any]:
    runs = []
    for run in load_runs(directory):
        records = [record.model_dump(mode="json") for record in read_records(run.path)]
        canonical = json.dumps(records, sort_keys=True)
        entry: dict[str, Any] = {
            "path": run.path.relative_to(directory).as_posix(),
            "summary": run.summary.model_dump(mode="json"),
            "records_count": len(records),
            "records_sha256": hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        }
        if full and run.summary.suite in FULL:
            entry["records"] = records
        runs.append(entry)
    return {"runs": runs}


@pytest.mark.parametrize(("directory", "expected"), [(RUNS, "loaded.json"), (Path("result"), "v1_loaded.json")])
def test_summaries_and_records_load_as_before(directory: Path, expected: str) -> None:
    assert loaded(REPO / directory, full=True) == json.loads((EXPECTED / expected).read_text(encoding="utf-8"))


def test_a_folder_may_be_named_by_a_string_as_in_the_docs() -> None:
    by_path = load_runs(REPO / RUNS)
    by_text = load_runs(str(REPO / RUNS))
    assert [run.path for run in by_text] == [run.path for run in by_path]
    assert list(read_records(str(by_path[0].path))) == list(read_records(by_path[0].path))
