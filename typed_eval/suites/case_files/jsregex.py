"""A JavaScript regular expression (`new RegExp(value).test(output)`, as promptfoo's `regex` runs it) rewritten as a
Python pattern that matches the same texts, or refused in one line.

Why: Python's `re` means other things by the same signs: `$` also matches before a final newline, `\\d` and `\\w`
are Unicode, `.` matches `\\r`, `\\A` is an anchor (in JavaScript the letter A), `{,3}` a quantifier (in
JavaScript text). JavaScript without the `u` flag also sees text as UTF-16 code units, so an emoji is two
characters: the pattern and the text are both read so (`utf16_units`). What has no exact rewrite here
(backreferences, inline flags, `\\D`-style classes inside `[...]`) is refused.
"""

from __future__ import annotations

import re

from typed_eval.suites.case_files.js import JS_WHITESPACE

__all__ = ["JsRegexError", "translate", "utf16_units"]

_SPACE = "".join(f"\\u{ord(c):04x}" for c in JS_WHITESPACE)
_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACE}
_NEGATED = {"D": "d", "W": "w", "S": "s"}
_CONTROL = {"f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t", "v": "\\v"}
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")
_GROUP_NAME = re.compile(r"<([A-Za-z_$][A-Za-z0-9_$]*)>")


class JsRegexError(ValueError):
    """A pattern JavaScript would read otherwise than any Python rewrite here, or that is not valid."""


def utf16_units(text: str) -> str:
    """The text as JavaScript's strings hold it: a character beyond U+FFFF becomes its two surrogates."""
    if all(ord(c) <= 0xFFFF for c in text):
        return text
    out: list[str] = []
    for c in text:
        code = ord(c)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(chr(0xD800 + (code >> 10)))
            out.append(chr(0xDC00 + (code & 0x3FF)))
        else:
            out.append(c)
    return "".join(out)


def _literal(c: str) -> str:
    return f"\\u{ord(c):04x}"


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The escape at `pattern[i]` (just after a backslash) rewritten, and the index after it."""
    if i >= len(pattern):
        raise JsRegexError("\\ at end of pattern")
    c = pattern[i]
    if c in _CLASSES:
        return (_CLASSES[c] if in_class else f"[{_CLASSES[c]}]"), i + 1
    if c in _NEGATED:
        if in_class:
            raise JsRegexError(f"\\{c} inside [...] is not supported")
        return f"[^{_CLASSES[_NEGATED[c]]}]", i + 1
    if c in "bB":
        if in_class:
            return ("\\x08" if c == "b" else _literal("B")), i + 1
        return f"\\{c}", i + 1
    if c in _CONTROL:
        return _CONTROL[c], i + 1
    if c == "0" and not pattern[i + 1 : i + 2].isdigit():
        return "\\x00", i + 1
    if c.isdigit():
        raise JsRegexError("backreferences and octal escapes (\\1...) are not supported")
    if c == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", pattern[i + 1 : i + 3]):
        return "\\x" + pattern[i + 1 : i + 3], i + 3
    if c == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", pattern[i + 1 : i + 5]):
        return "\\u" + pattern[i + 1 : i + 5], i + 5
    if c == "c" and pattern[i + 1 : i + 2].isascii() and pattern[i + 1 : i + 2].isalpha():
        return _literal(chr(ord(pattern[i + 1]) % 32)), i + 2
    if c == "c":
        raise JsRegexError("\\c without a control letter is not supported")
    if c == "k" and _GROUP_NAME.match(pattern, i + 1):
        raise JsRegexError("named backreferences (\\k<name>) are not supported")
    return _literal(c), i + 1  # an identity escape: the character itself (\A, \Z, \. ...)


def translate(pattern: str, *, unicode: bool = False) -> re.Pattern[str]:
    """The Python pattern that `pattern.search(utf16_units(text))` matches exactly where JavaScript's
    `new RegExp(pattern).test(text)` does; JsRegexError for what is not valid or has no exact rewrite. With
    `unicode` (the `u` flag, as Ajv compiles `pattern`), characters are code points: search the text itself."""
    source = pattern if unicode else utf16_units(pattern)
    out: list[str] = []
    i = 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            piece, i = _escape(source, i + 1, in_class=False)
            out.append(piece)
            continue
        if c == "[":
            piece, i = _char_class(source, i + 1)
            out.append(piece)
            continue
        if c == "(":
            piece, i = _group_open(source, i)
            out.append(piece)
            continue
        if c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif c == "$":
            out.append("(?!(?s:.))")
        elif c == "{":
            found = _QUANTIFIER.match(source, i)
            if found:
                out.append(found.group(0))
                i = found.end()
                if source[i : i + 1] == "+":
                    raise JsRegexError("possessive quantifiers are not JavaScript")
                continue
            out.append(_literal("{"))
        elif c in "}]":
            out.append(_literal(c))
        elif c in "*+?":
            out.append(c)
            if source[i + 1 : i + 2] == "+":
                raise JsRegexError("possessive quantifiers are not JavaScript")
        elif c in "^|)":
            out.append(c)
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out), re.ASCII)
    except re.error as exc:
        raise JsRegexError(str(exc)) from None
    except RecursionError:
        raise JsRegexError("it is nested too deeply") from None


def _group_open(source: str, i: int) -> tuple[str, int]:
    rest = source[i + 1 : i + 4]
    if not rest.startswith("?"):
        return "(", i + 1
    for kept in ("?:", "?=", "?!", "?<=", "?<!"):
        if rest.startswith(kept):
            return "(" + kept, i + 1 + len(kept)
    named = _GROUP_NAME.match(source, i + 2)
    if rest.startswith("?<") and named:
        if "$" in named.group(1):
            raise JsRegexError("a group name with $ is not supported")
        return f"(?P<{named.group(1)}>", named.end()
    raise JsRegexError(f"({rest}... is not a JavaScript group (inline flags and atomic groups are not supported)")


def _char_class(source: str, i: int) -> tuple[str, int]:
    """A `[...]` class from just after its `[`: JavaScript's `[]` matches nothing and `[^]` anything."""
    negated = source[i : i + 1] == "^"
    if negated:
        i += 1
    parts: list[str] = []
    while True:
        if i >= len(source):
            raise JsRegexError("missing ] to close a character class")
        c = source[i]
        if c == "]":
            i += 1
            break
        if c == "\\":
            piece, i = _escape(source, i + 1, in_class=True)
            parts.append(piece)
            continue
        parts.append("-" if c == "-" else _literal(c))
        i += 1
    if not parts:
        return ("(?s:.)" if negated else "(?!)"), i
    return "[" + ("^" if negated else "") + "".join(parts) + "]", i
