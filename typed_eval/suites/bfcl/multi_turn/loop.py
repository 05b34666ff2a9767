"""A multi-turn case played as BFCL's handlers play it (`inference_multi_turn_FC` / `_prompting`), so that the same
replies give the same trajectory.

No system prompt of ours: one growing message list per case; each turn's user messages appended as they are (at a
miss_func hold-out turn, the held-out functions join the offered ones and the user message is BFCL's); then one
request per step with the whole history. A reply is echoed as the assistant message; if it decodes to calls, each is
run in order on the case's backends and its result appended (function calling: one tool message per call; prompt:
one user message holding the `repr` of the results, as BFCL formats them); a reply that decodes to no call, or not
at all, ends the turn. After more than `MAX_STEPS` steps with calls in one turn the case stops (force-terminated).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any, Literal

from typed_eval.core.calls import Reply
from typed_eval.core.tasks import Conversation
from typed_eval.suites.bfcl.multi_turn.backend_pool import CaseLease
from typed_eval.suites.bfcl.multi_turn.cases import MultiTurnCase
from typed_eval.suites.bfcl.multi_turn.decoded_calls import StepDecoding, decode_fc_step, decode_prompt_step
from typed_eval.suites.bfcl.prompting import prompt_messages
from typed_eval.suites.bfcl.tools import hinted_functions, json_schema_properties, tool_name

__all__ = ["HOLD_OUT_MESSAGE", "MAX_STEPS", "fc_function", "play"]

MAX_STEPS = 20
"""BFCL's MAXIMUM_STEP_LIMIT: a turn stops the case once its step count passes it (the 21st step with calls)."""
HOLD_OUT_MESSAGE = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user message at a miss_func hold-out turn (DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC); in prompt mode
it follows the `str` of the held-out docs and a newline."""

Mode = Literal["tool", "text"]


def fc_function(doc: dict[str, Any]) -> dict[str, Any]:
    """A doc as BFCL's `convert_to_tool` makes it a function (its types mapped to JSON schema), the doc unchanged."""
    converted = copy.deepcopy(doc)
    converted["name"] = tool_name(converted["name"])
    converted["parameters"]["type"] = "object"
    converted["parameters"]["properties"] = json_schema_properties(converted["parameters"]["properties"])
    return converted


async def play(
    case: MultiTurnCase, conversation: Conversation, backends: CaseLease, mode: Mode, *, offered_only: bool = True
) -> dict[str, Any]:
    """The case's trajectory: per turn, per step, the reply (its latency; its tokens and cost are the sample's
    attempt of the same rank), its calls, and each call's result.

    `offered_only`: a call resolves only among the functions offered so far (a held-out one only from its turn on);
    False: among all the case's functions, as BFCL's executor resolves it (every method of the involved classes)."""
    messages: list[dict[str, Any]] = []
    functions = [fc_function(doc) for doc in hinted_functions(case.functions, case.category)]
    offered = [doc["name"] for doc in case.functions]
    if not offered_only:
        offered += [doc["name"] for docs in case.held_out.values() for doc in docs]
    turns: list[dict[str, Any]] = []
    for index, turn in enumerate(case.turns):
        user = [dict(message) for message in turn]
        if index in case.held_out:
            held = case.held_out[index]
            functions += [fc_function(doc) for doc in held]  # without the hint, as BFCL adds them
            offered += [doc["name"] for doc in held if doc["name"] not in offered]
            text = HOLD_OUT_MESSAGE if mode == "tool" else f"{held!s}\n{HOLD_OUT_MESSAGE}"
            user = [{"role": "user", "content": text}]
        if index == 0 and mode == "text":
            user = prompt_messages(user, case.functions, case.category)
        messages += user
        tools = functions if mode == "tool" else []
        steps, ended = await play_turn(conversation, messages, tools, offered, backends, mode)
        turns.append({"steps": steps, "ended": ended})
        if ended == "force_terminated":
            break
    return {"mode": mode, "turns": turns}


async def play_turn(
    conversation: Conversation,
    messages: list[dict[str, Any]],
    functions: Sequence[dict[str, Any]],
    offered: list[str],
    backends: CaseLease,
    mode: Mode,
) -> tuple[list[dict[str, Any]], str]:
    """One turn's steps, and why it ended: `text` (no call), `undecodable` (calls BFCL cannot decode: the turn ends
    without running any), or `force_terminated`."""
    steps: list[dict[str, Any]] = []
    while True:
        started = time.perf_counter()
        reply = await conversation.exchange(list(messages), functions)
        messages.append(echo(reply, mode))
        decoding = decode(reply, mode)
        step: dict[str, Any] = {"reply": reply.text, "latency_s": round(time.perf_counter() - started, 3)}
        if mode == "tool":
            step["calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls]
        steps.append(step)
        if decoding.error is not None and mode == "tool" and not reply.calls:
            return steps, "text"  # BFCL fails to decode a text as calls, and ends the turn
        if decoding.error is not None:
            step["decode_error"] = decoding.error
            return steps, "undecodable"
        if not decoding.calls:
            return steps, "text"
        results = await backends.run(list(decoding.calls), offered)
        ran = list(zip(decoding.calls, results, strict=True))
        step["executed"] = [{"call": call, "result": text, "run": plain} for call, (text, plain) in ran]
        if mode == "tool":
            messages += [
                {"role": "tool", "tool_call_id": call.id, "content": text}
                for call, (text, _) in zip(reply.calls, results, strict=True)
            ]
        else:
            shown = [{"role": "tool", "name": call, "content": text} for call, (text, _) in ran]
            messages.append({"role": "user", "content": repr(shown)})  # BFCL's format_execution_results_prompting
        if len(steps) > MAX_STEPS:
            return steps, "force_terminated"


def echo(reply: Reply, mode: Mode) -> dict[str, Any]:
    """The reply as the assistant message BFCL appends to the history (its text, its calls unchanged)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if mode == "tool" and reply.calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
            for call in reply.calls
        ]
    return message


def decode(reply: Reply, mode: Mode) -> StepDecoding:
    """The reply's calls as BFCL's `decode_execute` gives them."""
    if mode == "tool":
        return decode_fc_step([(call.name, call.arguments) for call in reply.calls], reply.text)
    return decode_prompt_step(reply.text)
