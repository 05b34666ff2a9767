"""The commands run in this process, as a user runs them: `run_cli("main.py", "run", ...)` calls the script's
`main(argv)` with its arguments, standard input, environment and working folder, and returns what a separate process
would (`subprocess.CompletedProcess`: exit status, standard output and error), in milliseconds where starting Python
took 1.5 s. Warnings print as a plain interpreter prints them, and an exception that escapes the command is its
traceback on stderr with exit status 1, so a test that a command fails in one line still fails on a traceback.

The environment given is the command's (its TZ the local time zone), and the root logger is a new process's, so a
warning the command logs is on its stderr. A test about processes themselves (signals, `--workers`, a server started
and stopped, the console scripts) starts one with `subprocess`, as before.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import logging
import os
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, overload

from tests.conftest import PYTHON, REPO

__all__ = ["run_cli"]


def _entry(script: str) -> Callable[[Sequence[str]], int | None]:
    """The `main` of a top-level script (or of `-m module`)."""
    name = Path(script).name
    if name == "main.py":
        from typed_eval.cli import main

        return main
    if name == "format_result.py":
        from typed_eval.cli.leaderboard_command import main as leaderboard

        return leaderboard
    if name == "farel_bench.py":
        from farel_bench import main as generate

        return generate
    raise ValueError(f"no in-process entry for {script}")


class _Output(io.TextIOWrapper):
    """A text stream over bytes, like a process's piped standard output (no terminal: rich writes plain text)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="\n", write_through=True)

    def isatty(self) -> bool:
        return False

    def value(self) -> bytes:
        self.flush()
        buffer = self.buffer
        assert isinstance(buffer, io.BytesIO)
        return buffer.getvalue()


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """The root logger as a new process has it (no handler, level WARNING), so what the command logs reaches its
    stderr through logging's last resort, as it would, and not pytest's capture."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """`env` as the environment (its TZ the local time zone), and its PYTHONPATH's folders first on the import path,
    as a new process has them: the modules of those folders imported afresh from them and forgotten after (each
    test's folder holds its own)."""
    saved = dict(os.environ)
    folders = [folder for folder in (env or {}).get("PYTHONPATH", "").split(os.pathsep) if folder]

    places = {os.path.abspath(folder) for folder in folders} | {os.path.realpath(folder) for folder in folders}

    def forget() -> None:  # a module's file is named under the folder as it was put on the path: no path resolved
        for name, module in list(sys.modules.items()) if places else ():
            where = getattr(module, "__file__", None)
            if isinstance(where, str) and os.path.dirname(os.path.abspath(where)) in places:
                del sys.modules[name]

    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
            time.tzset()
        forget()
        sys.path[:0] = folders
        importlib.invalidate_caches()
        yield
    finally:
        for folder in folders:
            sys.path.remove(folder)
        forget()
        os.environ.clear()
        os.environ.update(saved)
        time.tzset()


@overload
def run_cli(
    script: str,
    *args: str,
    stdin: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = REPO,
    text: Literal[True] = True,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run_cli(
    script: str,
    *args: str,
    stdin: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = REPO,
    text: Literal[False],
) -> subprocess.CompletedProcess[bytes]: ...


def run_cli(
    script: str,
    *args: str,
    stdin: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = REPO,
    text: bool = True,
) -> subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes]:
    """`python SCRIPT ARGS...` run in this process: `env` replaces the environment for the command's time (None:
    this one's), `cwd` is its working folder; `text` False gives stdout and stderr as bytes."""
    entry = _entry(script)
    out, err = _Output(), _Output()
    given = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    streams = (sys.stdin, sys.stdout, sys.stderr, sys.argv)
    here = os.getcwd()
    code: int
    with _environment(env), _fresh_logging(), warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        sys.stdin = io.TextIOWrapper(io.BytesIO(given), encoding="utf-8")
        sys.stdout, sys.stderr, sys.argv = out, err, [script, *args]
        try:
            os.chdir(cwd)
            try:
                returned = entry(list(args))
                code = int(returned or 0)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
            except Exception:
                traceback.print_exc()
                code = 1
        finally:
            sys.stdin, sys.stdout, sys.stderr, sys.argv = streams
            os.chdir(here)
            gc.collect()  # what the command left in reference cycles (a pool of worker processes) ends with it
    command = [PYTHON, script, *args]
    if text:
        return subprocess.CompletedProcess(command, code, out.value().decode(), err.value().decode())
    return subprocess.CompletedProcess(command, code, out.value(), err.value())
