"""Where a run's quizzes come from: generated on the fly, a FaRel CSV file, or standard input.

A dataset is streamed, never held whole: `quizzes()` yields it afresh each time (regenerating it, or
reading the file again), so a run of 100,000 quizzes keeps only those in flight in memory.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import farel_bench
from harness.errors import InputError
from schemas import DatasetInfo, Quiz

__all__ = ["Dataset", "generated_dataset", "read_dataset"]


@dataclass(frozen=True)
class Dataset:
    info: DatasetInfo
    class_sizes: dict[str, int]
    """Quizzes per class, in dataset order."""
    _source: Callable[[], Iterator[Quiz]]
    _limit: int | None = None
    _skip: frozenset[str] = field(default_factory=frozenset)
    _only: frozenset[str] | None = None

    def quizzes(self) -> Iterator[Quiz]:
        """The quizzes to pose, in dataset order, with the limit and any skipped ids applied."""
        quota = self._quotas()
        taken: dict[str, int] = {}
        for quiz in self._source():
            seen = taken.get(quiz.class_name, 0)
            taken[quiz.class_name] = seen + 1
            if quota is not None and seen >= quota.get(quiz.class_name, 0):
                continue
            if quiz.id in self._skip or (self._only is not None and quiz.id not in self._only):
                continue
            yield quiz

    def load(self) -> list[Quiz]:
        return list(self.quizzes())

    @property
    def size(self) -> int:
        """How many quizzes the limit leaves (before skipping any)."""
        quota = self._quotas()
        return sum(quota.values()) if quota is not None else sum(self.class_sizes.values())

    def _quotas(self) -> dict[str, int] | None:
        """`--limit` quizzes in all, round-robin over the classes (each class's first ones)."""
        if self._limit is None:
            return None
        quota = dict.fromkeys(self.class_sizes, 0)
        left = self._limit
        while left and any(quota[c] < n for c, n in self.class_sizes.items()):
            for name, size in self.class_sizes.items():
                if left and quota[name] < size:
                    quota[name] += 1
                    left -= 1
        return quota

    def limited(self, limit: int) -> Dataset:
        """A quick run that still scores every class (unlike the first rows of a FaRel file, all of one class)."""
        if limit < 1:
            raise InputError(f"--limit must be at least 1, got {limit}")
        return Dataset(self.info.model_copy(update={"limit": limit}), self.class_sizes, self._source, limit)

    def without(self, done: Iterable[str]) -> Dataset:
        """Leave out quizzes already answered (a resumed run)."""
        return Dataset(self.info, self.class_sizes, self._source, self._limit, self._skip | frozenset(done), self._only)

    def only(self, ids: Iterable[str]) -> Dataset:
        """Keep only these quizzes (the errors that `--retry-errors` poses again)."""
        return Dataset(self.info, self.class_sizes, self._source, self._limit, self._skip, frozenset(ids))


_KEPT_IN_MEMORY = 20_000
"""Datasets up to this size are kept after the first pass instead of being generated or parsed again."""


def _survey(
    source: Callable[[], Iterator[Quiz]], md5: hashlib._Hash | None
) -> tuple[dict[str, int], Callable[[], Iterator[Quiz]]]:
    """Class sizes (and the CSV's MD5) in one pass; a small dataset is kept so later passes cost nothing."""
    sizes: dict[str, int] = {}
    kept: list[Quiz] | None = []
    for quiz in source():
        sizes[quiz.class_name] = sizes.get(quiz.class_name, 0) + 1
        if md5 is not None:
            md5.update((farel_bench.csv_line(quiz) + "\n").encode("utf-8"))
        if kept is not None:
            kept.append(quiz)
            if len(kept) > _KEPT_IN_MEMORY:
                kept = None
    if kept is None:
        return sizes, source
    small = kept
    return sizes, lambda: iter(small)


def generated_dataset(length: int, number: int, seed: int | None, *, shuffle: bool, template: str | None = None,
                      unambiguous: bool = False) -> Dataset:  # fmt: skip
    """The quizzes `farel_bench.py -l length -n number -r seed [-s]` writes, and that CSV's MD5."""
    if length < 1 or number < 1:
        raise InputError(f"--length and --number must be at least 1, got {length} and {number}")
    try:
        prompt = farel_bench.decode_template(template) if template is not None else farel_bench.DEFAULT_TEMPLATE
    except farel_bench.FarelFormatError as exc:
        raise InputError(str(exc)) from None

    def source() -> Iterator[Quiz]:
        return farel_bench.generate(length, number, seed, shuffle=shuffle, template=prompt, unambiguous=unambiguous)

    md5 = hashlib.md5()
    sizes, source = _survey(source, md5)
    info = DatasetInfo(source="generated", md5=md5.hexdigest(), quizzes=sum(sizes.values()), length=length,
                       number=number, seed=seed, shuffle=shuffle)  # fmt: skip
    return Dataset(info, sizes, source)


def read_dataset(path: str) -> Dataset:
    """FaRel CSV from a file, or from standard input when `path` is `-` (read once, kept as text)."""
    if path == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("--quizzes - reads FaRel CSV from standard input, but nothing is piped in")
        raw = sys.stdin.buffer.read()
        where = "standard input"
    else:
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read quizzes from {path}: {exc.strerror or exc}") from None
        where = path
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"malformed CSV in {where}: not UTF-8 text") from None

    def source() -> Iterator[Quiz]:
        return farel_bench.iter_csv(text.splitlines(), source=where)

    try:
        sizes, source = _survey(source, None)
    except farel_bench.FarelFormatError as exc:
        raise InputError(f"malformed CSV: {exc}") from None
    if not sizes:
        raise InputError(f"malformed CSV: {where}: no quizzes found")
    info = DatasetInfo(source="stdin" if path == "-" else "file", path=None if path == "-" else path,
                       md5=hashlib.md5(raw).hexdigest(), quizzes=sum(sizes.values()))  # fmt: skip
    return Dataset(info, sizes, source)
