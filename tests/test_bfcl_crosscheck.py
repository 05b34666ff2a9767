"""Our verdicts against BFCL's own checker, case for case, on scripted replies over the installed dataset.

Runs where `bfcl-eval` is installed with the few light packages its checker and decoders import (tree-sitter,
tree-sitter-java, tree-sitter-javascript, tenacity, filelock); skipped elsewhere (the project never depends on it).
Prompt-mode replies of the Java and JavaScript categories are Java and JavaScript source, correct and wrong in the
ways a model's are (literal suffixes, quotes, positional arguments, Python's syntax, several calls, nested creations,
garbage, truncation, non-ASCII text), read by tree-sitter on both sides.
BFCL's `constants.model_config` imports every vendor SDK, so it is replaced for the test by a module holding the one
setting the checker reads: whether the model's function names had their dots replaced (function-calling mode).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import random
import sys
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from typed_eval.suites.bfcl import data
from typed_eval.suites.bfcl.checker import check_reply
from typed_eval.suites.bfcl.prompting import decode_prompt_reply
from typed_eval.suites.bfcl.tools import decode_tool_calls


@dataclass
class ModelSettings:
    underscore_to_dot: bool


@dataclass
class Bfcl:
    checker: Any
    decode_prompting: Any
    is_empty_output: Any
    is_call_list: Any
    language: Any
    return_format: Any
    is_javascript: Any


@pytest.fixture
def bfcl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bfcl:
    if importlib.util.find_spec("bfcl_eval") is None and not os.environ.get("CI"):  # CI installs it
        pytest.skip("bfcl-eval is not installed")
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path))  # its config module makes result folders there
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {"fc/model": ModelSettings(True), "prompt/model": ModelSettings(False)}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bfcl_eval.constants.model_config", stub)
    try:
        enums = importlib.import_module("bfcl_eval.constants.enums")
        checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
        handler_utils = importlib.import_module("bfcl_eval.model_handler.utils")
        utils = importlib.import_module("bfcl_eval.utils")
    except ImportError as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"BFCL's checker cannot be imported here: {error}")
    return Bfcl(
        checker.ast_checker,
        handler_utils.default_decode_ast_prompting,
        utils.is_empty_output,
        utils.is_function_calling_format_output,
        enums.Language,
        enums.ReturnFormat,
        utils.is_js,
    )


def bfcl_verdict(bfcl: Bfcl, case: data.BfclCase, reply: Any, mode: str) -> tuple[bool, str]:
    """BFCL's evaluation of one reply: its handler's decoding, then its relevance rule or its AST checker."""

    def decode(return_format: Any) -> Any:
        if mode == "fc":  # the OpenAI-compatible handler: each call's arguments as JSON
            return [{next(iter(call)): json.loads(next(iter(call.values())))} for call in reply]
        return bfcl.decode_prompting(reply, return_format, False)

    if "relevance" in case.category:
        try:
            called = not bfcl.is_empty_output(decode(bfcl.return_format.PYTHON))
        except Exception:
            called = False
        if "irrelevance" in case.category:
            return (False, "irrelevance_error:decoder_success") if called else (True, "")
        return (True, "") if called else (False, "relevance_error:decoder_failed")
    language, return_format = bfcl.language.PYTHON, bfcl.return_format.PYTHON
    if "java" in case.category:
        javascript = bfcl.is_javascript(case.category)
        language = bfcl.language.JAVASCRIPT if javascript else bfcl.language.JAVA
        return_format = bfcl.return_format.JAVASCRIPT if javascript else bfcl.return_format.JAVA
    try:
        decoded = decode(return_format)
    except Exception:
        return (False, "ast_decoder:decoder_failed")
    if not bfcl.is_call_list(decoded):
        return (False, "ast_decoder:decoder_wrong_output_format")
    model = "fc_model" if mode == "fc" else "prompt_model"
    result = bfcl.checker(case.functions, decoded, case.ground_truth, language, case.category, model)
    return (result["valid"], "" if result["valid"] else result["error_type"])


def our_verdict(case: data.BfclCase, reply: Any, mode: str) -> tuple[bool, str]:
    if mode == "fc":
        pairs = [(next(iter(call)), next(iter(call.values()))) for call in reply] if isinstance(reply, list) else None
        decoded = decode_tool_calls(pairs, None if pairs is not None else reply)
    else:
        decoded = decode_prompt_reply(reply, case.category)
    verdict = check_reply(case.category, case.functions, case.ground_truth, decoded, underscore_to_dot=mode == "fc")
    return verdict.valid, verdict.error_type


def literal(value: Any, declared: str | None, category: str) -> Any:
    """A value as a Java or JavaScript literal in a string; Python values stay as they are."""
    if "java" not in category:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        inner = ", ".join(
            f'"{item}"' if isinstance(item, str) else str(literal(item, None, category)) for item in value
        )
        return f"new ArrayList<>(Arrays.asList({inner}))" if declared == "ArrayList" else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {literal(item, None, category)}" for key, item in value.items()) + "}"
    return f"{value}L" if declared == "long" else str(value)


def allowed_value(rng: random.Random, options: Any) -> Any:
    if not isinstance(options, list):
        return options
    value = rng.choice([option for option in options if option != ""] or [""])
    if isinstance(value, dict):
        return {key: allowed_value(rng, items) for key, items in value.items() if rng.random() < 0.9}
    return value


def scripted_calls(rng: random.Random, case: data.BfclCase) -> list[tuple[str, dict[str, Any]]]:
    """The expected calls with allowed values (optional ones sometimes left out), sometimes one of them perturbed."""
    assert case.ground_truth is not None
    calls = []
    for expected in case.ground_truth:
        name, allowed = next(iter(expected.items()))
        properties = next(doc for doc in case.functions if doc["name"] == name)["parameters"]["properties"]
        arguments = {
            param: literal(allowed_value(rng, options), properties.get(param, {}).get("type"), case.category)
            for param, options in allowed.items()
            if not ("" in options and rng.random() < 0.5)
        }
        calls.append((name, arguments))
    if rng.random() < 0.6:
        index = rng.randrange(len(calls))
        name, arguments = calls[index]
        change = rng.choice(["value", "value", "drop", "unknown", "name", "count"])
        if change == "value" and arguments:
            param = rng.choice(list(arguments))
            value = arguments[param]
            variants = [value, str(value), [value], 1.5, True, None]
            if isinstance(value, str):
                variants += [value.upper(), f" {value}. ", value + "x", value.rstrip("L")]
            if isinstance(value, int | float) and not isinstance(value, bool):
                variants += [float(value), int(value), value + 1]
            if isinstance(value, list):
                variants += [value[::-1], value[:-1]]
            arguments = {**arguments, param: rng.choice(variants)}
        elif change == "drop" and arguments:
            arguments = {key: item for key, item in arguments.items() if key != rng.choice(list(arguments))}
        elif change == "unknown":
            arguments = {**arguments, "not_a_parameter": 1}
        elif change == "name":
            name = rng.choice([doc["name"] for doc in case.functions])
        elif change == "count":
            calls.append(calls[0]) if rng.random() < 0.5 else calls.pop()
        if change != "count":
            calls[index] = (name, arguments)
    rng.shuffle(calls)
    return calls


def reply_of(rng: random.Random, calls: list[tuple[str, dict[str, Any]]], mode: str) -> Any:
    if mode == "fc":
        return [{name.replace(".", "_") if rng.random() < 0.95 else name: json.dumps(args)} for name, args in calls]
    text = "[" + ", ".join(f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls) + "]"
    return rng.choice([text, text[1:-1], f"```\n{text}\n```"])


NO_CALLS = {
    "fc": ["I cannot help with that.", "", [], [{"f": "{not json"}], [{"f": "[1]"}]],
    "prompt": ["I cannot help with that.", "", "[]", "[f(a=1), 'x']", "f(a=1", "[f(a=x.y)]", "[f(a=2*3, b=-1)]"],
}


def test_verdicts_equal_bfcls_on_scripted_replies(bfcl: Bfcl) -> None:
    rng = random.Random(31)
    cases = data.load_installed().cases
    compared: Counter[str] = Counter()
    different = []
    for case in cases:
        for mode in ("fc", "prompt"):
            if mode == "prompt" and "java" in case.category:
                continue  # test_java_and_javascript_prompt_verdicts_equal_bfcls: source, not Python
            if case.ground_truth is None:
                name = case.functions[0]["name"] if case.functions else "f"
                replies = [*NO_CALLS[mode], reply_of(rng, [(name, {"a": 1})], mode)]
            else:
                replies = [reply_of(rng, scripted_calls(rng, case), mode) for _ in range(3)]
            for reply in replies:
                theirs = bfcl_verdict(bfcl, case, reply, mode)
                compared[theirs[1]] += 1
                if our_verdict(case, reply, mode) != theirs:
                    different.append((case.id, mode, reply, theirs))
    assert different == []
    assert sum(compared.values()) > 20_000
    assert compared[""] > 5_000 and len(compared) > 12


JAVA_ELEMENT = {"String": "String", "integer": "int", "long": "long", "char": "char", "any": "Object"}


def quoted(text: str, rng: random.Random) -> str:
    """A string literal (JSON's escapes are Java's and JavaScript's), sometimes with its non-ASCII kept."""
    return json.dumps(text, ensure_ascii=rng.random() < 0.5)


def bare_or_quoted(text: str, rng: random.Random) -> str:
    """A variable's name as a model writes it: bare when it can be, else quoted."""
    return text if text.isidentifier() and rng.random() < 0.85 else quoted(text, rng)


def java_source(value: Any, declared: str, item: str | None, rng: random.Random) -> str:
    """A value as Java source of the declared type (an `any` or a "variable" string as a name)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        suffix = {"long": "L", "float": "f"}.get(declared if declared != "ArrayList" else item or "", "")
        return f"{value}{suffix}"
    if isinstance(value, list):
        items = ", ".join(java_source(v, item or "any", None, rng) for v in value)
        if declared == "ArrayList":
            return rng.choice(
                [
                    f"new ArrayList<>(Arrays.asList({items}))",
                    f"new ArrayList<{JAVA_ELEMENT.get(item or 'any', 'Object')}>(Arrays.asList({items}))",
                    f"Arrays.asList({items})",
                ]
            )
        return f"new {JAVA_ELEMENT.get(item or 'any', 'Object')}[]{{{items}}}"
    if isinstance(value, dict):
        puts = " ".join(f"put({quoted(str(k), rng)}, {java_source(v, 'any', None, rng)});" for k, v in value.items())
        return rng.choice(
            [f"new HashMap<String, Object>() {{{{ {puts} }}}}", f"new HashMap<>(Map.of({', '.join(map(str, value))}))"]
        )
    text = str(value)
    if declared in ("String", "char") or (declared == "any" and not text.isidentifier()):
        return quoted(text, rng)
    return bare_or_quoted(text, rng)


def javascript_source(value: Any, declared: str, item: str | None, rng: random.Random) -> str:
    """A value as JavaScript source of the declared type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(javascript_source(v, item or "any", None, rng) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{k}: {javascript_source(v, 'any', None, rng)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    text = str(value)
    if declared == "String" or not text.isidentifier():
        return quoted(text, rng) if rng.random() < 0.8 else "'" + text.replace("'", "\\'") + "'"
    return bare_or_quoted(text, rng)


def perturbed_source(text: str, rng: random.Random) -> str:
    """A value's source made wrong as models make it wrong."""
    change = rng.randrange(12)
    if change == 0 and text[-1:] in "Lf":
        return text[:-1]  # 42 for 42L
    if change == 1 and text.lstrip("-").isdigit():
        return rng.choice([f"{text}L", f"{text}.0", f'"{text}"', f"{text}f"])
    if change == 2 and text[:1] in "\"'":
        return text[1:-1]  # the quotes left out
    if change == 3 and text[:1] == '"':
        return "'" + text[1:-1] + "'"
    if change == 4 and text in ("true", "false"):
        return rng.choice(["True", "False", '"true"', "1"])
    if change == 5:
        return rng.choice(["null", "None", "undefined", "x.y", "f(1)", "new Object()", "this", "-5", "+5", "0x1F"])
    if change == 6:
        return rng.choice(["[1, 2]", "{'k': 1}", "{k: [1, {j: 2}]}", "new int[]{1, 2}", "new int[3]", "List.of(1)"])
    if change == 7:
        return rng.choice(["() -> 1", "x -> x", "() => 1", "`t${x}`", "a ? b : c", "a + b", "(String) x", "x[0]"])
    if change == 8:
        return rng.choice(['"caf\u00e9"', '"café"', '"中文"', '"😀"', "naïve", '"a\\"b"', "'c'", '""'])
    if change == 9:
        return rng.choice(["new ArrayList<>() {{ add(1); add(2); }}", "new ArrayList<>()", "new HashMap<>()"])
    if change == 10:
        return text + rng.choice([" + 1", ".toString()", "[0]", ";"])
    return text


def source_call(name: str, arguments: list[tuple[str | None, str]], rng: random.Random) -> str:
    sep = rng.choice([", ", ",", " , "])
    return f"{name}({sep.join(value if key is None else f'{key}={value}' for key, value in arguments)})"


def source_replies(rng: random.Random, case: data.BfclCase, count: int) -> list[str]:
    """`count` prompt-mode replies to a Java or JavaScript case: the expected call written in the language (or
    Python's syntax), often perturbed, in the wrappers models put around calls; and garbage."""
    assert case.ground_truth is not None
    javascript = "javascript" in case.category
    write = javascript_source if javascript else java_source
    (expected,) = case.ground_truth
    name, allowed = next(iter(expected.items()))
    properties = case.functions[0]["parameters"]["properties"]
    replies = []
    for _ in range(count):
        arguments: list[tuple[str | None, str]] = []
        for param, options in allowed.items():
            if "" in options and rng.random() < 0.4:
                continue
            details = properties.get(param, {})
            declared, item = details.get("type", "any"), details.get("items", {}).get("type")
            value = allowed_value(rng, options)
            if rng.random() < 0.15:
                arguments.append((param, repr(value)))  # Python's syntax: 'x', True, [1, 2], {'k': 1}
                continue
            source = write(value, declared, item, rng)
            arguments.append((param, perturbed_source(source, rng) if rng.random() < 0.35 else source))
        shape = rng.randrange(10)
        if shape == 0 and arguments:  # positional: values only, or some
            arguments = [(None if rng.random() < 0.7 else key, value) for key, value in arguments]
        elif shape == 1:
            arguments.append((rng.choice(["extra", next(iter(allowed)) if allowed else "x"]), "1"))
        elif shape == 2 and arguments:
            arguments.pop(rng.randrange(len(arguments)))
        elif shape == 3:
            rng.shuffle(arguments)
        called = rng.choice([name] * 6 + [name.split(".")[-1], name.replace(".", "_"), "other.call", "naïve"])
        call = source_call(called, arguments, rng)
        reply = rng.choice(
            [
                f"[{call}]",
                f"[{call};]",
                call,
                f"{call};",
                f"```java\n{call};\n```",
                f"```javascript\n[{call}]\n```",
                f"```\n{call}\n```",
                f"[{call}, {call}]",
                f"{call}; {call};",
                f"{call};\n{source_call('other', [], rng)};",
                f"Here is the call: {call};",
                f"'[{call}]'",
                f" \n `{call}` \n",
                f"[{call};;]",
                f"var r = {call};",
                f"{call}.then(x)",
            ]
        )
        if rng.random() < 0.08:
            reply = reply[: rng.randrange(len(reply) + 1)]  # truncated
        replies.append(reply)
    garbage = ["", "[]", "[;]", ";", "I cannot help with that.", "{}", "()", "[f(]", "[" * 50, "]]]", "null"]
    replies += [rng.choice(garbage), "".join(rng.choice("(){}[];,=\"'a1L. \n") for _ in range(rng.randrange(40)))]
    return replies


def test_java_and_javascript_prompt_verdicts_equal_bfcls(bfcl: Bfcl) -> None:
    rng = random.Random(4242)
    cases = [case for case in data.load_installed().cases if "java" in case.category]
    compared: Counter[str] = Counter()
    different = []
    for case in cases:
        for reply in source_replies(rng, case, 40):
            theirs = bfcl_verdict(bfcl, case, reply, "prompt")
            compared[theirs[1]] += 1
            if our_verdict(case, reply, "prompt") != theirs:
                different.append((case.id, reply, theirs))
    assert different == []
    assert len(cases) == 150
    assert sum(compared.values()) == 150 * 42
    assert compared[""] > 600 and compared["ast_decoder:decoder_failed"] > 600 and len(compared) > 10
