"""The conversation loop (`evaluator.converse`): τ-bench's orchestrator played between an agent under test, asked
through the run's conversation, and a simulated user on its own model, on an environment both act on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import evaluator
from evaluator import Case, SimulatedUser, Task, ToolResult
from typed_eval.core.dialogue import DialogueLimits

LAMP = {"name": "switch", "description": "Switches the lamp.", "parameters": {"type": "object", "properties": {
    "on": {"type": "boolean"}}}}  # fmt: skip
PHONE = {"name": "reboot", "description": "Reboots the phone.", "parameters": {"type": "object", "properties": {}}}


class Room:
    """A lamp the agent switches, a phone the user reboots; an unknown call is an error result."""

    def __init__(self) -> None:
        self.lamp, self.reboots, self.calls = False, 0, 0

    def tools(self, requestor: str) -> list[dict[str, Any]]:
        return [LAMP] if requestor == "assistant" else [PHONE]

    def call(self, requestor: str, call_id: str, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls += 1
        if requestor == "assistant" and name == "switch":
            self.lamp = bool(arguments.get("on"))
            return ToolResult(json.dumps({"lamp": self.lamp}))
        if requestor == "user" and name == "reboot":
            self.reboots += 1
            return ToolResult("rebooted")
        return ToolResult(f"Error: Tool '{name}' not found.", error=True)


def text(content: str, tokens: int = 3) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content)], usage=RequestUsage(input_tokens=10, output_tokens=tokens))


def call(name: str, arguments: str, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=call_id)],
                         usage=RequestUsage(input_tokens=10, output_tokens=5))  # fmt: skip


def played(
    agent: Any, user: Any, room: Room, *, limits: DialogueLimits | None = None, repeats: int = 1,
    history: list[dict[str, Any]] | None = None,
) -> evaluator.EvaluationResult:  # fmt: skip
    simulated = SimulatedUser(FunctionModel(user), "scripted-user")

    async def session(case: Case, conversation: Any) -> dict[str, Any]:
        transcript = await evaluator.converse(
            conversation, room, simulated, policy="POLICY", scenario="SCENARIO", limits=limits,
            seed=1000 + conversation.repeat, history=history or (),
        )  # fmt: skip
        return {"lamp": room.lamp, **transcript.dump()}

    task: Task[Any] = Task(name="room", output_type=dict[str, Any], score=lambda c, out: float(out["lamp"]),
                           session=session)  # fmt: skip
    return asyncio.run(evaluator.evaluate(task, [Case(id="r", prompt="light")], FunctionModel(agent),
                                          repeats=repeats, concurrency=1))  # fmt: skip


def system_of(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest) and isinstance(first.parts[0], SystemPromptPart)
    return first.parts[0].content


def test_a_conversation_runs_until_the_user_stops_and_each_side_sees_its_own_view() -> None:
    room = Room()
    agent_seen: list[tuple[list[ModelMessage], list[str], Any]] = []
    user_seen: list[tuple[list[ModelMessage], list[str], Any]] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        agent_seen.append((messages, [t.name for t in info.function_tools], info.model_settings))
        if len(agent_seen) == 1:
            return call("switch", '{"on":true}', "a1")
        return text("The lamp is on.")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        user_seen.append((messages, [t.name for t in info.function_tools], info.model_settings))
        return text("Turn the lamp on, please." if len(user_seen) == 1 else "Thanks! ###STOP###", tokens=7)

    result = played(agent, user, room)
    record = result.records[0]
    assert record.status == "correct" and record.score == 1.0
    output = record.output
    assert output["messages"] == [
        {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None},
        {"role": "user", "content": "Turn the lamp on, please.", "tool_calls": None},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "a1", "name": "switch", "arguments": {"on": True}}],
        },
        {"role": "tool", "id": "a1", "content": '{"lamp": true}', "requestor": "assistant", "error": False},
        {"role": "assistant", "content": "The lamp is on.", "tool_calls": None},
        {"role": "user", "content": "Thanks! ###STOP###", "tool_calls": None},
    ]
    assert output["termination_reason"] == "user_stop" and output["failure"] is None
    assert (output["steps"], output["errors"]) == (5, 0)
    # the agent: the policy as its system prompt, its tools, the conversation as sent (arguments re-encoded)
    assert [system_of(m) for m, _, _ in agent_seen] == ["POLICY", "POLICY"]
    assert [tools for _, tools, _ in agent_seen] == [["switch"], ["switch"]]
    last = agent_seen[1][0]
    assert [type(m).__name__ for m in last] == ["ModelRequest", "ModelResponse", "ModelRequest", "ModelResponse",
                                               "ModelRequest"]  # fmt: skip
    sent_call = last[3].parts[0]
    assert isinstance(sent_call, ToolCallPart) and sent_call.args == '{"on": true}'
    # the user: the scenario as its system prompt, its own tools, the agent's texts as the user's, its own as replies
    assert [system_of(m) for m, _, _ in user_seen] == ["SCENARIO", "SCENARIO"]
    assert [tools for _, tools, _ in user_seen] == [["reboot"], ["reboot"]]
    second = user_seen[1][0]
    assert [type(m).__name__ for m in second] == ["ModelRequest", "ModelResponse", "ModelRequest"]
    assert [getattr(p, "content", None) for m in second for p in m.parts] == [
        "SCENARIO", "Hi! How can I help you today?", "Turn the lamp on, please.", "The lamp is on."]  # fmt: skip
    # both sides sample with the trial's seed
    assert [s["seed"] for _, _, s in agent_seen + user_seen] == [1000] * 4
    # the record counts the agent's requests; the user's are counted apart
    assert record.usage.requests == 2 and (record.usage.input_tokens, record.usage.output_tokens) == (20, 8)
    assert output["user_usage"]["requests"] == 2 and output["user_usage"]["output_tokens"] == 14
    assert [a.raw for a in record.attempts] == ['[{"id": "a1", "name": "switch", "arguments": "{\\"on\\":true}"}]',
                                              "The lamp is on."]  # fmt: skip


def test_each_trial_samples_with_its_own_seed() -> None:
    seeds: list[int] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seeds.append(info.model_settings["seed"] if info.model_settings else -1)
        return text("ok")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("###STOP###" if len(messages) > 2 else "hello")

    result = played(agent, user, Room(), repeats=3)
    assert sorted(seeds) == [1000, 1001, 1002]
    assert sorted(r.repeat for r in result.records) == [0, 1, 2]


def test_a_user_that_never_stops_is_stopped_at_max_steps() -> None:
    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Anything else?")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Tell me more.")

    result = played(agent, user, Room(), limits=DialogueLimits(max_steps=7))
    output = result.records[0].output
    assert output["termination_reason"] == "max_steps" and output["steps"] == 7
    assert len(output["messages"]) == 8  # the greeting and seven replies
    assert result.records[0].usage.requests == 3 and output["user_usage"]["requests"] == 4


def test_failed_calls_stop_the_conversation_at_max_errors_once_their_results_are_back() -> None:
    room = Room()

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        count = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[ToolCallPart("explode", "{}", tool_call_id=f"x{count}a"),
                                    ToolCallPart("explode", "{}", tool_call_id=f"x{count}b")])  # fmt: skip

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Please fix it.")

    output = played(agent, user, room, limits=DialogueLimits(max_errors=3)).records[0].output
    assert output["termination_reason"] == "too_many_errors" and output["errors"] == 4
    assert [m["content"] for m in output["messages"] if m["role"] == "tool"] == ["Error: Tool 'explode' not found."] * 4
    assert room.calls == 4


def test_arguments_that_are_not_an_object_end_the_conversation_as_an_agent_error() -> None:
    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return call("switch", "[1, 2]", "a1")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Lamp on.")

    record = played(agent, user, Room()).records[0]
    output = record.output
    assert output["termination_reason"] == "agent_error"
    assert output["failure"] == "the agent called 'switch' with arguments that are not a JSON object: [1, 2]"
    assert [m["role"] for m in output["messages"]] == ["assistant", "user"]  # kept up to the failed reply
    assert record.score == 0.0


def test_an_empty_reply_is_asked_again_three_times_then_ends_the_conversation() -> None:
    asked: list[int] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append(1)
        return text("   ")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Hello?")

    output = played(agent, user, Room()).records[0].output
    assert len(asked) == 4
    assert (output["termination_reason"], output["failure"]) == ("agent_error", "the agent sent an empty message")


def test_the_user_acts_on_its_own_tools_and_sees_their_results() -> None:
    room = Room()
    user_seen: list[list[ModelMessage]] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Please reboot your phone.")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        user_seen.append(messages)
        if len(user_seen) == 1:
            return text("My phone is broken.")
        if len(user_seen) == 2:
            return call("reboot", "{}", "u1")
        return text("It works. ###STOP###")

    output = played(agent, user, room).records[0].output
    assert room.reboots == 1
    assert [m["role"] for m in output["messages"]] == ["assistant", "user", "assistant", "user", "tool", "user"]
    assert output["messages"][4] == {"role": "tool", "id": "u1", "content": "rebooted", "requestor": "user",
                                     "error": False}  # fmt: skip
    assert output["termination_reason"] == "user_stop" and output["steps"] == 5
    last = user_seen[-1]
    assert isinstance(last[-1], ModelRequest) and last[-1].parts[0].content == "rebooted"


def test_a_conversation_goes_on_from_a_history_whose_last_message_says_who_speaks() -> None:
    agent_seen: list[list[ModelMessage]] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        agent_seen.append(messages)
        return text("Done.")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("###STOP###")

    history = [
        {"role": "user", "content": "Earlier question", "tool_calls": None},
        {"role": "assistant", "content": "Earlier answer", "tool_calls": None},
        {"role": "user", "content": "Now switch it on", "tool_calls": None},
    ]
    output = played(agent, user, Room(), history=history).records[0].output
    assert [m["content"] for m in output["messages"]] == [
        "Earlier question", "Earlier answer", "Now switch it on", "Done.", "###STOP###"]  # fmt: skip
    contents = [getattr(p, "content", None) for m in agent_seen[0] for p in m.parts]
    assert contents == ["POLICY", "Earlier question", "Earlier answer", "Now switch it on"]


def test_a_user_stop_on_the_last_allowed_step_ends_as_max_steps_and_both_limits_as_too_many_errors() -> None:
    """After each step the limits are checked in τ-bench's order, whatever ended it: steps, then errors."""

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Anything else?")

    def stops_third(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("###STOP###" if len(messages) >= 5 else "More.")

    stopped = played(agent, stops_third, Room(), limits=DialogueLimits(max_steps=5)).records[0].output
    assert (stopped["termination_reason"], stopped["steps"]) == ("max_steps", 5)
    assert stopped["messages"][-1]["content"] == "###STOP###"

    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return call("explode", "{}", f"x{len(messages)}")

    both = played(failing, stops_third, Room(), limits=DialogueLimits(max_steps=3, max_errors=1)).records[0].output
    assert (both["termination_reason"], both["steps"], both["errors"]) == ("too_many_errors", 3, 1)


def test_a_history_ending_in_the_users_own_call_result_goes_back_to_the_user() -> None:
    room = Room()
    user_seen: list[list[ModelMessage]] = []

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text("Glad it works.")

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        user_seen.append(messages)
        return text("It works. ###STOP###" if len(user_seen) > 1 else "Rebooted, still broken?")

    history = [
        {"role": "assistant", "content": "Please reboot.", "tool_calls": None},
        {"role": "user", "content": None, "tool_calls": [{"id": "u0", "name": "reboot", "arguments": {}}]},
        {"role": "tool", "id": "u0", "content": "rebooted", "requestor": "user", "error": False},
    ]
    output = played(agent, user, room, history=history).records[0].output
    assert [getattr(p, "content", None) for m in user_seen[0] for p in m.parts] == [
        "SCENARIO", "Please reboot.", None, "rebooted"]  # fmt: skip
    assert output["termination_reason"] == "user_stop"
    assert [m["content"] for m in output["messages"][3:]] == [
        "Rebooted, still broken?", "Glad it works.", "It works. ###STOP###"]  # fmt: skip
