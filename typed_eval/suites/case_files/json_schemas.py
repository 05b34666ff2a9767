"""JSON schemas checked as promptfoo checks them: Ajv (draft-07, strict about unknown keywords and formats) with
ajv-formats' formats, and JavaScript's regular expressions for `pattern`.

Why: promptfoo validates `is-json` / `contains-json` values with Ajv, so `format: email` or `format: date-time`
is checked there, a keyword Ajv does not know is an error, and `pattern` is a JavaScript regex. The formats are
checked here by the rules ajv-formats states (RFC 3339 dates and times, its e-mail, hostname and IP grammars);
the formats whose checks are long patterns of its own (uri, uri-reference, uri-template, url,
json-pointer-uri-fragment, regex) are refused rather than checked otherwise.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jsonschema import Draft7Validator, FormatChecker, SchemaError, ValidationError, validators

from typed_eval.suites.case_files.js import JS_WHITESPACE
from typed_eval.suites.case_files.jsregex import JsRegexError, translate

__all__ = ["SchemaProblem", "compile_schema"]

_KNOWN = frozenset(
    {
        "$schema",
        "$id",
        "$ref",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "items",
        "additionalItems",
        "maxItems",
        "minItems",
        "uniqueItems",
        "contains",
        "maxProperties",
        "minProperties",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependencies",
        "propertyNames",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
    }
)
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "$defs", "dependencies")
_SCHEMA_ONE = ("additionalItems", "contains", "additionalProperties", "propertyNames", "not", "if", "then", "else")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_DRAFT_07 = ("http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#")
_REFUSED_FORMATS = ("uri", "uri-reference", "uri-template", "url", "json-pointer-uri-fragment", "regex")


class SchemaProblem(ValueError):
    """A schema promptfoo's Ajv would not compile, or one checked otherwise here: refused in one line."""


def _subschemas(schema: Mapping[str, Any]) -> Iterator[Any]:
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), Mapping):
            yield from (v for v in schema[key].values() if isinstance(v, Mapping | bool))
    for key in _SCHEMA_ONE:
        if key in schema:
            yield schema[key]
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            yield from schema[key]
    items = schema.get("items")
    if isinstance(items, list):
        yield from items
    elif items is not None:
        yield items


def _strict(schema: Any) -> None:
    """Ajv's strict mode: a keyword it does not know, or a format it has not, fails to compile."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if not isinstance(node, Mapping):
            continue
        unknown = sorted(set(node) - _KNOWN)
        if unknown:
            raise SchemaProblem(f"strict mode: unknown keyword {unknown[0]!r} (promptfoo's Ajv refuses it)")
        if "$schema" in node and node["$schema"] not in _DRAFT_07:
            raise SchemaProblem(f"$schema {node['$schema']!r}: promptfoo's Ajv knows JSON Schema draft-07 only")
        if "$ref" in node and set(node) - {"$ref", "$comment", "title", "description", "definitions", "$defs"}:
            raise SchemaProblem("$ref with keywords beside it is not supported (Ajv and draft-07 read it otherwise)")
        form = node.get("format")
        if form is not None:
            if form in _REFUSED_FORMATS:
                raise SchemaProblem(f"format {form!r} is checked by ajv-formats' own pattern: not supported")
            if form not in _FORMATS:
                raise SchemaProblem(f"unknown format {form!r} (promptfoo's Ajv refuses it)")
        pending.extend(_subschemas(node))


# --- ajv-formats' formats, by their rules -----------------------------------------------------------------------

_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)(z|([+-])([0-9]{2})(?::?([0-9]{2}))?)?", re.I)


def _date(text: str) -> bool:
    """RFC 3339 full-date, with the month's real length (29 February in leap years only)."""
    found = _DATE.fullmatch(text)
    if not found:
        return False
    year, month, day = (int(g) for g in found.groups())
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])


def _time(zone_required: bool) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        """RFC 3339 time: hours to 23, minutes to 59, seconds below 60, or a leap second at 23:59 UTC."""
        found = _TIME.fullmatch(text)
        if not found:
            return False
        hour, minute, second = int(found[1]), int(found[2]), float(found[3])
        zone_hour, zone_minute = int(found[6] or 0), int(found[7] or 0)
        sign = -1 if found[5] == "-" else 1
        if zone_hour > 23 or zone_minute > 59 or (zone_required and not found[4]):
            return False
        if hour <= 23 and minute <= 59 and second < 60:
            return True
        utc_minute = minute - zone_minute * sign
        utc_hour = hour - zone_hour * sign - (1 if utc_minute < 0 else 0)
        return utc_hour in (23, -1) and utc_minute in (59, -1) and second < 61

    return check


def _date_time(zone_required: bool) -> Callable[[str], bool]:
    time = _time(zone_required)

    def check(text: str) -> bool:
        parts = re.split(f"[Tt{re.escape(JS_WHITESPACE)}]", text)
        return len(parts) == 2 and _date(parts[0]) and time(parts[1])

    return check


_ATOM = r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?"
_EMAIL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.)+{_LABEL}", re.I | re.ASCII)
_HOST_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?", re.I | re.ASCII)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_UUID = re.compile(r"(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", re.I)
_DURATION = re.compile(
    r"P(?:(?:[0-9]+Y)?(?:[0-9]+M)?(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+S)?)?|(?:[0-9]+W)?)"
)
_POINTER = re.compile(r"(?:/(?:[^~/]|~0|~1)*)*", re.S)
_RELATIVE_POINTER = re.compile(r"(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~0|~1)*)*)", re.S)
_BASE64_LINE = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_LINE_BREAKS = re.compile("[\n\r\u2028\u2029]")


def _hostname(text: str) -> bool:
    body = text.removesuffix(".")
    return 1 <= len(body) <= 253 and not _LINE_BREAKS.search(text) and bool(_HOSTNAME.fullmatch(text))


def _ipv6(text: str) -> bool:
    if "%" in text or not re.fullmatch(r"[0-9a-fA-F:.]+", text):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _duration(text: str) -> bool:
    return text != "P" and bool(_DURATION.fullmatch(text))


def _byte(text: str) -> bool:
    """ajv-formats tests its base64 pattern line by line (the `m` flag): one line that is base64 will do."""
    return any(_BASE64_LINE.fullmatch(line) for line in _LINE_BREAKS.split(text))


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _strings(check: Callable[[str], bool]) -> Callable[[Any], bool]:
    return lambda value: not isinstance(value, str) or check(value)


def _numbers(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, bool) or not isinstance(value, int | float) or check(value)


_FORMATS: dict[str, Callable[[Any], bool]] = {
    "date": _strings(_date),
    "time": _strings(_time(True)),
    "date-time": _strings(_date_time(True)),
    "iso-time": _strings(_time(False)),
    "iso-date-time": _strings(_date_time(False)),
    "duration": _strings(_duration),
    "email": _strings(lambda t: bool(_EMAIL.fullmatch(t))),
    "hostname": _strings(_hostname),
    "ipv4": _strings(lambda t: bool(_IPV4.fullmatch(t))),
    "ipv6": _strings(_ipv6),
    "uuid": _strings(lambda t: bool(_UUID.fullmatch(t))),
    "json-pointer": _strings(lambda t: bool(_POINTER.fullmatch(t))),
    "relative-json-pointer": _strings(lambda t: bool(_RELATIVE_POINTER.fullmatch(t))),
    "byte": _strings(_byte),
    "int32": _numbers(lambda v: _is_integer(v) and -(2**31) <= v <= 2**31 - 1),
    "int64": _numbers(_is_integer),
    "float": _numbers(lambda v: True),
    "double": _numbers(lambda v: True),
    "password": lambda value: True,
    "binary": lambda value: True,
}

_CHECKER = FormatChecker(formats=())
for _name, _check in _FORMATS.items():
    _CHECKER.checks(_name)(_check)


# --- JavaScript patterns --------------------------------------------------------------------------------------


def _js_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return translate(pattern, unicode=True)
    except JsRegexError as exc:
        raise SchemaProblem(f"pattern {pattern!r}: {exc}") from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _js_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        compiled = _js_pattern(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """additionalProperties, with patternProperties read as JavaScript patterns."""
    if not isinstance(instance, dict):
        return
    patterns = [_js_pattern(p) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in schema.get("properties", {}) and not any(p.search(k) for p in patterns)]
    if additional is False and extras:
        yield ValidationError(f"additional properties are not allowed ({', '.join(map(repr, extras))} unexpected)")
    elif isinstance(additional, dict):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)


_Ajv = validators.extend(  # type: ignore[no-untyped-call]
    Draft7Validator,
    {"pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional},
)


def _patterns(schema: Any) -> Iterator[str]:
    pending = [schema]
    while pending:
        node = pending.pop()
        if not isinstance(node, Mapping):
            continue
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        if isinstance(node.get("patternProperties"), Mapping):
            yield from node["patternProperties"]
        pending.extend(_subschemas(node))


def compile_schema(schema: Any) -> Any:
    """A validator that accepts exactly what promptfoo's Ajv accepts; SchemaProblem for what it would not
    compile (or what is not checked the same here)."""
    if not isinstance(schema, Mapping | bool):
        raise SchemaProblem(f"a JSON schema must be an object, got {type(schema).__name__}")
    try:
        _strict(schema)
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        raise SchemaProblem(f"not a valid JSON schema: {exc.message}") from None
    except RecursionError:
        raise SchemaProblem("the schema is nested too deeply") from None
    for pattern in _patterns(schema):
        _js_pattern(pattern)
    return _Ajv(schema, format_checker=_CHECKER)
