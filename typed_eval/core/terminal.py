"""Text from a server, a model or a stored file, made safe to print: its control characters are shown, not obeyed.

A server's error body or a model's name may hold terminal control sequences (an OSC 52 write to the clipboard,
a clear screen, a window title, a carriage return over the line before) or bidirectional overrides that reorder
what is shown. Printed raw, the terminal obeys them; printed through `printable`, each shows as its escape.
"""

from __future__ import annotations

import re

__all__ = ["json_printable", "plain_line", "printable"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 controls but tab and newline, DEL, C1 controls (a lone 0x9b starts a sequence too), and the characters that
reorder or break lines in a terminal's display."""


def printable(text: str) -> str:
    """`text` with each control character written as its Python escape (`\\x1b`, `\\u202e`); tabs and newlines
    stay."""
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def json_printable(text: str) -> str:
    """JSON text with the control characters `json.dumps(ensure_ascii=False)` leaves raw (C1, the display
    reorderers) written as `\\uXXXX`: the same JSON value, safe on a terminal."""
    return _CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?|\x9b[0-?]*[ -/]*[@-~]")
"""Terminal escape sequences (CSI, OSC, any other ESC pair, a C1 CSI): taken out whole by `plain_line`."""


def plain_line(text: str, most: int = 300) -> str:
    """A server's message as one line of plain text, at most `most` characters: its escape sequences taken out
    whole (a colour code shown as `\\x1b[31m` says nothing), the other control characters and line breaks as
    spaces, runs of spaces as one."""
    plain = " ".join(_CONTROL.sub(" ", _ESCAPES.sub("", text)).split())
    return plain if len(plain) <= most else plain[: most - 3] + "..."
