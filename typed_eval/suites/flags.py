"""The suites' flags of `run` (`SuiteFlag`): how they read their text, as argparse types (a bad value is argparse's
one line naming the flag: `argument --length: must be at least 1, got 0`), and the flags the quiz generators share."""

from __future__ import annotations

import argparse
import math

from typed_eval.core.suite import SuiteFlag

__all__ = ["QUIZ_FLAGS", "coherence", "lengths", "positive", "share"]


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def lengths(text: str) -> list[int]:
    """`3`, or a comma list of sizes (`8,16,32,64`)."""
    values = [int(part) for part in text.split(",")]
    for value in values:
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return values


def coherence(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 10:
        raise argparse.ArgumentTypeError(f"must be 0 to 10 (the judge scores 1 to 10), got {value}")
    return value


def share(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be 0 to 1, got {text}")
    return value


QUIZ_FLAGS = (
    SuiteFlag("--quizzes", "quizzes", metavar="FILE"),
    SuiteFlag("--length", "length", type=lengths),
    SuiteFlag("--number", "number", type=positive),
    SuiteFlag("--seed", "seed", type=int),
    SuiteFlag("--no-shuffle", "shuffle", value=False),
)
"""The flags of the suites that generate quizzes as their original generators do (`--no-shuffle`: shuffle=false)."""
