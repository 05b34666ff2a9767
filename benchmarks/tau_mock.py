"""A loopback OpenAI-compatible mock that plays both sides of τ-bench's conversations, the agent under test and the
simulated user, for `tau_compare.py`: τ-bench's own `tau2 run` and our `tau` suite talk to it alike, and every reply
is a function of the request alone (its messages and its `seed`), never of call order or time, so both pipelines see
the same trajectory for the same task and trial.

Who is asked is read from the system message: the agent's is τ-bench's `<instructions>` with the domain policy, the
user's the simulator guidelines with the task's `<scenario>`. The user finds its task by its scenario (tasks that
share one, in telecom and mock, play the first of them) and says the task's reference, `(ref airline/12)`, in its
first message; the agent finds it there. The trial is the request's `seed` (each trial of `tau2 run` and of ours
samples with its own seed), so a task's trials can differ.

A task's plan, picked by a hash of its reference and the seed (`SCENARIOS`): mostly the task's golden actions of the
agent, one call per reply, a question asking to confirm before the last one, then a text carrying the task's
`communicate_info` ending with "anything else"; the user confirms, does its own golden actions (telecom: on its
phone) when the agent first writes, and ends with `###STOP###`. Else: the calls all in one reply, an action left out
or changed, a tool that does not exist or arguments of the wrong types first (error results), ten calls of a tool
that does not exist (too many errors), arguments that are not JSON, an empty reply, the information left out, a user
who asks again three times, or who never stops (max_steps), or who asks for a human (`###TRANSFER###`).

Position in the conversation is counted in the request: the agent's move is the number of assistant messages after
the first user message carrying a reference; the user's tool calls are its own assistant messages with calls.
Usage: a token per four characters of the request and of the reply.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopback import LoopbackChat

AGENT_SYSTEM = "<instructions>\nYou are a customer service agent"
SCENARIO = re.compile(r"<scenario>\n(.*)\n</scenario>", re.S)
REF = re.compile(r"\(ref ([a-z]+/[^)\s]+)\)")
CONFIRM = "Shall I proceed?"
FINAL = "Is there anything else I can help you with?"
SCENARIOS = (
    ("right",) * 24
    + ("direct", "parallel") * 3
    + ("skip", "alter", "unknown_tool", "wrong_types", "not_json", "missing_info", "chatty") * 2
    + ("too_many_errors", "empty", "never_stop", "transfer")
)
"""Picked by a hash of the task's reference and the trial's seed: half the plans are played right, one in 48 never
ends."""
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Move:
    """One agent reply: calls, text, call arguments that are not JSON (`broken`) or nothing at all (`empty`)."""

    kind: str
    calls: tuple[Call, ...] = ()
    text: str = ""


@dataclass(frozen=True)
class Plan:
    ref: str
    scenario: str
    moves: tuple[Move, ...]
    user_actions: tuple[Call, ...]


@dataclass(frozen=True)
class TaskScript:
    """What the mock knows of a task: its golden actions by requestor and the information to communicate."""

    ref: str
    agent_actions: tuple[Call, ...]
    user_actions: tuple[Call, ...]
    info: tuple[str, ...]


def scenario_of(ref: str, seed: int) -> str:
    digest = hashlib.sha256(f"{ref}/{seed}".encode()).hexdigest()
    return SCENARIOS[int(digest[:12], 16) % len(SCENARIOS)]


def _wrong_types(arguments: dict[str, Any]) -> dict[str, Any]:
    """Each argument as a value of another JSON type."""
    changed: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, bool):
            changed[key] = "yes"
        elif isinstance(value, int | float):
            changed[key] = "many"
        elif isinstance(value, str):
            changed[key] = 12345
        elif isinstance(value, list):
            changed[key] = "all of them"
        else:
            changed[key] = [value]
    return changed or {"unexpected": True}


def _altered(arguments: dict[str, Any]) -> dict[str, Any]:
    for key, value in arguments.items():
        if isinstance(value, str):
            return {**arguments, key: value + "_x"}
        if isinstance(value, int | float) and not isinstance(value, bool):
            return {**arguments, key: value + 1}
    return {**arguments, "bogus": 1}


def _final(info: Sequence[str]) -> str:
    said = "; ".join(info)
    return f"All done: {said}. {FINAL}" if said else f"Your request is handled. {FINAL}"


def plan_for(script: TaskScript, seed: int) -> Plan:
    scenario = scenario_of(script.ref, seed)
    actions = list(script.agent_actions)
    calls = [Move("calls", (call,)) for call in actions]
    final = Move("text", text=_final(script.info))
    middle = len(calls) // 2
    if scenario in ("right", "chatty", "never_stop", "transfer", "missing_info") and len(calls) >= 2:
        calls.insert(len(calls) - 1, Move("text", text=f"I am about to make the change you asked for. {CONFIRM}"))
    if scenario == "parallel" and actions:
        calls = [Move("calls", tuple(actions))]
    elif scenario == "skip" and actions:
        calls = calls[:-1]
    elif scenario == "alter" and actions:
        name, arguments = actions[-1]
        calls[-1] = Move("calls", ((name, _altered(arguments)),))
    elif scenario == "unknown_tool":
        calls.insert(0, Move("calls", (("lookup_everything", {"query": script.ref}),)))
    elif scenario == "wrong_types" and actions:
        name, arguments = actions[0]
        calls.insert(0, Move("calls", ((name, _wrong_types(arguments)),)))
    elif scenario == "too_many_errors":
        bad = [("open_ticket", {"n": n}) for n in range(10)]
        calls = [Move("calls", tuple(bad[i : i + 2])) for i in range(0, 10, 2)] + calls
    elif scenario == "not_json":
        name = actions[middle][0] if actions else "get_user_details"
        calls.insert(middle, Move("broken", ((name, {}),)))
    elif scenario == "empty":
        calls.insert(middle, Move("empty"))
    elif scenario == "missing_info":
        final = Move("text", text=f"Your request is handled. {FINAL}")
    return Plan(script.ref, scenario, (*calls, final), script.user_actions)


def agent_move(plan: Plan, index: int) -> Move:
    """The agent's reply after `index` replies of its own: the plan's, then its last text again and again."""
    return plan.moves[index] if index < len(plan.moves) else plan.moves[-1]


def user_reply(plan: Plan, messages: Sequence[dict[str, Any]]) -> Move:
    """The user's next message, from its side of the conversation (its own messages are `assistant`'s)."""
    own = [m for m in messages if m.get("role") == "assistant"]
    if not own:
        return Move("text", text=f"Hi, I need help with my request (ref {plan.ref}).")
    agent_texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    said = agent_texts[-1] if agent_texts else ""
    done_calls = sum(1 for m in own if m.get("tool_calls"))
    if len(agent_texts) >= 2 and done_calls < len(plan.user_actions):
        name, arguments = plan.user_actions[done_calls]
        return Move("calls", ((name, arguments),))
    if plan.scenario == "transfer" and len(agent_texts) >= 2:
        return Move("text", text="I would rather talk to a person. ###TRANSFER###")
    if CONFIRM in said:
        return Move("text", text="Yes, please go ahead.")
    if FINAL in said:
        asked = sum(FINAL in text for text in agent_texts)
        if plan.scenario == "never_stop" or (plan.scenario == "chatty" and asked <= 3):
            return Move("text", text=f"Sorry, could you go over that once more? ({asked})")
        return Move("text", text="No, that is all. Thank you! ###STOP###")
    return Move("text", text=f"Could you help me with my request (ref {plan.ref}), please?")


def tool_calls(move: Move, prefix: str) -> list[dict[str, Any]]:
    if move.kind == "broken":
        arguments = ['{"broken": ' for _ in move.calls]
    else:
        arguments = [json.dumps(args) for _, args in move.calls]
    return [
        {"id": f"{prefix}_{n}", "type": "function", "function": {"name": name, "arguments": text}}
        for n, ((name, _), text) in enumerate(zip(move.calls, arguments, strict=True))
    ]


def completion(move: Move, model: str, prefix: str, prompt_chars: int) -> dict[str, Any]:
    """A chat completion carrying `move`, with usage."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if move.kind in ("calls", "broken"):
        message["tool_calls"] = tool_calls(move, prefix)
        finish = "tool_calls"
        written = sum(len(c["function"]["arguments"]) + len(c["function"]["name"]) for c in message["tool_calls"])
    else:
        message["content"] = move.text
        finish = "stop"
        written = len(move.text)
    prompt, completion_tokens = prompt_chars // 4 + 1, written // 4 + 1
    digest = hashlib.sha256(f"{prefix}/{prompt_chars}".encode()).hexdigest()[:20]
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens},
    }  # fmt: skip


def load_scripts(data_dir: Path, domains: Iterable[str], split: str = "base") -> tuple[dict[str, TaskScript], dict]:
    """Each task of the domains' split as a script, by reference, and the reference of each user scenario (the
    first task having it)."""
    from tau2.data_model.tasks import Task

    scripts: dict[str, TaskScript] = {}
    by_scenario: dict[str, str] = {}
    for domain in domains:
        folder = data_dir / "domains" / domain
        wanted = set(json.loads((folder / "split_tasks.json").read_text())[split])
        raw = json.loads((folder / "tasks.json").read_text())
        for item in raw.get("tasks", raw) if isinstance(raw, dict) else raw:
            if item["id"] not in wanted:
                continue
            task = Task.model_validate(item)
            ref = f"{domain}/{task.id}"
            criteria = task.evaluation_criteria
            actions = list(criteria.actions or []) if criteria is not None else []
            agent = tuple((a.name, dict(a.arguments)) for a in actions if a.requestor == "assistant")
            user = tuple((a.name, dict(a.arguments)) for a in actions if a.requestor == "user")
            info = tuple(criteria.communicate_info or []) if criteria is not None else ()
            scripts[ref] = TaskScript(ref, agent, user, info)
            by_scenario.setdefault(str(task.user_scenario), ref)
    return scripts, by_scenario


@dataclass
class Counts:
    agent: int = 0
    user: int = 0
    unknown: int = 0
    scenarios: Counter[str] = field(default_factory=Counter)


class TauMock(LoopbackChat):
    """The server: `counts` tells how many requests each side sent since `reset()`."""

    def __init__(self, data_dir: Path, domains: Iterable[str], latency_s: float = 0.0) -> None:
        self.scripts, self.by_scenario = load_scripts(data_dir, domains)
        self.counts = Counts()
        super().__init__(latency_s)

    def reset(self) -> Counts:
        counts, self.counts = self.counts, Counts()
        return counts

    def plan(self, ref: str, seed: int) -> Plan | None:
        script = self.scripts.get(ref)
        return plan_for(script, seed) if script is not None else None

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages") or []
        model = str(body.get("model", "mock"))
        seed = int(body.get("seed") or 0)
        system = str(messages[0].get("content") or "") if messages else ""
        chars = sum(len(json.dumps(m)) for m in messages) + len(json.dumps(body.get("tools") or []))
        if system.startswith(AGENT_SYSTEM):
            return 200, self._agent(messages, seed, model, chars)
        found = SCENARIO.search(system)
        ref = self.by_scenario.get(found.group(1)) if found else None
        plan = self.plan(ref, seed) if ref else None
        if plan is None:
            self.counts.unknown += 1
            return 200, completion(Move("text", text="###STOP###"), model, "unknown", chars)
        self.counts.user += 1
        conversation = messages[1:]
        move = user_reply(plan, conversation)
        calls_made = sum(1 for m in conversation if m.get("role") == "assistant" and m.get("tool_calls"))
        return 200, completion(move, model, f"ucall_{calls_made}", chars)

    def _agent(self, messages: Sequence[dict[str, Any]], seed: int, model: str, chars: int) -> dict[str, Any]:
        start, ref = None, None
        for index, message in enumerate(messages):
            if message.get("role") == "user":
                found = REF.search(str(message.get("content") or ""))
                if found:
                    start, ref = index, found.group(1)
                    break
        plan = self.plan(ref, seed) if ref else None
        if plan is None or start is None:
            self.counts.unknown += 1
            return completion(Move("text", text="Could you give me your reference?"), model, "unknown", chars)
        self.counts.agent += 1
        index = sum(1 for m in messages[start:] if m.get("role") == "assistant")
        if index == 0:
            self.counts.scenarios[plan.scenario] += 1
        return completion(agent_move(plan, index), model, f"call_{index}", chars)
