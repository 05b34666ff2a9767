"""Java and JavaScript argument values as BFCL's checker reads them: a string holding the language's literal.

In the Java and JavaScript categories every parameter is posed as a string ("42L", "new int[]{1, 2}",
"[1, 'a']", "{key: 1}"); BFCL's checker turns the string into a Python value by the parameter's declared type,
with regular expressions rather than a parser, and keeps the string unchanged when the pattern does not match
(which then fails the type check, unless the possible answer is itself a string). These functions give the same
values for the same strings, quirks included (a Java `char` is never converted; a Java `String[]` keeps its
elements' quotes; JavaScript arrays and objects split on commas). Nothing is evaluated.

BFCL's patterns backtrack without end on some texts (a JavaScript array of arrays, a `new HashMap<>() {` and 2,000
spaces): they run in the `regex` module, which matches as `re` does and can be stopped, each match bounded by
`LITERAL_TIME_S`; past it, `SlowLiteral` (the case's error: BFCL's checker would never end).
"""

from __future__ import annotations

from typing import Any

import regex

__all__ = [
    "JAVASCRIPT_TYPES",
    "JAVA_TYPES",
    "LITERAL_TIME_S",
    "SlowLiteral",
    "UnsupportedTypeError",
    "java_value",
    "javascript_value",
]

LITERAL_TIME_S = 1.0
"""How long one of BFCL's patterns may take to read one argument's literal."""

JAVA_TYPES: dict[str, type] = {  # the Python type a Java type's value has once converted
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
JAVASCRIPT_TYPES: dict[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}

WHOLE = r"^-?\d+$"
JAVA_FLOAT = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$"
JAVA_DOUBLE = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$"
JAVA_LONG = r"^-?\d+[lL]$"
ARRAYLIST_AS_LIST = r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)"
ARRAYLIST_ADDS = r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}"
ARRAYLIST_EMPTY = r"new\s+ArrayList<\w*>\(\)"
ARRAY_INIT = r"new\s+\w+\[\]\s*\{(.*?)\}"
HASHMAP_INIT = r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}"
HASHMAP_PUT = r"put\(\"(.*?)\",\s*(.*?)\)"
HASHMAP_EMPTY = r"new\s+HashMap<.*?>\s*\(\)"
JS_FLOAT = r"^-?\d+(\.\d+)?$"
JS_BIGINT = r"^-?\d+n$"
JS_ARRAY_2D = r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
JS_ARRAY = r"\[(.*?)\]|\bnew\s+Array\((.*?)\)"
JS_OBJECT = r"\{(.*?)\}"
JS_PAIR = r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)"


class UnsupportedTypeError(ValueError):
    """A declared type BFCL's checker has no conversion for (it stops with an error there)."""


class SlowLiteral(Exception):
    """An argument's literal that one of BFCL's patterns did not finish reading within `LITERAL_TIME_S`."""


class _Patterns:
    """`re`'s match, search, findall and sub, in the `regex` module, each bounded in time."""

    @staticmethod
    def _bounded(call: Any, pattern: str, text: str, *args: Any) -> Any:
        try:
            return call(pattern, text, *args, timeout=LITERAL_TIME_S)
        except TimeoutError:
            raise SlowLiteral(
                f"BFCL's pattern {pattern!r} did not finish reading a {len(text):,}-character literal in "
                f"{LITERAL_TIME_S:g} s (it backtracks without end)"
            ) from None

    def match(self, pattern: str, text: str, flags: int = 0) -> Any:
        return self._bounded(regex.match, pattern, text, flags)

    def search(self, pattern: str, text: str, flags: int = 0) -> Any:
        return self._bounded(regex.search, pattern, text, flags)

    def findall(self, pattern: str, text: str, flags: int = 0) -> Any:
        return self._bounded(regex.findall, pattern, text, flags)

    def sub(self, pattern: str, replacement: str, text: str) -> Any:
        try:
            return regex.sub(pattern, replacement, text, timeout=LITERAL_TIME_S)
        except TimeoutError:
            raise SlowLiteral(f"BFCL's pattern {pattern!r} did not finish in {LITERAL_TIME_S:g} s") from None


_BOUNDED = _Patterns()
DOTALL = regex.DOTALL


def java_value(text: str, java_type: str, item_type: str | None = None) -> Any:
    """The value BFCL's checker reads from a Java literal `text` of the declared `java_type`."""
    if java_type not in JAVA_TYPES:
        raise UnsupportedTypeError(f"Unsupported type: {java_type}")
    if java_type in ("byte", "short", "integer"):
        return int(text) if _BOUNDED.match(WHOLE, text) else text
    if java_type == "float":
        return float(_BOUNDED.sub(r"[fF]$", "", text)) if _BOUNDED.match(JAVA_FLOAT, text) else text
    if java_type == "double":
        return float(text) if _BOUNDED.match(JAVA_DOUBLE, text) else text
    if java_type == "long":
        return int(_BOUNDED.sub(r"[lL]$", "", text)) if _BOUNDED.match(JAVA_LONG, text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type in ("char", "String", "any"):
        return text
    if java_type == "ArrayList":
        return java_arraylist(text, item_type)
    if java_type == "Array":
        return java_array(text, item_type)
    if java_type == "HashMap":
        return java_hashmap(text)
    raise UnsupportedTypeError(f"{java_type} conversion is not implemented")


def java_element(text: str, item_type: str | None) -> Any:
    """An ArrayList element: quotes cut for char and String, else converted by the element type or guessed."""
    if item_type in ("char", "String"):
        return text[1:-1]
    return java_value(text, item_type) if item_type else java_untyped(text)


def java_arraylist(text: str, item_type: str | None) -> Any:
    as_list = _BOUNDED.search(ARRAYLIST_AS_LIST, text)
    if as_list:
        return [java_element(part.strip(), item_type) for part in as_list.group(1).split(",")]
    adds = _BOUNDED.search(ARRAYLIST_ADDS, text, DOTALL)
    if adds:
        return [java_element(added.strip(), item_type) for added in _BOUNDED.findall(r"add\((.+?)\)", adds.group(1))]
    if _BOUNDED.search(ARRAYLIST_EMPTY, text):
        return []
    return text


def java_array(text: str, item_type: str | None) -> Any:
    found = _BOUNDED.search(ARRAY_INIT, text)
    if not found:
        return text
    parts = [part.strip() for part in found.group(1).split(",") if part.strip()]
    if item_type:
        return [java_value(part, item_type) for part in parts]
    return [java_untyped(part) for part in parts]


def java_hashmap(text: str) -> Any:
    found = _BOUNDED.search(HASHMAP_INIT, text, DOTALL)
    if found:
        entries: dict[str, Any] = {}
        if found.group(1).strip():
            for key, value in _BOUNDED.findall(HASHMAP_PUT, found.group(1)):
                entries[key] = java_untyped(value.strip())
        return entries
    if _BOUNDED.search(HASHMAP_EMPTY, text):
        return {}
    return text


def java_untyped(text: str) -> Any:
    """A Java literal of no declared type: boolean, quoted string, long, float, then int, double, else the text."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _BOUNDED.match(JAVA_LONG, text):
        return int(text[:-1])
    if _BOUNDED.match(JAVA_FLOAT, text):
        return float(_BOUNDED.sub(r"[fF]$", "", text))
    return int_or_float_or_text(text)


def int_or_float_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def javascript_value(text: str, js_type: str, item_type: str | None = None) -> Any:
    """The value BFCL's checker reads from a JavaScript literal `text` of the declared `js_type`."""
    if js_type not in JAVASCRIPT_TYPES:
        raise UnsupportedTypeError(f"Unsupported type: {js_type}")
    if js_type == "String":
        return text[1:-1] if is_quoted(text) else text
    if js_type == "integer":
        return int(text) if _BOUNDED.match(WHOLE, text) else text
    if js_type == "float":
        return float(text) if _BOUNDED.match(JS_FLOAT, text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if _BOUNDED.match(JS_BIGINT, text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "dict":
        return javascript_object(text.strip())
    if js_type == "array":
        return javascript_array(text.strip(), item_type)
    return text


def is_quoted(text: str) -> bool:
    return (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'"))


def javascript_array(code: str, item_type: str | None) -> Any:
    """An array literal, one or two levels deep; on any failure the code itself, as BFCL gives it."""
    try:
        nested = _BOUNDED.match(JS_ARRAY_2D, code)
        if nested:
            rows = []
            for index, row in enumerate(_BOUNDED.findall(r"\[(.*?)\]", nested.group(0))):
                row = row.strip()
                if index == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([javascript_untyped(part.strip()) for part in row.split(",")])
            return rows
        flat = _BOUNDED.match(JS_ARRAY, code)
        if not flat:
            return code
        inside = flat.group(1) if flat.group(1) is not None else flat.group(2)
        inside = (inside or "").strip()
        parts = inside.split(",") if inside else []
        if not item_type:
            return [javascript_untyped(part.strip()) for part in parts]
        return [javascript_item(part.strip(), item_type) for part in parts]
    except (ValueError, IndexError):
        return code


def javascript_item(text: str, item_type: str) -> Any:
    """An element of a typed array; a quoted one that is itself an array reads its own elements as strings."""
    return javascript_value(text, item_type, "String" if text.startswith(("'", '"')) else None)


def javascript_object(code: str) -> Any:
    """An object literal of flat pairs (arrays and objects as values), split on commas; else the code."""
    if code == "{}":
        return {}
    found = _BOUNDED.match(JS_OBJECT, code)
    if not found:
        return code
    entries: dict[str, Any] = {}
    try:
        for key, value in _BOUNDED.findall(JS_PAIR, found.group(1)):
            key = key.strip().strip("'\"")
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                entries[key] = javascript_array(value, None)
            elif value.startswith("{") and value.endswith("}"):
                entries[key] = javascript_object(value)
            else:
                entries[key] = javascript_untyped(value.strip("'\""))
    except (ValueError, IndexError):
        return code
    return entries


def javascript_untyped(text: str) -> Any:
    """A JavaScript literal of no declared type: boolean, quoted string, then int, float, else the text."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if is_quoted(text):
        return text[1:-1]
    return int_or_float_or_text(text)
