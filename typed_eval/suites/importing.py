"""What the suites' importer commands share (`Suite.importer`, `main.py import NAME ...`): where runs are stored
by default, and the one-line error about one file that the others outlive."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from typed_eval.core.errors import EvaluatorError
from typed_eval.core.terminal import printable

__all__ = ["RESULTS_DIR", "error_line", "score_text"]

RESULTS_DIR = Path("result")
"""The results folder `run` stores in by default."""


def error_line(prog: str, exc: EvaluatorError, flags: Mapping[str, str]) -> str:
    """`prog: error: --flag: message`, the flag that sets the parameter the error is about (its name when none)."""
    message = f"{flags.get(exc.parameter, exc.parameter)}: {exc.message}" if exc.parameter else str(exc)
    return f"{prog}: error: {printable(message)}"


def score_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
