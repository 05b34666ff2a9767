"""A plug-in registered before the rename, under the entry-point groups `farel_eval.suites` and `farel_eval.models`,
keeps working: found, listed and run, with a one-line notice to register it under the new group."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO
from tests.plugin_packages import install_package, run_with

PYPROJECT = """
    [build-system]
    requires = ["setuptools>=77"]
    build-backend = "setuptools.build_meta"

    [project]
    name = "old-bench"
    version = "0.9.0"

    [project.entry-points."farel_eval.suites"]
    old = "old_bench:SUITE"

    [project.entry-points."farel_eval.models"]
    echo = "old_bench:resolve_echo"
"""

MODULE = '''
    """A suite and a model string of a package made for the package's earlier name."""

    from pydantic import BaseModel
    from pydantic_ai.models.test import TestModel

    import evaluator
    from typed_eval.providers.resolve import ResolvedModel


    class Params(BaseModel):
        n: int = 3


    class Answer(BaseModel):
        word: str


    def build(params: Params) -> tuple[evaluator.Task[Answer], list[evaluator.Case]]:
        task = evaluator.Task(name="echo", output_type=Answer, score=lambda case, out: float(out.word == case.expected))
        return task, [evaluator.Case(id=f"c{k}", prompt="Say a word.", expected="a") for k in range(params.n)]


    def resolve_echo(rest: str) -> ResolvedModel:
        return ResolvedModel(TestModel(custom_output_args={"word": rest}), f"echo:{rest}", None, True)


    SUITE = evaluator.Suite(name="old", params=Params, build=build, description="An old plug-in")
'''

NOTICE = (
    "main.py: note: the plug-in {name!r} of old-bench is registered under the entry-point group 'farel_eval.{group}', "
    "which is now 'typed_eval.{group}': register it there\n"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"pyproject.toml": PYPROJECT, "old_bench.py": MODULE}
    return install_package(tmp_path_factory.mktemp("old"), {n: textwrap.dedent(t).lstrip() for n, t in files.items()})


def main_py(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_with(site, "main.py", *args)


def test_a_suite_under_the_old_group_is_listed_with_one_notice(site: Path) -> None:
    listed = main_py(site, "suites")
    assert listed.returncode == 0, listed.stderr
    assert "old (old-bench 0.9.0): An old plug-in" in listed.stdout.splitlines()
    assert listed.stderr == NOTICE.format(name="old", group="suites")


def test_a_suite_and_a_model_under_the_old_groups_run_and_store(site: Path, tmp_path: Path) -> None:
    done = main_py(site, "run", "--suite", "old", "--model", "echo:a", "--results-dir", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr == NOTICE.format(name="old", group="suites") + NOTICE.format(name="echo", group="models")
    (summary,) = tmp_path.glob("*/*/summary.json")
    stored = json.loads(summary.read_text())
    assert (stored["suite"], stored["model"], stored["scores"]["score"]) == ("old", "echo:a", 100.0)


def test_the_leaderboard_of_such_a_run_says_the_notice_once(site: Path, tmp_path: Path) -> None:
    made = main_py(site, "run", "--suite", "old", "--model", "echo:a", "--results-dir", str(tmp_path), "--quiet")
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "PYTHONPATH": str(site)}
    board = subprocess.run(
        [PYTHON, "format_result.py", str(tmp_path), "--format", "json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert (board.returncode, [row["suite"] for row in json.loads(board.stdout)]) == (0, ["old"])
    assert board.stderr == NOTICE.format(name="old", group="suites").replace("main.py:", "format_result.py:", 1)


def test_a_package_installed_into_a_folder_already_on_the_path_is_found_by_the_next_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each lookup reads the installed entry points afresh."""
    from typed_eval.core.plugins import plugin_points

    monkeypatch.syspath_prepend(str(tmp_path))
    before = [point.name for point in plugin_points("typed_eval.suites")]
    assert "late" not in before
    info = tmp_path / "late_bench-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: late-bench\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[typed_eval.suites]\nlate = late_bench:SUITE\n")
    after = [point.name for point in plugin_points("typed_eval.suites")]
    assert after == sorted([*before, "late"])
