"""lineage-bench's quiz CSVs read back as cases: a file, or standard input."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterator

from typed_eval.contracts import Case, DatasetInfo
from typed_eval.core.datasets import Dataset, survey
from typed_eval.core.errors import InputError
from typed_eval.core.sources import read_csv_source
from typed_eval.suites.lineage.generator import (
    RELATIONS,
    SUITE,
    numbered,
    quiz_case,
)

__all__ = ["case_from_row", "csv_rows", "options_of", "read_dataset"]


_OPTION_LINE = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def options_of(prompt: str) -> tuple[str, ...]:
    """The numbered option lines 1..K of a quiz (the last run that starts at 1)."""
    runs: list[list[str]] = []
    for match in _OPTION_LINE.finditer(prompt):
        if match.group(1) == "1":
            runs.append([match.group(2)])
        elif runs and match.group(1) == str(len(runs[-1]) + 1):
            runs[-1].append(match.group(2))
    if not runs or len(runs[-1]) < 2:
        raise InputError("no numbered answer options (1., 2., ...) in the quiz")
    return tuple(runs[-1])


_MAX_DIGITS = 9


def _whole_number(field: str, what: str) -> int:
    """A small whole number as lineage-bench writes one; a field of thousands of digits is refused, not parsed."""
    text = field.strip()
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_DIGITS:
        raise InputError(f"{what} is {field[:12]!r}, not a whole number")
    return int(text)


def case_from_row(size_field: str, relation: str, correct_field: str, prompt: str, where: str) -> Case:
    """A quiz read back from lineage-bench's CSV (its quiz file or its results); bad fields name `where`."""
    try:
        size = _whole_number(size_field, "the problem size")
        if relation not in RELATIONS:
            raise InputError(f"unknown relation {relation[:40]!r} (lineage-bench's are {', '.join(RELATIONS)})")
        correct = _whole_number(correct_field, "the correct answer")
        options = options_of(prompt)
        if not 1 <= correct <= len(options):
            raise InputError(f"the correct answer {correct} is not an option number 1..{len(options)}")
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None
    return quiz_case(size, relation, correct, prompt, options)


def csv_rows(text: str, where: str) -> Iterator[tuple[int, list[str]]]:
    """Rows of a CSV text with their numbers (blank lines skipped, as pandas skips them); one line on bad CSV.

    A field may be as long as the text (a model's reply of more than the csv module's 131,072 characters: three of
    the result files lineage-bench publishes hold one); the reader still holds one row at a time."""
    reader = csv.reader(io.StringIO(text, newline=""))
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))  # the module's one setting, put back when the rows are read
    number = 0
    try:
        for row in reader:
            if row:
                number += 1
                yield number, row
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {where} line {reader.line_num}: {exc}") from None
    finally:
        csv.field_size_limit(limit)


def read_dataset(path: str) -> Dataset:
    """lineage-bench quizzes (`lineage_bench.py`'s CSV) from a file, or standard input when `path` is `-`."""
    raw, text, where = read_csv_source(path, "lineage CSV")
    cases: list[Case] = []
    for number, row in csv_rows(text, where):
        if len(row) != 4:
            raise InputError(
                f"malformed CSV: {where} row {number}: expected 4 fields (size, relation, answer, quiz), got {len(row)}"
            )
        size, relation, correct, quiz = row
        cases.append(case_from_row(size, relation, correct, quiz, f"malformed CSV: {where} row {number}"))
    if not cases:
        raise InputError(f"malformed CSV: {where}: no quizzes found")
    cases = list(numbered(cases))
    groups, _, source = survey(lambda: iter(cases), None)
    sizes = list(dict.fromkeys(int(case.metadata["problem_size"]) for case in cases))
    info = DatasetInfo(
        suite=SUITE,
        source="stdin" if path == "-" else "file",
        path=None if path == "-" else path,
        md5=hashlib.md5(raw).hexdigest(),
        cases=len(cases),
        params={"problem_sizes": sizes},
    )
    return Dataset(info, groups, source)
