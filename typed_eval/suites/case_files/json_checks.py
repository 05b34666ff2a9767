"""The JSON assertions, as promptfoo checks them: `is-json` (`JSON.parse`) and `contains-json` (its extraction:
brace counting, then lenient YAML), each with an optional JSON schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files import yaml12
from typed_eval.suites.case_files.check_types import (
    CannotCheck,
    Check,
    Graded,
    Output,
    load_yaml,
)
from typed_eval.suites.case_files.js import (
    JS_WHITESPACE,
    JsonError,
    json_parse,
)
from typed_eval.suites.case_files.json_schemas import SchemaProblem, compile_schema
from typed_eval.suites.case_files.text_checks import not_word, verdict_of

__all__ = ["json_check", "json_objects"]


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


def json_check(kind: str, value: Any, inverse: bool) -> Check:
    validator = _schema(value) if value not in (None, "") else None

    def is_json(output: Output, _: Mapping[str, Any]) -> Graded:
        try:
            parsed = json_parse(output.text)
        except JsonError as exc:
            if "deeply" in str(exc):
                raise CannotCheck(f"the reply is JSON {exc}") from None
            return verdict_of(inverse, f"Expected output to {not_word(inverse)}be valid JSON")
        if validator is None:
            return verdict_of(not inverse, f"Expected output to {not_word(inverse)}be valid JSON")
        problems = _schema_errors(validator, parsed)
        if (problems is None) == inverse:  # promptfoo: a schema failure scores 0 with Ajv's errors
            failure = f"JSON does not conform to the provided schema. Errors: {problems}"
            return Graded(
                0.0, "Output is JSON that conforms to the provided schema" if inverse else failure, passed=False
            )
        return verdict_of(True, "")

    def contains_json(output: Output, _: Mapping[str, Any]) -> Graded:
        objects = json_objects(output.text)
        passed = not objects if inverse else bool(objects)
        failure = f"Expected output to {not_word(inverse)}contain valid JSON"
        if validator is not None:
            for candidate in objects:
                problems = _schema_errors(validator, candidate)
                passed = (problems is not None) if inverse else problems is None
                if problems is None:
                    if inverse:
                        failure = "Output contains JSON conforming to the provided schema"
                    break
                failure = f"JSON does not conform to the provided schema. Errors: {problems}"
        return verdict_of(passed, failure)

    return is_json if kind == "is-json" else contains_json
