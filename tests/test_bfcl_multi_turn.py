"""BFCL's multi-turn categories played through a task session: scripted models (one call per step, the same reply
for the same conversation) drive `evaluator.evaluate`, the calls run on BFCL's own backends in worker processes and
the trajectories are scored by BFCL's own multi-turn checker. Skipped where bfcl-eval or mpmath is not installed."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

if not os.environ.get("CI"):  # CI installs them: there a missing one fails the run
    pytest.importorskip("mpmath")
    pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")

from pydantic_ai import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from tests.conftest import REPO
from typed_eval.contracts import AnswerMode, Case, SampleRecord
from typed_eval.core.tasks import Task
from typed_eval.suites.bfcl.multi_turn.backend import signatures
from typed_eval.suites.bfcl.multi_turn.backend_pool import BackendPool
from typed_eval.suites.bfcl.multi_turn.cases import CATEGORIES, MultiTurnCase, load_multi_turn
from typed_eval.suites.bfcl.multi_turn.decoded_calls import literal_call
from typed_eval.suites.bfcl.multi_turn.loop import HOLD_OUT_MESSAGE, Mode
from typed_eval.suites.bfcl.multi_turn.task import NOT_RUN, MultiTurnRunner, checker_calls, multi_turn_case
from typed_eval.suites.bfcl.multi_turn.turn_view import cause_metrics, trajectory_lines
from typed_eval.suites.bfcl.prompting import system_prompt

sys.path.insert(0, str(REPO / "benchmarks"))
from bfcl_multi_turn_mock import parse_call

CASES = {case.id: case for case in load_multi_turn(CATEGORIES, "sample").cases}
Call = tuple[str, dict[str, Any]]
Plan = list[list[list[Call] | str]]
"""Per turn, per step: the calls of the reply, or its text. After a turn's steps: the text "Done."."""


def ground_truth_plan(case: MultiTurnCase) -> Plan:
    """The ground truth's calls, one per step, positional arguments bound to their parameter's name."""
    found = signatures(case.involved_classes)
    plan: Plan = []
    for turn in case.ground_truth:
        steps: list[list[Call] | str] = []
        for source in turn:
            steps.append([parse_call(source, found)])
        plan.append(steps)
    return plan


def position(messages: list[ModelMessage]) -> tuple[int, int]:
    """(turn, step) of a request: the user messages that are not execution results, the replies since the last."""
    turn, step = -1, 0
    for message in messages:
        if isinstance(message, ModelResponse):
            step += 1
        for part in message.parts if isinstance(message, ModelRequest) else []:
            if isinstance(part, UserPromptPart) and not str(part.content).startswith("[{'role': 'tool'"):
                turn, step = turn + 1, 0
    return turn, step


Seen = list[tuple[list[ModelMessage], list[str]]]
"""Each request the model got: its messages and the names of the tools offered."""


def scripted(plans: dict[str, Plan], mode: Mode, seen: Seen) -> FunctionModel:
    """A model that answers a case (known by its first user text) by its plan, deterministically."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((list(messages), [tool.name for tool in info.function_tools]))
        first = next(
            p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)
        )
        turn, step = position(messages)
        steps = plans[str(first)][turn] if turn < len(plans[str(first)]) else []
        planned = steps[step] if step < len(steps) else "Done."
        if isinstance(planned, str):
            return ModelResponse(parts=[TextPart(planned)])
        if mode == "text":
            text = ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in planned)
            return ModelResponse(parts=[TextPart(f"[{text}]")])
        return ModelResponse(
            parts=[
                ToolCallPart(name, json.dumps(args), tool_call_id=f"call_{turn}_{step}_{n}")
                for n, (name, args) in enumerate(planned)
            ]
        )

    return FunctionModel(reply)


def run(plans: dict[str, Plan], mode: Mode = "tool", offered_only: bool = True) -> tuple[dict[str, SampleRecord], Seen]:
    """Each planned case (by id) played in `mode`: its record by id, and the conversations the model saw."""
    seen: Seen = []
    by_text = {CASES[case_id].turns[0][0]["content"]: plan for case_id, plan in plans.items()}
    assert len(by_text) == len(plans), "one case per first user text in a run"
    pool = BackendPool(workers=2)
    try:
        runner = MultiTurnRunner(CASES, pool, offered_only=offered_only)
        cases = [multi_turn_case(CASES[case_id]) for case_id in plans]
        result = asyncio.run(evaluator.evaluate(runner.task(mode), cases, scripted(by_text, mode, seen), concurrency=2))
    finally:
        pool.close()
    return {record.case_id: record for record in result.records}, seen


def by_category(category: str) -> Iterator[str]:
    return (case_id for case_id in CASES if CASES[case_id].category == category)


@pytest.mark.parametrize("mode", ["tool", "text"])
@pytest.mark.parametrize("category", CATEGORIES)
def test_the_ground_truth_of_the_sample_passes_bfcls_checker(category: str, mode: Mode) -> None:
    records, _ = run({case_id: ground_truth_plan(CASES[case_id]) for case_id in by_category(category)}, mode)
    assert {case_id: (r.status, r.score_details) for case_id, r in records.items()} == {
        case_id: ("correct", None) for case_id in by_category(category)
    }


def perturbed(case_id: str, change: str) -> Plan:
    """The ground truth of multi_turn_base_0 (or miss_param_0) with one change."""
    plan = ground_truth_plan(CASES[case_id])
    if change == "skip":  # mkdir left out
        del plan[0][1]
    elif change == "wrong_value":
        plan[0][0] = [("cd", {"folder": "documents"})]
    elif change == "repeat":
        plan[0].insert(2, plan[0][1])
    elif change == "text":
        plan[1] = ["I will search now."]
    elif change == "force":
        repeated: list[list[Call] | str] = [[("cd", {"folder": "document"})]] * 21
        plan[0] = repeated + plan[0]
    elif change == "act_on_miss_param":
        plan[3] = [[("cd", {"folder": ".."})]]
    return plan


STATE = "multi_turn:instance_state_mismatch"


@pytest.mark.parametrize(
    ("case_id", "change", "verdict"),
    [
        ("multi_turn_base_0", "skip", ("incorrect", STATE, 0, "missing_call")),
        ("multi_turn_base_0", "wrong_value", ("incorrect", STATE, 0, "wrong_argument")),
        ("multi_turn_base_0", "repeat", ("correct", None, None, None)),
        ("multi_turn_base_0", "text", ("incorrect", "multi_turn:empty_turn_model_response", 1, "missing_call")),
        ("multi_turn_base_0", "force", ("incorrect", "multi_turn:force_terminated", 0, "force_terminated")),
        ("multi_turn_miss_param_0", "act_on_miss_param", ("incorrect", STATE, 4, "acted_on_miss_param")),
    ],
)
def test_perturbed_replies_get_bfcls_verdict_and_where_they_went_wrong(
    case_id: str, change: str, verdict: tuple[str, str | None, int | None, str | None]
) -> None:
    records, _ = run({case_id: perturbed(case_id, change)})
    record = records[case_id]
    details = record.score_details or {}
    assert (record.status, details.get("error_type"), details.get("failed_turn"), details.get("cause")) == verdict
    if verdict[3] is not None:
        assert details[f"cause_{verdict[3]}"] == 1


def turns(record: SampleRecord) -> list[dict[str, Any]]:
    """The trajectory's turns stored in a record."""
    assert isinstance(record.output, dict) and isinstance(record.output["turns"], list)
    found: list[dict[str, Any]] = record.output["turns"]  # type: ignore[assignment]
    return found


def tool_results(conversation: list[ModelMessage]) -> list[str]:
    return [
        str(p.content)
        for m in conversation
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def test_each_call_runs_in_order_and_the_model_sees_bfcls_result_texts() -> None:
    records, seen = run({"multi_turn_base_0": perturbed("multi_turn_base_0", "wrong_value")})
    first_turn = turns(records["multi_turn_base_0"])[0]
    assert first_turn["ended"] == "text"
    assert [step.get("executed") for step in first_turn["steps"]] == [
        [{"call": "cd(folder='documents')",
          "result": '{"error": "cd: \'documents\': No such file or directory"}', "run": True}],
        [{"call": "mkdir(dir_name='temp')", "result": "None", "run": True}],
        [{"call": "mv(source='final_report.pdf',destination='temp')",
          "result": '{"error": "mv: cannot move \'final_report.pdf\': No such file or directory"}', "run": True}],
        None,
    ]  # fmt: skip
    assert tool_results(seen[3][0]) == [step["executed"][0]["result"] for step in first_turn["steps"][:3]]
    assert [type(p).__name__ for m in seen[3][0] for p in m.parts] == [
        "UserPromptPart", *["EchoedCallPart", "ToolReturnPart"] * 3
    ]  # fmt: skip
    assert len(seen) == 4 + 3 + 2 + 5  # every step one request: each turn's calls, then its closing text


def test_what_a_model_writes_is_never_evaluated() -> None:
    injected = "folder=__import__('os').system('touch /tmp/never'),x"
    plan = ground_truth_plan(CASES["multi_turn_base_0"])
    plan[0][0] = [("cd", {injected: 1}), ("print", {"x": 1})]
    records, _ = run({"multi_turn_base_0": plan})
    step = turns(records["multi_turn_base_0"])[0]["steps"][0]
    assert step["executed"] == [
        {"call": "cd(folder=__import__('os').system('touch /tmp/never'),x=1)",
         "result": "Error during execution: an argument that is not a literal is not run: Call", "run": False},
        {"call": "print(x=1)", "result": "Error during execution: name 'print' is not defined", "run": False},
    ]  # fmt: skip
    assert checker_calls(CASES["multi_turn_base_0"], turns(records["multi_turn_base_0"]))[0][0] == [NOT_RUN, NOT_RUN]
    assert (records["multi_turn_base_0"].score_details or {})["cause"] == "wrong_function"


@pytest.mark.parametrize("mode", ["tool", "text"])
def test_a_hold_out_turn_offers_the_held_out_functions_with_bfcls_message(mode: Mode) -> None:
    case = CASES["multi_turn_miss_func_0"]
    records, seen = run({case.id: ground_truth_plan(case)}, mode)
    assert records[case.id].status == "correct"
    held = case.held_out[3]
    turns = [position(messages)[0] for messages, _ in seen]
    assert turns == [0, 0, 0, 0, 1, 1, 1, 2, 3, 3, 4, 4, 4, 4, 4]  # turn 2 has no call in the ground truth
    hold_out = seen[turns.index(3)][0][-1].parts
    offered = {turn: names for turn, (_, names) in zip(turns, seen, strict=True)}
    all_names = [doc["name"] for doc in case.functions]
    if mode == "tool":
        assert [p.content for p in hold_out if isinstance(p, UserPromptPart)] == [HOLD_OUT_MESSAGE]
        assert (offered[2], offered[3]) == (all_names, [*all_names, "sort"])
    else:
        assert [p.content for p in hold_out if isinstance(p, UserPromptPart)] == [f"{held}\n{HOLD_OUT_MESSAGE}"]
        assert "'name': 'sort'" in str(held) and "Python 3 syntax" not in str(held)  # BFCL adds held-out docs bare
        assert (offered[2], offered[3]) == ([], [])
        system = [p.content for p in seen[0][0][0].parts if isinstance(p, SystemPromptPart)]
        assert system == [system_prompt(case.functions, case.category)]
        assert "'name': 'sort'" not in system[0] and '"name": "sort"' not in system[0]


def test_a_backend_that_does_not_answer_is_its_case_error_not_the_runs() -> None:
    case = CASES["multi_turn_base_0"]
    pool = BackendPool(workers=1, timeout=0.001)  # not even the worker's start answers in time
    try:
        task = MultiTurnRunner(CASES, pool).task("tool")
        model = scripted({case.turns[0][0]["content"]: ground_truth_plan(case)}, "tool", [])
        result = asyncio.run(evaluator.evaluate(task, [multi_turn_case(case)], model))
    finally:
        pool.close()
    (record,) = result.records
    assert record.status == "error"
    assert "BFCL's backends did not answer within 0.001 s" in str(record.error)


def test_a_case_on_a_lost_worker_is_rebuilt_by_replaying_its_calls() -> None:
    async def scenario() -> list[tuple[str, bool]]:
        pool = BackendPool(workers=1)
        try:
            lease = await pool.open(["GorillaFileSystem"], CASES["multi_turn_base_0"].initial_config, False)
            await lease.run(["cd(folder='document')", "mkdir(dir_name='temp')"], ["cd", "mkdir"])
            pool.worker().kill()  # as when another case's call hung on it
            return await lease.run(["cd(folder='temp')", "pwd()"], ["cd", "pwd"])
        finally:
            pool.close()

    assert asyncio.run(scenario()) == [
        ('{"current_working_directory": "temp"}', True),
        ('{"current_working_directory": "/workspace/document/temp"}', True),
    ]


def test_the_viewer_shows_the_trajectory_turn_by_turn_beside_the_ground_truth() -> None:
    records, _ = run({"multi_turn_base_0": perturbed("multi_turn_base_0", "text")})
    lines = [(line.text, line.mark) for line in trajectory_lines(records["multi_turn_base_0"])]
    assert lines[:6] == [
        ("turn 0: Move 'final_report.pdf' within document directory to 'temp' directory in document. Make sure to "
         "create the directory", "right"),
        ("  cd(folder='document') -> {\"current_working_directory\": \"document\"}", None),
        ("  mkdir(dir_name='temp') -> None", None),
        ("  mv(source='final_report.pdf',destination='temp') -> {\"result\": \"'final_report.pdf' moved to "
         "'temp/final_report.pdf'\"}", None),
        ("  text: Done.", None),
        ("  ground truth: cd(folder='document'), mkdir(dir_name='temp'), mv(source='final_report.pdf', "
         "destination='temp')", None),
    ]  # fmt: skip
    assert lines[6:9] == [
        ("turn 1: Perform a detailed search using grep to identify sections in the file pertaining to 'budget "
         "analysis'.", "wrong"),
        ("  text: I will search now.", None),
        ("  ground truth: cd(folder='temp'), grep(file_name='final_report.pdf',pattern='budget analysis')", None),
    ]  # fmt: skip
    assert lines[-2:] == [
        ("checker: multi_turn:empty_turn_model_response: Model response list is empty for turn 1", None),
        ("first failed turn: 1; cause: missing_call", None),
    ]
    sums = {"cause_missing_call": 3.0, "cause_state_drift": 1.0}
    assert cause_metrics(sums) == {
        "bfcl-mt-force_terminated": 0.0,
        "bfcl-mt-missing_call": 3.0,
        "bfcl-mt-wrong_function": 0.0,
        "bfcl-mt-wrong_argument": 0.0,
        "bfcl-mt-acted_on_miss_param": 0.0,
        "bfcl-mt-state_drift": 1.0,
    }


@pytest.mark.parametrize("offered_only", [True, False])
def test_a_held_out_function_resolves_from_its_turn_unless_resolved_as_bfcl_does(offered_only: bool) -> None:
    case = CASES["multi_turn_miss_func_0"]
    plan = ground_truth_plan(case)
    plan[0].insert(0, [("sort", {"file_name": "final_report.pdf"})])  # held out until turn 3
    records, _ = run({case.id: plan}, offered_only=offered_only)
    (executed,) = turns(records[case.id])[0]["steps"][0]["executed"]
    if offered_only:
        assert executed == {
            "call": "sort(file_name='final_report.pdf')",
            "result": "Error during execution: name 'sort' is not defined",
            "run": False,
        }
    else:
        assert executed == {  # run by the file system, in its root where the file is not
            "call": "sort(file_name='final_report.pdf')",
            "result": '{"error": "sort: final_report.pdf: No such file or directory"}',
            "run": True,
        }
    assert records[case.id].status == "correct"


def test_a_task_poses_its_multi_turn_cases_through_pose_as_and_scores_them_with_its_own_scorer() -> None:
    """The wiring the bfcl suite needs: its task hands multi-turn cases to the runner's task for the run's mode."""
    case = CASES["multi_turn_base_15"]
    pool = BackendPool(workers=1)
    try:
        runner = MultiTurnRunner(CASES, pool)
        posed = {"tool": runner.task("tool"), "text": runner.task("text")}

        def pose_as(case: Case, mode: AnswerMode) -> tuple[Task[Any], AnswerMode]:
            return posed["text" if mode == "text" else "tool"], mode

        task: Task[Any] = Task(name="bfcl", output_type=Any, score=runner.score, pose_as=pose_as)
        model = scripted({case.turns[0][0]["content"]: ground_truth_plan(case)}, "text", [])
        result = asyncio.run(evaluator.evaluate(task, [multi_turn_case(case)], model, mode="text"))
    finally:
        pool.close()
    (record,) = result.records
    assert (record.status, record.score, len(record.attempts)) == ("correct", 1.0, 7 + 5)  # 7 calls, 5 closing texts


@pytest.mark.parametrize(
    ("source", "read"),
    [
        (
            "cd(folder='x', n=-1, m=[1.5, None], d={'k': (True,)})",
            ("cd", {"folder": "x", "n": -1, "m": [1.5, None], "d": {"k": (True,)}}),
        ),
        ("cd(folder=inf)", "name 'inf' is not defined"),  # what repr writes for a non-finite float
        ("cd(folder={[1]: 2})", "unhashable type: 'list'"),
        ("cd(folder=1, folder=2)", "keyword argument repeated: folder (<string>, line 1)"),
        ("cd(class=1)", "invalid syntax (<string>, line 1)"),
        ("cd(folder='a\x00')", "source code string cannot contain null bytes"),
        ("mkdir(dir_name='x')", "name 'mkdir' is not defined"),  # not offered
        ("kill(pid=1)", "Function call kill is not allowed."),
        ("1()", "'int' object is not callable"),
        ("os.system(command='ls')", "name 'os' is not defined"),
        ("cd(folder=open('x'))", "an argument that is not a literal is not run: Call"),
        ("cd('x')", "positional arguments are not run"),
        (" cd(folder='x')", ("cd", {"folder": "x"})),  # `eval` strips the spaces: it runs in BFCL
        ("\uff43\uff44(folder='x')", "name 'cd' is not defined"),  # full-width: Python reads `cd`, BFCL's mapping not
        ("cd\u00a0(folder='x')", ("cd", {"folder": "x"})),  # BFCL's rewriting drops any space before `(`: it runs
        ("cd(folder='a (b')", ("cd", {"folder": "a(b"})),  # in a string too, as BFCL's `eval` is given it
        (" kill()", "name 'kill' is not defined"),  # BFCL's check reads " kill" (its `eval` then strips the space)
        ("kill\n()", "Function call kill is not allowed."),  # its rewriting dropped the newline first
    ],
)
def test_a_call_text_is_read_without_running_it_and_refused_in_pythons_words(source: str, read: object) -> None:
    assert literal_call(source, ["cd"]) == read
