"""lineage-bench (github.com/fairydreaming/lineage-bench, MIT) as a suite: quizzes on graphs of 4 to 2,048 people
connected by ancestor and descendant relations, posed as multiple choice and read and scored as lineage-bench does.

Its parts: the generator (`generator`, the same bytes as `lineage_bench.py`), quiz files (`quiz_files`), the reading
of replies and the task (`answers`), published results imported (`importer`, `import_command`); here, the suite's
declaration.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import RunSummary, Scores
from typed_eval.core.datasets import Dataset
from typed_eval.core.suite import Suite
from typed_eval.core.tasks import Task
from typed_eval.suites.flags import QUIZ_FLAGS
from typed_eval.suites.lineage.answers import LINEAGE_TASK, relaxed_answer, strict_answer
from typed_eval.suites.lineage.generator import (
    DEFAULT_LENGTHS,
    DEFAULT_PROMPT,
    MAX_LENGTH,
    MIN_LENGTH,
    NONE_CORRECT,
    RELATIONS,
    SUITE,
    csv_line,
    generate,
    generated_dataset,
    group_name,
    main,
    numbered,
    quiz_case,
    size_of_group,
    size_scores,
)
from typed_eval.suites.lineage.import_command import IMPORT_LINEAGE
from typed_eval.suites.lineage.quiz_files import (
    case_from_row,
    csv_rows,
    options_of,
    read_dataset,
)
from typed_eval.suites.multiple_choice import OptionAnswer, option_baseline, show_option

__all__ = [
    "DEFAULT_LENGTHS",
    "DEFAULT_PROMPT",
    "LINEAGE",
    "LINEAGE_TASK",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "NONE_CORRECT",
    "RELATIONS",
    "SUITE",
    "LineageParams",
    "case_from_row",
    "csv_line",
    "csv_rows",
    "generate",
    "generated_dataset",
    "group_name",
    "main",
    "numbered",
    "options_of",
    "quiz_case",
    "read_dataset",
    "relaxed_answer",
    "size_of_group",
    "size_scores",
    "strict_answer",
]


class LineageParams(BaseModel):
    """lineage-bench's quizzes: lineage_bench.py's arguments for each problem size, or a quiz file."""

    model_config = ConfigDict(extra="forbid")

    quizzes: str | None = Field(None, description="a lineage CSV file, or - for standard input (default: generate)")
    length: list[int] = Field(list(DEFAULT_LENGTHS), description=f"people per quiz, {MIN_LENGTH} to {MAX_LENGTH}")
    number: int = Field(50, description="quizzes per answer option")
    seed: int | None = Field(42, description="generator seed")
    shuffle: bool = Field(True, description="shuffle the order of the relations")


def _build(params: LineageParams) -> tuple[Task[OptionAnswer | str], Dataset]:
    if params.quizzes is not None:
        return LINEAGE_TASK, read_dataset(params.quizzes)
    return LINEAGE_TASK, generated_dataset(params.length, params.number, params.seed, shuffle=params.shuffle)


def _sizes(scores: Scores) -> dict[str, float | None]:
    return size_scores(scores.groups)


def _size_line(summary: RunSummary) -> list[str]:
    sizes = size_scores(summary.scores.groups)
    return ["problem sizes: " + ", ".join(f"{name} {value:.2f}" for name, value in sizes.items() if value is not None)]


def _generator(argv: Sequence[str], prog: str) -> int:
    return main(argv, prog=prog)


LINEAGE = Suite(
    name=SUITE,
    params=LineageParams,
    build=_build,
    description="lineage-bench: ancestor and descendant quizzes on graphs of 4 to 2,048 people, multiple choice",
    columns=["lineage-*"],
    title="Lineage",
    modes=("tool", "native", "prompted", "text", "tag"),
    group_columns=False,
    relaxed_column=True,
    row_metrics=_sizes,
    headline=lambda _: "lineage",
    report_lines=_size_line,
    flags=QUIZ_FLAGS,
    importer=IMPORT_LINEAGE,
    generate=_generator,
    show_answer=show_option,
    baseline=option_baseline,
)
