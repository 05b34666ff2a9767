"""Hostile input, round three: files, logs, servers and tasks that broke the evaluator, each reproduced as it broke."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO


def cli(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, *args], cwd=REPO, input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


# --- 25: a FaRel length whose family outgrows the name lists -------------------------------------------------------


def test_a_farel_length_beyond_the_names_is_one_line(tmp_path: Path) -> None:
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
