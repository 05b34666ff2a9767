"""The four answer modes: what the agent must output, what it is told, and how tag replies are read."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_ai import ModelRetry, NativeOutput, PromptedOutput, RunContext, TextOutput, ToolOutput
from pydantic_ai.output import OutputSpec
from pydantic_core import PydanticCustomError

from schemas import AnswerMode, Quiz

__all__ = [
    "ANSWER_TOOL",
    "DEFAULT_SYSTEM_PROMPT",
    "OptionAnswer",
    "mode_instructions",
    "output_spec",
    "question_text",
    "relaxed_tag_answer",
    "strict_tag_answer",
]

ANSWER_TOOL = "select_answer"

DEFAULT_SYSTEM_PROMPT = (
    "You are a master of logical thinking. You carefully analyze the premises step by step, take detailed "
    "notes and draw intermediate conclusions based on which you can find the final answer to any question."
)
"""farel-bench's default system prompt (its `-sys` leaderboard rows)."""

TAG_INSTRUCTION = "Enclose the selected answer number in the <ANSWER> tag, for example: <ANSWER>1</ANSWER>."

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
    """The typed answer: an option number, checked against the option count of the quiz being asked."""

    model_config = ConfigDict(extra="forbid", title="SelectedAnswer")

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


def _tag_reply(ctx: RunContext[int], text: str) -> str:
    """Accept any reply; with retries left, ask again for one that carries the tag."""
    if strict_tag_answer(text) is None and ctx.retry < ctx.max_retries:
        raise ModelRetry(f"No <ANSWER> tag found. {TAG_INSTRUCTION}")
    return text


def output_spec(mode: AnswerMode) -> OutputSpec[Any]:
    """What the agent must produce in `mode` (pydantic-ai validates it and asks again when invalid)."""
    description = "Submit the number of the selected answer option."
    if mode == "tool":
        return ToolOutput(OptionAnswer, name=ANSWER_TOOL, description=description)
    if mode == "native":
        return NativeOutput(OptionAnswer, name=ANSWER_TOOL, description=description)
    if mode == "prompted":
        return PromptedOutput(OptionAnswer, name=ANSWER_TOOL, description=description)
    return TextOutput(_tag_reply)


def mode_instructions(mode: AnswerMode) -> str | None:
    """What the evaluator tells the model about answering, in place of the quiz's tag instruction."""
    if mode == "tool":
        return f"Answer by calling the {ANSWER_TOOL} tool with the number of the selected answer option."
    if mode in ("native", "prompted"):
        return "Answer with the number of the selected answer option."
    return None


def question_text(quiz: Quiz, mode: AnswerMode) -> str:
    """The prompt as posed in `mode`: tag mode keeps it as is; others drop the `<ANSWER>` tag instruction."""
    if mode == "tag":
        return quiz.prompt
    lines = quiz.prompt.split("\n")
    return "\n".join(line for line in lines if line.strip() != TAG_INSTRUCTION)
