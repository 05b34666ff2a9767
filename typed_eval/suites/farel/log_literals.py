"""The message lists farel-bench's API logs print (Python's `repr()` of a list of dicts), read an element at a time
without `eval`: memory holds one message, and a line that is not such a literal, or is cut short, is refused."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import NamedTuple

from typed_eval.suites.farel.generator import string_literal_end

__all__ = ["LiteralReader"]


_LITERAL_TOKEN = re.compile(
    r"\s*(?:(?P<open>[\[{(])|(?P<close>[\]})])|(?P<comma>,)|(?P<colon>:)|(?P<quote>['\"])|(?P<word>None|True|False)"
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?))"
)
"""One token of a Python literal as `repr()` writes a message list: brackets, separators, the quote opening a string
(no prefix, no triple quotes), None, True, False, a number."""
_CLOSING = {"[": "]", "{": "}", "(": ")"}
_MOST_NESTING = 32
"""Deeper than any message list: a line nested deeper is not one (and cannot exhaust the stack)."""


class _Token(NamedTuple):
    kind: str
    """The group of `_LITERAL_TOKEN` that matched (`open`, `close`, `comma`, `colon`, `string`, `word`, `number`)."""
    text: str
    start: int


class LiteralReader:
    """Reads a message list's elements one at a time, so memory holds one message, not the line's syntax tree
    (`ast.literal_eval` took 2.2 GB for a 12 MB line of many short messages). Raises `ValueError` on a line that
    is not such a literal, or is cut short."""

    def __init__(self, line: str) -> None:
        self.line, self.at = line, 0

    def _next(self) -> _Token:
        found = _LITERAL_TOKEN.match(self.line, self.at)
        if found is None or found.lastgroup is None:
            raise ValueError(f"not a Python literal at character {self.at}")
        start = found.start(found.lastgroup)
        if found.lastgroup == "quote":
            end = string_literal_end(self.line, start)
            if end is None:
                raise ValueError(f"a string cut short at character {start}")
            self.at = end
            return _Token("string", self.line[start:end], start)
        self.at = found.end()
        return _Token(found.lastgroup, found[found.lastgroup], start)

    def elements(self) -> Iterator[object]:
        """The elements of the list the line holds, then a check that nothing follows it."""
        if self._next().text != "[":
            raise ValueError("not a list")
        yield from self._items("[", 1)
        if self.line[self.at :].strip():
            raise ValueError("text after the list")

    def _items(self, opening: str, depth: int) -> Iterator[object]:
        closing = _CLOSING[opening]
        token = self._next()
        if token.text == closing:
            return
        while True:
            yield self._value(token, depth)
            token = self._next()
            if token.text == closing:
                return
            if token.kind != "comma":
                raise ValueError(f"expected , or {closing} at character {token.start}")
            token = self._next()
            if token.text == closing:  # a trailing comma: (x,)
                return

    def _value(self, token: _Token, depth: int) -> object:
        if token.kind == "string":
            text = token.text
            return text[1:-1] if "\\" not in text else ast.literal_eval(text)  # one string's escapes
        if token.kind == "word":
            return {"None": None, "True": True, "False": False}[token.text]
        if token.kind == "number":
            return ast.literal_eval(token.text)
        if token.kind != "open" or depth >= _MOST_NESTING:
            raise ValueError(f"unexpected {token.text!r} at character {token.start}")
        if token.text == "{":
            return self._dict(depth + 1)
        items = list(self._items(token.text, depth + 1))
        return items if token.text == "[" else tuple(items)

    def _dict(self, depth: int) -> dict[object, object]:
        found: dict[object, object] = {}
        token = self._next()
        while token.text != "}":
            key = self._value(token, depth)
            if self._next().kind != "colon":
                raise ValueError(f"expected : at character {self.at}")
            value = self._value(self._next(), depth)
            found[key if isinstance(key, str | int | float | bool | None) else repr(key)] = value
            token = self._next()
            if token.kind == "comma":
                token = self._next()
            elif token.text != "}":
                raise ValueError(f"expected , or }} at character {token.start}")
        return found
