"""Prompt-mode replies of BFCL's Java and JavaScript categories, read with tree-sitter as BFCL reads them: exact
decoded values and verdicts (each one BFCL's own decoder and checker gave, 2026.3.23 with the pinned grammars), a
prompt-mode run of those categories end to end, and the same run without tree-sitter: one line, exit 2, no request,
while function-calling mode needs no tree-sitter at all.

The decoding tests need the `bfcl` extra (tree-sitter): skipped without it, except under CI (`CI` set), where its
absence is a failure. The runs without tree-sitter block its import in the subprocess (`sys.modules[name] = None`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from tests.fake_openai import FakeOpenAI, completion, text
from typed_eval.contracts import Case
from typed_eval.suites.bfcl.data import load_sample
from typed_eval.suites.bfcl.prompting import decode_prompt_reply, prompt_messages
from typed_eval.suites.bfcl.source_calls import tree_sitter_needed
from typed_eval.suites.bfcl.suite import score_reply

CATEGORIES = ("simple_java", "simple_javascript")
CASES = {case.id: case for case in load_sample(CATEGORIES).cases}
GRAMMARS = ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript")
NEEDS_TREE_SITTER = (
    "main.py: error: --mode: prompt mode decodes Java and JavaScript as BFCL does, with tree-sitter: pip install"
    " 'typed-eval[bfcl]', or leave out simple_java, simple_javascript"
)


@pytest.fixture
def tree_sitter() -> None:
    missing = tree_sitter_needed(CATEGORIES)
    if missing is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI installs the bfcl extra: {missing.message}", pytrace=False)
    pytest.skip(f"needs the bfcl extra: {missing.message}")


@pytest.mark.usefixtures("tree_sitter")
@pytest.mark.parametrize(
    ("reply", "calls"),
    [
        ("[f(a=1)]", None),  # tree-sitter-java recovers no statement here: BFCL's decoder fails
        ('[f(a="x", b=42L)]', [{"f": {"a": "x", "b": "42L"}}]),  # ...but recovers the missing `;` here
        ("[f(a=1);]", [{"f": {"a": "1"}}]),
        ("", {}),
        ("I cannot help with that.", None),
        ("```java\nf(a=1);\n```", None),
        ("[f(a=1), g(b=2)]", None),
        ("x = 1; a.b.c(d=1);", [{"a.b.c": {"d": "1"}}]),
        ("[f(g(a=1), b=2);]", [{"f": {"b": "2"}}]),
        (
            "[obj.m(a=new ArrayList<>(Arrays.asList(1, 2)), b=new int[]{1,2},"
            ' c=new HashMap<String, Integer>() {{ put("k", 1); }}, d=x, "lit", y)]',
            [
                {
                    "obj.m": {
                        "a": "new ArrayList<>(Arrays.asList(1, 2))",
                        "b": "new int[]{1,2}",
                        "c": "new HashMap<String,Integer>()",
                        "d": "x",
                        None: "y",
                    }
                }
            ],
        ),
        (
            '[f(a=\'c\', b=String.class, c=a + b * 2, d=List.of("x"), e="q\\"s");]',
            [{"f": {"a": "c", "b": "String.class", "c": "a+b*2", "d": 'List.of("x")', "e": 'q\\"s'}}],
        ),
        ('[f(a="é", b="xyz");]', [{"f": {"a": 'é"', "=": 'yz"'}}]),  # BFCL cuts the text at byte offsets
        ("[f(a=1, a=2);]", None),
        ("[f(x, y);]", None),  # two bare names are two arguments named None
        ("[f(a=new int[3]);]", None),
    ],
)
def test_java_replies_decode_as_bfcl_decodes_them(reply: str, calls: Any) -> None:
    decoded = decode_prompt_reply(reply, "simple_java")
    assert decoded.calls == calls
    assert (decoded.error is None) == (calls is not None)


@pytest.mark.usefixtures("tree_sitter")
@pytest.mark.parametrize(
    ("reply", "calls", "error"),
    [
        ("[f(a=1)]", [{"f": {"a": "1"}}], False),
        ('[f(a="x", b=42L)]', None, True),
        (
            "[f(a=[1, 2], b={k: 1}, c='s', d=\"t\", x, false)]",
            [{"f": {"a": "[1, 2]", "b": "{k: 1}", "c": "s", "d": "t", None: "x"}}],
            False,
        ),
        ('[f(a="é", b=() => 1, c=`t${x}`)]', [{"f": {"a": "é", "b": "() => 1", "c": "`t${x}`"}}], False),
        ("[f(true, x)]", None, True),
        ("[f(a=1), g(b=2)]", None, False),  # a sequence expression is no call: nothing found, no error
        ("", None, False),
        ("x; a.b(c=1); d(e=2)", [{"a.b": {"c": "1"}}], False),
        ("var r = f(a=1);", None, False),
    ],
)
def test_javascript_replies_decode_as_bfcl_decodes_them(reply: str, calls: Any, error: bool) -> None:
    decoded = decode_prompt_reply(reply, "simple_javascript")
    assert decoded.calls == calls
    assert (decoded.error is not None) == error


@pytest.mark.usefixtures("tree_sitter")
@pytest.mark.parametrize(
    ("case_id", "reply", "error_type"),
    [
        ("simple_java_80", '[RegexConstraint.initIRPattern(category="failOn", ruleIdx=42);]', None),
        ("simple_java_80", '[RegexConstraint.initIRPattern(category="failOn", ruleIdx=42)]', None),
        ("simple_java_80", 'RegexConstraint.initIRPattern(category="failOn", ruleIdx="42");', None),
        ("simple_java_80", '[RegexConstraint.initIRPattern(category="failOn", ruleIdx=42L);]', "type_error:simple"),
        ("simple_java_80", 'RegexConstraint.initIRPattern("failOn", 42);', "simple_function_checker:missing_required"),
        ("simple_java_0", "[GeometryPresentation.createPresentation(controller=mapController, parent=mapArea)]", None),
        (
            "simple_java_20",
            'updateConfig(fileName="user-mapping.yml", config=newMappingConfig);',
            "simple_function_checker:wrong_func_name",
        ),
        ("simple_java_20", "[f(a=1)]", "ast_decoder:decoder_failed"),
        ("simple_java_20", "", "ast_decoder:decoder_wrong_output_format"),
        ("simple_javascript_30", '[setText(newText="Hello, World!", start=5.0, length=7.0)]', None),
        (
            "simple_javascript_30",
            '[setText(newText="Hello, World!", start=5)]',
            "simple_function_checker:missing_optional",
        ),
        (
            "simple_javascript_20",
            "buttonAddClickHandler(element=myButton, callback=handleButtonClick, options={stopPropagation: true})",
            None,
        ),
        (
            "simple_javascript_20",
            "buttonAddClickHandler(element=myButton, callback=handleButtonClick, options={stopPropagation: false})",
            "value_error:dict_value",
        ),
        (
            "simple_javascript_0",
            "[validateUserInput(inputField='userInputField', isComplete=True)]",
            "type_error:simple",
        ),
        (
            "simple_javascript_0",
            "[validateUserInput(inputField='userInputField', isComplete=true), validateUserInput(isComplete=true)]",
            "ast_decoder:decoder_wrong_output_format",
        ),
        (
            "simple_javascript_40",
            "[assignOwnDefaults(objectValue=12.0, sourceValue=10.0, key='maxItems', object={})]",
            None,
        ),
    ],
)
def test_verdicts_are_bfcls(case_id: str, reply: str, error_type: str | None) -> None:
    case = CASES[case_id]
    metadata = {"question": case.question, "functions": case.functions}
    score = score_reply(
        Case(id=case.id, prompt="", expected=case.ground_truth, group=case.category, metadata=metadata),
        {"reply": reply},
    )
    assert (score.value, (score.details or {}).get("error_type")) == (1.0 if error_type is None else 0.0, error_type)


@pytest.mark.usefixtures("tree_sitter")
def test_a_hostile_reply_is_undecodable_or_read_never_a_crash() -> None:
    for category in CATEGORIES:
        for deep in ("f(a=" + "(" * 100_000 + "1" + ")" * 100_000 + ");", "f(a=" + "+1" * 100_000 + ");"):
            decoded = decode_prompt_reply(deep, category)  # tree-sitter's own printer would overflow the C stack
            assert (decoded.calls, decoded.error) == (None, "UnreadableSource: nested deeper than 2000 levels")
        huge = decode_prompt_reply('f(a="' + "x" * 10_000_000 + '");', category)
        assert huge.calls == [{"f": {"a": "x" * 10_000_000}}]
        surrogate = decode_prompt_reply('f(a="\ud800");', category)
        assert surrogate.calls is None
        assert str(surrogate.error).startswith("UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800'")


REPLIES = {
    "simple_java_0": "[GeometryPresentation.createPresentation(controller=mapController, parent=mapArea)]",
    "simple_java_20": "[HbaseAdapter.updateConfig(fileName='user-mapping.yml', config=newMappingConfig)]",
    "simple_java_40": "RoutingNodesChangedObserver.shardInitialized(unassignedShard=shardA, initializedShard=shardB);",
    "simple_java_60": "I need more information.",
    "simple_java_80": '```java\nRegexConstraint.initIRPattern(category="failOn", ruleIdx=42L);\n```',
    "simple_javascript_0": "[validateUserInput(inputField='userInputField', isComplete=true)]",
    "simple_javascript_10": "[fetchSalesDepartmentRecords(databaseName='employeeRecords', queryFunction=getSales)]",
    "simple_javascript_20": "[buttonAddClickHandler(element=myButton, callback=handleButtonClick)]",
    "simple_javascript_30": "setText(newText='Hello, World!', start=5.0, length=7.0);",
    "simple_javascript_40": "",
}


def case_of(request: dict[str, Any]) -> str:
    question = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
    (found,) = [i for i, c in CASES.items() if c.question[-1]["content"] == question]
    return found


def run(
    tmp_path: Path, reply: Callable[[dict[str, Any]], dict[str, Any]], mode: str, *, blocked: tuple[str, ...] = ()
) -> tuple[FakeOpenAI, subprocess.CompletedProcess[bytes]]:
    """`main.py run` of the sample's Java and JavaScript cases against a loopback server, the `blocked` modules
    unimportable. With none blocked it runs in this process; blocking needs a fresh interpreter, where no module
    that might import them is loaded yet."""
    with FakeOpenAI(reply) as server:
        args = ["run", "--suite", "bfcl", "-S", "data=sample", "-S", f"categories={','.join(CATEGORIES)}",
                "--model", "fake-model", "--base-url", server.url, "--api-key", "sk-test", "--results-dir",
                str(tmp_path), "--quiet", "--retries", "0", "--mode", mode]  # fmt: skip
        if not blocked:
            return server, run_cli("main.py", *args, text=False)
        block = f"sys.modules.update(dict.fromkeys({blocked!r}))"
        start = f"import runpy, sys; {block}; sys.argv[0] = 'main.py'; runpy.run_path('main.py', run_name='__main__')"
        done = subprocess.run([PYTHON, "-c", start, *args], cwd=REPO, capture_output=True, timeout=300, check=False)
    return server, done


def stored_verdicts(tmp_path: Path) -> dict[str, tuple[str, str | None]]:
    (samples,) = tmp_path.glob("*/*/samples.jsonl")
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    return {r["case_id"]: (r["status"], (r["score_details"] or {}).get("error_type")) for r in records}


@pytest.mark.usefixtures("tree_sitter")
def test_prompt_mode_run_reads_java_and_javascript_as_bfcl(tmp_path: Path) -> None:
    server, done = run(tmp_path, lambda request: completion(text(REPLIES[case_of(request)])), "text")
    assert done.returncode == 0, done.stderr.decode()
    assert stored_verdicts(tmp_path) == {
        "simple_java_0": ("correct", None),
        "simple_java_20": ("correct", None),
        "simple_java_40": ("correct", None),
        "simple_java_60": ("incorrect", "ast_decoder:decoder_failed"),
        "simple_java_80": ("incorrect", "ast_decoder:decoder_failed"),
        "simple_javascript_0": ("correct", None),
        "simple_javascript_10": ("correct", None),
        "simple_javascript_20": ("incorrect", "simple_function_checker:missing_optional"),
        "simple_javascript_30": ("correct", None),
        "simple_javascript_40": ("incorrect", "ast_decoder:decoder_wrong_output_format"),
    }
    assert sorted(case_of(r) for r in server.requests) == sorted(REPLIES)
    for request in server.requests:
        case = CASES[case_of(request)]
        assert request["messages"] == prompt_messages(case.question, case.functions, case.category)


def test_prompt_mode_without_tree_sitter_stops_before_any_request(tmp_path: Path) -> None:
    server, done = run(tmp_path, lambda _: completion(text("[]")), "text", blocked=GRAMMARS)
    assert (done.returncode, done.stderr.decode().splitlines()) == (2, [NEEDS_TREE_SITTER])
    assert server.requests == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("tree_sitter")
def test_the_line_says_what_is_found_when_part_of_tree_sitter_is(tmp_path: Path) -> None:
    server, done = run(tmp_path, lambda _: completion(text("[]")), "text", blocked=("tree_sitter",))
    assert (done.returncode, done.stderr.decode().splitlines()) == (
        2,
        [
            "main.py: error: --mode: prompt mode decodes Java and JavaScript as BFCL does, with tree-sitter 0.21.3,"
            " tree-sitter-java 0.21.0 and tree-sitter-javascript 0.21.4 (found no tree-sitter): pip install"
            " 'typed-eval[bfcl]', or leave out simple_java, simple_javascript"
        ],
    )
    assert server.requests == []


def test_function_calling_mode_needs_no_tree_sitter(tmp_path: Path) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if case_of(request) != "simple_java_80":
            return completion(text("No call."))
        call = {"name": "RegexConstraint_initIRPattern", "arguments": '{"category": "failOn", "ruleIdx": "42"}'}
        return completion({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                                                  "function": call}]})  # fmt: skip

    server, done = run(tmp_path, reply, "tool", blocked=GRAMMARS)
    assert done.returncode == 0, done.stderr.decode()
    verdicts = stored_verdicts(tmp_path)
    assert verdicts.pop("simple_java_80") == ("correct", None)
    assert verdicts == {
        case_id: ("incorrect", "ast_decoder:decoder_failed") for case_id in CASES if case_id != "simple_java_80"
    }
    assert len(server.requests) == 10
