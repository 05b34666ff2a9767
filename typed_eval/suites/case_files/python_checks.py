"""The `python` assertion, as promptfoo runs it: an expression or a function body over `output` and `context`, or
`get_assert` of a `file://` script; what it returns read as promptfoo reads a GradingResult."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from typed_eval.suites.case_files.check_types import (
    Check,
    Graded,
    Output,
    json_text,
)
from typed_eval.suites.case_files.js import (
    JS_WHITESPACE,
    JsonError,
    js_string,
    json_parse,
)

__all__ = ["python_check", "python_script", "script_result"]


# --- python -----------------------------------------------------------------------------------------------


def _indent_of(code: str) -> str:
    """promptfoo's indent for a function body: the leading whitespace of the first line that has some before
    other text (JavaScript's `/^(?!\\s*$)\\s+/m`), else four spaces."""
    for line in re.split("[\n\r\u2028\u2029]", code):
        stripped = line.lstrip(JS_WHITESPACE)
        if stripped and stripped != line:
            return line[: len(line) - len(stripped)]
    return "    "


def python_script(code: str) -> str:
    """The module promptfoo writes for inline Python: `import json`, then `main(output, context)` returning the
    code when it has no newline (a YAML `|` block always ends in one), else the code as the function's body."""
    if "\n" not in code:
        return f"import json\n\ndef main(output, context):\n    return {code}\n"
    indent = _indent_of(code)
    body = "\n".join(indent + line for line in code.split("\n"))
    return f"import json\n\ndef main(output, context):\n{body}\n"


_JS_FLOAT = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def _parse_float(text: str) -> float:
    """JavaScript's `parseFloat`: the longest number at the start (after whitespace), else NaN."""
    found = _JS_FLOAT.match(text.lstrip(JS_WHITESPACE))
    if not found:
        return math.nan
    number = found.group(0)
    return float(number.replace("Infinity", "inf"))


def _is_grading_result(result: Mapping[str, Any]) -> bool:
    """promptfoo's `isGradingResult`: pass a boolean, score a number, reason a string (and optional fields typed)."""
    optional = {
        "namedScores": dict,
        "namedScoreWeights": dict,
        "tokensUsed": dict,
        "componentResults": list,
        "comment": str,
    }
    return (
        isinstance(result.get("pass"), bool)
        and isinstance(result.get("score"), int | float)
        and not isinstance(result.get("score"), bool)
        and isinstance(result.get("reason"), str)
        and all(k not in result or isinstance(result[k], t) for k, t in optional.items())
        and ("assertion" not in result or result["assertion"] is None or isinstance(result["assertion"], dict))
    )


def script_result(result: Any, inverse: bool, threshold: float | None) -> Graded:
    """A python assertion's returned value (as JSON carried it) as promptfoo reads it: a bool (or "true"/"false")
    is 1 or 0; a number is the score as it is (not clamped), passing above 0 (or at `threshold`); a dict must be a
    full GradingResult {pass, score, reason}. `not-python` flips the pass only: a number keeps its score."""
    lowered = result.lower() if isinstance(result, str) else None
    if isinstance(result, bool) or lowered in ("true", "false"):
        raw = result is True or lowered == "true"
        passed = raw != inverse
        return Graded(
            1.0 if passed else 0.0,
            "Assertion passed" if passed else f"Python code returned {'true' if raw else 'false'}",
            passed=passed,
        )
    if isinstance(result, str) and result.startswith("{"):
        try:
            result = json_parse(result)
        except JsonError as exc:
            raise ValueError(f"Invalid JSON: {exc} when parsing result: {result}") from None
    if isinstance(result, dict | list):
        mapped = dict(result) if isinstance(result, dict) else {}
        if "pass_" in mapped and "pass" not in mapped:
            mapped["pass"] = mapped["pass_"]
        if not _is_grading_result(mapped):
            raise ValueError(
                "Python assertion must return a boolean, number, or {pass, score, reason} object. Got "
                f"instead: {json_text(result)}"
            )
        raw, score, reason = mapped["pass"], float(mapped["score"]), mapped["reason"]
        if threshold is not None and score < threshold:
            raw = False
            note = f"Python score {js_string(score)} is less than threshold {js_string(threshold)}"
            reason = f"{note}: {reason}" if reason else note
        passed = raw != inverse
        flipped = "Assertion passed" if passed else f"Python code returned {str(raw).lower()}"
        shown = reason if passed == raw else flipped
        return Graded(score, shown, passed=passed)
    score = result if isinstance(result, int | float) else _parse_float(js_string(result))
    if math.isnan(score):
        raise ValueError(
            f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. "
            f"Instead got: {js_string(result)}"
        )
    if math.isinf(score):
        raise ValueError(f"Python assertion returned {js_string(score)}, not a finite score")
    raw = score > 0 if threshold is None else score >= threshold
    passed = raw != inverse
    return Graded(
        float(score), "Assertion passed" if passed else f"Python code returned {str(raw).lower()}", passed=passed
    )


_MODULES: dict[str, Any] = {}


def _script_function(path: str, name: str) -> Callable[..., Any]:
    """`name` (or `Class.method`) of the script at `path`, imported once, its folder on sys.path (as promptfoo's
    wrapper does)."""
    if path not in _MODULES:
        folder = str(Path(path).parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(Path(path).stem, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[path] = module
    target: Any = _MODULES[path]
    for part in name.split(".", 1):
        target = getattr(target, part)
    function: Callable[..., Any] = target
    return function


def python_check(spec: Mapping[str, Any], inverse: bool, threshold: float | None) -> Check:
    path = spec.get("path")
    if isinstance(path, str):
        name = str(spec.get("function") or "get_assert")

        def run(output: Any, context: Any) -> Any:
            function = _script_function(path, name)
            result = function(output, context)
            return asyncio.run(result) if inspect.iscoroutine(result) else result  # as promptfoo's wrapper does

    else:
        compiled = compile(python_script(str(spec["value"])), "<python assertion>", "exec")

        def run(output: Any, context: Any) -> Any:
            namespace: dict[str, Any] = {"__name__": "promptfoo_python_assertion"}
            exec(compiled, namespace)
            return namespace["main"](output, context)

    def check(output: Output, context: Mapping[str, Any]) -> Graded:
        try:
            returned = run(output.value, json.loads(json.dumps(dict(context))))
            result = json.loads(json.dumps(returned))  # what promptfoo's wrapper hands back: JSON of the result
            return script_result(result, inverse, threshold)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the code failing (or exiting): 0, as in promptfoo
            return Graded(0.0, f"Python code execution failed: {type(exc).__name__}: {exc}", passed=False)

    return check
