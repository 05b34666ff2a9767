"""Scripted replies of a model playing BFCL's multi-turn cases, for the loopback mock (`bfcl_mock.MockServer`).

A request is placed by what every client sends alike: the case by its first user message and the functions offered
(the tools in function calling, the JSON list ending the system prompt in prompt mode, which keeps the first turn's
functions), and the position by counting in the history the user turns (a prompt-mode message of execution results
is not one) and the assistant replies since the last turn. Cases that share a first message and functions (a
long_context case and its base case) get the first one's plan, in BFCL's order. So the same conversation gets the
same reply whoever asks, through chat completions or the Responses API.

The plan of a case comes from its ground truth, one call per step, then a text reply ending the turn, and is
perturbed by a scenario picked by a hash of the case's id: a call skipped, a wrong value, a call repeated, text
where calls are needed, all the turn's calls in one step, arguments that are not JSON, an unknown function, an
extra argument, more than 20 steps in a turn, acting on a miss_param turn, a held-out function called before it is
offered, a value that is not finite; a third of the cases are played right.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bfcl_mock import Reply, prompt_function_names, tool_names

from typed_eval.suites.bfcl.multi_turn.backend import signatures
from typed_eval.suites.bfcl.multi_turn.cases import MultiTurnCase

RESULTS_PREFIX = "[{'role': 'tool'"
"""How BFCL's prompting handlers start the user message that carries execution results."""
FUNCTIONS_ADDED = "I have updated some more functions you can choose from. What about now?"
"""How BFCL's user message at a miss_func hold-out turn ends (after the added docs in prompt mode)."""
DONE = "Done."
SCENARIOS = ("right",) * 6 + (
    "parallel",
    "skip",
    "wrong_value",
    "repeat",
    "text",
    "not_json",
    "unknown_function",
    "extra_argument",
    "force_terminated",
    "act_on_miss_param",
    "held_out_early",
    "not_finite",
)
Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Broken:
    """A step whose one call, of this function, has arguments that are not JSON (a bracket short in prompt mode)."""

    name: str


@dataclass(frozen=True)
class Plan:
    """What the scripted model does in one case: per turn, per step, the calls it makes (or a broken one)."""

    case_id: str
    scenario: str
    steps: list[list[list[Call] | Broken]]
    offered: list[frozenset[str]]
    """The names of the functions offered at each turn (miss_func adds the held-out ones at their turn)."""
    held_out_turns: frozenset[int]
    texts: tuple[str | None, ...]
    """Each turn's first user message (None at a hold-out turn, where BFCL writes its own)."""


def parse_call(source: str, sigs: dict[str, Any]) -> Call:
    """A ground-truth call (`cd(folder='document')`) as name and arguments by parameter name (BFCL's data, read
    with literal_eval: never run)."""
    node = ast.parse(source, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call: {source}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    return node.func.id, dict(sigs[node.func.id].bind(*args, **kwargs).arguments)


def scenario_of(case_id: str) -> str:
    return SCENARIOS[int(hashlib.sha256(case_id.encode()).hexdigest()[:12], 16) % len(SCENARIOS)]


def plan_for(case: MultiTurnCase, sigs: dict[str, Any], scenario: str) -> Plan:
    truth = [[parse_call(source, sigs) for source in turn] for turn in case.ground_truth]
    steps: list[list[list[Call] | Broken]] = [[[call] for call in turn] for turn in truth]
    offered = [frozenset(doc["name"] for doc in case.functions)]
    for turn in range(1, len(case.turns)):
        offered.append(offered[-1] | {doc["name"] for doc in case.held_out.get(turn, [])})
    first = next((i for i, calls in enumerate(truth) if calls), None)
    if first is not None:
        _perturb(steps, truth, first, case, scenario)
    texts = tuple(turn[0]["content"] if turn else None for turn in case.turns)
    return Plan(case.id, scenario, steps, offered, frozenset(case.held_out), texts)


def _perturb(steps: list[list[Any]], truth: list[list[Call]], first: int, case: MultiTurnCase, scenario: str) -> None:
    name, args = truth[first][0]
    if scenario == "parallel":
        steps[:] = [[list(calls)] if calls else [] for calls in truth]
    elif scenario == "skip":
        steps[first] = steps[first][:-1]
    elif scenario == "wrong_value":
        steps[first][0] = [(name, _changed(args))]
    elif scenario == "repeat":
        steps[first].insert(0, steps[first][0])
    elif scenario == "text":
        steps[first] = []
    elif scenario == "not_json":
        steps[first][0] = Broken(name)
    elif scenario == "unknown_function":
        steps[first].insert(0, [("undefined_function", {"x": 1})])
    elif scenario == "extra_argument":
        steps[first][0] = [(name, {**args, "bogus": 1})]
    elif scenario == "force_terminated":
        steps[first] = [steps[first][0]] * 21 + steps[first]
    elif scenario == "act_on_miss_param":
        for index, calls in enumerate(truth):
            if not calls and index > 0 and truth[index - 1]:
                steps[index] = [[truth[index - 1][-1]]]
    elif scenario == "held_out_early":
        held = {doc["name"] for docs in case.held_out.values() for doc in docs}
        early = [call for calls in truth for call in calls if call[0] in held]
        if early:
            steps[first].insert(0, [early[0]])
    elif scenario == "not_finite":
        steps[first].insert(0, [(name, {**args, "value": float("inf")})])


def _changed(args: dict[str, Any]) -> dict[str, Any]:
    for key, value in args.items():
        if isinstance(value, str):
            return {**args, key: value + "_x"}
        if isinstance(value, int | float) and not isinstance(value, bool):
            return {**args, key: value + 1}
    return {**args, "bogus": 1}


@dataclass(frozen=True)
class Position:
    users: tuple[str, ...]
    """Each turn's first user message so far."""
    turn: int
    step: int
    """Assistant replies since the turn began."""
    functions_added: bool
    """Whether BFCL's miss_func message has come."""


def position(messages: Sequence[Any]) -> Position:
    users: list[str] = []
    turn, step, in_turn, added = -1, 0, False, False
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if role == "user" and not (isinstance(content, str) and content.startswith(RESULTS_PREFIX)):
            added = added or (isinstance(content, str) and content.endswith(FUNCTIONS_ADDED))
            if not in_turn:
                turn, step, in_turn = turn + 1, 0, True
                users.append(content if isinstance(content, str) else json.dumps(content))
            continue
        in_turn = False
        if role == "assistant":
            step += 1
    return Position(tuple(users), turn, step, added)


class MultiTurnReplies:
    """The scripted model over every case given: `reply(body)` for the mock server."""

    def __init__(self, cases: Iterable[MultiTurnCase]) -> None:
        self.plans: dict[str, list[Plan]] = {}
        sigs: dict[tuple[str, ...], dict[str, Any]] = {}
        for case in cases:
            classes = tuple(case.involved_classes)
            if classes not in sigs:
                sigs[classes] = signatures(list(classes))
            first = case.turns[0][0]["content"]
            self.plans.setdefault(first, []).append(plan_for(case, sigs[classes], scenario_of(case.id)))

    def find(self, at: Position, names: frozenset[str], calling: bool) -> Plan | None:
        """The first case (in BFCL's order) with this first message whose user messages so far, functions offered
        and functions held out until now fit the request's."""
        candidates = self.plans.get(at.users[0] if at.users else "", [])
        turn = max(at.turn, 0)
        for plan in candidates:
            offered = plan.offered[min(turn, len(plan.offered) - 1)] if calling else plan.offered[0]
            added = any(held <= turn for held in plan.held_out_turns)
            said = all(text is None or text == user for text, user in zip(plan.texts, at.users, strict=False))
            if said and {name.replace(".", "_") for name in offered} == names and added == at.functions_added:
                return plan
        return candidates[0] if candidates else None

    def reply(self, body: dict[str, Any]) -> tuple[str, Reply | None]:
        messages = body.get("messages") or body.get("input") or []
        tools = body.get("tools")
        calling = bool(tools)
        names = tool_names(tools) if tools else prompt_function_names(messages)
        at = position(messages)
        plan = self.find(at, frozenset(name.replace(".", "_") for name in names), calling)
        if plan is None:
            return "?", None
        return f"{plan.case_id}/{at.turn}/{at.step}", step_reply(plan, at.turn, at.step, calling)


def step_reply(plan: Plan, turn: int, step: int, calling: bool) -> Reply:
    steps = plan.steps[turn] if 0 <= turn < len(plan.steps) else []
    if step >= len(steps):
        return Reply(plan.scenario, None, DONE)
    planned = steps[step]
    ids = tuple(f"call_{turn}_{step}_{n}" for n in range(len(planned) if isinstance(planned, list) else 1))
    if isinstance(planned, Broken):
        if calling:
            return Reply(plan.scenario, ((planned.name, '{"broken": '),), None, ids)
        return Reply(plan.scenario, None, f"[{planned.name}(x=]")
    if calling:
        calls = tuple((name, json.dumps(args)) for name, args in planned)
        return Reply(plan.scenario, calls, None, ids)
    texts = [f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in planned]
    return Reply(plan.scenario, None, f"[{', '.join(texts)}]")
