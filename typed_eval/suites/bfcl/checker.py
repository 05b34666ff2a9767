"""BFCL's AST checker, reimplemented: the same verdict and error type for the same decoded reply.

BFCL judges a single-turn reply in two steps: its handler decodes the reply into calls (`[{name: {param: value}}]`,
see `tools.decode_tool_calls` and `prompting.decode_prompt_reply`), then its checker compares the calls with the
case's function docs and possible answers. The rules, including the ones easily got wrong, are BFCL's:
strings compare after stripping spaces and `,./-_*^` and lowercasing; a missing required parameter fails before
any argument is looked at, and an omitted optional one only passes when `""` is among its allowed values; a
parameter unknown to the doc or to the answer fails; an int passes for a float (Python only) but nothing else
changes type (a bool is not an int); lists compare in order; parallel categories need exactly as many calls as
expected, in any order; Java and JavaScript values are their literals as strings; with `underscore_to_dot`
(function-calling mode) the expected name's dots become underscores; irrelevance is right when nothing decodable
was called, live_relevance when something was. Where BFCL's checker would stop with an exception (a shape its
data never has), this one gives a failed verdict instead: nothing a model sends can crash a run.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Literal

from typed_eval.suites.bfcl.literals import (
    JAVA_TYPES,
    JAVASCRIPT_TYPES,
    UnsupportedTypeError,
    java_value,
    javascript_value,
)

__all__ = ["VALID", "Decoded", "Verdict", "check_calls", "check_reply", "is_call_list", "language_of", "standardize"]

Language = Literal["python", "java", "javascript"]

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
PYTHON_NESTED = ("array", "tuple")
LITERAL_NESTED = ("Array", "ArrayList", "array")
NORMALISED_AWAY = re.compile(r"[ ,./\-_*^]")
MAX_MESSAGE = 2000
DECODED_WHEN_IRRELEVANT = "Valid syntax. Successfully decode AST when it should not."
UNDECODED_WHEN_RELEVANT = "Invalid syntax. Failed to decode AST when it should have."
WRONG_OUTPUT_FORMAT = (
    "Did not output in the specified format. Note: the model_result is wrapped in a string to ensure json"
    " serializability."
)


@dataclass(frozen=True)
class Verdict:
    """BFCL's verdict on one reply: valid or not, its error type (`simple_function_checker:missing_required`...)
    and its error messages."""

    valid: bool
    error_type: str = ""
    errors: tuple[str, ...] = ()


VALID = Verdict(True)


@dataclass(frozen=True)
class Decoded:
    """A reply as BFCL's handler decodes it: the decoded value (meant to be `[{name: {param: value}}]`, but a
    model can make it anything), or the reason it could not be decoded."""

    calls: Any = None
    error: str | None = None


def fail(error_type: str, *errors: str) -> Verdict:
    """A failed verdict; messages that quote a huge value are cut, so a record stays small."""
    return Verdict(False, error_type, tuple(e if len(e) <= MAX_MESSAGE else e[:MAX_MESSAGE] + "..." for e in errors))


def language_of(category: str) -> Language:
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def standardize(text: str) -> str:
    """BFCL's string normalisation: spaces and `,./-_*^` removed, lowercased, single quotes made double."""
    return NORMALISED_AWAY.sub("", text).lower().replace("'", '"')


def is_call_list(decoded: Any) -> bool:
    """Whether a decoded reply has BFCL's shape: a list of one-key dicts whose value is a dict of arguments."""
    if type(decoded) is not list:
        return False
    return all(type(call) is dict and len(call) == 1 and type(next(iter(call.values()))) is dict for call in decoded)


def calls_something(decoded: Decoded) -> bool:
    """BFCL's relevance test: the reply decoded, has the call-list shape, and is not empty (`[]`, `[{}]`)."""
    return decoded.error is None and is_call_list(decoded.calls) and len(decoded.calls) > 0


def check_reply(
    category: str,
    functions: list[dict[str, Any]],
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None,
    decoded: Decoded,
    *,
    underscore_to_dot: bool,
) -> Verdict:
    """The verdict BFCL's evaluation gives a case of `category` whose reply decoded as `decoded`."""
    if "relevance" in category:  # irrelevance, live_irrelevance, live_relevance
        called = calls_something(decoded)
        if "irrelevance" in category:
            return fail("irrelevance_error:decoder_success", DECODED_WHEN_IRRELEVANT) if called else VALID
        if called:
            return VALID
        return fail("relevance_error:decoder_failed", f"{UNDECODED_WHEN_RELEVANT} {decoded.error}")
    if decoded.error is not None:
        return fail("ast_decoder:decoder_failed", f"Invalid syntax. Failed to decode AST. {decoded.error}")
    if not is_call_list(decoded.calls):
        return fail("ast_decoder:decoder_wrong_output_format", WRONG_OUTPUT_FORMAT)
    return check_calls(category, functions, decoded.calls, ground_truth or [], underscore_to_dot=underscore_to_dot)


def check_calls(
    category: str,
    functions: list[dict[str, Any]],
    calls: list[dict[str, dict[str, Any]]],
    expected: list[dict[str, dict[str, list[Any]]]],
    *,
    underscore_to_dot: bool,
) -> Verdict:
    """BFCL's `ast_checker`: parallel categories (any order), multiple (one call, found by name), else simple."""
    language = language_of(category)
    if not expected:
        return fail("checker:no_possible_answer", "The case has no possible answer to check the calls against.")
    if "parallel" in category:
        return check_parallel(functions, calls, expected, language, underscore_to_dot)
    if "multiple" in category:
        if len(calls) != len(expected):
            return fail("multiple_function_checker:wrong_count", "Wrong number of functions.")
        doc = find_doc(functions, next(iter(expected[0])))
        return check_call(doc, calls[0], expected[0], language, underscore_to_dot)
    if len(calls) != 1:
        return fail("simple_function_checker:wrong_count", "Wrong number of functions.")
    return check_call(functions[0] if functions else None, calls[0], expected[0], language, underscore_to_dot)


def check_parallel(
    functions: list[dict[str, Any]],
    calls: list[dict[str, dict[str, Any]]],
    expected: list[dict[str, dict[str, list[Any]]]],
    language: Language,
    underscore_to_dot: bool,
) -> Verdict:
    """Each expected call, in order, takes the first still unmatched model call that passes for it."""
    if len(calls) != len(expected):
        return fail("parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    matched: set[int] = set()
    for answer_index, expected_call in enumerate(expected):
        doc = find_doc(functions, next(iter(expected_call)))
        errors: list[str] = []
        found = False
        for index, call in enumerate(calls):
            if index in matched:
                continue
            result = check_call(doc, call, expected_call, language, underscore_to_dot)
            if result.valid:
                matched.add(index)
                found = True
                break
            errors.append(f"Model Result Index {index}: {result.error_type}: {' '.join(result.errors)}")
        if not found:
            left = [index for index in range(len(calls)) if index not in matched]
            return fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"Could not find a matching function among index {left} of model output"
                f" for index {answer_index} of possible answers.",
                *errors,
            )
    return VALID


def find_doc(functions: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((doc for doc in functions if doc.get("name") == name), None)


def check_call(
    doc: dict[str, Any] | None,
    call: dict[str, dict[str, Any]],
    expected_call: dict[str, dict[str, list[Any]]],
    language: Language,
    underscore_to_dot: bool,
) -> Verdict:
    """BFCL's `simple_function_checker`: name, required parameters, each given parameter, omitted optional ones."""
    if doc is None:
        return fail("simple_function_checker:wrong_func_name", "The expected function is not among the functions.")
    allowed_by_param = next(iter(expected_call.values()))
    properties: dict[str, Any] = doc["parameters"]["properties"]
    name: str = doc["name"]
    if underscore_to_dot and "." in name:
        name = name.replace(".", "_")
    if name not in call:
        return fail("simple_function_checker:wrong_func_name", f"Function name {name!r} not found in model output.")
    arguments = call[name]
    for param in doc["parameters"].get("required", []):
        if param not in arguments:
            return fail("simple_function_checker:missing_required", f"Missing required parameter: {param!r}.")
    for param, value in arguments.items():
        if param not in properties or param not in allowed_by_param:
            return fail("simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}.")
        verdict = check_argument(param, value, properties[param], allowed_by_param[param], language)
        if not verdict.valid:
            return verdict
    for param, allowed in allowed_by_param.items():
        if param not in arguments and "" not in allowed:
            return fail(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return VALID


def check_argument(param: str, value: Any, details: dict[str, Any], allowed: list[Any], language: Language) -> Verdict:
    """One argument: converted from its literal (Java, JavaScript), type-checked, then compared with the allowed."""
    type_name: str = details.get("type", "")
    item_type: type | None = None
    try:
        if language == "python":
            expected = PYTHON_TYPES[type_name]
            if type_name in PYTHON_NESTED:
                item_type = PYTHON_TYPES[details["items"]["type"]]
        else:
            table = JAVA_TYPES if language == "java" else JAVASCRIPT_TYPES
            expected = table[type_name]
            if type(value) is not str:
                return fail(
                    "type_error:java" if language == "java" else "type_error:js",
                    f"Incorrect type for parameter {param!r}. Expected type String,"
                    f" got {type(value).__name__}. Parameter value: {value!r}.",
                )
            convert = java_value if language == "java" else javascript_value
            if type_name in LITERAL_NESTED:
                item_name: str = details["items"]["type"]
                item_type = table[item_name]
                value = convert(value, type_name, item_name)
            else:
                value = convert(value, type_name)
    except (KeyError, TypeError, UnsupportedTypeError) as error:
        return fail("type_error:unsupported", f"Parameter {param!r} has a type BFCL's checker cannot check: {error}.")
    if type_name == "tuple" and type(value) is tuple:
        value = list(value)
    if language == "python" and type_name == "float" and type(value) is int:
        with contextlib.suppress(OverflowError):  # BFCL stops there; the int then fails the type check
            value = float(value)
    verdict, is_variable = check_type(param, value, allowed, type_name, expected, item_type)
    if not verdict.valid:
        return verdict
    if not is_variable:
        if expected is dict:
            return check_dict(param, value, allowed)
        if expected is list and item_type is dict:
            return check_list_of_dicts(param, value, allowed)
        if expected is str:
            return check_string(param, value, allowed)
        if expected is list:
            return check_list(param, value, allowed)
    if value not in allowed:
        return fail("value_error:others", f"{invalid_value(param, value)} Expected one of {allowed}.")
    return VALID


def answer_type(allowed: list[Any]) -> type | None:
    """The type of the first allowed value that is not the "may be omitted" marker `""`."""
    return next((type(value) for value in allowed if value != ""), None)


def check_type(
    param: str, value: Any, allowed: list[Any], type_name: str, expected: type, item_type: type | None
) -> tuple[Verdict, bool]:
    """BFCL's `type_checker`: the verdict, and whether the answer is a "variable" (typed unlike the doc says,
    in which case the value is compared as is rather than as a string, list or dict)."""
    first_type = answer_type(allowed)
    is_variable = first_type is not None and first_type is not expected
    nested_failure: Verdict | None = None
    elements: Any = value  # a list when the nested check runs
    if type(value) is expected:
        if item_type is None:
            return VALID, is_variable
        for candidate in allowed:
            if type(candidate) is not list or all(
                check_type(param, item, candidate, str(item_type), item_type, None)[0].valid for item in elements
            ):
                return VALID, is_variable
        nested_failure = fail(
            "type_error:nested",
            f"Nested type checking failed for parameter {param!r}. Expected outer type {type_name}"
            f" with inner type {item_type}. Parameter value: {value!r}.",
        )
    if first_type is not None and type(value) is first_type:
        return nested_failure or VALID, True
    message = (
        f"Incorrect type for parameter {param!r}. Expected type {type_name}, got {type(value).__name__}."
        f" Parameter value: {value!r}."
    )
    earlier = nested_failure.errors if nested_failure else ()
    return fail("type_error:simple", *earlier, message), is_variable


def invalid_value(param: Any, value: Any) -> str:
    return f"Invalid value for parameter {param!r}: {value!r}."


def normalised(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def check_string(param: str, value: str, allowed: list[Any]) -> Verdict:
    if standardize(value) in [standardize(option) for option in allowed if type(option) is str]:
        return VALID
    return fail(
        "value_error:string",
        f"{invalid_value(param, value)} Expected one of {allowed}. Case insensitive.",
    )


def check_list(param: str, value: list[Any], allowed: list[Any]) -> Verdict:
    """In order, top-level strings normalised; a `""` option reads as the empty list, as in BFCL."""
    options = [[normalised(item) for item in option] for option in allowed if isinstance(option, list | str)]
    if [normalised(item) for item in value] in options:
        return VALID
    return fail("value_error:list/tuple", f"{invalid_value(param, value)} Expected one of {allowed}.")


def check_dict(param: str, value: Any, allowed: list[Any]) -> Verdict:
    """A flat dict against each allowed dict: no unknown key, each value allowed, each key not given optional."""
    result = Verdict(False, "dict_checker:unclear")
    if type(value) is not dict:
        return fail("value_error:dict_value", f"Invalid value for parameter {param!r}: {value!r}. Expected a dict.")
    for candidate in allowed:
        if candidate == "":
            continue
        if type(candidate) is not dict:
            result = fail("value_error:dict_value", f"Invalid value for parameter {param!r}: {value!r}.")
            continue
        errors: list[str] = []
        error_type = "dict_checker:unclear"
        for key, item in value.items():
            if key not in candidate:
                errors.append(f"Unexpected dict key parameter: '{key}'.")
                error_type = "value_error:dict_key"
                break
            options = [normalised(option) for option in as_list(candidate[key])]
            if normalised(item) not in options:
                errors.append(f"Invalid value for parameter {key!r}: {item!r}. Expected one of {options}.")
                error_type = "value_error:dict_value"
                break
        for key, options in candidate.items():
            if key not in value and not may_be_omitted(options):
                errors.append(f"Missing dict key parameter: '{key}'.")
                error_type = "value_error:dict_key"
                break
        if not errors:
            return VALID
        result = fail(error_type, *errors)
    return result


def as_list(options: Any) -> list[Any]:
    """A dict key's allowed values; a string stands for its characters, as BFCL iterates it."""
    if isinstance(options, list | str):
        return list(options)
    return [options]


def may_be_omitted(options: Any) -> bool:
    """`""` among a dict key's allowed values (always so for a string: it contains the empty string)."""
    return isinstance(options, str) or "" in as_list(options)


def check_list_of_dicts(param: str, value: list[Any], allowed: list[Any]) -> Verdict:
    """The dicts in order, each against the allowed dict at its place, for each allowed list of dicts."""
    result = Verdict(False, "list_dict_checker:unclear")
    for candidate in allowed:
        if not isinstance(candidate, list | str) or len(value) != len(candidate):
            result = fail("value_error:list_dict_count", "Wrong number of dictionaries in the list.")
            continue
        for item, expected in zip(value, candidate, strict=True):
            result = check_dict(param, item, [expected])
            if not result.valid:
                break
        else:
            return VALID
    return result
