"""BFCL's two modes, request side and decoders: function docs as tools (function calling), BFCL's system prompt and
the `[func(a=1), ...]` decoder (prompt mode), which reads what BFCL reads and executes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from typed_eval.suites.bfcl.checker import Decoded
from typed_eval.suites.bfcl.prompting import decode_prompt_reply, prompt_messages, system_prompt
from typed_eval.suites.bfcl.tools import decode_tool_calls, hinted_functions, tools_for

PYTHON_DOC: dict[str, Any] = {
    "name": "geo.distance",
    "description": "Distance between points.",
    "parameters": {
        "type": "dict",
        "properties": {
            "start": {"type": "tuple", "items": {"type": "float"}, "description": "From."},
            "scale": {"type": "float", "description": "Scale."},
            "legs": {
                "type": "array",
                "items": {"type": "dict", "properties": {"km": {"type": "float", "description": "Km."}}},
                "description": "Legs.",
            },
            "options": {"type": "dict", "properties": {"fast": {"type": "boolean", "description": "Fast."}}},
            "mode": {"type": "any", "description": "Mode.", "enum": ["a", "b"], "default": "a"},
            "nested": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}, "description": "N."},
        },
        "required": ["start"],
    },
}


def test_python_docs_become_json_schema_tools_as_bfcl_converts_them() -> None:
    original = json.dumps(PYTHON_DOC)
    [tool] = tools_for([PYTHON_DOC], "simple_python")
    assert json.dumps(PYTHON_DOC) == original  # the case's docs are not changed
    assert tool == {
        "type": "function",
        "function": {
            "name": "geo_distance",
            "description": "Distance between points. Note that the provided function is in Python 3 syntax.",
            "parameters": {
                "type": "object",
                "properties": {
                    "start": {"type": "array", "items": {"type": "number"}, "description": "From."},
                    "scale": {"type": "number", "description": "Scale. This is a float type value.", "format": "float"},
                    "legs": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "km": {
                                    "type": "number",
                                    "description": "Km. This is a float type value.",
                                    "format": "float",
                                }
                            },
                        },
                        "description": "Legs.",
                    },
                    "options": {"type": "object", "properties": {"fast": {"type": "boolean", "description": "Fast."}}},
                    "mode": {"type": "string", "description": "Mode.", "enum": ["a", "b"], "default": "a"},
                    "nested": {
                        "type": "array",
                        "items": {"type": "array", "items": {"type": "integer"}},
                        "description": "N.",
                    },
                },
                "required": ["start"],
            },
        },
    }


def test_java_and_javascript_parameters_are_posed_as_their_literals_in_strings() -> None:
    java = {
        "name": "Svc.run",
        "description": "Runs.",
        "parameters": {
            "type": "dict",
            "properties": {
                "ids": {"type": "ArrayList", "items": {"type": "long"}, "description": "Ids."},
                "target": {"type": "any", "description": "Target."},
            },
            "required": ["ids"],
        },
    }
    [doc] = hinted_functions([java], "simple_java")
    assert doc["description"] == "Runs. Note that the provided function is in Java 8 SDK syntax."
    assert doc["parameters"]["properties"] == {
        "ids": {
            "type": "string",
            "description": "Ids. This is Java ArrayList type parameter in string representation. The list elements are"
            " of type long; they are not in string representation.",
        },
        "target": {
            "type": "string",
            "description": "Target. This parameter can be of any type of Java object in string representation.",
        },
    }
    javascript = {
        "name": "draw",
        "description": "Draws.",
        "parameters": {
            "type": "dict",
            "properties": {"style": {"type": "dict", "description": "Style.", "properties": {"c": {"type": "String"}}}},
        },
    }
    [tool] = tools_for([javascript], "simple_javascript")
    assert tool["function"]["parameters"]["properties"] == {
        "style": {
            "type": "string",
            "description": "Style. This is JavaScript dict type parameter in string representation. The dictionary"
            ' entries have the following schema; they are not in string representation. {"c": {"type": "String"}}',
        }
    }


def test_tool_calls_decode_as_bfcls_handler_decodes_them() -> None:
    assert decode_tool_calls([("geo_distance", '{"start": [1, 2.5]}')], None) == Decoded(
        calls=[{"geo_distance": {"start": [1, 2.5]}}]
    )
    assert decode_tool_calls([], "some text") == Decoded(calls=[])
    assert decode_tool_calls(None, "") == Decoded(calls=[])
    assert decode_tool_calls(None, "I would call geo_distance") == Decoded(error="the reply is text, not tool calls")
    assert decode_tool_calls(None, None) == Decoded(error="the reply has no tool calls")
    assert decode_tool_calls([("f", "[1]")], None) == Decoded(calls=[{"f": [1]}])  # shape judged by the checker
    bad = decode_tool_calls([("f", "{}"), ("g", "{not json")], None)
    assert bad.calls is None
    assert bad.error is not None and bad.error.startswith("the arguments of 'g' are not JSON: Expecting property name")
    deep = decode_tool_calls([("f", "[" * 100_000 + "]" * 100_000)], None)
    assert deep.calls is None


def test_system_prompt_is_bfcls_default() -> None:
    doc = {"name": "f", "description": "Does f.", "parameters": {"type": "dict", "properties": {}, "required": []}}
    functions_json = json.dumps(
        [{**doc, "description": "Does f. Note that the provided function is in Python 3 syntax."}], indent=4
    )
    assert system_prompt([doc], "simple_python") == (
        "You are an expert in composing functions.You are given a question and a set of possible functions. Based on"
        " the question, you will need to make one or more function/tool calls to achieve the purpose. If none of the"
        " functions can be used, point it out. If the given question lacks the parameters required by the function,"
        " also point it out.\n\nYou should only return the function calls in your response.\n\nIf you decide to invoke"
        " any of the function(s), you MUST put it in the format of [func_name1(params_name1=params_value1,"
        " params_name2=params_value2...), func_name2(params)].  You SHOULD NOT include any other text in the"
        " response.\n\nAt each turn, you should try your best to complete the tasks requested by the user within the"
        " current turn. Continue to output functions to call until you have fulfilled the user's request to the best"
        " of your ability. Once you have no more functions to call, the system will consider the current turn"
        " complete and proceed to the next turn or task.\n\nHere is a list of functions in json format that you can"
        f" invoke.\n{functions_json}\n"
    )
    question = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Do f."}]
    messages = prompt_messages(question, [doc], "live_simple")
    assert messages == [
        {"role": "system", "content": system_prompt([doc], "live_simple") + "\n\nBe brief."},
        {"role": "user", "content": "Do f."},
    ]
    assert question[0]["content"] == "Be brief."
    assert prompt_messages(question[1:], [doc], "simple_python")[0] == {
        "role": "system",
        "content": system_prompt([doc], "simple_python"),
    }


@pytest.mark.parametrize(
    ("reply", "calls"),
    [
        ("[f(a=1, b='x')]", [{"f": {"a": 1, "b": "x"}}]),
        ("f(a=1)", [{"f": {"a": 1}}]),
        ("```\n[f(a=1), g.h.i(b=[1, 2.5])]\n```", [{"f": {"a": 1}}, {"g.h.i": {"b": [1, 2.5]}}]),
        ("'[f(a=1)]'", None),
        ("f(1, 2, a=3)", [{"f": {"a": 3}}]),
        ("[f(a=-5, b=+5, c=not True, d=None, e=...)]", [{"f": {"a": -5, "b": -5, "c": -1, "d": None, "e": "..."}}]),
        (
            "[f(a=celsius, b=datetime.now(), c=g(x=1), d=lst[0], e=(1, 'a'), f={'k': [1]})]",
            [
                {
                    "f": {
                        "a": "celsius",
                        "b": "datetime.now()",
                        "c": {"g": {"x": 1}},
                        "d": "lst[0]",
                        "e": (1, "a"),
                        "f": {"k": [1]},
                    }
                }
            ],
        ),
        (
            "[f(a=2*3, b=10**6, c=1/4, d='ab'*2, e=-5+2, f=[1]+[2])]",
            [{"f": {"a": 6, "b": 1000000, "c": 0.25, "d": "abab", "e": -3, "f": [1, 2]}}],
        ),
        ("[f(**{'a': 1})]", [{"f": {None: {"a": 1}}}]),
        ("[]", []),
        ("I cannot answer that.", None),
        ("[f(a=1), 'text']", None),
        ("[f(a=x.y)]", None),
        ("[f(a=-x)]", None),
        ("[f(a=-(2+3))]", None),
        ("[f(a=lambda: 1)]", None),
        ("[f(a={1, 2})]", None),
        ("[f(a=f'{x}')]", None),
        ("[f(a=1/0)]", None),
        ("[f(a=2**100000)]", None),
        ("[f(a='x'*10**9)]", None),
        ("[f(a=1)", [{"f": {"a": 1}}]),
    ],
)
def test_prompt_replies_decode_as_bfcl_decodes_them(reply: str, calls: Any) -> None:
    decoded = decode_prompt_reply(reply)
    assert decoded.calls == calls
    assert (decoded.error is None) == (calls is not None)


def test_nothing_in_a_reply_is_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for reply in (
        f"[f(a=open({str(marker)!r}, 'w').write('x') + 1)]",
        f"[f(a=__import__('pathlib').Path({str(marker)!r}).touch() or 1)]",
        f"[f(a=[__import__('os').system('touch {marker}')] * 2)]",
    ):
        assert decode_prompt_reply(reply).calls is None
    assert not marker.exists()


def test_a_huge_or_deep_reply_is_undecodable_not_a_crash() -> None:
    assert decode_prompt_reply("[" * 100_000 + "]" * 100_000).calls is None
    many = "[" + ", ".join(["f(a=1)"] * 100_000) + "]"
    assert len(decode_prompt_reply(many).calls) == 100_000
