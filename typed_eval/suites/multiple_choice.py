"""Multiple choice as a task: an option number, validated strictly against that case's options, or
farel-bench's `<ANSWER>` tag in the text modes, read and scored exactly as farel-bench does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_ai.models import Model
from pydantic_core import PydanticCustomError

from typed_eval.contracts import AnswerMode, Case, Quiz, SampleRecord, is_text_mode
from typed_eval.core.run_config import RunConfig
from typed_eval.core.suite import AnswerLine, answer_lines
from typed_eval.core.tasks import Task, TextReader
from typed_eval.engine.control import RunControl
from typed_eval.engine.evaluation import EvaluationResult, evaluate
from typed_eval.suites.farel.generator import TAG_INSTRUCTION

__all__ = [
    "ANSWER_TOOL",
    "DEFAULT_SYSTEM_PROMPT",
    "TAG_INSTRUCTION",
    "OptionAnswer",
    "evaluate_quizzes",
    "multiple_choice_task",
    "option_baseline",
    "question_text",
    "relaxed_tag_answer",
    "show_option",
    "strict_tag_answer",
]

ANSWER_TOOL = "select_answer"

DEFAULT_SYSTEM_PROMPT = (
    "You are a master of logical thinking. You carefully analyze the premises step by step, take detailed "
    "notes and draw intermediate conclusions based on which you can find the final answer to any question."
)
"""farel-bench's default system prompt (its `-sys` leaderboard rows)."""

_STRICT_TAG = re.compile(r"<ANSWER>(.*?)</ANSWER>")
"""farel-bench's reading: first match, non-greedy, no flags (a tag spanning lines does not match)."""

_RELAXED_PATTERNS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"<ANSWER>\s*(\d+)\s*</ANSWER>",  # a tag whose number sits on its own line
        r"\\boxed\{\s*(\d+)\s*\}",
        r"\\mathbf\{\s*(\d+)\s*\}",
        r"\**ANSWER\**\s*[:>]?\s*\**\s*(\d+)",  # ANSWER: 2, **ANSWER**: 2, ANSWER>2</ANSWER>
        r"\bcorrect answer is\s*:?\s*\**\s*(?:option\s*)?(\d+)",
        r"^\s*(\d+)\s*\.?\s*$",  # a reply that is just the number
    )
)
"""Other ways models state their pick, tried in order when the strict tag is missing (as lineage-bench's
`--relaxed`). Only reported next to the strict score, never counted as correct."""


def strict_tag_answer(text: str) -> str | None:
    """The answer exactly as farel-bench reads it: the first `<ANSWER>` tag's contents, stripped."""
    match = _STRICT_TAG.search(text)
    return match.group(1).strip() if match else None


def relaxed_tag_answer(text: str) -> str | None:
    """The number a lenient reader would take from a reply with no strict tag, if any."""
    for pattern in _RELAXED_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1)
    return None


class OptionAnswer(BaseModel):
    """The typed answer: an option number, checked against the option count of the case being asked.

    Strict: a JSON `true`, `"2"` or `2.0` is not an integer here (`wrong_type`), never silently coerced.
    """

    model_config = ConfigDict(extra="forbid", strict=True, title="SelectedAnswer")

    reasoning: str | None = Field(default=None, description="Optional short reasoning, before the answer.")
    answer: int = Field(description="The number of the selected answer option (1 = the first option).")

    @field_validator("answer")
    @classmethod
    def _is_an_option(cls, value: int, info: ValidationInfo) -> int:
        options = info.context
        if isinstance(options, int) and not 1 <= value <= options:
            raise PydanticCustomError(
                "out_of_range",
                "{value} is not an option number: choose a number from 1 to {options}",
                {"value": value, "options": options},
            )
        return value


def _option_count(case: Case) -> int:
    return len(case.metadata.get("options", ()))


def _score(case: Case, output: OptionAnswer | str) -> float:
    """1 for the correct option. Text modes compare the tag's contents with the number as strings, as
    farel-bench does (`<ANSWER> 2</ANSWER>` is right, `<ANSWER>2.</ANSWER>` is wrong)."""
    given = str(output.answer) if isinstance(output, OptionAnswer) else output
    return 1.0 if given == str(case.expected) else 0.0


def question_text(case: Case, mode: AnswerMode) -> str:
    """The prompt as posed in `mode`: text modes keep it as is; others drop the `<ANSWER>` tag instruction."""
    if is_text_mode(mode):
        return case.prompt
    return "\n".join(line for line in case.prompt.split("\n") if line.strip() != TAG_INSTRUCTION)


def _instructions(mode: AnswerMode) -> str | None:
    if mode == "tool":
        return f"Answer by calling the {ANSWER_TOOL} tool with the number of the selected answer option."
    if mode in ("native", "prompted"):
        return "Answer with the number of the selected answer option."
    return None


def multiple_choice_task(name: str = "multiple-choice") -> Task[OptionAnswer | str]:
    """Cases carry their options in `metadata["options"]` and the correct number as `expected`
    (`Quiz.to_case()` makes them). The headline score is the macro accuracy over groups."""
    return Task(
        name=name,
        output_type=OptionAnswer,
        score=_score,
        reader=TextReader(
            read=strict_tag_answer,
            feedback=f"No <ANSWER> tag found. {TAG_INSTRUCTION}",
            invalid_kind="no_tag",
            relaxed=relaxed_tag_answer,
            example="<ANSWER>1</ANSWER>",
        ),
        instructions=_instructions,
        prompt=question_text,
        validation_context=_option_count,
        tool_name=ANSWER_TOOL,
        tool_description="Submit the number of the selected answer option.",
        aggregate="macro",
        example={"answer": 1},
        asks_once=("tag",),
    )


_MOST_OPTIONS = 10**9
"""More options than any quiz has: a larger number is left to the default view, never converted digit by digit."""


def _chosen(output: object) -> int | str | None:
    """The option number an output holds (a structured answer's, or a text reader's written as farel-bench writes
    a number: `2`, never `02`), the text a reader took that is no such number, or None for another shape."""
    if isinstance(output, dict):
        number = output.get("answer")
        if isinstance(number, int) and not isinstance(number, bool) and abs(number) < _MOST_OPTIONS:
            return number
        return None
    if isinstance(output, str):
        written = output.isascii() and output.isdigit() and (output == "0" or not output.startswith("0"))
        return int(output) if written and len(output) < len(str(_MOST_OPTIONS)) else output
    return None


def show_option(record: SampleRecord) -> list[AnswerLine]:
    """The option chosen, as the quiz lists it (`2. Anna is Mia's mother.`), right or wrong: a bare number means
    nothing without counting the options. A tag holding no number (`<ANSWER>2.</ANSWER>`, scored wrong) is shown
    quoted; a record of another shape as the default view shows it."""
    chosen, options, expected = _chosen(record.output), record.metadata.get("options"), record.expected
    if chosen is None or not (isinstance(options, list) and all(isinstance(o, str) for o in options)):
        return answer_lines(None, record)
    if isinstance(chosen, str):
        return [AnswerLine(f"{json.dumps(chosen, ensure_ascii=False)} (not an option number)", "wrong")]
    if not 1 <= chosen <= len(options):
        return [AnswerLine(f"{chosen}. (no such option)", "wrong")]
    right = isinstance(expected, int) and not isinstance(expected, bool) and chosen == expected
    return [AnswerLine(f"{chosen}. {options[chosen - 1]}", "right" if right else "wrong")]


def option_baseline(record: SampleRecord) -> tuple[int, int] | None:
    """The case's options counted and its right option's number, for the chance and favourite-position baselines:
    the multiple-choice suites declare it as their `Suite.baseline`."""
    options = record.metadata.get("options")
    if isinstance(options, list) and options and isinstance(record.expected, int):
        return len(options), record.expected
    return None


async def evaluate_quizzes(
    quizzes: Iterable[Quiz],
    model: Model | str,
    config: RunConfig | None = None,
    control: RunControl | None = None,
    **options: Any,
) -> EvaluationResult:
    """Multiple-choice quizzes (as the FaRel generator makes them) posed as `multiple_choice_task()`'s cases:
    the option number validated against each quiz's options, macro accuracy over classes. `config`, `control` and
    `options` are `evaluate()`'s."""
    cases = (quiz.to_case() for quiz in quizzes)
    return await evaluate(multiple_choice_task(), cases, model, config, control, **options)
