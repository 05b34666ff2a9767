"""The text assertions, as promptfoo checks them: `equals`, `contains`, `icontains`, `starts-with`, `regex`, and
the `-any` / `-all` lists, each also negated (`not-`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from typed_eval.core.errors import TaskError
from typed_eval.suites.case_files.check_types import (
    CannotCheck,
    Check,
    Graded,
    Output,
    json_text,
)
from typed_eval.suites.case_files.js import (
    JsonError,
    comma_separated,
    deep_strict_equal,
    js_string,
    json_parse,
)
from typed_eval.suites.case_files.jsregex import JsRegexError, translate, utf16_units

__all__ = ["list_check", "not_word", "text_check", "verdict_of"]


# --- deterministic checks -------------------------------------------------------------------------------------


def verdict_of(passed: bool, failure: str) -> Graded:
    """promptfoo's result of a plain check: 1 when it passes, else 0 with why."""
    return Graded(1.0 if passed else 0.0, "Assertion passed" if passed else failure, passed=passed)


def not_word(inverse: bool) -> str:
    return "not " if inverse else ""


def _is_contains_value(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (
        isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
    )


def text_check(kind: str, value: Any, inverse: bool) -> Check:
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
                return verdict_of(
                    same != inverse,
                    f"Expected output {output.text!r} to {not_word(inverse)}equal {json_text(expected_json)}",
                )

            return equals_json
        expected = js_string(value)
        return lambda output, _: verdict_of(
            (output.text == expected) != inverse, f"Expected output to {not_word(inverse)}equal {expected!r}"
        )
    if kind in ("contains", "icontains"):
        if not _is_contains_value(value):
            raise TaskError(f"{kind} needs a string or number value")
        text = js_string(value)
        if kind == "contains":
            return lambda output, _: verdict_of(
                (text in output.text) != inverse, f"Expected output to {not_word(inverse)}contain {text!r}"
            )
        lowered = text.lower()
        return lambda output, _: verdict_of(
            (lowered in output.text.lower()) != inverse, f"Expected output to {not_word(inverse)}contain {text!r}"
        )
    if not isinstance(value, str) or not value:
        raise TaskError(f"{kind} needs a string value")
    if kind == "starts-with":
        return lambda output, _: verdict_of(
            output.text.startswith(value) != inverse, f"Expected output to {not_word(inverse)}start with {value!r}"
        )
    try:
        pattern = translate(value)
    except JsRegexError as exc:
        raise TaskError(f"regex /{value}/: {exc}") from None
    return lambda output, _: verdict_of(
        (pattern.search(utf16_units(output.text)) is not None) != inverse,
        f"Expected output to {not_word(inverse)}match regex {value!r}",
    )


def list_check(kind: str, value: Any, inverse: bool) -> Check:
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
        return verdict_of(passed != inverse, f"Expected output to {not_word(inverse)}contain {how}")

    return check
