"""A differential test of the tau suite against τ-bench itself: the same scripted model replies are played through
τ-bench's own pipeline (`tau2.run.run_task`: its Orchestrator, its agent and user simulator, its `evaluate_simulation`,
the model reached through a fake `litellm` in tests/fake_litellm) and through ours (`main.py run --suite tau` against a
loopback OpenAI-compatible server); both must give the same conversations, termination reasons and rewards.

The player is one function of the conversation it is shown: the user opens with "[domain/task id] " and the task's
reason for call (its task found by its scenario in the user's system prompt: tasks that share a scenario play the
first one's script), the agent replays that task's golden actions one call per reply and reports "Done. " with what
it must communicate, then the user replays its own golden actions (telecom) and stops. Some tasks, chosen by id, vary
it: a call to a tool that does not exist, a changed argument (reward 0), an agent that never finishes (max_steps),
and two calls in one reply after the user's confirmation."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from tests.fake_openai import FakeOpenAI, completion
from typed_eval.cli import main
from typed_eval.store.storage import read_records
from typed_eval.suites.tau.data import load

FAKE_LITELLM = Path(__file__).resolve().parent / "fake_litellm"
AGENT = "<instructions>\nYou are a customer service agent"
SEED = 626729
"""tau2's seed for trial 0 of a run seeded 300 (its default)."""
MAX_STEPS = 40
MOCK = [
    "create_task_1",
    "create_task_1_with_env_assertions",
    "create_task_1_nl_eval",
    "update_task_1",
    "update_task_with_message_history",
    "update_task_with_initialization_data",
    "update_task_with_initialization_actions",
    "update_task_with_history_and_env_assertions",
    "impossible_task_1",
]
BASE = {"mock": MOCK, "airline": ["1", "2", "3"], "retail": ["1", "2", "3"]}
SMALL = {
    "telecom": [
        "[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]",
        "[mobile_data_issue]user_abroad_roaming_disabled_off[PERSONA:Hard]",
    ]
}
NO_SUCH_TOOL = {"mock/update_task_1", "airline/2"}
"""The agent first calls a tool that does not exist."""
CHANGED = {"mock/create_task_1", "retail/2"}
"""The agent's last golden call has its last text argument changed."""
ENDLESS = {"retail/1"}
"""The agent never stops calling tools: the conversation reaches max_steps."""
TWO_CALLS = {"airline/1"}
"""The agent asks first, and on the user's answer makes its first two calls in one reply."""
DONE = "Done. "
STOP = "Thanks ###STOP###"

TASKS: dict[str, Any] = {
    f"{domain.name}/{task.id}": task
    for domains, split in ((BASE, "base"), (SMALL, "small"))
    for domain in load(list(domains), split, None).domains
    for task in domain.tasks
    if task.id in domains[domain.name]
}


# -- the player: one function of the conversation, for both pipelines ------------------------------------------------


def text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def normal(message: dict[str, Any]) -> dict[str, Any]:
    """A message as litellm's dicts (τ-bench) or an OpenAI request (ours) carry it: role, text, calls, result."""
    calls = [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in message.get("tool_calls") or []
    ]
    return {"role": message["role"], "text": text(message.get("content")), "calls": calls}


def said(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def calling(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    made = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        for call_id, name, arguments in calls
    ]
    return {"role": "assistant", "content": None, "tool_calls": made}


def actions(key: str, requestor: str) -> list[tuple[str, dict[str, Any]]]:
    golden = TASKS[key].evaluation_criteria.actions or []
    return [(a.name, dict(a.arguments)) for a in golden if a.requestor == requestor]


def agent_plan(key: str) -> list[list[tuple[str, dict[str, Any]]] | str]:
    """The agent's replies after the user's opening: each a list of calls, or a text."""
    calls = actions(key, "assistant")
    if key in CHANGED:
        name, arguments = calls[-1]
        last = [k for k, v in arguments.items() if isinstance(v, str)][-1]
        calls[-1] = (name, {**arguments, last: arguments[last] + "X"})
    plan: list[list[tuple[str, dict[str, Any]]] | str] = [[call] for call in calls]
    if key in TWO_CALLS:
        plan = ["Could you confirm that I may look up your details?", calls[:2], *[[c] for c in calls[2:]]]
    if key in NO_SUCH_TOOL:
        plan.insert(0, [("lookup_everything", {})])
    info = TASKS[key].evaluation_criteria.communicate_info or []
    return [*plan, DONE + " ".join(info)]


def tag_of(content: str) -> str | None:
    return next((key for key in TASKS if content.startswith(f"[{key}] ")), None)


def agent_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    opened = next(i for i, m in enumerate(messages) if m["role"] == "user" and tag_of(m["text"]))
    key = tag_of(messages[opened]["text"])
    assert key is not None
    step = sum(m["role"] == "assistant" for m in messages[opened:])
    made = sum(len(m["calls"]) for m in messages if m["role"] == "assistant")
    plan = agent_plan(key)
    if key in ENDLESS and step >= len(plan) - 1:
        name, arguments = actions(key, "assistant")[0]
        return calling((f"c{made}", name, arguments))
    reply = plan[min(step, len(plan) - 1)]
    if isinstance(reply, str):
        return said(reply)
    return calling(*[(f"c{made + i}", name, arguments) for i, (name, arguments) in enumerate(reply)])


def user_reply(system: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The user's own messages are the `assistant` ones of its conversation; the agent's are `user`."""
    # the longest scenario the prompt holds (one without a persona is part of its twin's with one)
    key = max((key for key, task in TASKS.items() if str(task.user_scenario) in system),
              key=lambda key: len(str(TASKS[key].user_scenario)))  # fmt: skip
    opened = next((i for i, m in enumerate(messages) if m["role"] == "assistant" and tag_of(m["text"])), None)
    if opened is None:
        instructions = TASKS[key].user_scenario.instructions
        return said(f"[{key}] {getattr(instructions, 'reason_for_call', instructions)}")
    agent_said = [m["text"] for m in messages[opened:] if m["role"] == "user"]
    if not agent_said or not agent_said[-1].startswith(DONE):
        return said("Yes, go ahead.")
    mine = actions(key, "user")
    made = sum(len(m["calls"]) for m in messages[opened:] if m["role"] == "assistant")
    if made < len(mine):
        name, arguments = mine[made]
        return calling((f"u{made}", name, arguments))
    return said(STOP)


def player(request: dict[str, Any]) -> dict[str, Any]:
    system = text(request["messages"][0]["content"])
    messages = [normal(m) for m in request["messages"][1:]]
    return agent_reply(messages) if system.startswith(AGENT) else user_reply(system, messages)


# -- the two pipelines --------------------------------------------------------------------------------------------

Turn = tuple[str, str, tuple[tuple[str, Any], ...], tuple[str, bool, str] | None]
"""role, text, the calls' (name, arguments), a tool result's (content, error, requestor)."""


def turn(role: str, content: Any, calls: list[tuple[str, Any]], result: tuple[str, bool, str] | None) -> Turn:
    return role, text(content), tuple(calls), result


def tau_turns(message: Any) -> Turn:
    calls = [(c.name, c.arguments) for c in message.tool_calls or []] if message.role != "tool" else []
    result = (message.content, message.error, message.requestor) if message.role == "tool" else None
    return turn(message.role, message.content, calls, result)


def our_turns(message: dict[str, Any]) -> Turn:
    calls = [(c["name"], c["arguments"]) for c in message.get("tool_calls") or []]
    tool = message["role"] == "tool"
    result = (message["content"], message["error"], message["requestor"]) if tool else None
    return turn(message["role"], message.get("content"), calls, result)


Outcome = tuple[list[Turn], str, float | None]

HEAVY = ("litellm", "tau2.registry", "tau2.agent", "tau2.user", "tau2.orchestrator", "tau2.run", "tau2.gym")


@pytest.fixture
def tau2_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """`tau2.run` with the fake litellm; the modules it brought in are dropped after (other tests check that the
    suite never imports them)."""
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(FAKE_LITELLM))
    from loguru import logger

    logger.disable("tau2")
    try:
        run = importlib.import_module("tau2.run")
        fake = importlib.import_module("litellm")
        assert Path(str(fake.__file__)).is_relative_to(FAKE_LITELLM)
        monkeypatch.setattr(fake, "reply", player)
        yield run
    finally:
        logger.enable("tau2")
        for name in set(sys.modules) - before:
            if name.startswith(HEAVY) or name == "tau2.utils.llm_utils":
                del sys.modules[name]


def tau_bench(run: ModuleType) -> dict[str, Outcome]:
    evaluator = importlib.import_module("tau2.evaluator.evaluator")
    outcomes: dict[str, Outcome] = {}
    for key, task in TASKS.items():
        domain = key.split("/")[0]
        simulation = run.run_task(
            domain, task, agent="llm_agent", user="user_simulator", llm_agent="fake/agent",
            llm_args_agent={"temperature": 0.0}, llm_user="fake/user", llm_args_user={"temperature": 0.0},
            max_steps=MAX_STEPS, max_errors=10, evaluation_type=evaluator.EvaluationType.ALL, seed=SEED,
        )  # fmt: skip
        turns = [tau_turns(m) for m in simulation.messages]
        outcomes[key] = (turns, simulation.termination_reason.value, simulation.reward_info.reward)
    return outcomes


def ours(tmp_path: Path) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    for split, domains in (("base", BASE), ("small", SMALL)):
        results = tmp_path / split
        tasks = ",".join(dict.fromkeys(t for ids in domains.values() for t in ids))
        with FakeOpenAI(lambda request: completion(player(request))) as server:
            code = main(["run", "--suite", "tau", "-S", f"domains={','.join(domains)}", "-S", f"split={split}",
                         "-S", f"tasks={tasks}", "-S", f"max_steps={MAX_STEPS}", "--model", "fake-model",
                         "--base-url", server.url, "--api-key", "sk-test", "--results-dir", str(results),
                         "--quiet"])  # fmt: skip
        assert code == 0
        (run_dir,) = [p.parent for p in results.glob("*/*/samples.jsonl")]
        for record in read_records(run_dir):
            output = cast(dict[str, Any], record.output)
            turns = [our_turns(m) for m in output["messages"]]
            outcomes[record.case_id] = (turns, output["termination_reason"], record.score)
    return outcomes


def test_the_same_replies_give_tau_benchs_conversations_terminations_and_rewards(
    tmp_path: Path, tau2_run: ModuleType
) -> None:
    theirs = tau_bench(tau2_run)
    mine = ours(tmp_path)
    assert sorted(mine) == sorted(theirs)
    # the script's variety did happen
    assert theirs["retail/1"][1] == "max_steps" and theirs["mock/create_task_1"][2] == 0.0
    assert any(r is not None and r[1] for t in theirs["airline/2"][0] for r in [t[3]])
    assert any(len(t[2]) == 2 for t in theirs["airline/1"][0])
    for telecom in SMALL["telecom"]:  # the user acts on its phone, and the conversation is its task's
        assert any(t[0] == "user" and t[2] for t in theirs[f"telecom/{telecom}"][0])
        assert theirs[f"telecom/{telecom}"][0][1][1].startswith(f"[telecom/{telecom}] ")
    for key in theirs:
        assert mine[key][1:] == theirs[key][1:], key
        assert mine[key][0] == theirs[key][0], key
