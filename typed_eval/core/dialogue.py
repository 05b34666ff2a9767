"""A conversation between an agent with tools and a simulated user, on an environment both act on, until one stops.

The loop is the orchestrator of the simulated-user benchmarks, step for step, so the same replies give the same
trajectory: the agent greets first; each step passes one message (the agent's or the user's text to the other, a call
to the environment, the environment's results back to the caller); a user message holding a stop token ends it; after
each step that does not go to the environment, `max_steps` steps or `max_errors` failed calls end it. The agent asks
through the run's `Conversation` (paced, budgeted, its requests the sample's attempts); the user through its own model
(`SimulatedUser`), counted apart.

A reply the loop cannot go on from (call arguments that are not a JSON object, an empty reply after its retries)
ends the conversation as `agent_error` with the reason in `Transcript.failure`: those benchmarks record such a
simulation so when they skip failed samples, and score it 0.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from typed_eval.contracts import Cost, TokenUsage
from typed_eval.core.attempts import added_cost, added_usage
from typed_eval.core.calls import Reply
from typed_eval.core.simulated_user import SimulatedUser
from typed_eval.core.tasks import Conversation

__all__ = [
    "AGENT_GREETING",
    "DialogueFailure",
    "DialogueLimits",
    "Environment",
    "Message",
    "Requestor",
    "Termination",
    "ToolResult",
    "Transcript",
    "converse",
]

AGENT_GREETING = "Hi! How can I help you today?"
"""The agent's first message when a case has no history: the benchmarks', never asked of the model."""

Requestor = Literal["assistant", "user"]
Message = dict[str, Any]
"""One message of a transcript: `{"role": "assistant" | "user", "content": text or None, "tool_calls": [{"id",
"name", "arguments": object}] or None}` or `{"role": "tool", "id", "content", "requestor", "error"}`."""
Termination = Literal["user_stop", "agent_stop", "max_steps", "too_many_errors", "agent_error", "user_error"]


@dataclass(frozen=True)
class ToolResult:
    """What a call gives back: the text the caller is shown, and whether the call failed (it counts to
    `max_errors`)."""

    content: str
    error: bool = False


class Environment(Protocol):
    """What the agent (and the user, in a dual-control domain) act on: its tools per requestor and their calls.
    The scorer reads its final state (a benchmark's own way: a database, a page's model)."""

    def tools(self, requestor: Requestor) -> Sequence[Mapping[str, Any]]:
        """The functions `requestor` may call: `{"name", "description", "parameters"}` each (none: no tools)."""

    def call(self, requestor: Requestor, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call; a failing call is a `ToolResult` with `error=True`. Raise `DialogueFailure` only when the
        environment itself cannot go on."""


@dataclass(frozen=True)
class DialogueLimits:
    """When a conversation stops without a stop token: the benchmarks' defaults."""

    max_steps: int = 200
    max_errors: int = 10
    empty_retries: int = 3
    """An empty reply (no text, no call) is asked again this many times, then the conversation fails."""


@dataclass
class Transcript:
    """A whole conversation: every message in order, why it ended, and what the simulated user cost."""

    messages: list[Message]
    termination: Termination
    failure: str | None = None
    """Why the loop could not go on (`agent_error`), as a skipped simulation says."""
    steps: int = 0
    errors: int = 0
    user_usage: TokenUsage = field(default_factory=TokenUsage)
    user_cost: Cost = field(default_factory=lambda: Cost(usd=0.0, source="local"))

    def dump(self) -> dict[str, Any]:
        """As a record's output stores it."""
        return {
            "messages": self.messages,
            "termination_reason": self.termination,
            "failure": self.failure,
            "steps": self.steps,
            "errors": self.errors,
            "user_usage": self.user_usage.model_dump(mode="json"),
            "user_cost": self.user_cost.model_dump(mode="json"),
        }


class DialogueFailure(Exception):
    """A reply the loop cannot go on from, or an environment that cannot (raised by its `call`): the conversation
    ends as `agent_error` with this reason."""


@dataclass
class _Dialogue:
    conversation: Conversation
    environment: Environment
    user: SimulatedUser
    policy: str
    scenario: str
    limits: DialogueLimits
    seed: int | None
    trajectory: list[Message] = field(default_factory=list)
    agent_view: list[Message] = field(default_factory=list)
    user_view: list[Message] = field(default_factory=list)
    user_usage: TokenUsage = field(default_factory=TokenUsage)
    user_cost: Cost = field(default_factory=lambda: Cost(usd=0.0, source="local"))

    async def agent_message(self) -> Message:
        functions = self.environment.tools("assistant")
        sent = [{"role": "system", "content": self.policy}, *map(_agent_side, self.agent_view)]
        reply = await self._asked(lambda: self.conversation.exchange(sent, functions, seed=self.seed))
        return _message("assistant", reply, "the agent")

    async def user_message(self) -> Message:
        functions = self.environment.tools("user")
        sent = [{"role": "system", "content": self.scenario}, *map(_user_side, self.user_view)]

        async def ask() -> Reply:
            turn = await self.user.reply(sent, functions, seed=self.seed)
            self.user_usage = added_usage(self.user_usage, turn.usage)
            self.user_cost = added_cost(self.user_cost, turn.cost)
            return turn.reply

        reply = await self._asked(ask)
        return _message("user", reply, "the user")

    async def _asked(self, ask: Callable[[], Awaitable[Reply]]) -> Reply:
        """An empty reply (no text, no call) is asked again, `empty_retries` times."""
        reply: Reply = await ask()
        for _ in range(self.limits.empty_retries):
            if reply.calls or reply.text.strip():
                break
            reply = await ask()
        return reply


def _message(role: Requestor, reply: Reply, who: str) -> Message:
    """A reply as a transcript message; its calls' arguments decoded (a reply with a call whose arguments are not a
    JSON object, or with neither text nor call, cannot go on)."""
    calls = []
    for call in reply.calls:
        try:
            arguments = json.loads(call.arguments)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            arguments = None
        if not isinstance(arguments, dict):
            shown = call.arguments if len(call.arguments) <= 200 else call.arguments[:200] + "..."
            raise DialogueFailure(f"{who} called {call.name[:80]!r} with arguments that are not a JSON object: {shown}")
        calls.append({"id": call.id, "name": call.name, "arguments": arguments})
    if not calls and not reply.text.strip():
        raise DialogueFailure(f"{who} sent an empty message")
    return {"role": role, "content": reply.text or None, "tool_calls": calls or None}


def _calls_as_sent(message: Message) -> list[dict[str, Any]]:
    return [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for c in message["tool_calls"] or ()
    ]


def _agent_side(message: Message) -> Message:
    """A message as the agent's request holds it (OpenAI's chat format, arguments re-encoded as JSON)."""
    if message["role"] == "tool":
        return {"role": "tool", "tool_call_id": message["id"], "content": message["content"]}
    if message["role"] == "user":
        return {"role": "user", "content": message["content"]}
    sent: Message = {"role": "assistant", "content": message["content"]}
    if message["tool_calls"]:
        sent["tool_calls"] = _calls_as_sent(message)
    return sent


def _user_side(message: Message) -> Message:
    """A message as the user's request holds it: roles flipped (the user's own messages are the `assistant`'s)."""
    if message["role"] == "tool":
        return {"role": "tool", "tool_call_id": message["id"], "content": message["content"]}
    if message["role"] == "assistant":
        return {"role": "user", "content": message["content"]}
    sent: Message = {"role": "assistant", "content": message["content"]}
    if message["tool_calls"]:
        sent["tool_calls"] = _calls_as_sent(message)
    return sent


def _for_agent(message: Message) -> bool:
    """Whether a history message is in the agent's view: its own, the user's texts, its calls' results."""
    if message["role"] == "user":
        return not message["tool_calls"]
    return bool(message["role"] == "assistant" or message["requestor"] == "assistant")


def _for_user(message: Message) -> bool:
    """Whether a history message is in the user's view: its own, the agent's texts, its calls' results."""
    if message["role"] == "assistant":
        return not message["tool_calls"]
    return bool(message["role"] == "user" or message["requestor"] == "user")


async def converse(
    conversation: Conversation,
    environment: Environment,
    user: SimulatedUser,
    *,
    policy: str,
    scenario: str,
    history: Sequence[Message] = (),
    limits: DialogueLimits | None = None,
    seed: int | None = None,
) -> Transcript:
    """Play a conversation to its end: the agent's system prompt is `policy`, the user's `scenario`; `history` is a
    conversation to go on from (its last message says who speaks next), else the agent greets. Each request carries
    `seed` (the trial's). A failed request raises, as the run's requests do."""
    dialogue = _Dialogue(conversation, environment, user, policy, scenario, limits or DialogueLimits(), seed)
    state = _start(dialogue, [dict(m) for m in history])
    try:
        while not state.done:
            await _step(dialogue, state)
            if state.to == "env":
                continue
            if state.steps >= dialogue.limits.max_steps:
                state.done, state.termination = True, "max_steps"
            if state.errors >= dialogue.limits.max_errors:
                state.done, state.termination = True, "too_many_errors"
    except DialogueFailure as failure:
        state.termination, state.failure = "agent_error", str(failure)
    return Transcript(
        dialogue.trajectory,
        state.termination or "agent_error",
        state.failure,
        state.steps,
        state.errors,
        dialogue.user_usage,
        dialogue.user_cost,
    )


@dataclass
class _State:
    sender: str
    to: str
    message: Message | list[Message]
    done: bool = False
    termination: Termination | None = None
    failure: str | None = None
    steps: int = 0
    errors: int = 0


def _start(dialogue: _Dialogue, history: list[Message]) -> _State:
    """Where the conversation starts: after the greeting, or after the history's last message."""
    if not history:
        greeting: Message = {"role": "assistant", "content": AGENT_GREETING, "tool_calls": None}
        dialogue.trajectory.append(greeting)
        dialogue.agent_view.append(greeting)
        return _State("agent", "user", greeting)
    last = history[-1]
    dialogue.trajectory.extend(history)
    earlier = history[:-1]
    if last["role"] == "assistant":
        dialogue.agent_view.extend(m for m in history if _for_agent(m))
        dialogue.user_view.extend(m for m in earlier if _for_user(m))
        to = "env" if last["tool_calls"] else "user"
        return _State("agent", to, last)
    if last["role"] == "user":
        dialogue.user_view.extend(m for m in history if _for_user(m))
        dialogue.agent_view.extend(m for m in earlier if _for_agent(m))
        to = "env" if last["tool_calls"] else "agent"
        stopped = not last["tool_calls"] and dialogue.user.is_stop(last["content"])
        return _State("user", to, last, done=stopped, termination="user_stop" if stopped else None)
    if last["requestor"] == "assistant":
        dialogue.agent_view.extend(m for m in earlier if _for_agent(m))
        dialogue.user_view.extend(m for m in history if _for_user(m))
        return _State("env", "agent", last)
    dialogue.agent_view.extend(m for m in history if _for_agent(m))
    dialogue.user_view.extend(m for m in earlier if _for_user(m))
    return _State("env", "user", last)


async def _step(dialogue: _Dialogue, state: _State) -> None:
    """One step: the message goes to its receiver, whose answer is the next one."""
    if state.to == "user":
        _received(dialogue.user_view, state.message)
        message = await dialogue.user_message()
        if not message["tool_calls"] and dialogue.user.is_stop(message["content"]):
            state.done, state.termination = True, "user_stop"
        dialogue.user_view.append(message)
        state.sender, state.to = "user", "env" if message["tool_calls"] else "agent"
    elif state.to == "agent":
        _received(dialogue.agent_view, state.message)
        message = await dialogue.agent_message()
        dialogue.agent_view.append(message)
        state.sender, state.to = "agent", "env" if message["tool_calls"] else "user"
    else:
        assert isinstance(state.message, dict)
        requestor: Requestor = "assistant" if state.sender == "agent" else "user"
        results = []
        for call in state.message["tool_calls"]:
            result = dialogue.environment.call(requestor, call["id"], call["name"], call["arguments"])
            state.errors += result.error
            results.append(
                {"role": "tool", "id": call["id"], "content": result.content, "requestor": requestor,
                 "error": result.error}
            )  # fmt: skip
        dialogue.trajectory.extend(results)
        state.message = results
        state.sender, state.to = "env", state.sender
        state.steps += 1
        return
    dialogue.trajectory.append(message)
    state.message = message
    state.steps += 1


def _received(view: list[Message], message: Message | list[Message]) -> None:
    """What a participant is sent joins its view of the conversation (results of several calls, each)."""
    if isinstance(message, list):
        view.extend(message)
    else:
        view.append(message)
