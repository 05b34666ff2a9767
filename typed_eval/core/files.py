"""Files a user names as input, read safely: a regular file only, opened without blocking (a FIFO with no writer is
refused at once, never waited on), and bounded while it is read, not from `stat` alone (a device such as /dev/zero
says it holds 0 bytes, and a file may grow while it is read).

Both refusals are `OSError`s, so a reader that already says "cannot read X: {exc.strerror}" in one line says these
too.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

__all__ = ["FileTooLarge", "NotRegularFile", "open_regular", "read_regular"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


class NotRegularFile(OSError):
    """A folder, FIFO, device or socket where a file was named."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is {kind}, not a regular file", str(path))
        self.kind = kind


class FileTooLarge(OSError):
    """A file holding more than the bound its reader allows."""

    def __init__(self, path: Path | str, most: int) -> None:
        super().__init__(errno.EFBIG, f"it holds more than {most:,} bytes, the most read", str(path))
        self.most = most


def open_regular(path: Path | str) -> io.BufferedReader:
    """The file opened for reading, without blocking; `NotRegularFile` for anything else (OSError as opening
    raises it)."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    mode = os.fstat(handle).st_mode
    if not stat.S_ISREG(mode):
        os.close(handle)
        raise NotRegularFile(path, next((name for test, name in _KINDS if test(mode)), "not a file"))
    return os.fdopen(handle, "rb")


def read_regular(path: Path | str, most: int) -> bytes:
    """A regular file's bytes, at most `most` of them: `FileTooLarge` past that (found before reading when `stat`
    says so, and while reading whatever it said), `NotRegularFile` for what is not a file."""
    with open_regular(path) as file:
        if os.fstat(file.fileno()).st_size > most:
            raise FileTooLarge(path, most)
        content = file.read(most + 1)
    if len(content) > most:
        raise FileTooLarge(path, most)
    return content
