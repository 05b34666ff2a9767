"""Hostile input, round four (issue #35): stored runs damaged a line at a time or written by a newer program, suites
whose parameters would generate forever, case-file var files that never end, and two plug-ins of one name. Each is
reproduced as it broke: the command line, the leaderboard and the viewer run as child processes on real files."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO
from tests.test_format_result import answers, store
from tests.test_v1_runs import RECORDS, v1_record, v1_run
from tests.viewer_runs import Viewer


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)


def board(results: Path) -> tuple[int, list[tuple[str, float]], list[str]]:
    """`format_result.py --format json`: its exit, each row's model and score, its stderr lines."""
    done = cli("format_result.py", str(results), "--format", "json")
    assert "Traceback" not in done.stderr
    rows = [(row["model"], row["score"]) for row in json.loads(done.stdout)] if done.stdout else []
    return done.returncode, rows, done.stderr.splitlines()


# --- 11, 13, 14: a summary of a newer program, a line not UTF-8, a version-1 attempt that is not an object --------


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Viewer]]:
    """Four runs: one sound, one whose first record holds a byte that is not UTF-8, one whose summary is of schema
    version 99, one of schema version 1 whose third record's attempt is a string."""
    results = tmp_path_factory.mktemp("damaged")
    store(results, "sound", answers({"child": ["correct", "incorrect"]}))
    latin = store(results, "latin", answers({"child": ["correct", "correct", "incorrect"]}), minutes=1)
    lines = (latin / "samples.jsonl").read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"child-0"', b'"child-\xff0"')  # latin-1's y with diaeresis, as a lone byte
    (latin / "samples.jsonl").write_bytes(b"".join(lines))
    future = store(results, "future", answers({"child": ["correct"]}), minutes=2)
    summary = json.loads((future / "summary.json").read_text())
    (future / "summary.json").write_text(json.dumps(summary | {"schema_version": 99}))
    old = v1_run(results / "old-model" / "old", [*RECORDS[:2], v1_record("q9", "parent", "correct", "1"), RECORDS[5]])
    records = (old / "samples.jsonl").read_text().splitlines(keepends=True)
    broken = json.loads(records[2])
    broken["attempts"] = ["valid"]
    records[2] = json.dumps(broken, separators=(",", ":")) + "\n"
    (old / "samples.jsonl").write_text("".join(records))
    viewer = Viewer(results)
    yield results, viewer
    viewer.close()


def test_damaged_runs_are_one_line_each_naming_file_and_line_and_the_sound_run_is_shown(
    damaged: tuple[Path, Viewer],
) -> None:
    results, _ = damaged
    code, rows, errors = board(results)
    assert (code, rows) == (2, [("sound", 50.0)])  # exit 2: not every run is shown (docs/long-runs.md)
    assert errors == [
        f"format_result.py: error: {results}/future/run-future-2/summary.json has schema version 99, newer than "
        "this program's 2: upgrade",
        f"format_result.py: error: corrupt record at {results}/latin/run-latin-1/samples.jsonl:1: not UTF-8 text "
        "(0xff at byte 19 of the line)",
        f"format_result.py: error: corrupt record at {results}/old-model/old/samples.jsonl:3: not a version 1 "
        "record: AttributeError: 'str' object has no attribute 'items'",
    ]


def test_the_viewer_lists_each_unreadable_run_with_its_reason_and_serves_the_rest(
    damaged: tuple[Path, Viewer],
) -> None:
    results, viewer = damaged
    page = viewer.get("/")
    assert page.status == 200
    assert "Not on the leaderboard (records unreadable): latin/run-latin-1, old-model/old</p>" in page.text
    assert (
        '<h2>Unreadable runs</h2>\n<ul class="unreadable">'
        f"<li>{results}/future/run-future-2/summary.json has schema version 99, newer than this program&#39;s 2: "
        "upgrade</li>"
        f"<li>corrupt record at {results}/latin/run-latin-1/samples.jsonl:1: not UTF-8 text (0xff at byte 19 of the "
        "line)</li>"
        f"<li>corrupt record at {results}/old-model/old/samples.jsonl:3: not a version 1 record: AttributeError: "
        "&#39;str&#39; object has no attribute &#39;items&#39;</li></ul>"
    ) in page.text
    assert [run["run"] for run in viewer.api("/api/runs")] == [
        "sound/run-sound-0", "latin/run-latin-1", "old-model/old",
    ]  # fmt: skip
    for key, line in (("latin/run-latin-1", 1), ("old-model/old", 3)):
        reply = viewer.get(f"/api/cases?runs={key}")
        assert (reply.status, reply.json()) == (500, {
            "error": f"corrupt records file {results / key / 'samples.jsonl'}: 1 of its lines are not records (the "
            f"first: line {line})"
        }), key  # fmt: skip
    shown = viewer.get("/cases?runs=old-model/old")
    assert (shown.status, shown.headers["content-type"]) == (500, "text/html; charset=utf-8")
    assert "Internal Server Error" not in shown.text
    sound = viewer.api("/api/cases?runs=sound/run-sound-0")
    assert [row["case_id"] for row in sound["cases"]] == ["child-0", "child-1"]


# --- 6: a case-file var naming a file that never ends, a pipe, a device or a folder --------------------------------


def case_file_run(folder: Path, var: str, tests_from: str | None = None) -> subprocess.CompletedProcess[str]:
    path = folder / "cases.yaml"
    tests = (
        f"tests: {tests_from}\n"
        if tests_from
        else f"tests:\n  - vars: {{q: '{var}'}}\n    assert: [{{type: contains, value: x}}]\n"
    )
    path.write_text("prompts: ['{{q}}']\n" + tests, encoding="utf-8")
    return cli("main.py", "run", "--suite", str(path), "--model", "test", "--results-dir", str(folder / "r"),
               timeout=60)  # fmt: skip


@pytest.mark.parametrize(
    ("var", "said"),
    [
        ("file:///dev/zero", "file:///dev/zero is a device, not a regular file: name a file"),
        ("file://pipe", "file://pipe is a FIFO, not a regular file: name a file"),
        ("file://folder", "file://folder is a folder, not a regular file: name a file"),
        ("file://huge.txt", "file://huge.txt is larger than 16 MiB, the most a file a case file names may hold"),
        ("file://huge.yaml", "file://huge.yaml is larger than 16 MiB, the most a file a case file names may hold"),
    ],
    ids=["device", "fifo", "folder", "huge-text", "huge-yaml"],
)
def test_a_var_file_that_is_not_a_bounded_regular_file_is_one_line_naming_the_var(
    var: str, said: str, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe")  # no writer: an open that waited for one would never return
    (tmp_path / "folder").mkdir()
    for name in ("huge.txt", "huge.yaml"):
        with (tmp_path / name).open("wb") as huge:
            huge.truncate(16 * 1024 * 1024 + 1)  # sparse: one byte past the cap
    done = case_file_run(tmp_path, var)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"main.py: error: case file {tmp_path}/cases.yaml: test 1, var q: {said}"]
    assert not (tmp_path / "r").exists()


def test_a_var_file_of_exactly_the_cap_is_read(tmp_path: Path) -> None:
    (tmp_path / "full.txt").write_bytes(b"x" * (16 * 1024 * 1024 - 1) + b"\n")
    done = case_file_run(tmp_path, "file://full.txt")
    assert done.returncode == 0, done.stderr
    (samples,) = (tmp_path / "r").rglob("samples.jsonl")
    (record,) = [json.loads(line) for line in samples.read_text().splitlines()]
    assert (len(record["prompt"]), set(record["prompt"])) == (16 * 1024 * 1024 - 1, {"x"})


def test_a_tests_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "tests.yaml")
    done = case_file_run(tmp_path, "", tests_from="file://tests.yaml")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"main.py: error: case file {tmp_path}/tests.yaml is a FIFO, not a regular file: name a file"
    ]
