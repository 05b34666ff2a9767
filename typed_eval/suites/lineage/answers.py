"""How a reply is read in the text modes, as lineage-bench's `compute_metrics.py` reads it: strictly (the first
`<ANSWER>d</ANSWER>` with one digit), with its `--relaxed` patterns reported beside the score; and the task."""

from __future__ import annotations

import re
from dataclasses import replace

from typed_eval.core.tasks import Task, TextReader
from typed_eval.suites.farel import generator as farel
from typed_eval.suites.lineage.generator import (
    SUITE,
)
from typed_eval.suites.multiple_choice import OptionAnswer, multiple_choice_task

__all__ = ["LINEAGE_TASK", "relaxed_answer", "strict_answer"]


_STRICT = re.compile(r"<ANSWER>([0-9])</ANSWER>")
"""`compute_metrics.py`'s reading: the first tag holding exactly one digit (`<ANSWER>12</ANSWER>` is no answer)."""

_RELAXED = tuple(
    re.compile(pattern, re.MULTILINE)
    for pattern in (
        r"boxed\{([0-9])\}",
        r"boxed\{\\text\{([0-9])\}\}",
        r"mathbf\{([0-9])\}",
        r"</ANSWER>([0-9])</ANSWER>",
        r"ANSWER:\s*([0-9])",
        r"\*\*ANSWER\*\*:?\s*([0-9])",
        r"\*\*ANSWER>\*\*([0-9])</ANSWER>",
        r"\*\*ANSWER>([0-9])</ANSWER>\*\*",
        r"\*\*ANSWER:\*\*\s*([0-9])",
        r"\*\*ANSWER\*\*\s*\n([0-9])",
        r"ANSWER>([0-9])</ANSWER>",
        r"<ANSWER>([0-9])\\</ANSWER>",
        r"<ANSWER\\>([0-9])\\</ANSWER\\>",
        r"<ANSWER>([0-9])</ANSWER",
        r"\*\*Correct Answer:\*\* ([0-9])",
        r"<ACTION>([0-9])</ACTION>",
    )
)
"""`compute_metrics.py --relaxed`'s patterns, in its order: tried only when the strict tag is absent."""


def _answered(digit: str) -> str | None:
    """lineage-bench counts an answer of 0 as missing (0 is its 'no answer')."""
    return None if digit == "0" else digit


def strict_answer(text: str) -> str | None:
    """The option number as lineage-bench reads it, or None (missing): no single-digit tag, or a tag holding 0."""
    match = _STRICT.search(text)
    return _answered(match.group(1)) if match else None


def relaxed_answer(text: str) -> str | None:
    """The option number `compute_metrics.py --relaxed` reads from a reply the strict reading finds missing."""
    if _STRICT.search(text):
        return None  # a strict tag holding 0: the relaxed reading stops there too
    for pattern in _RELAXED:
        match = pattern.search(text)
        if match:
            return _answered(match.group(1))
    return None


LINEAGE_TASK: Task[OptionAnswer | str] = replace(
    multiple_choice_task(SUITE),
    reader=TextReader(
        read=strict_answer,
        feedback=f"No <ANSWER> tag with the number of an answer option found. {farel.TAG_INSTRUCTION}",
        invalid_kind="no_tag",
        relaxed=relaxed_answer,
        example="<ANSWER>1</ANSWER>",
    ),
)
"""FaRel's multiple-choice task (option number validated against the quiz's options in the structured modes) with
lineage-bench's reading in the text modes: the option number as a string, compared with the correct one."""
