"""promptfoo's assertions, by its names and meanings, each giving a result in [0, 1] with its reason.

Why here: a case file (promptfoo's test-case format) judges each output by a list of assertions, and a test's
result R is their weighted mean. Every assertion is checked when the file is read (its type, value, regex,
JSON schema, Python code), so a bad one is a one-line error before any request is sent.

`python` assertions run the case file's own code in this process (an expression or function body over
`output` and `context`, or `get_assert(output, context)` of a `file://` script), as a suite `.py` file does.
`javascript` is out of scope (refused); `llm-rubric` asks a judge model (`farel_eval.suites.judge`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import math
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from jsonschema import Draft202012Validator, SchemaError, ValidationError, validators

from farel_eval.errors import TaskError
from farel_eval.schemas import Cost, TokenUsage

__all__ = [
    "ASSERTION_TYPES",
    "Assertion",
    "Graded",
    "Grader",
    "Output",
    "Rubric",
    "SchemaCheck",
    "compile_assertion",
    "json_text",
    "load_value_file",
    "load_yaml",
]

_TEXT_CHECKS = ("equals", "contains", "icontains", "starts-with", "regex")
_LIST_CHECKS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
_JSON_CHECKS = ("is-json", "contains-json")
ASSERTION_TYPES: tuple[str, ...] = (*_TEXT_CHECKS, *_LIST_CHECKS, *_JSON_CHECKS, "python", "llm-rubric")
"""The types a case file may use; all but `llm-rubric` also as `not-TYPE` (the result inverted)."""

_REFUSED_OPTIONS = ("transform",)
"""Assertion keys that would change what is checked with JavaScript: refused, never silently ignored."""


@dataclass(frozen=True)
class Output:
    """A model's output as assertions see it: the text (JSON, compact as JavaScript writes it, for a structured
    output) and the value itself (the text, or the parsed object handed to `python`)."""

    text: str
    value: Any


class _DatesAsText(yaml.SafeLoader):
    """YAML read as a case file means it: `2024-01-01` is the text written (JSON, and outputs, have no dates)."""


_DatesAsText.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """Safe YAML (no code, no objects), dates kept as the text written."""
    return yaml.load(text, Loader=_DatesAsText)


def json_text(value: Any) -> str:
    """A value as JavaScript's JSON.stringify writes it (compact), which is what promptfoo compares text with."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Graded:
    """One assertion's result: a score in [0, 1] and why."""

    score: float
    reason: str
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Anything else worth storing with the result (a judge's name)."""
    usage: TokenUsage | None = None
    """What a judge's requests used, and cost: counted with the sample."""
    cost: Cost | None = None


class Rubric(Protocol):
    """An LLM judge: grades a text against a rubric, giving a score in [0, 1] and its reason."""

    async def __call__(self, rubric: str, output: str) -> Graded: ...


Grader = Callable[[Output, Mapping[str, Any], Rubric | None], Graded | Awaitable[Graded]]
"""Checks an output; the mapping is promptfoo's assertion context (prompt, vars, test, config)."""


@dataclass(frozen=True)
class Assertion:
    """A checked assertion, ready to grade outputs."""

    type: str
    weight: float
    spec: dict[str, Any]
    """What the case stores: type, value (rendered), weight (and a script's MD5), JSON-compatible."""
    grade: Grader


class SchemaCheck:
    """A JSON schema, checked when read, that validates values (jsonschema, the draft the schema names)."""

    def __init__(self, schema: Any, where: str) -> None:
        if not isinstance(schema, dict):
            raise TaskError(f"{where}: a JSON schema must be an object, got {type(schema).__name__}")
        cls = validators.validator_for(schema, default=Draft202012Validator)
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            raise TaskError(f"{where}: not a valid JSON schema: {exc.message}") from None
        self.schema = schema
        self._validator = cls(schema)

    def errors(self, value: Any) -> list[ValidationError]:
        return sorted(self._validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))

    def problems(self, value: Any) -> str | None:
        """The schema's complaints about `value`, in one line; None when it conforms."""
        found = self.errors(value)
        if not found:
            return None
        return "; ".join(f"{describe_path(e.absolute_path)}: {e.message}" for e in found[:3])


def describe_path(path: Sequence[Any]) -> str:
    return ".".join(map(str, path)) or "output"


def load_value_file(reference: str, base: Path, where: str) -> Any:
    """A `file://` value: JSON and YAML files parsed, anything else as text; relative to the case file."""
    path = (base / reference.removeprefix("file://")).resolve()
    if path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts"):
        raise TaskError(f"{where}: {reference}: a script is a value only of a python assertion")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{where}: cannot read {reference}: {getattr(exc, 'strerror', None) or exc}") from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskError(f"{where}: {reference} is not valid JSON: {exc}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            return load_yaml(text)
        except yaml.YAMLError as exc:
            raise TaskError(f"{where}: {reference} is not valid YAML: {' '.join(str(exc).split())}") from None
    return text


# --- deterministic checks ---------------------------------------------------------------------------------


def _verdict(passed: bool, inverse: bool, expectation: str) -> Graded:
    """1 or 0 (inverted for `not-`), with promptfoo's kind of reason."""
    if passed != inverse:
        return Graded(1.0, "assertion passed")
    return Graded(0.0, f"expected output to {'not ' if inverse else ''}{expectation}")


def _js_string(value: Any) -> str:
    """A YAML scalar as JavaScript's String() writes it (`4.0` -> `4`, `true` -> `true`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _text_check(kind: str, value: Any, inverse: bool, where: str) -> Grader:
    if kind == "equals":
        if value is None:
            raise TaskError(f"{where}: equals needs a value")
        if isinstance(value, dict | list):
            expected_json = value

            def equals_json(output: Output, _: Mapping[str, Any], __: Rubric | None) -> Graded:
                try:
                    same = json.loads(output.text) == expected_json
                except json.JSONDecodeError:
                    same = False
                return _verdict(same, inverse, f"equal {json_text(expected_json)}")

            return equals_json
        expected = _js_string(value)
        return lambda output, _, __: _verdict(output.text == expected, inverse, f"equal {expected!r}")
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        raise TaskError(f"{where}: {kind} needs a string or number value")
    text = _js_string(value)
    if kind == "contains":
        return lambda output, _, __: _verdict(text in output.text, inverse, f"contain {text!r}")
    if kind == "icontains":
        lowered = text.lower()
        return lambda output, _, __: _verdict(lowered in output.text.lower(), inverse, f"contain {text!r} (any case)")
    if kind == "starts-with":
        return lambda output, _, __: _verdict(output.text.startswith(text), inverse, f"start with {text!r}")
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise TaskError(f"{where}: invalid regex {text!r}: {exc}") from None
    return lambda output, _, __: _verdict(pattern.search(output.text) is not None, inverse, f"match /{text}/")


def _list_check(kind: str, value: Any, inverse: bool, where: str) -> Grader:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not value or any(isinstance(v, dict | list) for v in value):
        raise TaskError(f"{where}: {kind} needs a list of strings (or one comma-separated string)")
    wanted = [_js_string(v) for v in value]
    fold = kind.startswith("i")
    every = kind.endswith("-all")

    def check(output: Output, _: Mapping[str, Any], __: Rubric | None) -> Graded:
        text = output.text.lower() if fold else output.text
        found = [w for w in wanted if (w.lower() if fold else w) in text]
        passed = len(found) == len(wanted) if every else bool(found)
        return _verdict(passed, inverse, f"contain {'all' if every else 'one'} of {wanted}")

    return check


def json_objects(text: str) -> list[Any]:
    """Every JSON object embedded in a text, in order (what promptfoo's contains-json looks for)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found


def _json_check(kind: str, value: Any, inverse: bool, where: str) -> Grader:
    if isinstance(value, str) and value.strip():
        try:
            value = load_yaml(value)
        except yaml.YAMLError:
            raise TaskError(f"{where}: {kind}'s value must be a JSON schema") from None
    schema = SchemaCheck(value, where) if value not in (None, "") else None

    def check(output: Output, _: Mapping[str, Any], __: Rubric | None) -> Graded:
        if kind == "is-json":
            try:
                candidates = [json.loads(output.text)]
            except json.JSONDecodeError:
                candidates = []
        else:
            candidates = json_objects(output.text)
        if not candidates:
            return _verdict(False, inverse, "be valid JSON" if kind == "is-json" else "contain JSON")
        if schema is None:
            return _verdict(True, inverse, "be JSON")
        problems = [schema.problems(candidate) for candidate in candidates]
        if any(p is None for p in problems):
            return _verdict(True, inverse, "hold JSON conforming to the schema")
        return _verdict(False, inverse, f"hold JSON conforming to the schema ({problems[0]})")

    return check


# --- python -----------------------------------------------------------------------------------------------

_SCRIPTS: dict[Path, Any] = {}


def _function_body(code: str) -> str:
    """promptfoo's rule: one line is an expression returned; several lines are a function body."""
    if "\n" not in code.strip():
        return f"def main(output, context):\n    return {code.strip()}\n"
    found = re.search(r"^(?!\s*$)[ \t]+", code, flags=re.MULTILINE)
    indent = found.group(0) if found else "    "
    return "def main(output, context):\n" + "\n".join(indent + line for line in code.splitlines()) + "\n"


def _inline_python(code: str, where: str) -> Callable[..., Any]:
    source = _function_body(code)
    try:
        compiled = compile(source, f"<{where}>", "exec")
    except SyntaxError as exc:
        raise TaskError(f"{where}: invalid Python: {exc.msg} (line {exc.lineno})") from None
    namespace: dict[str, Any] = {"json": json, "math": math, "re": re}
    exec(compiled, namespace)
    function: Callable[..., Any] = namespace["main"]
    return function


def _script(reference: str, base: Path, where: str) -> tuple[Callable[..., Any], str]:
    """`file://path.py` (its `get_assert`) or `file://path.py:name`, loaded once; and the file's MD5."""
    target = reference.removeprefix("file://")
    file_part, _, name = target.partition(":") if target.count(":") == 1 else (target, "", "")
    path = (base / file_part).resolve()
    if path.suffix != ".py":
        raise TaskError(f"{where}: {reference}: a python assertion's file must be a .py file")
    try:
        digest = hashlib.md5(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise TaskError(f"{where}: cannot read {reference}: {exc.strerror or exc}") from None
    if path not in _SCRIPTS:
        module_name = f"_farel_eval_assert_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise TaskError(f"{where}: cannot load {reference}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise TaskError(f"{where}: {reference} failed to load: {type(exc).__name__}: {exc}") from None
        _SCRIPTS[path] = module
    function = getattr(_SCRIPTS[path], name or "get_assert", None)
    if not callable(function):
        raise TaskError(f"{where}: {reference} defines no function {name or 'get_assert'}(output, context)")
    return function, digest


def _number(value: float) -> float:
    if math.isnan(value):
        raise ValueError("the score is NaN")
    return min(max(float(value), 0.0), 1.0)


def python_result(result: Any) -> Graded:
    """A python assertion's return value as a result: a bool is 0 or 1, a number is clamped to [0, 1], and a
    dict (or dataclass) is promptfoo's GradingResult: its `score`, else its `pass`, with its `reason`."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = {k.rstrip("_"): v for k, v in dataclasses.asdict(result).items()}
    if isinstance(result, str):
        lowered = result.strip().lower()
        if lowered in ("true", "false"):
            result = lowered == "true"
        elif lowered.startswith("{"):
            result = json.loads(result)
        else:
            result = float(result)
    if isinstance(result, bool):
        return Graded(1.0 if result else 0.0, f"Python code returned {'true' if result else 'false'}")
    if isinstance(result, int | float):
        return Graded(_number(result), f"Python code returned {result}")
    if isinstance(result, Mapping):
        reason = str(result.get("reason") or "")
        score = result.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            return Graded(_number(score), reason or f"score {score}")
        passed = result.get("pass", result.get("pass_"))
        if isinstance(passed, bool):
            return Graded(1.0 if passed else 0.0, reason or f"pass {passed}")
    raise ValueError(f"a python assertion returns a bool, a number or {{pass, score, reason}}, not {result!r}")


def _python(value: Any, inverse: bool, where: str, base: Path) -> tuple[Grader, str | None]:
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"{where}: python needs Python code, or file://path.py, as its value")
    digest: str | None = None
    if value.startswith("file://"):
        function, digest = _script(value, base, where)
    else:
        function = _inline_python(value, where)

    def check(output: Output, context: Mapping[str, Any], _: Rubric | None) -> Graded:
        try:
            graded = python_result(function(output.value, dict(context)))
        except Exception as exc:  # the case file's code failing on this output: it scores 0, as in promptfoo
            return Graded(0.0, f"Python code failed: {type(exc).__name__}: {exc}")
        return Graded(1.0 - graded.score, graded.reason) if inverse else graded

    return check, digest


def _rubric(value: Any, where: str) -> Grader:
    if not isinstance(value, str) or not value.strip():
        raise TaskError(f"{where}: llm-rubric needs the rubric as its value")

    async def check(output: Output, _: Mapping[str, Any], judge: Rubric | None) -> Graded:
        if judge is None:
            raise TaskError(f"{where}: llm-rubric needs a judge model (the command line's --judge-model)")
        return await judge(value, output.text)

    return check


# --- reading one assertion ------------------------------------------------------------------------------


def compile_assertion(raw: Any, *, render: Callable[[str], str], base: Path, where: str) -> Assertion:
    """One entry of a test's `assert` list, checked and ready (`render` fills a value's {{var}} placeholders)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise TaskError(f"{where}: an assertion is a mapping with a type")
    kind: str = raw["type"].strip()
    base_kind = kind.removeprefix("not-")
    inverse = base_kind != kind
    if base_kind == "javascript":
        raise TaskError(f"{where}: {kind} is out of scope: JavaScript is not run here (write it as a python assertion)")
    if base_kind not in ASSERTION_TYPES or (inverse and base_kind == "llm-rubric"):
        known = ", ".join(ASSERTION_TYPES)
        raise TaskError(f"{where}: unknown assertion type {kind!r} (known: {known}, and not-TYPE but not-llm-rubric)")
    for key in _REFUSED_OPTIONS:
        if key in raw:
            raise TaskError(f"{where}: {key} is JavaScript, out of scope here")
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
        raise TaskError(f"{where}: weight must be a number of 0 or more, got {weight!r}")
    value = raw.get("value")
    if base_kind != "python":  # a python assertion's code is run as written, with the vars in its context
        if isinstance(value, str) and value.startswith("file://"):
            value = load_value_file(value, base, where)
        else:
            value = _rendered(value, render)
    spec: dict[str, Any] = {"type": kind, "value": value, "weight": float(weight)}
    if isinstance(raw.get("config"), Mapping):
        spec["config"] = dict(raw["config"])
    if base_kind in _TEXT_CHECKS:
        grade = _text_check(base_kind, value, inverse, where)
    elif base_kind in _LIST_CHECKS:
        grade = _list_check(base_kind, value, inverse, where)
    elif base_kind in _JSON_CHECKS:
        grade = _json_check(base_kind, value, inverse, where)
    elif base_kind == "python":
        grade, digest = _python(value, inverse, where, base)
        if digest is not None:
            spec["file_md5"] = digest
    else:
        grade = _rubric(value, where)
    return Assertion(type=kind, weight=float(weight), spec=spec, grade=grade)


def _rendered(value: Any, render: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return render(value)
    if isinstance(value, list):
        return [render(v) if isinstance(v, str) else v for v in value]
    return value
