"""Where a command's inputs come from: files named or found in the folders named, and CSV bytes from a file or
from standard input (`-`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from typed_eval.core.errors import InputError
from typed_eval.core.files import read_regular

__all__ = ["MAX_CSV_BYTES", "files_named", "read_csv_source"]

MAX_CSV_BYTES = 256 * 1024 * 1024
"""The most a CSV file is read of (a published quiz dataset holds a few hundred kB)."""


def files_named(paths: Iterable[str], suffix: str, kind: str) -> list[Path]:
    """The files named, and the `suffix` files found recursively in the folders named; `kind` names them in errors
    (`log` -> "no log file or folder X")."""
    names = list(paths)
    found: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob(f"*{suffix}") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise InputError(f"no {kind} file or folder {name}")
    if not found:
        raise InputError(f"no {suffix} files in {', '.join(names)}")
    return found


def read_csv_source(path: str, what: str) -> tuple[bytes, str, str]:
    """The bytes of `what` (e.g. "quiz CSV") in a file, or on standard input when `path` is `-` (read once), with
    their text and where they came from (for errors)."""
    if path == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError(f"'-' reads {what} from standard input, but nothing is piped in", parameter="quizzes")
        raw, where = sys.stdin.buffer.read(), "standard input"
    else:
        try:
            raw = read_regular(path, MAX_CSV_BYTES)
        except OSError as exc:
            raise InputError(f"cannot read quizzes from {path}: {exc.strerror or exc}") from None
        where = path
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (spreadsheet exports) is not part of the first line
    except UnicodeDecodeError:
        raise InputError(f"malformed CSV in {where}: not UTF-8 text") from None
    return raw, text, where
