"""Prompt mode as BFCL's prompting handler runs it: the functions in its system prompt, the reply decoded from
`[func(a=1), ...]` text.

The system prompt is BFCL's default (`ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&
style=classic`): its persona and task sentences (joined without a space, as BFCL joins them), the instruction to
answer only with calls in the Python-like list format, its multi-turn sentence, and the docs (with BFCL's language
hints) as indented JSON. When the case opens with a system message, BFCL puts its prompt before that message's text.

BFCL decodes the reply with Python's parser and evaluates what is not a literal; here the same parse gives the
same values while nothing is ever evaluated: arithmetic on literals is folded by hand within size limits, and any
other expression inside an operation makes the reply undecodable, as it would be in BFCL unless it named a
builtin. Replies of the Java and JavaScript categories are read with tree-sitter, as BFCL reads them
(`source_calls`).
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from typed_eval.suites.bfcl.checker import Decoded, language_of
from typed_eval.suites.bfcl.source_calls import TreeSitterMissing, read_source_calls
from typed_eval.suites.bfcl.tools import hinted_functions

__all__ = ["TooLargeToCompute", "decode_prompt_reply", "prompt_messages", "system_prompt"]

PERSONA = "You are an expert in composing functions."
TASK = (
    "You are given a question and a set of possible functions. Based on the question, you will need to make one or"
    " more function/tool calls to achieve the purpose. If none of the functions can be used, point it out. If the"
    " given question lacks the parameters required by the function, also point it out."
)
CALL_FORMAT = (
    "You should only return the function calls in your response.\n\nIf you decide to invoke any of the function(s),"
    " you MUST put it in the format of [func_name1(params_name1=params_value1, params_name2=params_value2...),"
    " func_name2(params)].  You SHOULD NOT include any other text in the response."
)
MULTI_TURN = (
    "At each turn, you should try your best to complete the tasks requested by the user within the current turn."
    " Continue to output functions to call until you have fulfilled the user's request to the best of your ability."
    " Once you have no more functions to call, the system will consider the current turn complete and proceed to"
    " the next turn or task."
)
TOOLS_INTRO = "Here is a list of functions in json format that you can invoke.\n"
MAX_INT_BITS = 10_000
MAX_PRODUCT_BITS = 1_000_000
MAX_SEQUENCE = 1_000_000
MAX_FOLDED = 1_000_000
"""The most a folded expression's value, or any value made on the way, may hold (items, characters, 64-bit words)."""


def system_prompt(functions: Sequence[dict[str, Any]], category: str) -> str:
    """BFCL's default prompting system prompt for a case's functions."""
    docs = json.dumps(hinted_functions(functions, category), indent=4)
    return f"{PERSONA}{TASK}\n\n{CALL_FORMAT}\n\n{MULTI_TURN}\n\n{TOOLS_INTRO}{docs}\n"


def prompt_messages(
    question: Sequence[dict[str, Any]], functions: Sequence[dict[str, Any]], category: str
) -> list[dict[str, Any]]:
    """The messages of BFCL's prompt-mode request: its system prompt, merged into the case's own system message."""
    prompt = system_prompt(functions, category)
    messages = [dict(message) for message in question]
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{prompt}\n\n{messages[0]['content']}"
        return messages
    return [{"role": "system", "content": prompt}, *messages]


class Undecodable(Exception):
    """The reply is not a list of calls BFCL's decoder would accept."""


class TooLargeToCompute(Exception):
    """The reply's arithmetic would make a value too large to hold (BFCL's own decoder would fill the memory): the
    case's error, with this reason, not a verdict."""


def decode_prompt_reply(text: str, category: str = "simple_python") -> Decoded:
    """A prompt-mode reply to a case of `category` decoded as BFCL decodes it, executing nothing.

    Backticks, newlines and spaces around it are cut, brackets added when missing. A Java or JavaScript reply then
    loses its first and last character and is read by `source_calls`. A Python one loses single quotes around it;
    then it must parse as one call or a list of calls. Only keyword arguments count; a value is a literal, a name
    (its text), a call (its text, or a nested `{name: {...}}` when it has keyword arguments), a subscript (its
    text), a list, tuple or dict of values, a negated literal, or arithmetic on literals. Raises `TreeSitterMissing`
    for a Java or JavaScript reply when tree-sitter cannot be imported (a run checks this before posing).
    """
    stripped = text.strip("`\n ")
    if not stripped.startswith("["):
        stripped = "[" + stripped
    if not stripped.endswith("]"):
        stripped = stripped + "]"
    if language_of(category) != "python":
        try:
            return Decoded(calls=read_source_calls(stripped[1:-1], category))
        except TreeSitterMissing:
            raise
        except TooLargeToCompute:
            raise
        except Exception as error:  # whatever a model sends, the verdict is "undecodable", never a crash
            return Decoded(error=f"{type(error).__name__}: {str(error)[:200]}")
    source = stripped.strip().strip("'")
    try:
        body = ast.parse(source, mode="eval").body
        if isinstance(body, ast.Call):
            return Decoded(calls=[read_call(body)])
        if not isinstance(body, ast.List | ast.Tuple | ast.Set):
            raise Undecodable(f"expected a list of calls, got {type(body).__name__}")
        calls = []
        for element in body.elts:
            if not isinstance(element, ast.Call):
                raise Undecodable(f"expected a call, got {type(element).__name__}")
            calls.append(read_call(element))
        return Decoded(calls=calls)
    except TooLargeToCompute:
        raise
    except Exception as error:  # whatever a model sends, the verdict is "undecodable", never a crash
        return Decoded(error=f"{type(error).__name__}: {str(error)[:200]}")


def read_call(node: ast.Call) -> dict[str, dict[Any, Any]]:
    """`{dotted.name: {keyword: value}}`; positional arguments are dropped, as BFCL drops them."""
    parts = []
    part: ast.expr = node.func
    while isinstance(part, ast.Attribute):
        parts.append(part.attr)
        part = part.value
    if isinstance(part, ast.Name):
        parts.append(part.id)
    arguments: dict[Any, Any] = {}
    for keyword in node.keywords:
        arguments[keyword.arg] = read_value(keyword.value)
    return {".".join(reversed(parts)): arguments}


def read_value(node: ast.expr) -> Any:
    """An argument's value, as BFCL's decoder reads it."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.operand, ast.Constant):  # BFCL negates `operand.value`, whatever the operator
            raise Undecodable("an operator on something other than a literal")
        literal: Any = node.operand.value
        return -literal
    if isinstance(node, ast.List):
        return [read_value(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        entries = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise Undecodable("a ** inside a dict")
            entries[read_value(key)] = read_value(value)
        return entries
    if isinstance(node, ast.BinOp):
        return fold(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return read_call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Tuple):
        return tuple(read_value(element) for element in node.elts)
    if isinstance(node, ast.Subscript):
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    raise Undecodable(f"Unsupported AST type: {type(node).__name__}")


BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}


def fold(node: ast.expr) -> Any:
    """The value of an expression made only of literals and operators (what Python's evaluation of it gives),
    refusing any step whose result would be large: the size of every value made is bounded, counted as what it holds
    written out (`[[0] * 1000] * 1000` holds a million items, though it shares one list), before it is made."""
    return _folded(node)[0]


def _folded(node: ast.expr) -> tuple[Any, int]:
    """The value and its size (`_size`), each intermediate refused past `MAX_FOLDED`."""
    if isinstance(node, ast.Constant):
        return node.value, _size(node.value)
    if isinstance(node, ast.List | ast.Tuple):
        pairs = [_folded(element) for element in node.elts]
        items = [value for value, _ in pairs]
        return (items if isinstance(node, ast.List) else tuple(items)), _bounded(1 + sum(size for _, size in pairs))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        value, size = _folded(node.operand)
        return UNARY[type(node.op)](value), size
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        (left, left_size), (right, right_size) = _folded(node.left), _folded(node.right)
        guard(node.op, left, right)
        predicted = _bounded(_predicted(node.op, left, left_size, right, right_size))
        value = BINARY[type(node.op)](left, right)
        return value, _bounded(_size(value, predicted))
    raise Undecodable("arithmetic on something other than literals")


def _size(value: Any, items: int = 1) -> int:
    """A value's size: a string's or bytes' length, an integer's 64-bit words, else `items` (for a sequence made by
    an operator: what it was predicted to hold)."""
    if isinstance(value, str | bytes):
        return max(1, len(value))
    if isinstance(value, int):
        return max(1, value.bit_length() // 64)
    return items


def _predicted(op: ast.operator, left: Any, left_size: int, right: Any, right_size: int) -> int:
    """What an operator's result will hold, known before it is made: a repetition its operand times the count, a
    `%` formatting its text, arguments and every width or precision it may be given, else its operands."""
    if isinstance(op, ast.Mult):
        for sequence, size, count in ((left, left_size, right), (right, right_size, left)):
            if isinstance(sequence, str | bytes | list | tuple) and isinstance(count, int):
                return size * max(count, 0)
    if isinstance(op, ast.Mod) and isinstance(left, str | bytes):
        arguments = right if isinstance(right, tuple) else (right,)
        widths = sum(abs(a) for a in arguments if isinstance(a, int) and not isinstance(a, bool))
        written = sum(int(digits) for digits in re.findall(r"\d+", str(left)))
        return left_size + 32 * right_size + widths + written
    return left_size + right_size


def _bounded(size: int) -> int:
    if size > MAX_FOLDED:
        raise TooLargeToCompute(f"the reply's arithmetic makes a value of over {MAX_FOLDED:,} items")
    return size


def guard(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse powers, shifts and repetitions whose result would be huge."""
    both_ints = isinstance(left, int) and isinstance(right, int)
    if isinstance(op, ast.Pow) and both_ints and right > 0 and right * abs(left).bit_length() > MAX_INT_BITS:
        raise Undecodable("a power too large to compute")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > MAX_INT_BITS:
        raise Undecodable("a shift too large to compute")
    if isinstance(op, ast.Mult):
        if both_ints and left.bit_length() + right.bit_length() > MAX_PRODUCT_BITS:
            raise Undecodable("a product too large to compute")
        for sequence, count in ((left, right), (right, left)):
            sized = isinstance(sequence, str | bytes | list | tuple) and isinstance(count, int)
            if sized and len(sequence) * count > MAX_SEQUENCE:
                raise Undecodable("a repetition too large to compute")
