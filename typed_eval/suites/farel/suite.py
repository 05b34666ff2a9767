"""The FaRel suite: farel-bench's quizzes (generated on the fly, a FaRel CSV file, or standard input) posed as
multiple-choice cases. The dataset's MD5 is that of its farel-bench CSV bytes, as the published one's."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence

from pydantic import BaseModel, ConfigDict, Field

import farel_bench
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.errors import InputError
from typed_eval.core.sources import read_csv_source
from typed_eval.core.suite import Suite
from typed_eval.core.tasks import Task
from typed_eval.schemas import Case, DatasetInfo, Quiz, RunSummary
from typed_eval.suites.multiple_choice import OptionAnswer, multiple_choice_task, option_baseline, show_option

__all__ = ["FAREL", "FAREL_TASK", "FarelParams", "generated_dataset", "quiz_of", "read_dataset"]

FAREL_TASK: Task[OptionAnswer | str] = multiple_choice_task("farel")
"""FaRel's task: an option number in the structured modes, farel-bench's `<ANSWER>` tag in tag mode."""


def quiz_of(case: Case) -> Quiz:
    """The FaRel quiz a case was made from (its CSV line is what the dataset's MD5 covers)."""
    degree = case.metadata.get("degree")
    return Quiz(
        id=case.id,
        class_name=case.group or "",
        prompt=case.prompt,
        options=tuple(case.metadata["options"]),
        correct=int(case.expected),
        degree=degree if isinstance(degree, int) else None,
    )


def _csv_line(case: Case) -> bytes:
    return (farel_bench.csv_line(quiz_of(case)) + "\n").encode("utf-8")


def generated_dataset(length: int, number: int, seed: int | None, *, shuffle: bool, template: str | None = None,
                      unambiguous: bool = False) -> Dataset:  # fmt: skip
    """The quizzes `farel_bench.py -l length -n number -r seed [-s]` writes, and that CSV's MD5."""
    for name, value in (("length", length), ("number", number)):
        if value < 1:
            raise InputError(f"must be at least 1, got {value}", parameter=name)
    try:
        prompt = farel_bench.decode_template(template) if template is not None else farel_bench.DEFAULT_TEMPLATE
    except farel_bench.FarelFormatError as exc:
        raise InputError(str(exc)) from None

    def source() -> Iterator[Case]:
        quizzes = farel_bench.generate(length, number, seed, shuffle=shuffle, template=prompt, unambiguous=unambiguous)
        return (quiz.to_case() for quiz in quizzes)

    try:
        sizes, md5, source = survey(source, _csv_line)
    except farel_bench.FarelLengthError as exc:
        raise InputError(str(exc)) from None
    params = {"length": length, "number": number, "seed": seed, "shuffle": shuffle}
    if unambiguous:
        params["unambiguous"] = True
    info = DatasetInfo(suite="farel", source="generated", md5=md5, cases=sum(sizes.values()), params=params)
    return Dataset(info, sizes, source)


def read_dataset(path: str) -> Dataset:
    """FaRel CSV from a file, or from standard input when `path` is `-` (read once, kept as text)."""
    raw, text, where = read_csv_source(path, "FaRel CSV")

    def source() -> Iterator[Case]:
        return (quiz.to_case() for quiz in farel_bench.iter_csv(text.splitlines(), source=where))

    try:
        sizes, _, source = survey(source, None)
    except farel_bench.FarelFormatError as exc:
        raise InputError(f"malformed CSV: {exc}") from None
    if not sizes:
        raise InputError(f"malformed CSV: {where}: no quizzes found")
    info = DatasetInfo(suite="farel", source="stdin" if path == "-" else "file", path=None if path == "-" else path,
                       md5=hashlib.md5(raw).hexdigest(), cases=sum(sizes.values()))  # fmt: skip
    return Dataset(info, sizes, source)


class FarelParams(BaseModel):
    """FaRel's quizzes: farel_bench.py's arguments, or a quiz file."""

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
    return farel_bench.main(list(argv))


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
    baseline=option_baseline,
    group_header=_class_header,
)
