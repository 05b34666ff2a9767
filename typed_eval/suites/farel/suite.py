"""The FaRel suite: farel-bench's quizzes (generated on the fly, a FaRel CSV file, or standard input) posed as
multiple-choice cases. The dataset's MD5 is that of its farel-bench CSV bytes, as the published one's."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from typed_eval.contracts import RunSummary
from typed_eval.core.datasets import Dataset
from typed_eval.core.suite import Suite, SuiteFlag
from typed_eval.core.tasks import Task
from typed_eval.suites.farel import generate_command
from typed_eval.suites.farel.dataset import FAREL_TASK, generated_dataset, quiz_of, read_dataset
from typed_eval.suites.farel.import_command import IMPORT_FAREL
from typed_eval.suites.farel.stored_v1 import STORED_V1
from typed_eval.suites.flags import QUIZ_FLAGS
from typed_eval.suites.multiple_choice import OptionAnswer, option_baseline, show_option

__all__ = ["FAREL", "FAREL_TASK", "FarelParams", "generated_dataset", "quiz_of", "read_dataset"]


class FarelParams(BaseModel):
    """FaRel's quizzes: farel.py's arguments, or a quiz file."""

    model_config = ConfigDict(extra="forbid")

    quizzes: str | None = Field(None, description="a FaRel CSV file, or - for standard input (default: generate)")
    length: int = Field(3, description="generate degrees 1..length")
    number: int = Field(50, description="quizzes per class")
    seed: int | None = Field(42, description="generator seed")
    shuffle: bool = Field(True, description="shuffle statements and options")
    unambiguous: bool = Field(
        False, description="name the two 'cousin Nx removed' classes of degree >= 5 apart (not farel-bench parity)"
    )


def _build(params: FarelParams) -> tuple[Task[OptionAnswer | str], Dataset]:
    if params.quizzes is not None:
        return FAREL_TASK, read_dataset(params.quizzes)
    dataset = generated_dataset(
        params.length, params.number, params.seed, shuffle=params.shuffle, unambiguous=params.unambiguous
    )
    return FAREL_TASK, dataset


def _headline(summary: RunSummary) -> str:
    length = summary.dataset.params.get("length")
    return f"FaRel{'-' + str(length) if length else ''}"


def _ambiguous(summary: RunSummary) -> list[str]:
    if not summary.scores.excluded:
        return []
    return [
        f"ambiguous: {len(summary.excluded_case_ids)} quizzes repeat the correct option's name; recorded but not "
        "scored (use --unambiguous to name the classes apart)"
    ]


def _class_header(name: str) -> str:
    """Class names as the public FaRel table writes its headers: "grandchild" -> "grand-child"."""
    return re.sub(r"grand(?=[a-z])", "grand-", name)


def _generate(argv: Sequence[str], prog: str) -> int:
    return generate_command.main(list(argv))


FAREL = Suite(
    name="farel",
    params=FarelParams,
    build=_build,
    description="FaRel: family-relationship quizzes of farel-bench, multiple choice (score: macro accuracy)",
    title="FaRel",
    modes=("tool", "native", "prompted", "text", "tag"),
    headline=_headline,
    report_lines=_ambiguous,
    generate=_generate,
    show_answer=show_option,
    flags=(*QUIZ_FLAGS, SuiteFlag("--unambiguous", "unambiguous", value=True)),
    importer=IMPORT_FAREL,
    board_flags=("--farel-only",),
    formats=(STORED_V1,),
    default=True,
    baseline=option_baseline,
    group_header=_class_header,
)
