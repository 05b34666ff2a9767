"""promptfoo's assertions, by its names and meanings (promptfoo 0.123.1), each giving a pass, a score and a reason.

Why here: a case file (promptfoo's test-case format) judges each output by a list of assertions and must score
as promptfoo scores it. Every assertion is checked when the file is read (its type, value, regex, JSON schema,
Python code), so a bad one, or one that cannot be scored as promptfoo scores it, is a one-line error before any
request is sent. A check is a pure function of its spec (`check_of`), so it can run in a child process
(`typed_eval.suites.case_files.checks`) that is killed when it overruns its time limit.

`python` assertions run the case file's own code in that child (an expression or function body over `output`
and `context`, or `get_assert(output, context)` of a `file://` script), with promptfoo's globals (`json`).
`javascript` is out of scope (refused); `llm-rubric` asks a judge model (`typed_eval.suites.judge`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files.check_types import (
    ASSERTION_TYPES,
    JSON_CHECKS,
    KNOWN_KEYS,
    LIST_CHECKS,
    REFUSED_KEYS,
    TEXT_CHECKS,
    Assertion,
    CannotCheck,
    Check,
    Graded,
    Output,
    Rubric,
    json_text,
    load_value_file,
    load_yaml,
    read_value_bytes,
)
from typed_eval.suites.case_files.json_checks import (
    json_check,
)
from typed_eval.suites.case_files.python_checks import (
    python_check,
    python_script,
    script_result,
)
from typed_eval.suites.case_files.text_checks import list_check, text_check

__all__ = [
    "ASSERTION_TYPES",
    "Assertion",
    "CannotCheck",
    "Check",
    "Graded",
    "Output",
    "Rubric",
    "check_of",
    "compile_assertion",
    "json_text",
    "load_value_file",
    "load_yaml",
    "python_script",
    "script_result",
]

# --- reading one assertion ------------------------------------------------------------------------------


def check_of(spec: Mapping[str, Any]) -> Check:
    """The check a stored spec describes (TaskError when the spec is not one, said without where: see
    `compile_assertion`). Pure: the same spec gives the same check in any process."""
    kind = str(spec["type"])
    base_kind = kind.removeprefix("not-")
    inverse = base_kind != kind
    value = spec.get("value")
    if base_kind in TEXT_CHECKS:
        return text_check(base_kind, value, inverse)
    if base_kind in LIST_CHECKS:
        return list_check(base_kind, value, inverse)
    if base_kind in JSON_CHECKS:
        return json_check(base_kind, value, inverse)
    if base_kind == "python":
        return python_check(spec, inverse, spec.get("threshold"))
    raise TaskError(f"{kind} is not a deterministic check")


def _weight(raw: Mapping[str, Any], where: str) -> float:
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
        raise TaskError(f"{where}: weight must be a finite number of 0 or more, got {weight!r}")
    return float(weight)


def _python_spec(value: Any, render: Callable[[str], str], base: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"{where}: python needs Python code, or file://path.py, as its value")
    if not value.startswith("file://"):
        code = render(value)
        try:
            compile(python_script(code), f"<{where}>", "exec")
        except SyntaxError as exc:
            line = max((exc.lineno or 4) - 3, 1)  # the code's own line, after promptfoo's three lines before it
            raise TaskError(f"{where}: invalid Python: {exc.msg} (line {line})") from None
        return {"value": code}
    target = value.removeprefix("file://")
    file_part, _, name = target.partition(":")
    path = (base / file_part).resolve()
    if path.suffix != ".py":
        raise TaskError(f"{where}: {value}: a python assertion's file must be a .py file")
    try:
        source = read_value_bytes(path, value)
    except ValueError as exc:
        raise TaskError(f"{where}: {exc}") from None
    try:
        compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise TaskError(f"{where}: {value}: invalid Python: {exc.msg} (line {exc.lineno})") from None
    spec: dict[str, Any] = {"value": value, "path": str(path), "file_md5": hashlib.md5(source).hexdigest()}
    if name:
        spec["function"] = name
    return spec


def compile_assertion(raw: Any, *, render: Callable[[str], str], base: Path, where: str) -> Assertion:
    """One entry of a test's `assert` list, checked and ready (`render` fills a value's {{var}} placeholders, as
    promptfoo's Nunjucks does, in strings and in a list's strings, Python code included)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise TaskError(f"{where}: an assertion is a mapping with a type")
    kind: str = raw["type"]
    base_kind = kind.removeprefix("not-")
    inverse = base_kind != kind
    if base_kind == "javascript":
        raise TaskError(f"{where}: {kind} is out of scope: JavaScript is not run here (write it as a python assertion)")
    if base_kind not in ASSERTION_TYPES or (inverse and base_kind == "llm-rubric"):
        known = ", ".join(ASSERTION_TYPES)
        raise TaskError(f"{where}: unknown assertion type {kind!r} (known: {known}, and not-TYPE but not-llm-rubric)")
    for key in REFUSED_KEYS:
        if key in raw:
            raise TaskError(f"{where}: {key} is JavaScript, out of scope here")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise TaskError(f"{where}: assertion key {unknown[0]!r} is not supported")
    weight = _weight(raw, where)
    threshold = raw.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold)
    ):
        raise TaskError(f"{where}: threshold must be a finite number, got {threshold!r}")
    if threshold is not None and base_kind not in ("python", "llm-rubric"):
        raise TaskError(f"{where}: a threshold is read by python and llm-rubric assertions only")
    value = raw.get("value")
    spec: dict[str, Any] = {"type": kind}
    if base_kind == "python":
        spec.update(_python_spec(value, render, base, where))
    else:
        if "value" not in raw and base_kind not in JSON_CHECKS:
            raise TaskError(f"{where}: {kind} needs a value")
        if isinstance(value, str) and value.startswith("file://"):
            value = load_value_file(value, base, where)
        elif isinstance(value, str):
            value = render(value)
        elif isinstance(value, list):
            if any(isinstance(v, str) and v.startswith("file://") for v in value):
                raise TaskError(f"{where}: file:// items in a list value are not supported")
            value = [render(v) if isinstance(v, str) else v for v in value]
        spec["value"] = value
    spec["weight"] = weight
    if threshold is not None:
        spec["threshold"] = float(threshold)
    if isinstance(raw.get("config"), Mapping):
        spec["config"] = dict(raw["config"])
    if base_kind == "llm-rubric":
        if not isinstance(value, str) or not value.strip():
            raise TaskError(f"{where}: llm-rubric needs the rubric as its value")
    else:
        try:
            check_of(spec)
        except TaskError as exc:
            raise TaskError(f"{where}: {exc}") from None
    return Assertion(type=kind, weight=weight, spec=spec, threshold=spec.get("threshold"))


def judge_result(graded: Graded, threshold: float | None) -> Graded:
    """A judge's verdict with its pass: at the assertion's threshold, else at 0.5."""
    passed = graded.score >= (0.5 if threshold is None else threshold)
    return dataclasses.replace(graded, passed=passed)
