"""The model x mode table: runs of one model in several answer modes on the same cases, whose answers are known, give
exact scores, pair counts, p-values (McNemar exact, Holm over the pairs) and the best mode; and the command line poses
several modes in one command, a stored run each, and prints the table."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from pydantic import BaseModel
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import evaluator
from tests.cli_run import run_cli
from typed_eval.core.attempts import UserPrices
from typed_eval.reports.mode_matrix import mode_comparisons
from typed_eval.store.storage import load_runs


class Answer(BaseModel):
    value: int


CASES = [evaluator.Case(id=f"c{k:02d}", prompt=f"case {k}", expected=k) for k in range(12)]
RIGHT = {"tool": set(range(10)), "text": {0, 1, 2, 3, 10}, "prompted": set(range(6))}
"""Which cases each mode answers right: tool 10 of 12, text 5, prompted 6."""


def task() -> evaluator.Task[Answer]:
    return evaluator.Task(name="numbers", output_type=Answer, score=lambda case, out: float(out.value == case.expected))


def answering(mode: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        k = int(prompt.split()[1])
        value = k if k in RIGHT[mode] else k + 100
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"value": value})])
        return ModelResponse(parts=[TextPart(json.dumps({"value": value}))])

    return FunctionModel(respond, model_name="known")


def test_each_mode_of_a_model_is_scored_and_every_pair_compared_exactly(tmp_path: Path) -> None:
    for mode in ("tool", "text", "prompted"):
        outcome = asyncio.run(evaluator.run(task(), CASES, answering(mode), results_dir=tmp_path, mode=mode))
        assert outcome.summary.status == "finished"
    (entry,) = mode_comparisons(load_runs(tmp_path), ["tool", "text", "prompted"])
    data = entry.model_dump()
    assert (data["suite"], data["model"], data["best_mode"]) == ("numbers", "function:known", "tool")
    assert list(data["modes"]) == ["tool", "text", "prompted"]
    assert [round(cell["score"], 4) for cell in data["modes"].values()] == [83.3333, 41.6667, 50.0]
    assert [cell["valid_first_try"] for cell in data["modes"].values()] == [100.0, 100.0, 100.0]
    assert all(cell["run"].startswith("function_known/") for cell in data["modes"].values())
    pairs = [(p["a"], p["b"], p["paired"], p["only_a"], p["only_b"], p["p_value"], p["p_holm"]) for p in data["versus"]]
    assert pairs == [
        ("tool", "text", 12, 6, 1, 0.125, 0.375),  # 7 discordant cases, 1 against: 2 x 8/128
        ("tool", "prompted", 12, 4, 0, 0.125, 0.375),  # 4 discordant, none against: 2 x 1/16
        ("text", "prompted", 12, 1, 2, 1.0, 1.0),
    ]
    for pair in data["versus"]:
        low, high = pair["difference_ci95"]
        assert low <= pair["difference"] <= high
    assert round(data["versus"][0]["difference"], 4) == 41.6667
    assert set(data) == {"suite", "model", "modes", "best_mode", "versus"}
    assert set(data["modes"]["tool"]) == {"run", "score", "score_ci95", "valid_first_try", "cost_per_correct_usd"}
    assert set(data["versus"][0]) == {
        "a", "b", "paired", "only_a", "only_b", "p_value", "p_holm", "difference", "difference_ci95",
    }  # fmt: skip


def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args)


def test_the_command_line_poses_several_modes_and_prints_the_table(tmp_path: Path) -> None:
    results = tmp_path / "result"
    done = cli("main.py", "run", "--model", "test", "--mode", "tool", "--mode", "tag", "--limit", "9",
               "--results-dir", str(results), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(run.summary.mode for run in load_runs(results)) == ["tag", "tool"]
    assert "farel · test: modes" in done.stdout  # the model named whole in the title
    assert "modes compared on paired cases" in done.stdout
    table = cli("format_result.py", str(results), "--modes", "--format", "markdown").stdout.splitlines()
    assert table[:3] == [
        "### farel: modes",
        "",
        "| Model | Mode | Score | 95% CI         | Valid 1st | $/correct | Best |",
    ]
    assert [line.split("|")[2].strip() for line in table[4:6]] == ["tool", "tag"]
    (entry,) = json.loads(cli("format_result.py", str(results), "--modes", "--format", "json").stdout)
    assert (entry["best_mode"], [p["paired"] for p in entry["versus"]]) == ("tool", [9])
    everything = cli("main.py", "run", "--model", "test", "--mode", "all", "--limit", "9", "--results-dir",
                     str(tmp_path / "all"), "--quiet")  # fmt: skip
    assert everything.returncode == 0, everything.stderr
    assert sorted(run.summary.mode for run in load_runs(tmp_path / "all")) == [
        "native", "prompted", "tag", "text", "tool",
    ]  # fmt: skip


def test_modes_a_suite_does_not_pose_and_a_board_without_two_modes_are_one_line(tmp_path: Path) -> None:
    refused = cli("main.py", "run", "--suite", "story-graph", "--model", "test", "--mode", "tool", "--mode", "tag")
    assert (refused.returncode, refused.stderr) == (
        2, "main.py: error: the story-graph suite has no tag mode: use --mode tool, native, prompted or text\n",
    )  # fmt: skip
    one = cli("main.py", "run", "--model", "test", "--limit", "9", "--results-dir", str(tmp_path), "--quiet")
    assert one.returncode == 0, one.stderr
    none = cli("format_result.py", str(tmp_path), "--modes")
    assert (none.returncode, none.stderr) == (
        2, f"format_result.py: error: no model under {tmp_path} has runs in two answer modes on the same cases: run "
        "one with `main.py run --mode tool --mode tag`\n",
    )  # fmt: skip


NEEDS = {0: 0, 1: 1, 2: 2, 3: 9}
"""Corrective retries each case needs before a valid output (case 3: more than the run allows)."""


def retrying() -> FunctionModel:
    """Invalid (`value` not a number) until the case's retries are used, then right; the k-th request of a case reads
    100 x k tokens (the conversation grows) and writes 10."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        k = int(next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart)).split()[1])
        sent = sum(isinstance(m, ModelResponse) for m in messages)
        value: object = k if sent >= NEEDS[k] else "not a number"
        usage = RequestUsage(input_tokens=100 * (sent + 1), output_tokens=10)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"value": value})], usage=usage)

    return FunctionModel(respond, model_name="retrying")


def test_what_retries_bought_and_cost_is_read_from_the_stored_attempts(tmp_path: Path) -> None:
    cases = [evaluator.Case(id=f"c{k}", prompt=f"case {k}", expected=k) for k in NEEDS]
    prices = UserPrices(input_per_million=1.0, output_per_million=2.0)
    asyncio.run(evaluator.run(task(), cases, retrying(), results_dir=tmp_path, retries=2, prices=prices))
    (row,) = json.loads(cli("format_result.py", str(tmp_path), "--format", "json").stdout)
    assert (row["score"], row["score_by_retries"], row["valid_by_retries"]) == (75.0, [25.0, 50.0, 75.0],
                                                                                [25.0, 50.0, 75.0])  # fmt: skip
    assert (row["retry_requests"], row["retry_input_tokens"], row["retry_output_tokens"]) == (5, 1200, 50)
    assert round(row["retry_cost_usd"], 10) == 0.0013  # 1,200 x $1 + 50 x $2 per million
    assert round(row["cost_usd"], 10) == 0.00178  # and the four first requests: 400 x $1 + 40 x $2 per million
    assert row["after_invalid"] == {
        "1": {"wrong_type": {"fixed": 1, "same": 2, "other": 0, "none": 0}},
        "2": {"wrong_type": {"fixed": 1, "same": 1, "other": 0, "none": 0}},
        "3": {"wrong_type": {"fixed": 0, "same": 0, "other": 0, "none": 1}},
    }
