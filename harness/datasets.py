"""Where a run's quizzes come from: generated on the fly, a FaRel CSV file, or standard input."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import farel_bench
from harness.errors import InputError
from schemas import DatasetInfo, Quiz

__all__ = ["Dataset", "generated_dataset", "limit_per_class", "read_dataset"]


@dataclass(frozen=True)
class Dataset:
    quizzes: list[Quiz]
    info: DatasetInfo


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def generated_dataset(
    length: int, number: int, seed: int | None, *, shuffle: bool, template: str | None = None, unambiguous: bool = False
) -> Dataset:
    """The quizzes `farel_bench.py -l length -n number -r seed [-s]` would write, and that CSV's MD5."""
    if length < 1 or number < 1:
        raise InputError(f"--length and --number must be at least 1, got {length} and {number}")
    try:
        prompt = farel_bench.decode_template(template) if template is not None else farel_bench.DEFAULT_TEMPLATE
    except farel_bench.FarelFormatError as exc:
        raise InputError(str(exc)) from None
    quizzes = list(
        farel_bench.generate(length, number, seed, shuffle=shuffle, template=prompt, unambiguous=unambiguous)
    )
    csv_text = "".join(farel_bench.csv_line(q) + "\n" for q in quizzes)
    info = DatasetInfo(
        source="generated",
        md5=_md5(csv_text),
        quizzes=len(quizzes),
        length=length,
        number=number,
        seed=seed,
        shuffle=shuffle,
    )
    return Dataset(quizzes, info)


def read_dataset(path: str) -> Dataset:
    """FaRel CSV from a file, or from standard input when `path` is `-`."""
    if path == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("--quizzes - reads FaRel CSV from standard input, but nothing is piped in")
        raw = sys.stdin.buffer.read()
        source, where = "stdin", "standard input"
    else:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read quizzes from {path}: {exc.strerror or exc}") from None
        source, where = "file", path
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"malformed CSV in {where}: not UTF-8 text") from None
    try:
        quizzes = farel_bench.read_csv(text.splitlines(), source=where)
    except farel_bench.FarelFormatError as exc:
        raise InputError(f"malformed CSV: {exc}") from None
    info = DatasetInfo(
        source="stdin" if source == "stdin" else "file",
        path=None if path == "-" else path,
        md5=hashlib.md5(raw).hexdigest(),
        quizzes=len(quizzes),
    )
    return Dataset(quizzes, info)


def limit_per_class(quizzes: Sequence[Quiz], limit: int) -> list[Quiz]:
    """`limit` quizzes in all, taken round-robin over the classes (each class's first ones), in dataset order.

    A quick run this way still scores every class, unlike the first `limit` rows of a FaRel file
    (which are all of the first class).
    """
    if limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    by_class: dict[str, list[int]] = {}
    for index, quiz in enumerate(quizzes):
        by_class.setdefault(quiz.class_name, []).append(index)
    chosen: list[int] = []
    depth = 0
    while len(chosen) < limit and any(depth < len(v) for v in by_class.values()):
        for indexes in by_class.values():
            if depth < len(indexes) and len(chosen) < limit:
                chosen.append(indexes[depth])
        depth += 1
    return [quizzes[i] for i in sorted(chosen)]
