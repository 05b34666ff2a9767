"""Installed, the distribution claims only its own top-level names: `import evaluator` works inside a host
project that has its own `schemas`, `harness`, `main` and `format_result` modules."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO

HOST_CHECK = """
import asyncio, schemas, harness, main, format_result
import evaluator
from pydantic import BaseModel

class Total(BaseModel):
    value: int

task = evaluator.Task(name="sum", output_type=Total, score=lambda case, out: float(out.value == case.expected),
                      example={"value": 4})
cases = [evaluator.Case(id="c1", prompt="2 + 2?", expected=4)]
result = asyncio.run(evaluator.evaluate(task, cases, "test"))
print(schemas.AnswerMode, harness.NAME, main.NAME, format_result.NAME, evaluator.__file__, result.scores.score)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [PYTHON, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    (built,) = out.glob("typed_eval-*.whl")
    return built


def test_the_wheel_claims_only_its_own_top_level_names(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist() if ".dist-info/" not in name}
        (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    assert tops == {"evaluator.py", "farel_bench.py", "typed_eval"}
    assert "typed-eval = typed_eval.cli:main" in scripts
    assert "typed-eval-leaderboard = typed_eval.cli.leaderboard_command:main" in scripts


def test_evaluator_imports_inside_a_host_project_with_generic_module_names(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    host = tmp_path / "host"
    (host / "harness").mkdir(parents=True)
    (host / "schemas.py").write_text('AnswerMode = "host"\n')
    (host / "harness" / "__init__.py").write_text('NAME = "host harness"\n')
    (host / "main.py").write_text('NAME = "host main"\n')
    (host / "format_result.py").write_text('NAME = "host format_result"\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": f"{host}{os.pathsep}{site}"}
    done = subprocess.run([PYTHON, "-c", HOST_CHECK], cwd=host, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["host", "host", "harness", "host", "main", "host", "format_result",
                                   str(site / "evaluator.py"), "100.0"]  # fmt: skip


def test_the_console_script_runs_as_main_py_does(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "typed-eval"
    assert script.exists(), "pip install -e . installs the typed-eval console script"
    done = subprocess.run(
        [str(script), "run", "--model", "test", "--limit", "9", "--results-dir", str(tmp_path), "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "FaRel-3: 22.22  (test, tool mode)" in done.stdout.splitlines()
    board = subprocess.run(
        [str(script.parent / "typed-eval-leaderboard"), str(tmp_path), "--format", "csv"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert board.stdout.splitlines()[1].startswith(",farel,test,tool,")  # a limited run: listed, not ranked
    bad = subprocess.run([str(script), "run", "--suite", "nope"], cwd=tmp_path, capture_output=True, text=True)
    assert (bad.returncode, bad.stderr) == (
        2,
        "typed-eval: error: unknown suite 'nope': use bfcl, case-file, farel, lineage, novelty, pydantic-evals, "
        "schemas, story-graph, suite-file, tau, or a file (.json .py .yaml .yml)\n",
    )  # fmt: skip
