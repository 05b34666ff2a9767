"""The `calculate` tool of τ-bench's airline and retail domains (Python's `eval` of digits and operators) kept from
raising a number to a power that never ends (`9**9**9**9`): the one place the suite changes a τ-bench tool."""

from __future__ import annotations

import ast
import functools
from typing import Any

__all__ = ["MAX_EXPONENT", "bounded_calculator"]

MAX_EXPONENT = 1_000
"""The largest power `calculate` is asked to raise to: any answer needs far less, and `9**9**9**9` never ends."""


def bounded_calculator(toolkit: Any) -> Any:
    """The toolkit with its `calculate` tool (airline, retail: Python's `eval` of digits and operators) refusing a
    power whose exponent is not a number up to `MAX_EXPONENT`, or whose base holds a power, as a tool error; every
    other expression is τ-bench's own `calculate`."""
    own = getattr(toolkit, "calculate", None)
    if own is None:
        return toolkit

    @functools.wraps(own)
    def calculate(expression: str) -> str:
        if "**" in str(expression):
            _check_powers(str(expression))
        return str(own(expression))

    toolkit.calculate = calculate
    return toolkit


def _check_powers(expression: str) -> None:
    """Raise on a power to a power, or to an exponent over `MAX_EXPONENT` (an exponent with no power in it is worked
    out here from its numbers and operators, never evaluated as code)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return  # τ-bench's own `calculate` says what is wrong with it
    powers = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow)]
    for node in powers:
        nested = any(inner is not node and inner in powers for inner in ast.walk(node))
        exponent = None if nested else _arithmetic(node.right)
        if exponent is None or abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"the expression raises to a power over {MAX_EXPONENT}, or a power to a power")


def _arithmetic(node: ast.AST) -> float | None:
    """A tree of numbers, `+ - * /` and signs worked out (None: anything else, or a division by zero)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _arithmetic(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        operations = {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}
        return operations.get(type(node.op), left / right if right else None)
    return None
