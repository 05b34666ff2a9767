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

import asyncio
import dataclasses
import hashlib
import importlib.util
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from typed_eval.core.errors import TaskError
from typed_eval.schemas import Cost, TokenUsage
from typed_eval.suites.case_files import yaml12
from typed_eval.suites.case_files.js import (
    JS_WHITESPACE,
    JsonError,
    comma_separated,
    deep_strict_equal,
    js_string,
    json_parse,
    json_stringify,
)
from typed_eval.suites.case_files.json_schemas import SchemaProblem, compile_schema
from typed_eval.suites.case_files.jsregex import JsRegexError, translate, utf16_units

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

_TEXT_CHECKS = ("equals", "contains", "icontains", "starts-with", "regex")
_LIST_CHECKS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
_JSON_CHECKS = ("is-json", "contains-json")
ASSERTION_TYPES: tuple[str, ...] = (*_TEXT_CHECKS, *_LIST_CHECKS, *_JSON_CHECKS, "python", "llm-rubric")
"""The types a case file may use; all but `llm-rubric` also as `not-TYPE` (the pass inverted)."""

_REFUSED_KEYS = ("transform", "contextTransform")
"""Assertion keys that would change what is checked with JavaScript: refused, never silently ignored."""
_KNOWN_KEYS = frozenset({"type", "value", "weight", "threshold", "config", "metric", "description", *_REFUSED_KEYS})


@dataclass(frozen=True)
class Output:
    """A model's output as assertions see it: the text (JSON, compact as JavaScript writes it, for a structured
    output) and the value itself (the text, or the parsed object handed to `python`)."""

    text: str
    value: Any


def load_yaml(text: str) -> Any:
    """YAML 1.2 as promptfoo reads it (`typed_eval.suites.case_files.yaml12`); YamlError in one line."""
    return yaml12.load(text)


def json_text(value: Any) -> str:
    """A value as JavaScript's JSON.stringify writes it (compact), which is what promptfoo compares text with."""
    return json_stringify(value)


@dataclass(frozen=True)
class Graded:
    """One assertion's result: a score (a python assertion's may lie outside [0, 1]), why, and whether it passed."""

    score: float
    reason: str
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Anything else worth storing with the result (a judge's name)."""
    usage: TokenUsage | None = None
    """What a judge's requests used, and cost: counted with the sample."""
    cost: Cost | None = None
    passed: bool | None = None
    """None: the score decides (a judge's verdict passes at 0.5 or more, or at the assertion's threshold)."""


class Rubric(Protocol):
    """An LLM judge: grades a text against a rubric, giving a score in [0, 1] and its reason."""

    async def __call__(self, rubric: str, output: str) -> Graded: ...


class CannotCheck(Exception):
    """A reply the check cannot evaluate (nested deeper than Python reads): the assertion scores 0 with why."""


Check = Callable[[Output, Mapping[str, Any]], Graded]
"""A deterministic check of an output; the mapping is promptfoo's assertion context (prompt, vars, test, config)."""


@dataclass(frozen=True)
class Assertion:
    """A checked assertion, ready to grade outputs."""

    type: str
    weight: float
    spec: dict[str, Any]
    """What the case stores and a check is rebuilt from: type, value (rendered), weight (and a script's path and
    MD5, a threshold), JSON-compatible."""
    threshold: float | None = None


def load_value_file(reference: str, base: Path, where: str) -> Any:
    """A `file://` value: JSON and YAML files parsed, anything else as text; relative to the case file."""
    path = (base / reference.removeprefix("file://")).resolve()
    if path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts"):
        raise TaskError(f"{where}: {reference}: a script is a value only of a python assertion")
    text = read_text(path, reference, where)
    if path.suffix == ".json":
        try:
            return json_parse(text)
        except JsonError as exc:
            raise TaskError(f"{where}: {reference} is not valid JSON: {exc}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            return load_yaml(text)
        except yaml12.YamlError as exc:
            raise TaskError(f"{where}: {reference} is not valid YAML: {exc}") from None
    return text


def read_text(path: Path, reference: str, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{where}: cannot read {reference}: {getattr(exc, 'strerror', None) or exc}") from None


# --- deterministic checks -------------------------------------------------------------------------------------


def _verdict(passed: bool, failure: str) -> Graded:
    """promptfoo's result of a plain check: 1 when it passes, else 0 with why."""
    return Graded(1.0 if passed else 0.0, "Assertion passed" if passed else failure, passed=passed)


def _not(inverse: bool) -> str:
    return "not " if inverse else ""


def _is_contains_value(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (
        isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    )


def _text_check(kind: str, value: Any, inverse: bool) -> Check:
    if kind == "equals":
        if isinstance(value, dict | list) or value is None:
            expected_json = value

            def equals_json(output: Output, _: Mapping[str, Any]) -> Graded:
                try:
                    same = deep_strict_equal(expected_json, json_parse(output.text))
                except JsonError as exc:
                    if "deeply" in str(exc):
                        raise CannotCheck(f"the reply is JSON {exc}") from None
                    same = False
                return _verdict(same != inverse, f"Expected output {output.text!r} to {_not(inverse)}equal "
                                f"{json_text(expected_json)}")  # fmt: skip

            return equals_json
        expected = js_string(value)
        return lambda output, _: _verdict((output.text == expected) != inverse,
                                          f"Expected output to {_not(inverse)}equal {expected!r}")  # fmt: skip
    if kind in ("contains", "icontains"):
        if not _is_contains_value(value):
            raise TaskError(f"{kind} needs a string or number value")
        text = js_string(value)
        if kind == "contains":
            return lambda output, _: _verdict((text in output.text) != inverse,
                                              f"Expected output to {_not(inverse)}contain {text!r}")  # fmt: skip
        lowered = text.lower()
        return lambda output, _: _verdict((lowered in output.text.lower()) != inverse,
                                          f"Expected output to {_not(inverse)}contain {text!r}")  # fmt: skip
    if not isinstance(value, str) or not value:
        raise TaskError(f"{kind} needs a string value")
    if kind == "starts-with":
        return lambda output, _: _verdict(output.text.startswith(value) != inverse,
                                          f"Expected output to {_not(inverse)}start with {value!r}")  # fmt: skip
    try:
        pattern = translate(value)
    except JsRegexError as exc:
        raise TaskError(f"regex /{value}/: {exc}") from None
    return lambda output, _: _verdict((pattern.search(utf16_units(output.text)) is not None) != inverse,
                                      f"Expected output to {_not(inverse)}match regex {value!r}")  # fmt: skip


def _list_check(kind: str, value: Any, inverse: bool) -> Check:
    if isinstance(value, str) and value:
        try:
            value = comma_separated(value)
        except ValueError as exc:
            raise TaskError(f"{kind}'s comma-separated value has {exc}") from None
    if not isinstance(value, list):
        raise TaskError(f"{kind} needs a list, or a comma-separated string")
    wanted = [js_string(v) for v in value]
    fold = kind.startswith("i")
    every = kind.endswith("-all")

    def check(output: Output, _: Mapping[str, Any]) -> Graded:
        text = output.text.lower() if fold else output.text
        missing = [w for w in wanted if (w.lower() if fold else w) not in text]
        passed = not missing if every else len(missing) < len(wanted)
        how = f"all of {wanted}, missing {missing}" if every else f"one of {wanted}"
        return _verdict(passed != inverse, f"Expected output to {_not(inverse)}contain {how}")

    return check


def _slash_comments_as_hash(text: str) -> str:
    """promptfoo's rewrite of `// comments` in JSON-like text into YAML's `#` before it reads it as YAML: outside
    quotes, and not in a token holding `://`; `//` becomes `#`, `////` `##`."""
    lines = []
    for line in text.split("\n"):
        out: list[str] = []
        state = "normal"
        i = 0
        rewritten: str | None = None
        while i < len(line):
            c = line[i]
            after = line[i + 1] if i + 1 < len(line) else ""
            before = line[i - 1] if i > 0 else ""
            if state == "normal":
                if c == "'" and not (before.isascii() and before.isalpha()):
                    state = "single"
                elif c == '"':
                    state = "double"
                elif c == "/" and after == "/":
                    start = 0
                    for j in range(i - 1, -1, -1):
                        if line[j] in JS_WHITESPACE:
                            start = j + 1
                            break
                    if "://" in line[start : i + 2]:
                        out.append(c)
                        break
                    slashes = 2
                    while i + slashes < len(line) and line[i + slashes] == "/":
                        slashes += 1
                    rewritten = "".join(out) + "#" * (slashes // 2) + line[i + slashes :]
                    break
                out.append(c)
            elif state == "single":
                out.append(c)
                if c == "'" and not _escaped(line, i) and not (after.isascii() and after.isalpha()):
                    state = "normal"
            else:
                out.append(c)
                if c == '"' and not _escaped(line, i):
                    state = "normal"
            i += 1
        lines.append(rewritten if rewritten is not None else "".join(out))
    return "\n".join(lines)


def _escaped(line: str, index: int) -> bool:
    count = 0
    while index - count - 1 >= 0 and line[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


_MAX_JSON_LENGTH = 100_000


def json_objects(text: str) -> list[Any]:
    """The objects promptfoo's contains-json finds in a text (its `extractJsonObjects`): from each `{`, counting
    braces, each balanced span (or the rest, closed with the braces it lacks) read as lenient YAML."""
    found: list[Any] = []
    i = 0
    size = len(text)
    while i < size:
        if text[i] != "{":
            i += 1
            continue
        opened, closed = 1, 0
        j = i + 1
        limit = min(i + _MAX_JSON_LENGTH, size)
        while j < limit and opened > closed:
            if text[j] == "{":
                opened += 1
            elif text[j] == "}":
                closed += 1
            j += 1
            if opened == closed or j == size or j == i + _MAX_JSON_LENGTH:
                candidate = text[i:j] + "}" * max(opened - closed, 0)
                try:
                    parsed = yaml12.load_lenient(_slash_comments_as_hash(candidate))
                except yaml12.YamlError as exc:
                    if "deeply" in str(exc):
                        raise CannotCheck(f"the reply holds JSON {exc}") from None
                    if opened == closed:
                        break
                    continue
                if isinstance(parsed, dict | list):
                    found.append(parsed)
                    i = j - 1
                    break
        i += 1
    return found


def _schema(value: Any) -> Any:
    """A check's JSON schema: an object, or YAML/JSON text of one (promptfoo reads the text as YAML)."""
    if isinstance(value, str):
        try:
            value = load_yaml(value)
        except yaml12.YamlError as exc:
            raise TaskError(f"its value is not a JSON schema: {exc}") from None
    try:
        return compile_schema(value)
    except SchemaProblem as exc:
        raise TaskError(str(exc)) from None


def _schema_errors(validator: Any, value: Any) -> str | None:
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    except RecursionError:
        raise CannotCheck("the reply is JSON nested too deeply to check against the schema") from None
    if not errors:
        return None
    return "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'output'}: {e.message}" for e in errors[:3])


def _json_check(kind: str, value: Any, inverse: bool) -> Check:
    validator = _schema(value) if value not in (None, "") else None

    def is_json(output: Output, _: Mapping[str, Any]) -> Graded:
        try:
            parsed = json_parse(output.text)
        except JsonError as exc:
            if "deeply" in str(exc):
                raise CannotCheck(f"the reply is JSON {exc}") from None
            return _verdict(inverse, f"Expected output to {_not(inverse)}be valid JSON")
        if validator is None:
            return _verdict(not inverse, f"Expected output to {_not(inverse)}be valid JSON")
        problems = _schema_errors(validator, parsed)
        if (problems is None) == inverse:  # promptfoo: a schema failure scores 0 with Ajv's errors
            failure = f"JSON does not conform to the provided schema. Errors: {problems}"
            return Graded(0.0, "Output is JSON that conforms to the provided schema" if inverse else failure,
                          passed=False)  # fmt: skip
        return _verdict(True, "")

    def contains_json(output: Output, _: Mapping[str, Any]) -> Graded:
        objects = json_objects(output.text)
        passed = not objects if inverse else bool(objects)
        failure = f"Expected output to {_not(inverse)}contain valid JSON"
        if validator is not None:
            for candidate in objects:
                problems = _schema_errors(validator, candidate)
                passed = (problems is not None) if inverse else problems is None
                if problems is None:
                    if inverse:
                        failure = "Output contains JSON conforming to the provided schema"
                    break
                failure = f"JSON does not conform to the provided schema. Errors: {problems}"
        return _verdict(passed, failure)

    return is_json if kind == "is-json" else contains_json


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
    optional = {"namedScores": dict, "namedScoreWeights": dict, "tokensUsed": dict, "componentResults": list,
                "comment": str}  # fmt: skip
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
        return Graded(1.0 if passed else 0.0, "Assertion passed" if passed else
                      f"Python code returned {'true' if raw else 'false'}", passed=passed)  # fmt: skip
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
            raise ValueError("Python assertion must return a boolean, number, or {pass, score, reason} object. Got "
                             f"instead: {json_text(result)}")  # fmt: skip
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
        raise ValueError(f"Python assertion must return a boolean, number, or {{pass, score, reason}} object. "
                         f"Instead got: {js_string(result)}")  # fmt: skip
    if math.isinf(score):
        raise ValueError(f"Python assertion returned {js_string(score)}, not a finite score")
    raw = score > 0 if threshold is None else score >= threshold
    passed = raw != inverse
    return Graded(float(score), "Assertion passed" if passed else f"Python code returned {str(raw).lower()}",
                  passed=passed)  # fmt: skip


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


def _python_check(spec: Mapping[str, Any], inverse: bool, threshold: float | None) -> Check:
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


# --- reading one assertion ------------------------------------------------------------------------------


def check_of(spec: Mapping[str, Any]) -> Check:
    """The check a stored spec describes (TaskError when the spec is not one, said without where: see
    `compile_assertion`). Pure: the same spec gives the same check in any process."""
    kind = str(spec["type"])
    base_kind = kind.removeprefix("not-")
    inverse = base_kind != kind
    value = spec.get("value")
    if base_kind in _TEXT_CHECKS:
        return _text_check(base_kind, value, inverse)
    if base_kind in _LIST_CHECKS:
        return _list_check(base_kind, value, inverse)
    if base_kind in _JSON_CHECKS:
        return _json_check(base_kind, value, inverse)
    if base_kind == "python":
        return _python_check(spec, inverse, spec.get("threshold"))
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
        source = path.read_bytes()
    except OSError as exc:
        raise TaskError(f"{where}: cannot read {value}: {exc.strerror or exc}") from None
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
    for key in _REFUSED_KEYS:
        if key in raw:
            raise TaskError(f"{where}: {key} is JavaScript, out of scope here")
    unknown = sorted(set(raw) - _KNOWN_KEYS)
    if unknown:
        raise TaskError(f"{where}: assertion key {unknown[0]!r} is not supported")
    weight = _weight(raw, where)
    threshold = raw.get("threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                                  or not math.isfinite(threshold)):  # fmt: skip
        raise TaskError(f"{where}: threshold must be a finite number, got {threshold!r}")
    if threshold is not None and base_kind not in ("python", "llm-rubric"):
        raise TaskError(f"{where}: a threshold is read by python and llm-rubric assertions only")
    value = raw.get("value")
    spec: dict[str, Any] = {"type": kind}
    if base_kind == "python":
        spec.update(_python_spec(value, render, base, where))
    else:
        if "value" not in raw and base_kind not in _JSON_CHECKS:
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
