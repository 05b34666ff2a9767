"""A reply's calls as BFCL's handlers decode them, and how a decoded call is run without evaluating anything.

BFCL turns every decoded call into Python source (`cd(folder='x')`: function-calling arguments as `repr` of their
JSON values, prompt-mode values as its `parse_nested_value` renders them) and executes it with `eval`. Here that
same source text is built (it is what BFCL's checker is given, and what a prompt-mode model is shown), parsed, and
run only when it is a plain call of an offered function whose arguments are literals: then the method is called with
the literal values as keyword arguments, which is what BFCL's `eval` does with such a text. Any other text gets an
error result in the words BFCL's executor would use where that is knowable without running it.

What is parsed is the text BFCL's `eval` is given (`bfcl_text`): BFCL first rewrites every `name (` as
`<instance>.name(` (`_process_method_calls`), dropping whatever Unicode spaces or newlines lie between, so a text is
read after that rewriting; read before it, a comment whose newline the rewriting drops could hide what then runs.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from typed_eval.suites.bfcl.prompting import decode_prompt_reply

__all__ = [
    "BLOCKED",
    "CALL_ID",
    "ERROR_PREFIX",
    "NOT_RUN",
    "StepDecoding",
    "bfcl_text",
    "decode_fc_step",
    "decode_prompt_step",
    "ground_truth_problem",
    "literal_call",
    "read_literal",
]

ERROR_PREFIX = "Error during execution: "
BLOCKED = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""Names BFCL's executor refuses before evaluating ("Function call kill is not allowed.")."""
NOT_RUN = "typed_eval_call_not_run()"
"""What BFCL's checker is given for a call not run here: a name it cannot resolve, so an error and no effect."""
BFCL_CALL_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")
"""The pattern BFCL's `_process_method_calls` rewrites a call text with (`\\s` takes any Unicode space, newlines)."""


@dataclass(frozen=True)
class StepDecoding:
    """A reply's calls as BFCL's `decode_execute` gives them (the source text of each), or why it cannot."""

    calls: tuple[str, ...] = ()
    error: str | None = None


def decode_fc_step(calls: Sequence[tuple[str, str]], text: str) -> StepDecoding:
    """A function-calling reply decoded as `convert_to_function_call` does: each call's arguments must be a JSON
    object, rendered `name(k=repr(v),...)`. A reply without calls is its text, which decodes (as no call) only
    when empty."""
    if not calls:
        return StepDecoding() if text == "" else StepDecoding(error="the reply is text, not tool calls")
    rendered = []
    for name, arguments in calls:
        try:
            values = json.loads(arguments)
        except (ValueError, RecursionError) as error:
            return StepDecoding(error=f"the arguments of {name[:80]!r} are not JSON: {str(error)[:200]}")
        if not isinstance(values, dict):
            return StepDecoding(error=f"the arguments of {name[:80]!r} are not a JSON object")
        try:
            rendered.append(f"{name}({','.join(f'{key}={value!r}' for key, value in values.items())})")
        except (RecursionError, ValueError) as error:  # a value too deep or an integer too long to render
            return StepDecoding(error=f"the arguments of {name[:80]!r} cannot be rendered: {str(error)[:200]}")
    return StepDecoding(tuple(rendered))


def decode_prompt_step(text: str) -> StepDecoding:
    """A prompt-mode reply decoded as `default_decode_execute_prompting` does: read as `[f(a=1), ...]` (without
    evaluating), each call rendered back by BFCL's `decoded_output_to_execution_list`."""
    decoded = decode_prompt_reply(text)
    if decoded.error is not None or decoded.calls is None:
        return StepDecoding(error=decoded.error or "undecodable")
    try:
        rendered = [
            f"{name}({', '.join(f'{key}={nested_value(value)}' for key, value in arguments.items())})"
            for call in decoded.calls
            for name, arguments in call.items()
        ]
    except (StopIteration, RecursionError, ValueError) as error:  # an empty dict: BFCL's renderer fails
        return StepDecoding(error=f"{type(error).__name__}: {str(error)[:200]}")
    return StepDecoding(tuple(rendered))


def nested_value(value: Any) -> str:
    """BFCL's `parse_nested_value`: a dict whose values are all dicts is rendered as a call of its first key, another
    dict with quoted keys, anything else as its `repr`."""
    if isinstance(value, dict):
        if all(isinstance(item, dict) for item in value.values()):
            name = next(iter(value))  # fails on {} as in BFCL (its IndexError)
            inner = ", ".join(f"{key}={nested_value(item)}" for key, item in value[name].items())
            return f"{name}({inner})"
        return "{" + ", ".join(f"'{key}': {nested_value(item)}" for key, item in value.items()) + "}"
    return repr(value)


class NotLiteral(Exception):
    """An argument that is not a literal: executing it would run code."""


def literal_call(source: str, offered: Collection[str]) -> tuple[str, dict[str, Any]] | str:
    """A call's source text as (function name, keyword values) when it is a plain call of an offered function with
    literal arguments, else the error text BFCL's executor gives for it (its `SyntaxError` or `NameError` message,
    exactly as Python words it, found by parsing only). A function not offered is an undefined name."""
    source = bfcl_text(source)
    head = source.split("(")[0]  # BFCL's check, on its rewritten text (no method of its classes is a blocked name)
    if "." in head:
        head = head.split(".")[1]
    if head in BLOCKED:
        return f"Function call {head} is not allowed."
    source = source.lstrip(" \t")  # as `eval` strips them: " cd(...)" runs in BFCL
    try:
        with warnings.catch_warnings():  # "1()" or an invalid escape warns: nothing a model wrote is printed
            warnings.simplefilter("ignore")
            compile(source, "<string>", "eval", dont_inherit=True)  # compiled, never run: `eval`'s syntax errors
            tree = ast.parse(source, "<string>", mode="eval")
    except (SyntaxError, ValueError) as error:  # ValueError: a NUL in the text, as `eval` says it
        return str(error)
    except (RecursionError, MemoryError) as error:
        return f"{type(error).__name__}: {str(error)[:200]}"
    body = tree.body
    if not isinstance(body, ast.Call):
        return f"{type(body).__name__} is not a call"
    if isinstance(body.func, ast.Constant):
        return f"'{type(body.func.value).__name__}' object is not callable"
    root = body.func
    while isinstance(root, ast.Attribute | ast.Call | ast.Subscript):
        root = root.value if not isinstance(root, ast.Call) else root.func
    if not isinstance(body.func, ast.Name):  # a.b(...): its root name is undefined (not run if it were BFCL's)
        return f"name '{root.id}' is not defined" if isinstance(root, ast.Name) else "the call is not run"
    if body.func.id not in offered or not _as_written(source, body.func):  # a full-width name: Python reads it as
        return f"name '{body.func.id}' is not defined"  # ASCII, BFCL's mapping to its instance does not: undefined
    if body.args:
        return "positional arguments are not run"
    try:
        values = {str(keyword.arg): read_literal(keyword.value) for keyword in body.keywords}
    except (NameError, TypeError) as error:  # an undefined name; an unhashable key or set item
        return str(error)
    except (NotLiteral, RecursionError) as error:
        return f"an argument that is not a literal is not run: {str(error)[:200]}"
    return body.func.id, values


def read_literal(node: ast.expr) -> Any:
    """The value of a literal expression, as Python's evaluation would give it; a name is undefined (the `inf` and
    `nan` that `repr` writes for a non-finite float)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        raise NameError(f"name '{node.id}' is not defined")
    if isinstance(node, ast.List):
        return [read_literal(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(read_literal(item) for item in node.elts)
    if isinstance(node, ast.Set):
        return {read_literal(item) for item in node.elts}
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise NotLiteral("a ** in a dict")
        return {read_literal(key): read_literal(value) for key, value in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = read_literal(node.operand)
        if isinstance(operand, int | float | complex):  # a bool too: -True is -1
            return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):  # a complex literal: (1+2j)
        left, right = read_literal(node.left), read_literal(node.right)
        if isinstance(left, int | float) and isinstance(right, complex):
            return left + right if isinstance(node.op, ast.Add) else left - right
    raise NotLiteral(type(node).__name__)


def bfcl_text(source: str) -> str:
    """The call text as BFCL's executor hands it to `eval`, less the instance name it puts before each of its
    methods' names: every `name` followed by spaces and `(` loses the spaces (`"cd\\u00a0(...)"`, `"cd\\n(...)"` run
    there). Putting an instance name (letters, digits, `_` and a dot) before a name changes no token's extent, so
    this text parses as BFCL's does; and applied again it changes nothing."""
    return BFCL_CALL_NAME.sub(r"\1", source)


def _as_written(source: str, name: ast.Name) -> bool:
    """Whether the call's name is written as Python reads it (not a full-width or other NFKC twin of it)."""
    return source.split("(")[0].strip() == name.id


CALL_ID = re.compile(r"[A-Za-z0-9_.:/-]+")
"""A case id BFCL may build an instance's name from (it turns `-./:` into `_` and runs the name with `eval`)."""


def ground_truth_problem(source: str, known: Collection[str]) -> str | None:
    """Why a ground-truth call is not a plain call of a known function with literal arguments (BFCL's checker runs
    it with `eval`, after its rewriting: anything else in a data folder would be code run), or None."""
    source = bfcl_text(source).lstrip(" \t")
    try:
        body = ast.parse(source, "<string>", mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return f"not a call ({type(error).__name__})"
    if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and _as_written(source, body.func)):
        return "not a plain call of a function by its name"
    if body.func.id not in known:
        return f"{body.func.id!r} is not a function of the case's classes"
    if any(keyword.arg is None for keyword in body.keywords):
        return "a ** argument"
    try:
        for node in [*body.args, *(keyword.value for keyword in body.keywords)]:
            read_literal(node)
    except (NotLiteral, NameError, TypeError, RecursionError) as error:
        return f"an argument that is not a literal ({str(error)[:80]})"
    return None
