"""A suite's whole surface is its declaration: `run --help` shows the run's own options only; `suites NAME` shows a
suite's parameters, the flags of `run` it keeps as their other spellings, its modes and commands; `import NAME`
runs the suite's importer; `format_result.py --suite NAME` keeps to its runs; and runs a suite stored in an earlier
schema version are read through the format it declares."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_suites_cli import cli, one_line_error
from typed_eval.cli import build_parser
from typed_eval.engine.runs import program_version
from typed_eval.store.migrations import UnknownFormat, migrate_record, migrate_summary, stored_formats
from typed_eval.store.storage import load_runs

RUN_OPTIONS = [
    "--api-key", "--base-url", "--batch", "--batch-poll", "--cache", "--chat-format", "--concurrency", "--full",
    "--grace", "--help", "--judge-model", "--limit", "--max-cost", "--max-requests", "--max-tokens",
    "--max-transport-retries", "--max-wait", "--mode", "--model", "--model-seed", "--no-cache", "--price-in",
    "--price-out", "--pull", "--quiet",
    "--repeats", "--request-timeout", "--results-dir", "--resume", "--retries", "--retry-errors", "--rpm", "--suite",
    "--system-prompt", "--temperature", "--tool-choice", "--tpm", "--trace", "--trace-content", "--update-prices",
    "--workers", "-S", "-h",
]  # fmt: skip
"""The run's own options: what `run --help` lists, in name order."""
SUITE_FLAGS = [
    "--coherence-threshold", "--count", "--dataset", "--embedding-api-key", "--embedding-base-url",
    "--embedding-model", "--evaluators", "--length", "--max-answers", "--no-shuffle", "--novelty-threshold",
    "--number", "--output-type", "--people", "--questions", "--quizzes", "--score", "--seed", "--unambiguous",
]  # fmt: skip
"""The built-in suites' flags that docs/suites.md promises (and novelty's key): accepted by `run`, not listed."""


def run_parser() -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices["run"]
    return parser


def test_run_help_lists_the_runs_own_options_and_no_suite_flag() -> None:
    actions = run_parser()._actions
    listed = sorted(s for a in actions if a.help != argparse.SUPPRESS for s in a.option_strings)
    hidden = sorted(s for a in actions if a.help == argparse.SUPPRESS for s in a.option_strings)
    assert (listed, hidden) == (RUN_OPTIONS, SUITE_FLAGS)
    shown = cli("main.py", "run", "--help")
    assert shown.returncode == 0
    assert [flag for flag in SUITE_FLAGS if flag in shown.stdout] == []


def test_suites_name_shows_one_suites_whole_surface() -> None:
    shown = cli("main.py", "suites", "farel")
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout.splitlines() == [
        f"farel (typed-eval {program_version()}): FaRel: family-relationship quizzes of farel-bench, multiple "
        "choice (score: macro accuracy)",
        "modes (--mode): tool, native, prompted, text, tag",
        "parameters (-S KEY=VALUE):",
        "  -S quizzes=TEXT  default none; also --quizzes FILE",
        "      a FaRel CSV file, or - for standard input (default: generate)",
        "  -S length=INT  default 3; also --length LENGTH",
        "      generate degrees 1..length",
        "  -S number=INT  default 50; also --number NUMBER",
        "      quizzes per class",
        "  -S seed=INT  default 42; also --seed SEED",
        "      generator seed",
        "  -S shuffle=BOOL  default true; --no-shuffle sets false",
        "      shuffle statements and options",
        "  -S unambiguous=BOOL  default false; --unambiguous sets true",
        "      name the two 'cousin Nx removed' classes of degree >= 5 apart (not farel-bench parity)",
        "commands:",
        "  main.py generate farel ...  its generator (-h lists its flags)",
        "  main.py import farel ...  farel-bench log files, re-scored and checked; also main.py import-farel",
        "leaderboard: format_result.py --suite farel  its runs, its public table's columns; also --farel-only",
        "default: `run` poses it when no --suite is given",
    ]


def test_suites_name_shows_list_parameters_secrets_and_files() -> None:
    lineage = cli("main.py", "suites", "lineage").stdout.splitlines()
    assert lineage[5:7] == [
        "  -S length=INT,INT,...  default 8,16,32,64; also --length LENGTH",
        "      people per quiz, 4 to 2048",
    ]
    novelty = cli("main.py", "suites", "novelty").stdout.splitlines()
    assert novelty[15:18] == [
        "secrets (never stored):",
        "  --embedding-api-key EMBEDDING_API_KEY",
        "      the embeddings endpoint's key (default: --api-key when it is --base-url's host, else OPENAI_API_KEY; "
        "never written to results)",
    ]
    case_file = cli("main.py", "suites", "case-file").stdout.splitlines()
    assert case_file[2:6] == [
        "parameters (-S KEY=VALUE):",
        "  -S path=PATH  required",
        "      the file (--suite FILE)",
        "files: --suite FILE.yaml|.yml|.json",
    ]
    assert one_line_error(cli("main.py", "suites", "nosuch")) == (
        "main.py: error: unknown suite 'nosuch': use bfcl, case-file, farel, lineage, novelty, pydantic-evals, "
        "schemas, story-graph, suite-file, tau, or a file (.json .py .yaml .yml)"
    )


def test_the_suites_flags_are_other_spellings_of_their_parameters(tmp_path: Path) -> None:
    done = cli("main.py", "run", "--model", "test", "--length", "2", "--number", "1", "--seed", "7", "--no-shuffle",
               "--unambiguous", "--results-dir", str(tmp_path), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (stored,) = load_runs(tmp_path)
    assert (stored.summary.suite, stored.summary.dataset.suite_params) == (
        "farel",
        {"quizzes": None, "length": 2, "number": 1, "seed": 7, "shuffle": False, "unambiguous": True},
    )
    assert one_line_error(cli("main.py", "run", "--suite", "lineage", "--model", "test", "--count", "2")) == (
        "main.py: error: --count belongs to the story-graph suite, not lineage"
    )
    assert one_line_error(cli("main.py", "run", "--model", "test", "--seed", "x")) == (
        "main.py run: error: argument --seed: invalid int value: 'x' (see --help)"
    )


def test_import_runs_the_importer_the_suite_declares(tmp_path: Path) -> None:
    assert one_line_error(cli("main.py", "import", "story-graph", "x")) == (
        "main.py: error: no importer for suite 'story-graph': use farel or lineage or tau"
    )
    usage = cli("main.py", "import", "lineage", "--help")
    assert (usage.returncode, usage.stdout.splitlines()[0]) == (
        0,
        "usage: main.py import lineage [-h] [--results-dir RESULTS_DIR] PATH [PATH ...]",
    )
    log = REPO / "tests" / "fixtures" / "farel-bench" / "logs"
    first = sorted(log.glob("*.log"))[0]
    by_name = cli("main.py", "import", "farel", str(first), "--results-dir", str(tmp_path / "a"))
    by_alias = cli("main.py", "import-farel", "--results-dir", str(tmp_path / "b"), str(first))
    assert (by_name.returncode, by_alias.returncode) == (0, 0)
    assert by_name.stdout.replace(str(tmp_path / "a"), "DIR") == by_alias.stdout.replace(str(tmp_path / "b"), "DIR")


def test_the_leaderboard_keeps_to_one_suite(tmp_path: Path) -> None:
    for suite in ("farel", "story-graph"):
        done = cli("main.py", "run", "--suite", suite, "--model", "test", "--limit", "2", "--results-dir",
                   str(tmp_path), "--quiet")  # fmt: skip
        assert done.returncode == 0, done.stderr
    rows = json.loads(cli("format_result.py", str(tmp_path), "--format", "json", "--suite", "story-graph").stdout)
    assert [row["suite"] for row in rows] == ["story-graph"]
    public = cli("format_result.py", str(tmp_path), "--format", "markdown", "--suite", "farel")
    alias = cli("format_result.py", str(tmp_path), "--format", "markdown", "--farel-only")
    assert public.returncode == 0
    assert public.stdout == alias.stdout
    header = [cell.strip() for cell in public.stdout.splitlines()[0].split("|")[1:-1]]
    assert header == ["Nr", "Model", "FaRel", "child", "parent"]
    assert "story" not in public.stdout
    assert "--farel-only" not in cli("format_result.py", "--help").stdout
    missing = cli("format_result.py", str(tmp_path), "--suite", "lineage")
    assert (missing.returncode, missing.stderr) == (
        2,
        f"format_result.py: error: no stored runs of suite lineage under {tmp_path}\n",
    )


def test_runs_of_an_earlier_schema_are_read_through_the_format_their_suite_declares() -> None:
    (stored,) = [f for f in stored_formats() if f.version == 1]
    assert stored.record_start == '{"quiz_id":'
    with pytest.raises(UnknownFormat, match=r"^no installed suite reads schema version 1$"):
        migrate_summary({"schema_version": 1}, 1, formats=[])
    with pytest.raises(UnknownFormat, match=r"^no installed suite reads schema version 1$"):
        migrate_record({"quiz_id": "q"}, 1, formats=[])
    current = {"case_id": "q"}
    assert migrate_record(current, 2, formats=[]) is current
