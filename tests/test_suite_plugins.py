"""Suites as plug-ins: a benchmark published as its own package (built and installed by pip here, registered through
the `typed_eval.suites` entry point) is listed, run with `-S`, stored with its version and parameters, resumed only
with them, and ranked with its columns; and every built-in suite goes through the same path."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.plugin_packages import install_package, run_with
from typed_eval.engine.runs import program_version
from typed_eval.store.storage import load_runs

PACKAGE = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=77"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "acme-bench"
        version = "1.2.3"

        [project.entry-points."typed_eval.suites"]
        acme = "acme_bench:SUITE"
        acme-extra = "acme_bench.extra:SUITE"
        broken = "acme_bench:NOT_THERE"
    """,
    "acme_bench/extra.py": '''
        """The same questions, with the rest of a suite's surface declared: a flag of `run`, an importer of published
        results with an alias command, and the leaderboard's older flag."""

        import sys
        from collections.abc import Sequence

        from pydantic import BaseModel, Field

        import evaluator
        from acme_bench import build as build_questions
        from typed_eval.core.suite import SuiteCommand, SuiteFlag


        class Params(BaseModel):
            n: int = Field(4, description="questions")
            seed: int = 0
            loud: bool = Field(False, description="shout the questions")


        def build(params: Params):
            return build_questions(params)


        def import_answers(argv: Sequence[str], prog: str) -> int:
            print(f"{prog} imports {list(argv)}")
            return 3 if "--fail" in argv else 0


        SUITE = evaluator.Suite(
            name="acme-extra",
            params=Params,
            build=build,
            description="Acme questions, whole surface",
            flags=(SuiteFlag("--questions-count", "n", type=int), SuiteFlag("--loud", "loud", value=True)),
            importer=SuiteCommand(run=import_answers, help="Acme's published answers", aliases=("import-acme",)),
            board_flags=("--acme-only",),
        )
    ''',
    "acme_bench/__init__.py": '''
        """A benchmark of someone else's: is n even? Its own metric `hits` counts right answers."""

        from collections.abc import Iterator, Mapping

        from pydantic import BaseModel, Field

        import evaluator


        class Params(BaseModel):
            n: int = Field(4, description="questions")
            seed: int = 0
            label: str = "plain"


        class Verdict(BaseModel):
            even: bool


        def grade(case: evaluator.Case, output: Verdict) -> evaluator.Score:
            hit = output.even == case.expected
            return evaluator.Score(1.0 if hit else 0.0, details={"hit": int(hit)})


        def hits(totals: Mapping[str, float]) -> dict[str, float]:
            return {"hits": totals.get("hit", 0.0)}


        TASK = evaluator.Task(name="parity", output_type=Verdict, score=grade, metrics=hits, example={"even": True})


        def build(params: Params) -> tuple[evaluator.Task[Verdict], Iterator[evaluator.Case]]:
            numbers = range(params.seed, params.seed + params.n)
            return TASK, (evaluator.Case(id=f"q{k}", prompt=f"Is {k} even?", expected=k % 2 == 0) for k in numbers)


        SUITE = evaluator.Suite(name="acme", params=Params, build=build, description="Acme questions", columns=["hits"])
    ''',
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package, installed by pip into a folder of its own (put on the path of the commands run here)."""
    files = {name: textwrap.dedent(text).lstrip() for name, text in PACKAGE.items()}
    return install_package(tmp_path_factory.mktemp("acme"), files)


def run(site: Path | None, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    script, rest = (args[0], args[1:]) if args[0].endswith(".py") else ("main.py", args)
    return run_with(site, script, *rest, cwd=cwd)


def test_a_suite_package_is_listed_with_its_parameters_and_a_broken_one_is_said(site: Path) -> None:
    listed = run(site, "suites")
    assert listed.returncode == 2  # the broken entry point: said in one line, the others still listed
    assert listed.stderr == (
        "main.py: error: suite 'broken' (acme_bench:NOT_THERE) failed to load: AttributeError: module 'acme_bench' "
        "has no attribute 'NOT_THERE'\n"
    )
    lines = listed.stdout.splitlines()
    start = lines.index("acme (acme-bench 1.2.3): Acme questions")
    assert lines[start + 1 : start + 4] == [
        "  -S n=...  (default 4): questions",
        "  -S seed=...  (default 0)",
        "  -S label=...  (default 'plain')",
    ]
    assert "farel (typed-eval " + program_version() + "): " in listed.stdout


def test_a_suite_package_declares_its_flags_importer_and_leaderboard_flag(site: Path, tmp_path: Path) -> None:
    results = tmp_path / "result"
    done = run(site, "run", "--suite", "acme-extra", "--questions-count", "3", "--loud", "--model", "test",
               "--results-dir", str(results), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (stored,) = load_runs(results)
    assert stored.summary.dataset.suite_params == {"n": 3, "seed": 0, "loud": True}
    assert "--questions-count" not in run(site, "run", "--help").stdout
    shown = run(site, "suites", "acme-extra").stdout.splitlines()
    assert shown[1:] == [
        "modes (--mode): tool, native, prompted, text",
        "parameters (-S KEY=VALUE):",
        "  -S n=INT  default 4; also --questions-count N",
        "      questions",
        "  -S seed=INT  default 0",
        "  -S loud=BOOL  default false; --loud sets true",
        "      shout the questions",
        "commands:",
        "  main.py import acme-extra ...  Acme's published answers; also main.py import-acme",
        "leaderboard: format_result.py --suite acme-extra  its runs, its public table's columns; also --acme-only",
    ]
    wrong = run(site, "run", "--suite", "acme", "--loud", "--model", "test", "--results-dir", str(tmp_path / "r"))
    assert (wrong.returncode, wrong.stderr) == (2, "main.py: error: --loud belongs to the acme-extra suite, not acme\n")
    imported = run(site, "import", "acme-extra", "a.csv", "--fail")
    assert (imported.returncode, imported.stdout) == (3, "main.py imports ['a.csv', '--fail']\n")
    alias = run(site, "import-acme", "b.csv")
    assert (alias.returncode, alias.stdout) == (0, "main.py imports ['b.csv']\n")
    board = run(site, "format_result.py", str(results), "--format", "json", "--acme-only")
    assert [row["suite"] for row in json.loads(board.stdout)] == ["acme-extra"]


def test_a_suite_package_runs_with_s_is_stored_resumed_and_ranked_with_its_columns(site: Path, tmp_path: Path) -> None:
    results = tmp_path / "result"
    done = run(site, "run", "--suite", "acme", "-S", "n=6", "-S", "seed=3", "--model", "test", "--results-dir",
               str(results), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (stored,) = load_runs(results)
    summary = stored.summary
    assert (summary.suite, summary.task, summary.scores.samples) == ("acme", "parity", 6)
    assert (summary.dataset.suite_params, summary.dataset.suite_version) == ({"n": 6, "seed": 3, "label": "plain"},
                                                                              "1.2.3")  # fmt: skip
    assert summary.scores.metrics == {"hits": 3.0}  # 3..8: the test model says "even" to all, right for 4, 6, 8
    assert "acme score: 50.00  (test, tool mode)" in done.stdout

    other = run(site, "run", "--suite", "acme", "-S", "n=6", "-S", "seed=3", "-S", "label=fancy", "--model", "test",
                "--resume", str(stored.path), "--results-dir", str(results))  # fmt: skip
    assert (other.returncode, other.stderr) == (
        2, f"main.py: error: --resume: cannot continue {stored.path} with other settings: suite parameter label "
        "'plain' != 'fancy'\n",
    )  # fmt: skip

    board = json.loads(run(site, "format_result.py", str(results), "--format", "json").stdout)
    assert [(r["suite"], r["rank"], r["score"], r["columns"], r["metrics"]) for r in board] == [
        ("acme", 1, 50.0, ["hits"], {"hits": 3.0})
    ]
    markdown = run(site, "format_result.py", str(results), "--format", "markdown").stdout.splitlines()
    assert [cell.strip() for cell in markdown[0].split("|")[1:6]] == ["Nr", "Model", "Score", "all", "hits"]
    assert [cell.strip() for cell in markdown[2].split("|")[1:6]] == ["1", "test (tool)", "50.00", "50.00", "3.00"]
    (row,) = csv.DictReader(io.StringIO(run(site, "format_result.py", str(results), "--format", "csv").stdout))
    assert row["hits"] == "3.0"
    terminal = run(site, "format_result.py", str(results), "--format", "rich").stdout
    assert "hits" in terminal


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["-S", "n=many"], "suite acme: n=many: Input should be a valid integer, unable to parse string as an integer"),
        (["-S", "bogus=1"], "suite acme has no parameter 'bogus' (its parameters: n, seed, label)"),
        (["-S", "n"], "-S takes key=value, got 'n'"),
        (["--people", "5"], "--people belongs to the story-graph suite, not acme"),
        (["--mode", "tag"], "the acme suite has no tag mode: use --mode tool, native, prompted or text"),
    ],
    ids=["bad-value", "unknown-key", "no-equals", "other-suite-flag", "mode"],
)
def test_bad_suite_parameters_are_one_line(site: Path, tmp_path: Path, values: list[str], message: str) -> None:
    done = run(site, "run", "--suite", "acme", *values, "--model", "test", "--results-dir", str(tmp_path / "r"))
    assert (done.returncode, done.stderr) == (2, f"main.py: error: {message}\n")
    assert not (tmp_path / "r").exists()


QUESTIONS = "What could a brick be used for?\n"


@pytest.mark.parametrize(
    ("suite", "values", "expected"),
    [
        (
            "farel",
            ["-S", "length=2", "-S", "number=2", "--no-shuffle"],
            {"quizzes": None, "length": 2, "number": 2, "seed": 42, "shuffle": False, "unambiguous": False},
        ),
        (
            "lineage",
            ["-S", "length=8,16", "--number", "1"],
            {"quizzes": None, "length": [8, 16], "number": 1, "seed": 42, "shuffle": True},
        ),
        ("story-graph", ["--people", "5", "-S", "count=2"], {"people": 5, "count": 2, "seed": 42}),
        ("case-file", ["-S", "path=tests/parity/cases.yaml"], {"path": "tests/parity/cases.yaml"}),
        ("examples/invoice_bench.py", [], {"path": "examples/invoice_bench.py"}),
    ],
    ids=["farel", "lineage", "story-graph", "case-file", "suite-file"],
)
def test_every_built_in_suite_goes_through_the_registry(
    suite: str, values: list[str], expected: dict[str, object], tmp_path: Path
) -> None:
    results = tmp_path / "result"
    done = run(None, "run", "--suite", suite, *values, "--model", "test", "--limit", "2", "--results-dir",
               str(results), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (stored,) = load_runs(results)
    assert (stored.summary.dataset.suite_params, stored.summary.dataset.suite_version) == (expected, program_version())


def test_a_built_in_suite_refuses_a_bad_parameter_in_one_line(tmp_path: Path) -> None:
    done = run(
        None, "run", "--suite", "story-graph", "-S", "count=0", "--model", "test", "--results-dir", str(tmp_path)
    )
    assert (done.returncode, done.stderr) == (
        2, "main.py: error: suite story-graph: count=0: Input should be greater than or equal to 1\n",
    )  # fmt: skip
    missing = run(None, "run", "--suite", "case-file", "--model", "test", "--results-dir", str(tmp_path))
    assert (missing.returncode, missing.stderr) == (
        2,
        "main.py: error: suite case-file: path=(missing): Field required\n",
    )
