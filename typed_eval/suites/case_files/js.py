"""JavaScript's meanings of values, as promptfoo (a Node.js program) applies them when it scores a case file.

Why here: a case file must score as promptfoo scores it, so text is made from values as JavaScript's `String()`
makes it, JSON is read as `JSON.parse` reads it (no NaN, -0 kept), objects are compared as Node's
`util.isDeepStrictEqual` compares them, and text is trimmed by JavaScript's whitespace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "JsonError",
    "comma_separated",
    "deep_strict_equal",
    "js_number",
    "js_string",
    "js_trim",
    "json_parse",
    "json_stringify",
]

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's `\\s` and `trim()` count as whitespace (Python's `str.isspace` differs: \\x1c-\\x1f, \\ufeff)."""


class JsonError(ValueError):
    """Text that `JSON.parse` refuses (or that is nested too deeply to read here)."""


def js_number(value: float) -> str:
    """A number as JavaScript writes it (`Number.prototype.toString`): 4, 0.1, 1e+21, 1e-7, -0 as 0."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(float(value))).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction.rstrip("0")).lstrip("0") or "0"
    # n: where the decimal point falls relative to the significant digits (ECMA-262 Number::toString)
    point = len(whole.lstrip("0")) if whole.strip("0") else -(len(fraction) - len(fraction.lstrip("0")))
    n = point + (int(exponent) if exponent else 0)
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    power = n - 1
    shown = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{shown}e{'+' if power >= 0 else '-'}{abs(power)}"


def js_string(value: Any) -> str:
    """`String(value)` in JavaScript: numbers as JavaScript writes them, `true`, `null`, arrays joined by commas,
    objects as `[object Object]`."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(float(value))
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def _constant(name: str) -> Any:
    raise JsonError(f"{name} is not JSON")


def _integer(text: str) -> Any:
    """JSON numbers are doubles in JavaScript: -0 stays negative, huge integers lose digits as they do there."""
    number = int(text)
    if text.startswith("-") and number == 0:
        return -0.0
    return number if abs(number) <= 2**53 else float(number)


def json_parse(text: str) -> Any:
    """`JSON.parse`: strict JSON (no NaN or Infinity), numbers as JavaScript reads them; JsonError otherwise."""
    try:
        return json.loads(text, parse_constant=_constant, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise JsonError(str(exc)) from None
    except RecursionError:
        raise JsonError("nested too deeply to read") from None


def json_stringify(value: Any) -> str:
    """`JSON.stringify` (compact); -0 is written 0, integral doubles without a fraction."""
    return json.dumps(_js_numbers(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _js_numbers(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, list):
        return [_js_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    return value


def _same_number(a: float, b: float) -> bool:
    """`Object.is` on numbers: NaN is NaN, 0 is not -0."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def deep_strict_equal(a: Any, b: Any) -> bool:
    """Node's `util.isDeepStrictEqual` on JSON values: no coercion (`true` is not 1), 0 is not -0, key order free.
    Iterative, so a reply nested however deeply is compared without exhausting the stack."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, int | float) or isinstance(y, int | float):
            if not (isinstance(x, int | float) and isinstance(y, int | float) and _same_number(float(x), float(y))):
                return False
        elif isinstance(x, list) or isinstance(y, list):
            if not (isinstance(x, list) and isinstance(y, list) and len(x) == len(y)):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, Mapping) or isinstance(y, Mapping):
            if not (isinstance(x, Mapping) and isinstance(y, Mapping) and set(x) == set(y)):
                return False
            pending.extend((x[key], y[key]) for key in x)
        elif x != y:
            return False
    return True


def comma_separated(value: str) -> list[str]:
    """promptfoo's reading of a `contains-any` / `-all` string: comma-separated, `"quoted, fields"` kept whole
    (`\\"` and `""` inside quotes are a quote), unquoted fields trimmed, empty ones skipped. ValueError for an
    unterminated quote or text after a closing one."""
    fields: list[str] = []
    i, size = 0, len(value)

    def skip_space(at: int) -> int:
        while at < size and value[at] in JS_WHITESPACE:
            at += 1
        return at

    while i < size:
        while True:
            i = skip_space(i)
            if i < size and value[i] == ",":
                i += 1
                continue
            break
        if i >= size:
            break
        if value[i] != '"':
            end = value.find(",", i)
            end = size if end == -1 else end
            fields.append(js_trim(value[i:end]))
            i = end
            continue
        i += 1
        field: list[str] = []
        while True:
            if i >= size:
                raise ValueError("an unterminated quoted field")
            if value[i] == "\\" and i + 1 < size and value[i + 1] in '"\\':
                field.append(value[i + 1])
                i += 2
            elif value[i] == '"' and i + 1 < size and value[i + 1] == '"':
                field.append('"')
                i += 2
            elif value[i] == '"':
                i += 1
                break
            else:
                field.append(value[i])
                i += 1
        fields.append("".join(field))
        i = skip_space(i)
        if i < size and value[i] != ",":
            raise ValueError("text after a quoted field (a comma must follow it)")
    return fields
