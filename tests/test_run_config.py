"""One settings object, resolved once: what the caller gives (`RunConfig`) becomes what the run used (`RunSettings`,
stored in the summary) in one function; the command line makes its arguments into the config in `cli/`, and the
argument namespace goes no further; `evaluator` exports one page of names."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai.models.test import TestModel

import evaluator
from tests.conftest import REPO
from typed_eval.cli import build_parser
from typed_eval.cli.config import RunCommand, run_command
from typed_eval.contracts import RunSettings
from typed_eval.core.errors import InputError
from typed_eval.core.run_config import RunConfig, config_with
from typed_eval.core.suite import Suite
from typed_eval.engine.control import Budget, StopState
from typed_eval.engine.settings import resolve_settings
from typed_eval.providers.batches import BatchOptions
from typed_eval.providers.flow import Pacer
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.resolve import ResolvedModel
from typed_eval.suites.bfcl.suite import BFCL
from typed_eval.suites.farel.suite import FAREL

STORED_KEYS = [
    "base_url", "mode", "retries", "temperature", "seed", "max_tokens", "system_prompt", "repeats", "judge_model",
    "tool_choice", "concurrency", "price_in", "price_out", "local", "chat_format", "batch", "rpm", "tpm", "max_wait_s",
    "request_timeout", "max_transport_retries",  # the caller's choices (`ChosenSettings`), then the run's own:
    "model", "instructions", "tool_choice_reason", "workers", "model_file", "updated_prices",
]  # fmt: skip
"""The keys of a summary's `settings`, in the order written (runs stored before have another order, read alike)."""


class Answer(BaseModel):
    value: int


TASK = evaluator.Task(name="numbers", output_type=Answer, score=lambda case, out: float(out.value == case.expected))


def prepared(**facts: Any) -> PreparedModel:
    return PreparedModel(ResolvedModel(TestModel(), "test", "http://127.0.0.1:9/v1", local=True), **facts)


def test_a_config_resolves_to_the_settings_the_run_used() -> None:
    config = RunConfig(mode="text", temperature=0.5, seed=7, price_in=1.0, price_out=2.0, rpm=30, max_cost=3.0)
    used = resolve_settings(config, prepared(concurrency=1, max_tokens=512, chat_format="chatml"), TASK, batch=False)
    assert used.model_dump() == {
        "model": "test", "base_url": "http://127.0.0.1:9/v1", "mode": "text", "retries": 3, "temperature": 0.5,
        "seed": 7, "max_tokens": 512, "system_prompt": None, "repeats": 1, "judge_model": None,
        "instructions": TASK.instructions_for("text"), "tool_choice": None, "tool_choice_reason": None,
        "concurrency": 1, "workers": 1, "price_in": 1.0, "price_out": 2.0, "local": True, "model_file": None,
        "chat_format": "chatml", "batch": False, "updated_prices": False, "rpm": 30.0, "tpm": None,
        "max_wait_s": 600.0, "request_timeout": None, "max_transport_retries": None,
    }  # fmt: skip


def test_the_mode_the_model_and_the_pacer_fill_each_none() -> None:
    tag = resolve_settings(RunConfig(mode="tag"), prepared(), TASK, batch=False)
    assert (tag.retries, tag.concurrency, tag.max_tokens, tag.tool_choice) == (3, 8, None, None)
    once = dataclasses.replace(TASK, asks_once=("tag",))  # its benchmark asked once in tag mode: no retries there
    assert resolve_settings(RunConfig(mode="tag"), prepared(), once, batch=False).retries == 0
    assert resolve_settings(RunConfig(mode="text"), prepared(), once, batch=False).retries == 3
    tool = resolve_settings(
        RunConfig(local=False, max_tokens=100, update_prices="https://example.org/prices.json"),
        prepared(tool_choice="auto", tool_choice_reason="the server accepts only auto"),
        TASK,
        batch=False,
        pacer=Pacer(rpm=60, tpm=1000, max_wait_s=5),
        workers=3,
    )
    assert (tool.retries, tool.tool_choice, tool.tool_choice_reason, tool.local, tool.max_tokens) == (
        3, "auto", "the server accepts only auto", False, 100,
    )  # fmt: skip
    assert (tool.rpm, tool.tpm, tool.max_wait_s, tool.workers, tool.updated_prices) == (60, 1000, 5, 3, True)
    for unpaced in (
        resolve_settings(RunConfig(rpm=10), prepared(), TASK, batch=True),
        resolve_settings(RunConfig(rpm=10), prepared(), TASK, batch=False, imported=True),
    ):
        assert (unpaced.rpm, unpaced.tpm, unpaced.max_wait_s) == (None, None, None)
    assert resolve_settings(RunConfig(), prepared(), TASK, batch=True).batch is True


def test_the_stored_settings_keep_their_keys_and_the_config_holds_no_run_fields() -> None:
    assert list(RunSettings.model_fields) == STORED_KEYS
    assert list(RunSettings().model_dump(mode="json")) == STORED_KEYS
    filled_by_the_run = {"model", "instructions", "tool_choice_reason", "workers", "model_file", "updated_prices"}
    assert set(RunConfig.model_fields) == set(STORED_KEYS) - filled_by_the_run | {
        "update_prices", "max_cost", "max_requests", "trace", "trace_content", "model_settings", "batch_options",
    }  # fmt: skip


def test_a_stored_run_has_the_settings_keys_of_before(tmp_path: Path) -> None:
    cases = [evaluator.Case(id="c1", prompt="one?", expected=1)]
    outcome = asyncio.run(evaluator.run(TASK, cases, "test", results_dir=tmp_path, mode="native", max_cost=1.0))
    stored = json.loads((outcome.run_dir / "summary.json").read_text(encoding="utf-8"))
    assert list(stored["settings"]) == STORED_KEYS
    assert (stored["settings"]["mode"], stored["settings"]["retries"], stored["settings"]["concurrency"]) == (
        "native", 3, 8,
    )  # fmt: skip
    stored_before = [
        summary["settings"]
        for path in sorted((REPO / "tests" / "fixtures").rglob("summary.json"))
        if (summary := json.loads(path.read_text(encoding="utf-8")))["schema_version"] == 2
    ]
    assert len(stored_before) == 11
    for before in stored_before:  # runs stored by earlier code read and write back the same settings
        assert RunSettings.model_validate(before).model_dump(mode="json") == before


def test_the_library_takes_the_config_and_checks_its_overrides_alike() -> None:
    cases = [evaluator.Case(id="c1", prompt="one?", expected=1)]
    by_object = asyncio.run(evaluator.evaluate(TASK, cases, "test", evaluator.RunConfig(mode="prompted", retries=1)))
    by_keyword = asyncio.run(evaluator.evaluate(TASK, cases, "test", mode="prompted", retries=1))
    assert [r.mode for r in by_object.records] == [r.mode for r in by_keyword.records] == ["prompted"]
    with pytest.raises(InputError) as refused:
        config_with(RunConfig(), max_requests=0)
    assert (refused.value.parameter, refused.value.message) == ("max_requests", "must be at least 1, got 0")
    with pytest.raises(InputError) as wrong:
        asyncio.run(evaluator.evaluate(TASK, cases, "test", RunSettings()))  # type: ignore[arg-type]
    assert (wrong.value.parameter, wrong.value.message) == ("config", "must be a RunConfig, got RunSettings")


def test_budgets_and_the_stop_state_are_objects_of_their_own() -> None:
    whole = Budget.of(RunConfig(max_cost=1.0, max_requests=9))
    assert (whole.max_cost, whole.max_requests, whole.limited) == (1.0, 9, True)
    part = whole.share(4)
    assert (part.max_cost, part.max_requests, part.named_cost, part.named_requests) == (0.25, 3, 1.0, 9)
    assert Budget().limited is False
    stop = StopState()
    stop.stop("first")
    stop.stop("second")
    assert (stop.stopping, stop.reason) == (True, "first")


def command_of(*argv: str, suite: Suite[Any] = FAREL) -> RunCommand:
    args = build_parser().parse_args(["run", *argv])
    return run_command(args, suite)


def test_the_command_line_makes_its_arguments_into_the_config_once(tmp_path: Path) -> None:
    command = command_of(
        "--model", "test", "--model", "test", "--retries", "2", "--rpm", "30", "--batch", "--batch-poll", "5",
        "--results-dir", str(tmp_path), "--resume",
    )  # fmt: skip
    assert command.config == RunConfig(
        retries=2, temperature=0.01, seed=42, rpm=30.0, batch=True, batch_options=BatchOptions(poll_interval_s=5.0),
        max_wait_s=600.0,
    )  # fmt: skip
    assert command.models == ["test"]
    assert (command.resume, command.cache_path, command.workers, command.results_dir) == (True, None, 1, tmp_path)


def test_sampling_not_given_is_the_suite_s_and_given_is_the_user_s(tmp_path: Path) -> None:
    assert (command_of("--model", "test").config.temperature, command_of("--model", "test").config.seed) == (0.01, 42)
    bfcl = command_of("--model", "test", suite=BFCL).config
    assert (bfcl.temperature, bfcl.seed) == (0.001, None)  # BFCL's requests: temperature 0.001, no seed
    given = command_of("--model", "test", "--temperature", "0.7", "--model-seed", "3", suite=BFCL).config
    assert (given.temperature, given.seed) == (0.7, 3)


def test_the_command_line_config_holds_every_run_flag(tmp_path: Path) -> None:
    command = command_of(
        "--model", "test", "--retries", "2", "--max-cost", "0.5", "--max-requests", "7", "--rpm", "30",
        "--tpm", "900", "--max-wait", "9", "--cache", "--results-dir", str(tmp_path), "--resume", "runs/x",
        "--price-in", "1", "--price-out", "2", "--concurrency", "3", "--repeats", "2", "--request-timeout", "4",
        "--max-transport-retries", "1", "--tool-choice", "auto", "--max-tokens", "64",
    )  # fmt: skip
    assert command.config == RunConfig(
        retries=2, temperature=0.01, seed=42, max_tokens=64, repeats=2, tool_choice="auto", concurrency=3,
        price_in=1.0, price_out=2.0, rpm=30.0, tpm=900.0, max_wait_s=9.0, request_timeout=4.0,
        max_transport_retries=1, max_cost=0.5, max_requests=7,
    )  # fmt: skip
    assert (command.resume, command.cache_path) == (Path("runs/x"), tmp_path / ".cache" / "responses.sqlite")
    with pytest.raises(InputError, match=r"^--batch sends every sample at once"):
        command_of("--model", "test", "--batch", "--max-requests", "3")


def _references_namespace(path: Path) -> list[int]:
    """Lines of `path` that name argparse's namespace (`argparse.Namespace`, or `Namespace` imported from it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "Namespace":
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found += [node.lineno for alias in node.names if alias.name == "Namespace"]
    return found


def test_the_argument_namespace_stays_in_the_cli() -> None:
    outside = {
        str(path.relative_to(REPO)): lines
        for path in sorted((REPO / "typed_eval").rglob("*.py"))
        if "cli" not in path.relative_to(REPO / "typed_eval").parts[:1]
        if (lines := _references_namespace(path))
    }
    assert outside == {}
    assert _references_namespace(REPO / "typed_eval" / "cli" / "run.py") != []  # the check sees one where it is


def test_evaluator_exports_one_page_of_names() -> None:
    assert evaluator.__all__ == [
        "Case", "Environment", "EvaluationResult", "EvaluatorError", "InputError", "Pacer", "RunConfig", "RunControl",
        "RunOutcome", "RunSummary", "SampleRecord", "Score", "SimulatedUser", "Suite", "SuiteContext", "Task",
        "TaskError", "ToolResult", "analyse", "compare", "converse", "evaluate", "load_runs", "pass_hat_k",
        "read_records", "run",
    ]  # fmt: skip
    assert len(evaluator.__all__) <= 26
    public = {name for name in vars(evaluator) if not name.startswith("_") and name != "annotations"}
    assert public == set(evaluator.__all__)
