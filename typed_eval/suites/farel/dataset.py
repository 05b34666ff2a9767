"""FaRel's quizzes as a dataset: generated as `farel.py` generates them, or read from a FaRel CSV (a file or
standard input); the dataset's MD5 is that of its farel-bench CSV bytes, as the published one's."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from typed_eval.contracts import Case, DatasetInfo
from typed_eval.core.datasets import Dataset, bounded_size, survey
from typed_eval.core.errors import InputError
from typed_eval.core.sources import read_csv_source
from typed_eval.core.tasks import Task
from typed_eval.suites.farel import generator as farel
from typed_eval.suites.farel.quiz import FarelQuiz
from typed_eval.suites.multiple_choice import OptionAnswer, multiple_choice_task

__all__ = ["FAREL_TASK", "generated_dataset", "quiz_of", "read_dataset"]

FAREL_TASK: Task[OptionAnswer | str] = multiple_choice_task("farel")
"""FaRel's task: an option number in the structured modes, farel-bench's `<ANSWER>` tag in tag mode."""


def quiz_of(case: Case) -> FarelQuiz:
    """The FaRel quiz a case was made from (its CSV line is what the dataset's MD5 covers)."""
    degree = case.metadata.get("degree")
    return FarelQuiz(
        id=case.id,
        class_name=case.group or "",
        prompt=case.prompt,
        options=tuple(case.metadata["options"]),
        correct=int(case.expected),
        degree=degree if isinstance(degree, int) else None,
    )


def _csv_line(case: Case) -> bytes:
    return (farel.csv_line(quiz_of(case)) + "\n").encode("utf-8")


def generated_dataset(
    length: int, number: int, seed: int | None, *, shuffle: bool, template: str | None = None, unambiguous: bool = False
) -> Dataset:
    """The quizzes `farel.py -l length -n number -r seed [-s]` writes, and that CSV's MD5."""
    for name, value in (("length", length), ("number", number)):
        if value < 1:
            raise InputError(f"must be at least 1, got {value}", parameter=name)
    try:
        prompt = farel.decode_template(template) if template is not None else farel.DEFAULT_TEMPLATE
    except farel.FarelFormatError as exc:
        raise InputError(str(exc)) from None

    degrees = min(length, 12)  # past 12 the names run out (FarelLengthError, while generating)
    total = bounded_size(number, "number", per=degrees * (degrees + 3) // 2)  # degree d has d + 1 classes

    def source() -> Iterator[Case]:
        quizzes = farel.generate(length, number, seed, shuffle=shuffle, template=prompt, unambiguous=unambiguous)
        return (quiz.to_case() for quiz in quizzes)

    try:
        sizes, md5, source = survey(source, _csv_line, total=total)
    except farel.FarelLengthError as exc:
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
        return (quiz.to_case() for quiz in farel.iter_csv(text.splitlines(), source=where))

    try:
        sizes, _, source = survey(source, None)
    except farel.FarelFormatError as exc:
        raise InputError(f"malformed CSV: {exc}") from None
    if not sizes:
        raise InputError(f"malformed CSV: {where}: no quizzes found")
    info = DatasetInfo(
        suite="farel",
        source="stdin" if path == "-" else "file",
        path=None if path == "-" else path,
        md5=hashlib.md5(raw).hexdigest(),
        cases=sum(sizes.values()),
    )
    return Dataset(info, sizes, source)
