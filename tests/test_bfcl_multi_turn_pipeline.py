"""The scripted model of the multi-turn comparison with BFCL's pipeline (benchmarks/bfcl_multi_turn.py): a request is
placed in its case, turn and step from what every client sends alike, so the same conversation gets the same reply
through chat completions or the Responses API, and a miss_func conversation is told from its base case's."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from typed_eval.suites.bfcl.multi_turn.cases import CATEGORIES, MultiTurnCase, load_multi_turn
from typed_eval.suites.bfcl.multi_turn.loop import HOLD_OUT_MESSAGE, fc_function
from typed_eval.suites.bfcl.prompting import system_prompt

sys.path.insert(0, str(REPO / "benchmarks"))
from bfcl_compare import Verdict, read_bfcl
from bfcl_mock import MockServer, Reply, chat_completion, response
from bfcl_multi_turn_mock import MultiTurnReplies, position

CASES = {case.id: case for case in load_multi_turn(list(CATEGORIES), "sample").cases}


@pytest.fixture(scope="module")
def replies() -> Iterator[MultiTurnReplies]:
    if not os.environ.get("CI"):  # CI installs BFCL's backends (the script reads the ground truth with them)
        pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")
    yield MultiTurnReplies(CASES.values())


def fc_body(case: MultiTurnCase, messages: list[dict[str, Any]], docs: list[dict[str, Any]]) -> dict[str, Any]:
    tools = [{"type": "function", "function": fc_function(doc)} for doc in docs]
    return {"model": "m", "messages": messages, "tools": tools}


def user(case: MultiTurnCase, turn: int) -> dict[str, Any]:
    return {"role": "user", "content": case.turns[turn][0]["content"]}


def test_each_step_of_a_turn_gets_the_plans_next_call_then_text_ends_the_turn(replies: MultiTurnReplies) -> None:
    case = CASES["multi_turn_base_55"]  # scripted right: the ground truth, one call per step
    messages = [user(case, 0)]
    key, first = replies.reply(fc_body(case, messages, case.functions))
    assert (key, first) == (
        "multi_turn_base_55/0/0",
        Reply("right", (("displayCarStatus", '{"option": "fuel"}'),), None, ("call_0_0_0",)),
    )
    call = {"id": "call_0_0_0", "type": "function", "function": {"name": "displayCarStatus", "arguments": "{}"}}
    messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": "call_0_0_0", "content": '{"fuel": 10}'}]  # fmt: skip
    steps = len(case.ground_truth[0])
    for step in range(1, steps):
        key, _ = replies.reply(fc_body(case, messages, case.functions))
        assert key == f"multi_turn_base_55/0/{step}"
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]}]
    assert replies.reply(fc_body(case, messages, case.functions)) == (
        f"multi_turn_base_55/0/{steps}",
        Reply("right", None, "Done."),
    )
    messages += [{"role": "assistant", "content": "Done."}, user(case, 1)]
    key, _ = replies.reply(fc_body(case, messages, case.functions))
    assert key == "multi_turn_base_55/1/0"


def test_prompt_mode_gets_the_same_calls_as_text_through_either_api(replies: MultiTurnReplies) -> None:
    case = CASES["multi_turn_base_55"]
    prompt = {"role": "system", "content": system_prompt(case.functions, case.category)}
    chat = {"model": "m", "messages": [prompt, user(case, 0)]}
    responses = {"model": "m", "input": [{**prompt, "role": "developer"}, user(case, 0)]}
    assert (
        replies.reply(chat)
        == replies.reply(responses)
        == (
            "multi_turn_base_55/0/0",
            Reply("right", None, "[displayCarStatus(option='fuel')]"),
        )
    )
    results = {"role": "user", "content": "[{'role': 'tool', 'name': 'get_user_id', 'content': '{}'}]"}
    item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "[...]"}]}
    later = {"model": "m", "input": [{**prompt, "role": "developer"}, user(case, 0), item, results]}
    assert replies.reply(later)[0] == "multi_turn_base_55/0/1"  # the results message is no turn


def test_a_miss_func_conversation_is_told_from_its_base_case_before_and_after_the_hold_out(
    replies: MultiTurnReplies,
) -> None:
    case = CASES["multi_turn_miss_func_55"]  # same first message as multi_turn_base_55; `1` holds out functions
    assert CASES["multi_turn_base_55"].turns[0] == case.turns[0]
    (held,) = case.held_out
    everything = [*case.functions, *case.held_out[held]]
    messages = [user(case, 0)]
    assert replies.reply(fc_body(case, messages, case.functions))[0] == "multi_turn_miss_func_55/0/0"
    assert replies.reply(fc_body(case, messages, everything))[0] == "multi_turn_base_55/0/0"
    messages += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": HOLD_OUT_MESSAGE}]
    assert replies.reply(fc_body(case, messages, everything))[0] == f"multi_turn_miss_func_55/{held}/0"


def test_position_counts_turns_and_steps_as_bfcl_builds_the_history() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "[f()]"},
        {"role": "user", "content": "[{'role': 'tool', 'name': 'f()', 'content': 'ok'}]"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "[g()]"},
    ]
    at = position(messages)
    assert (at.users, at.turn, at.step, at.functions_added) == (("a", "b"), 1, 1, False)


def test_an_unknown_conversation_gets_text_and_the_server_speaks_both_apis(replies: MultiTurnReplies) -> None:
    assert replies.reply({"messages": [{"role": "user", "content": "hello"}]}) == ("?", None)
    server = MockServer(replies)
    try:
        answer = server.answer("/c/v1/chat/completions", {"messages": [{"role": "user", "content": "hello"}]})
    finally:
        server.close()
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": "unknown conversation"}
    calls = Reply("right", (("cd", '{"folder": "x"}'),), None, ("call_2_1_0",))
    assert chat_completion(calls, "m")["choices"][0]["message"]["tool_calls"] == [
        {"id": "call_2_1_0", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "x"}'}}
    ]
    assert response(Reply("right", None, "[cd(folder='x')]"), "m")["output"][0]["content"][0]["text"] == (
        "[cd(folder='x')]"
    )


def test_a_multi_turn_score_file_gives_the_error_type_bfcl_nests_in_its_error(tmp_path: Path) -> None:
    folder = tmp_path / "result" / "model" / "multi_turn"
    folder.mkdir(parents=True)
    results = [{"id": "multi_turn_base_0", "result": [[["[]"]]]}, {"id": "multi_turn_base_1", "result": []}]
    (folder / "BFCL_v4_multi_turn_base_result.json").write_text("\n".join(json.dumps(r) for r in results))
    scores = tmp_path / "score" / "model" / "multi_turn"
    scores.mkdir(parents=True)
    failing = {
        "id": "multi_turn_base_1",
        "valid": False,
        "error": {"error_message": "Model response list is empty for turn 0",
                  "error_type": "multi_turn:empty_turn_model_response"},
    }  # fmt: skip
    header = {"accuracy": 0.5, "correct_count": 1, "total_count": 2}
    (scores / "BFCL_v4_multi_turn_base_score.json").write_text(f"{json.dumps(header)}\n{json.dumps(failing)}")
    side = read_bfcl(tmp_path, "model")
    assert side.verdicts == {
        "multi_turn_base_0": Verdict(True, None),
        "multi_turn_base_1": Verdict(False, "multi_turn:empty_turn_model_response"),
    }
    assert side.accuracy == {"multi_turn_base": (1, 2)}
