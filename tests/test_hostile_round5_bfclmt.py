"""Hostile input, round five (issue #44), BFCL multi-turn: a `-S data=` folder's text is never executed, and a
model's calls run under exactly the names BFCL's executor runs. Through the command line, each as it broke."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.bfcl_data import multi_turn_folder
from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, text
from tests.test_bfcl_suite import stored
from typed_eval.suites.bfcl.multi_turn.cases import load_multi_turn

CASE = load_multi_turn(["multi_turn_base"], "sample").cases[0]
"""multi_turn_base_0: a file system whose `workspace` holds `document` and `archive`, and a Twitter account."""
FRESH = itertools.count()
"""BFCL's executor keeps its instances by model name and case id for the next call: a name per use, fresh ones."""


def hidden(marker: Path) -> str:
    """A call that parses as `cd` with a literal string, but as BFCL rewrites it (`# a\\n(` becomes `# a(`: the
    newline ends the comment no more) it calls `os.system`."""
    return f"cd(folder= # a\n(''' ',\n__import__('os').system('touch {marker}')) # '''))"


def data_folder(tmp_path: Path, ground_truth: str, extra_doc: str | None = None) -> Path:
    """The sample's BFCL data, its first multi_turn_base case's first ground-truth call replaced; `extra_doc`: a
    function of that name added to the file system's docs."""

    def change(_: dict[str, Any], answer: dict[str, Any]) -> None:
        answer["ground_truth"][0][0] = ground_truth

    folder = multi_turn_folder(tmp_path, change)
    if extra_doc is not None:
        docs = folder / "multi_turn_func_doc" / "gorilla_file_system.json"
        doc = {"name": extra_doc, "description": "d", "parameters": {"type": "dict", "properties": {}}}
        docs.write_text(docs.read_text() + json.dumps(doc) + "\n")
    return folder


@pytest.mark.parametrize("hostile", ["rewritten by BFCL", "a builtin given a doc"])
def test_a_data_folders_ground_truth_is_never_run_and_the_folder_is_refused_in_one_line(
    tmp_path: Path, hostile: str
) -> None:
    marker = tmp_path / "M"
    if hostile == "rewritten by BFCL":
        truth, doc = hidden(marker), None
        said = f"the ground truth {truth[:80]!r} is refused: an argument that is not a literal (Call)"
    else:
        truth, doc = f"exec('import os; os.system(\"touch {marker}\")')", "exec"
        said = f"the ground truth {truth[:80]!r} is refused: 'exec' is not a function of the case's classes"
    folder = data_folder(tmp_path, truth, doc)
    done = run_cli("main.py", "run", "--suite", "bfcl", "-S", f"data={folder}", "-S", "categories=multi_turn_base",
                   "--model", "test", "--results-dir", str(tmp_path / "runs"))  # fmt: skip
    where = folder / "BFCL_v4_multi_turn_base.json"
    assert (done.returncode, done.stderr.splitlines()) == (2, [f"main.py: error: {where}:1: {said}"])
    assert not marker.exists()
    assert not (tmp_path / "runs").exists()


def test_the_checker_is_given_no_text_that_would_run_whatever_reached_it(tmp_path: Path) -> None:
    from typed_eval.suites.bfcl.multi_turn.checking import RefusedCase, check_case
    from typed_eval.suites.bfcl.multi_turn.decoded_calls import NOT_RUN

    marker = tmp_path / "M"
    entry, truth = CASE.entry(), CASE.ground_truth
    code = f"open({str(marker)!r}, 'w')"
    hostile_truth = [[f"exec({code!r})", *truth[0][1:]], *truth[1:]]
    steps = [[[call] for call in turn] for turn in truth]
    with pytest.raises(RefusedCase) as refused:
        check_case(entry, CASE.category, steps, hostile_truth)
    said = f"the ground truth {hostile_truth[0][0][:80]!r} is refused: 'exec' is not a function of the case's classes"
    assert (str(refused.value), marker.exists()) == (said, False)
    with pytest.raises(RefusedCase) as refused:
        check_case({**entry, "id": "x)+exec(1"}, CASE.category, steps, truth)
    assert str(refused.value) == "the id 'x)+exec(1' is refused: BFCL names objects after it and runs them"
    decoded = [[[hidden(marker), *truth[0]]], *[[[c] for c in turn] for turn in truth[1:]]]
    verdict = check_case(entry, CASE.category, decoded, truth)
    assert verdict["valid"] is False and not marker.exists()
    results = json.loads(verdict["details"])["details"]["model_response (including all previous turns)"]
    assert results[:2] == [  # the hidden call given as NOT_RUN; the next one run
        "Error during execution: name 'typed_eval_call_not_run' is not defined",
        '{"current_working_directory": "document"}',
    ]
    assert NOT_RUN == "typed_eval_call_not_run()"


def play(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """`main.py run` of multi_turn_base_0 from the sample, the model making `calls` at each turn's first step and
    then saying "Done."; its record."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if request["messages"][-1]["role"] == "tool":
            return completion(text("Done."))
        tool_calls = [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            for n, (name, arguments) in enumerate(calls)
        ]
        return completion({"role": "assistant", "content": None, "tool_calls": tool_calls})

    with FakeOpenAI(reply) as server:
        done = run_cli("main.py", "run", "--suite", "bfcl", "-S", "data=sample", "-S", "categories=multi_turn_base",
                       "--limit", "1", "--model", "fake-model", "--base-url", server.url, "--api-key", "k",
                       "--results-dir", str(tmp_path / "runs"), "--retries", "0", "--quiet")  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    record = stored(tmp_path / "runs")[CASE.id]
    assert record["error"] is None
    return dict(record)


def test_a_models_call_that_runs_only_as_bfcl_rewrites_it_is_never_run_nor_given_to_the_checker(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "M"
    name = hidden(marker) + "#"  # the rendered call: this name, then "()" in a comment
    record = play(tmp_path, [(name, {})])
    (executed,) = record["output"]["turns"][0]["steps"][0]["executed"]
    assert (executed["run"], executed["result"]) == (
        False,
        "Error during execution: an argument that is not a literal is not run: Call",
    )
    assert record["score"] == 0.0 and not marker.exists()


def bfcl_results(calls: list[str]) -> list[str]:
    """BFCL's own executor on the calls, in order, on multi_turn_base_0's backends."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (  # type: ignore[import-untyped]
        execute_multi_turn_func_call,
    )

    results, _ = execute_multi_turn_func_call(
        calls, CASE.initial_config, CASE.involved_classes, f"round5_bfclmt_{next(FRESH)}", CASE.id
    )
    return [str(result) for result in results]


def test_a_models_call_names_run_exactly_as_bfcls_executor_runs_them(tmp_path: Path) -> None:
    names = [" cd", "\uff43\uff44", "cd\u00a0", "cd\n", "cd\u3000", "\u00a0cd", "c\uff44", "cd"]
    record = play(tmp_path, [(name, {"folder": "archive" if n % 2 else "document"}) for n, name in enumerate(names)])
    executed = record["output"]["turns"][0]["steps"][0]["executed"]
    calls = [call["call"] for call in executed]
    assert calls[:2] == [" cd(folder='document')", "\uff43\uff44(folder='archive')"]
    results = [call["result"] for call in executed]
    assert results == bfcl_results(calls)
    assert results == [
        '{"current_working_directory": "document"}',  # " cd": `eval` strips the space, in BFCL and here
        "Error during execution: name 'cd' is not defined",  # full-width: Python reads `cd`, BFCL's mapping does not
        '{"error": "cd: \'document\': No such file or directory"}',  # NBSP: BFCL's rewriting drops it, so cd ran
        '{"error": "cd: \'archive\': No such file or directory"}',  # a newline: dropped too
        '{"error": "cd: \'document\': No such file or directory"}',  # an ideographic space
        "Error during execution: invalid non-printable character U+00A0 (<string>, line 1)",  # before the name: kept
        "Error during execution: name 'cd' is not defined",
        '{"error": "cd: \'archive\': No such file or directory"}',
    ]
    assert [call["run"] for call in executed] == [True, False, True, True, True, False, False, True]


@pytest.mark.parametrize(
    ("call", "bfcl"),
    [
        (" kill()", "Error during execution: name 'kill' is not defined"),  # no longer "not allowed": BFCL's check
        ("kill ()", "Error during execution: Function call kill is not allowed."),  # reads the rewritten text
        ("kill\n()", "Error during execution: Function call kill is not allowed."),
        ("pwd\u2028()", '{"current_working_directory": "/workspace"}'),
        ("cd\x0b(folder='document')", '{"current_working_directory": "document"}'),
    ],
)
def test_a_call_text_gets_bfcls_result_whatever_spaces_its_name_has(call: str, bfcl: str) -> None:
    from typed_eval.suites.bfcl.multi_turn.backend import CaseBackends

    backends = CaseBackends(CASE.involved_classes, CASE.initial_config, long_context=False)
    assert bfcl_results([call]) == [bfcl]
    assert backends.run(call, ["kill", "cd", "pwd"])[0] == bfcl
