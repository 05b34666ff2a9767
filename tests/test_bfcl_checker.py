"""BFCL's AST checker as reimplemented: scripted replies for each rule, right and wrong, with BFCL's exact verdicts
(valid, error type, and for some the message), plus every shipped sample case answered with its possible answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from typed_eval.suites.bfcl import data
from typed_eval.suites.bfcl.checker import Decoded, Verdict, check_reply, language_of, standardize
from typed_eval.suites.bfcl.literals import java_value, javascript_value
from typed_eval.suites.bfcl.tools import decode_tool_calls


def doc(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": "d",
        "parameters": {"type": "dict", "properties": properties, "required": required},
    }


WEATHER = doc(
    "weather.get",
    {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "scale": {"type": "float"},
        "unit": {"type": "string"},
        "flag": {"type": "boolean"},
        "hours": {"type": "array", "items": {"type": "integer"}},
        "names": {"type": "array", "items": {"type": "string"}},
        "point": {"type": "tuple", "items": {"type": "float"}},
        "where": {"type": "dict", "properties": {}},
        "extra": {"type": "string"},
    },
    ["city", "unit"],
)
TRUTH = [
    {
        "weather.get": {
            "city": ["San Francisco, CA"],
            "days": [3, ""],
            "scale": [1.5, 2.0, ""],
            "unit": ["celsius", ""],
            "flag": [True, ""],
            "hours": [[1, 2], ""],
            "names": [["New York", "Paris"], ""],
            "point": [[1.0, 2.0], ""],
            "where": [{"lat": [1], "side": ["north", ""]}, ""],
        }
    }
]


def judge(calls: Any, category: str = "simple_python", *, fc: bool = False, truth: Any = None) -> tuple[bool, str]:
    verdict = check_reply(
        category, [WEATHER], TRUTH if truth is None else truth, Decoded(calls=calls), underscore_to_dot=fc
    )
    return verdict.valid, verdict.error_type


def weather(**arguments: Any) -> list[dict[str, dict[str, Any]]]:
    return [{"weather.get": {"city": "San Francisco, CA", "unit": "celsius", **arguments}}]


OK = (True, "")


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        pytest.param(weather(), OK, id="required only"),
        pytest.param(weather(days=3, scale=2.0, flag=True, hours=[1, 2]), OK, id="all allowed"),
        pytest.param(weather(city="san francisco ca"), OK, id="string normalised: case, comma, space"),
        pytest.param(weather(city="San-Francisco,_CA."), OK, id="string normalised: ,./-_ stripped"),
        pytest.param(weather(city="San Francisco"), (False, "value_error:string"), id="other string"),
        pytest.param(weather(unit="Celsius*^"), OK, id="* and ^ stripped too"),
        pytest.param(
            [{"weather.get": {"city": "San Francisco, CA"}}],
            (False, "simple_function_checker:missing_required"),
            id="required with '' allowed still required",
        ),
        pytest.param(
            weather(extra="x"), (False, "simple_function_checker:unexpected_param"), id="in the doc, not in the answer"
        ),
        pytest.param(weather(nonsense=1), (False, "simple_function_checker:unexpected_param"), id="not in the doc"),
        pytest.param(weather(scale=2), OK, id="int for float"),
        pytest.param(weather(scale=3), (False, "value_error:others"), id="int for float, other value"),
        pytest.param(weather(days=3.0), (False, "type_error:simple"), id="float for int"),
        pytest.param(weather(days="3"), (False, "type_error:simple"), id="string for int"),
        pytest.param(weather(days=True), (False, "type_error:simple"), id="bool for int"),
        pytest.param(weather(flag=1), (False, "type_error:simple"), id="int for bool"),
        pytest.param(weather(days=4), (False, "value_error:others"), id="other int"),
        pytest.param(weather(hours=[2, 1]), (False, "value_error:list/tuple"), id="list in another order"),
        pytest.param(weather(hours=[1, 2.0]), OK, id="'' among the allowed skips the item types, and 2.0 == 2"),
        pytest.param(weather(names=["new york", "PARIS"]), OK, id="list strings normalised"),
        pytest.param(weather(names=[]), OK, id="empty list matches the '' option"),
        pytest.param(weather(point=[1.0, 2.0]), OK, id="tuple as list"),
        pytest.param(weather(where={"lat": 1}), OK, id="dict, optional key omitted"),
        pytest.param(weather(where={"lat": 1, "side": "North"}), OK, id="dict value normalised"),
        pytest.param(weather(where={"side": "north"}), (False, "value_error:dict_key"), id="dict key missing"),
        pytest.param(weather(where={"lat": 1, "alt": 2}), (False, "value_error:dict_key"), id="dict key unknown"),
        pytest.param(weather(where={"lat": 2}), (False, "value_error:dict_value"), id="dict value other"),
        pytest.param(
            [{"weather_get": {"city": "San Francisco, CA", "unit": "celsius"}}],
            (False, "simple_function_checker:wrong_func_name"),
            id="underscored name in prompt mode",
        ),
        pytest.param([], (False, "simple_function_checker:wrong_count"), id="no call"),
        pytest.param(weather() * 2, (False, "simple_function_checker:wrong_count"), id="two calls"),
        pytest.param(
            [{"weather.get": [1]}], (False, "ast_decoder:decoder_wrong_output_format"), id="arguments not an object"
        ),
        pytest.param("just text", (False, "ast_decoder:decoder_wrong_output_format"), id="not a list"),
    ],
)
def test_simple_python_rules(calls: Any, expected: tuple[bool, str]) -> None:
    assert judge(calls) == expected


def test_the_unit_may_be_omitted_but_only_when_among_the_allowed() -> None:
    truth = [{"weather.get": {**TRUTH[0]["weather.get"], "unit": ["celsius"]}}]
    relaxed = doc("weather.get", WEATHER["parameters"]["properties"], ["city"])
    verdict = check_reply(
        "simple_python", [relaxed], truth, Decoded(calls=[{"weather.get": {"city": "SF"}}]), underscore_to_dot=False
    )
    assert verdict == Verdict(
        False,
        "value_error:string",
        ("Invalid value for parameter 'city': 'SF'. Expected one of ['San Francisco, CA']. Case insensitive.",),
    )
    verdict = check_reply(
        "simple_python",
        [relaxed],
        truth,
        Decoded(calls=[{"weather.get": {"city": "San Francisco, CA"}}]),
        underscore_to_dot=False,
    )
    assert verdict == Verdict(
        False,
        "simple_function_checker:missing_optional",
        ("Optional parameter 'unit' not provided and not marked as optional.",),
    )


def test_messages_are_bfcls() -> None:
    def errors(calls: Any) -> tuple[str, ...]:
        return check_reply("simple_python", [WEATHER], TRUTH, Decoded(calls=calls), underscore_to_dot=False).errors

    assert errors([{"weather.get": {"city": "x"}}]) == ("Missing required parameter: 'unit'.",)
    assert errors(weather(days="3")) == (
        "Incorrect type for parameter 'days'. Expected type integer, got str. Parameter value: '3'.",
    )
    assert errors(weather(nonsense=1)) == ("Unexpected parameter: 'nonsense'.",)
    assert errors([{"weather_get": {}}]) == ("Function name 'weather.get' not found in model output.",)
    assert errors(weather(hours=[2, 1])) == (
        "Invalid value for parameter 'hours': [2, 1]. Expected one of [[1, 2], ''].",
    )


def test_list_items_are_type_checked_when_the_list_must_be_given() -> None:
    truth = [{"weather.get": {"city": ["SF"], "unit": ["c"], "hours": [[1, 2]]}}]
    verdict = check_reply(
        "simple_python",
        [WEATHER],
        truth,
        Decoded(calls=[{"weather.get": {"city": "SF", "unit": "c", "hours": [1, 2.0]}}]),
        underscore_to_dot=False,
    )
    assert verdict == Verdict(
        False,
        "type_error:nested",
        (
            "Nested type checking failed for parameter 'hours'. Expected outer type array with inner type"
            " <class 'int'>. Parameter value: [1, 2.0].",
        ),
    )


def test_dotted_names_become_underscores_in_function_calling_mode() -> None:
    underscored = [{"weather_get": {"city": "San Francisco, CA", "unit": "celsius"}}]
    assert judge(underscored, fc=True) == OK
    assert judge(weather(), fc=True) == (False, "simple_function_checker:wrong_func_name")
    assert judge(weather(), fc=False) == OK


LOOKUP = doc("lookup", {"term": {"type": "string"}}, ["term"])
PARALLEL_TRUTH = [
    {"weather.get": {"city": ["Paris"], "unit": ["c"]}},
    {"weather.get": {"city": ["Rome"], "unit": ["c"]}},
]


def parallel(calls: Any, category: str = "parallel") -> tuple[bool, str]:
    verdict = check_reply(category, [WEATHER, LOOKUP], PARALLEL_TRUTH, Decoded(calls=calls), underscore_to_dot=False)
    return verdict.valid, verdict.error_type


def city(name: str) -> dict[str, dict[str, Any]]:
    return {"weather.get": {"city": name, "unit": "c"}}


def test_parallel_needs_every_call_in_any_order() -> None:
    assert parallel([city("Paris"), city("Rome")]) == OK
    assert parallel([city("rome"), city("PARIS")]) == OK
    assert parallel([city("Paris")]) == (False, "parallel_function_checker_no_order:wrong_count")
    assert parallel([city("Paris"), city("Rome"), city("Rome")]) == (
        False,
        "parallel_function_checker_no_order:wrong_count",
    )
    assert parallel([city("Paris"), city("Paris")]) == (False, "parallel_function_checker_no_order:cannot_find_match")
    assert parallel([city("Rome"), city("Rome")], "live_parallel_multiple") == (
        False,
        "parallel_function_checker_no_order:cannot_find_match",
    )
    verdict = check_reply(
        "parallel", [WEATHER], PARALLEL_TRUTH, Decoded(calls=[city("Paris"), city("Oslo")]), underscore_to_dot=False
    )
    assert (
        verdict.errors[0]
        == "Could not find a matching function among index [1] of model output for index 1 of possible answers."
    )


def test_multiple_finds_the_expected_function_among_the_offered() -> None:
    truth = [{"lookup": {"term": ["BFCL"]}}]

    def multiple(calls: Any) -> tuple[bool, str]:
        verdict = check_reply("multiple", [WEATHER, LOOKUP], truth, Decoded(calls=calls), underscore_to_dot=False)
        return verdict.valid, verdict.error_type

    assert multiple([{"lookup": {"term": "bfcl"}}]) == OK
    assert multiple([city("Paris")]) == (False, "simple_function_checker:wrong_func_name")
    assert multiple([{"lookup": {"term": "bfcl"}}] * 2) == (False, "multiple_function_checker:wrong_count")


JAVA = doc(
    "Service.run",
    {
        "count": {"type": "long"},
        "ratio": {"type": "float"},
        "size": {"type": "integer"},
        "on": {"type": "boolean"},
        "name": {"type": "String"},
        "items": {"type": "ArrayList", "items": {"type": "String"}},
        "numbers": {"type": "Array", "items": {"type": "integer"}},
        "options": {"type": "HashMap"},
        "target": {"type": "any"},
    },
    ["count"],
)
JAVA_TRUTH = [
    {
        "Service.run": {
            "count": [42],
            "ratio": [0.5, ""],
            "size": [7, ""],
            "on": [True, ""],
            "name": ["alpha", ""],
            "items": [["a", "b"], ""],
            "numbers": [[1, 2], ""],
            "options": [{"limit": [50]}, ""],
            "target": ["node", ""],
        }
    }
]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"count": "42L"}, OK, id="long literal"),
        pytest.param(
            {"count": "42l", "size": "7", "on": "true", "ratio": "0.5f"}, OK, id="int, boolean, float literals"
        ),
        pytest.param({"count": "42"}, (False, "type_error:simple"), id="long without L"),
        pytest.param({"count": 42}, (False, "type_error:java"), id="a number, not its literal"),
        pytest.param({"count": "42L", "ratio": "0.5"}, (False, "type_error:simple"), id="float without f"),
        pytest.param({"count": "42L", "on": "True"}, (False, "type_error:simple"), id="Python's True"),
        pytest.param({"count": "42L", "name": "Alpha"}, OK, id="String normalised"),
        pytest.param({"count": "42L", "items": 'new ArrayList<>(Arrays.asList("a", "b"))'}, OK, id="ArrayList"),
        pytest.param(
            {"count": "42L", "items": 'new ArrayList<>(Arrays.asList("b", "a"))'},
            (False, "value_error:list/tuple"),
            id="ArrayList order",
        ),
        pytest.param({"count": "42L", "numbers": "new int[]{1, 2}"}, OK, id="array"),
        pytest.param(
            {"count": "42L", "options": 'new HashMap<String, Integer>() {{ put("limit", 50); }}'}, OK, id="HashMap"
        ),
        pytest.param(
            {"count": "42L", "options": "{limit=50}"}, (False, "type_error:simple"), id="HashMap not a literal"
        ),
        pytest.param({"count": "42L", "target": "node"}, OK, id="any"),
    ],
)
def test_java_values_are_their_literals(arguments: dict[str, Any], expected: tuple[bool, str]) -> None:
    verdict = check_reply(
        "simple_java", [JAVA], JAVA_TRUTH, Decoded(calls=[{"Service.run": arguments}]), underscore_to_dot=False
    )
    assert (verdict.valid, verdict.error_type) == expected


JS = doc(
    "render",
    {
        "id": {"type": "integer"},
        "big": {"type": "Bigint"},
        "size": {"type": "float"},
        "label": {"type": "String"},
        "visible": {"type": "Boolean"},
        "values": {"type": "array", "items": {"type": "integer"}},
        "style": {"type": "dict"},
    },
    ["id"],
)
JS_TRUTH = [
    {
        "render": {
            "id": [5],
            "big": [9, ""],
            "size": [1.5, ""],
            "label": ["Title", ""],
            "visible": [False, ""],
            "values": [[1, 2], ""],
            "style": [{"color": ["red"]}, ""],
        }
    }
]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(
            {"id": "5", "big": "9n", "size": "1.5", "visible": "false"}, OK, id="integer, Bigint, float, Boolean"
        ),
        pytest.param({"id": "5", "label": "'title'"}, OK, id="quoted String"),
        pytest.param({"id": "5", "values": "[1, 2]", "style": "{color: 'red'}"}, OK, id="array and object"),
        pytest.param({"id": "5", "values": "[2, 1]"}, (False, "value_error:list/tuple"), id="array order"),
        pytest.param({"id": "5", "big": "9"}, (False, "type_error:simple"), id="Bigint without n"),
        pytest.param({"id": 5}, (False, "type_error:js"), id="a number, not its literal"),
        pytest.param({"id": "5", "style": "{color: 'blue'}"}, (False, "value_error:dict_value"), id="object value"),
    ],
)
def test_javascript_values_are_their_literals(arguments: dict[str, Any], expected: tuple[bool, str]) -> None:
    verdict = check_reply(
        "simple_javascript", [JS], JS_TRUTH, Decoded(calls=[{"render": arguments}]), underscore_to_dot=False
    )
    assert (verdict.valid, verdict.error_type) == expected


def test_literal_readers_quirks() -> None:
    assert java_value("'c'", "char") == "'c'"  # BFCL's char pattern never matches: the text stays as given
    assert java_value('new String[]{"a", "b"}', "Array", "String") == ['"a"', '"b"']  # quotes kept
    assert java_value("new ArrayList<>()", "ArrayList", "integer") == []
    assert java_value("3e3F", "float") == 3000.0
    assert javascript_value("new Array(1, 2)", "array") == [1, 2]
    assert javascript_value("[[1, 2], [3, 4]]", "array", "array") == [[1, 2], [3, 4]]
    assert javascript_value("{a: [1, 2], b: 'x'}", "dict") == {"a": [1, 2], "b": "x"}


@pytest.mark.parametrize("category", ["irrelevance", "live_irrelevance"])
def test_irrelevance_is_right_when_nothing_decodable_is_called(category: str) -> None:
    def irrelevance(decoded: Decoded) -> tuple[bool, str]:
        verdict = check_reply(category, [WEATHER], None, decoded, underscore_to_dot=True)
        return verdict.valid, verdict.error_type

    assert irrelevance(Decoded(error="the reply is text, not tool calls")) == OK
    assert irrelevance(Decoded(calls=[])) == OK
    assert irrelevance(Decoded(calls=[{}])) == OK
    assert irrelevance(Decoded(calls=[{"weather_get": [1]}])) == OK
    assert irrelevance(Decoded(calls=[city("Paris")])) == (False, "irrelevance_error:decoder_success")


def test_live_relevance_is_right_when_something_is_called() -> None:
    def relevance(decoded: Decoded) -> Verdict:
        return check_reply("live_relevance", [WEATHER], None, decoded, underscore_to_dot=True)

    assert relevance(Decoded(calls=[{"anything": {"at": "all"}}])) == Verdict(True)
    assert relevance(Decoded(calls=[])) == Verdict(
        False, "relevance_error:decoder_failed", ("Invalid syntax. Failed to decode AST when it should have. None",)
    )
    assert relevance(Decoded(error="not JSON")).error_type == "relevance_error:decoder_failed"


def test_an_undecodable_reply_fails_an_ast_category() -> None:
    verdict = check_reply("simple_python", [WEATHER], TRUTH, Decoded(error="bad"), underscore_to_dot=False)
    assert verdict == Verdict(False, "ast_decoder:decoder_failed", ("Invalid syntax. Failed to decode AST. bad",))


def test_a_case_without_possible_answer_is_a_verdict_not_a_crash() -> None:
    verdict = check_reply("simple_python", [WEATHER], None, Decoded(calls=weather()), underscore_to_dot=False)
    assert verdict == Verdict(
        False, "checker:no_possible_answer", ("The case has no possible answer to check the calls against.",)
    )


def test_huge_values_give_a_verdict_with_a_short_message() -> None:
    verdict = check_reply(
        "simple_python", [WEATHER], TRUTH, Decoded(calls=weather(days="9" * 10_000_000)), underscore_to_dot=False
    )
    assert verdict.error_type == "type_error:simple"
    assert len(verdict.errors[0]) == 2003


def test_normalisation_and_languages() -> None:
    assert standardize("April 1, 2024 - 10:00 A.M. it's") == 'april1202410:00amit"s'
    assert [language_of(c) for c in ("simple_java", "simple_javascript", "live_simple")] == [
        "java",
        "javascript",
        "python",
    ]


def first(values: list[Any]) -> Any:
    """The first allowed value; a dict's keys each with their own first allowed value, optional keys left out."""
    value = next(v for v in values if v != "")
    if isinstance(value, dict):
        return {key: first(options) for key, options in value.items() if "" not in options}
    return value


def answer_of(case: data.BfclCase) -> list[dict[str, dict[str, Any]]]:
    """Each expected call with the first allowed value of each parameter, optional ones left out."""
    assert case.ground_truth is not None
    calls = []
    for expected in case.ground_truth:
        name, allowed = next(iter(expected.items()))
        arguments = {param: first(values) for param, values in allowed.items() if "" not in values}
        calls.append({name: arguments})
    return calls


@pytest.mark.parametrize(
    "category", [c for c in data.SINGLE_TURN_CATEGORIES if "relevance" not in c and "java" not in c]
)
def test_every_sample_case_accepts_its_possible_answer(category: str) -> None:
    cases = data.load_sample([category]).cases
    verdicts = [
        check_reply(
            category, case.functions, case.ground_truth, Decoded(calls=answer_of(case)), underscore_to_dot=False
        )
        for case in cases
    ]
    assert verdicts == [Verdict(True)] * 5


def test_hostile_replies_get_a_verdict() -> None:
    big = json.dumps({"city": "x" * 10_000_000, "unit": "c"})
    verdict = check_reply(
        "simple_python", [WEATHER], TRUTH, decode_tool_calls([("weather_get", big)], None), underscore_to_dot=True
    )
    assert verdict.error_type == "value_error:string"
    million = decode_tool_calls([("weather_get", '{"city": "x"}')] * 1_000_000, None)
    verdict = check_reply("parallel", [WEATHER], PARALLEL_TRUTH, million, underscore_to_dot=True)
    assert verdict == Verdict(False, "parallel_function_checker_no_order:wrong_count", ("Wrong number of functions.",))
    unknown = decode_tool_calls([("os_system", '{"command": "rm -rf /"}')], None)
    verdict = check_reply("simple_python", [WEATHER], TRUTH, unknown, underscore_to_dot=True)
    assert verdict.error_type == "simple_function_checker:wrong_func_name"
