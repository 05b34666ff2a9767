"""A run's cases: streamed from their source, never held whole, with a limit and resume filters applied.

`cases()` yields the dataset afresh each time (regenerating it, or reading the file again), so a run of
100,000 cases keeps only those in flight in memory; small datasets are kept after the first pass.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError

from typed_eval.contracts import Case, DatasetInfo
from typed_eval.core.errors import InputError, TaskError

__all__ = ["MAX_GENERATED_CASES", "Dataset", "bounded_size", "case_line", "dataset_from_cases", "survey"]

CaseSource = Callable[[], Iterator[Case]]


@dataclass(frozen=True)
class Dataset:
    info: DatasetInfo
    group_sizes: dict[str, int]
    """Cases per group, in dataset order (ungrouped cases count under the group name "all")."""
    _source: CaseSource
    _limit: int | None = None

    def cases(self) -> Iterator[Case]:
        """The cases to pose, in dataset order, with the limit applied: the source is left once the limit's
        cases are all found (a limited run of a huge generated dataset makes only the cases it needs)."""
        quota = self._quotas()
        left = sum(quota.values()) if quota is not None else None
        taken: dict[str, int] = {}
        source = self._source()
        try:
            for case in source:
                group = _group(case)
                seen = taken.get(group, 0)
                taken[group] = seen + 1
                if quota is None or seen < quota.get(group, 0):
                    yield case
                    if left is not None:
                        left -= 1
                        if left == 0:
                            return
        finally:
            close = getattr(source, "close", None)
            if callable(close):
                close()

    def load(self) -> list[Case]:
        return list(self.cases())

    @property
    def size(self) -> int:
        """How many cases the limit leaves."""
        quota = self._quotas()
        return sum(quota.values()) if quota is not None else sum(self.group_sizes.values())

    def _quotas(self) -> dict[str, int] | None:
        """`limit` cases in all, round-robin over the groups (each group's first ones)."""
        if self._limit is None:
            return None
        quota = dict.fromkeys(self.group_sizes, 0)
        left = self._limit
        while left and any(quota[g] < n for g, n in self.group_sizes.items()):
            for name, size in self.group_sizes.items():
                if left and quota[name] < size:
                    quota[name] += 1
                    left -= 1
        return quota

    def with_info(self, info: DatasetInfo) -> Dataset:
        """The same cases described by `info`."""
        return Dataset(info, self.group_sizes, self._source, self._limit)

    def limited(self, limit: int) -> Dataset:
        """A quick run that still scores every group (unlike the first rows of a quiz file, all of one class)."""
        if limit < 1:
            raise InputError(f"must be at least 1, got {limit}", parameter="limit")
        return Dataset(self.info.model_copy(update={"limit": limit}), self.group_sizes, self._source, limit)


def _group(case: Case) -> str:
    return case.group if case.group is not None else "all"


def case_line(case: Case) -> bytes:
    """A case as one canonical JSON line: what a dataset's MD5 is taken over (unless its suite makes its own)."""
    try:
        return case.model_dump_json().encode("utf-8") + b"\n"
    except PydanticSerializationError as exc:
        raise TaskError(f"case {case.id!r} cannot be stored as JSON: {str(exc).splitlines()[0]}") from None


_KEPT_IN_MEMORY = 20_000
_KEPT_CHARACTERS = 50_000_000
"""Datasets up to this size (cases, and characters of their lines or prompts) are kept after the first pass instead
of being generated or parsed again."""

MAX_GENERATED_CASES = 1_000_000
"""The most cases a suite's parameters may ask its generator for (`-S number=...`): every case is made before the
first is posed (the dataset's MD5 and group sizes are taken over all of them, even with `--limit`), so a billion
would generate for days before the first request."""

_PROGRESS_AFTER_S = 5.0
_PROGRESS_EVERY_S = 10.0
"""A survey that takes longer than this says how far it is on stderr, then again every few seconds."""


def bounded_size(value: int, parameter: str, *, per: int = 1, most: int = MAX_GENERATED_CASES) -> int:
    """`value` x `per` cases, or `InputError` in one line naming the bound and the largest `value` it allows when
    that is more than `most`."""
    cases = value * per
    if cases > most:
        product = f"{value:,} x {per:,} is {cases:,}" if per > 1 else f"{cases:,}"
        raise InputError(
            f"{product} cases, more than the {most:,} a generated dataset may hold (each is made before the first "
            f"is posed): use at most {most // per:,}",
            parameter=parameter,
        )
    return cases


class _Reporter:
    """Lines on stderr while a long survey goes on: how many cases so far, of how many, and the time left."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.started = time.monotonic()
        self.next = self.started + _PROGRESS_AFTER_S

    def seen(self, count: int) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + _PROGRESS_EVERY_S
        elapsed = now - self.started
        if self.total:
            left = elapsed * (self.total - count) / count
            where = f"{count:,} of {self.total:,} ({100 * count // self.total}%), about {left:.0f} s left"
        else:
            where = f"{count:,} so far"
        print(f"generating the cases: {where} (each is made once before the first is posed)", file=sys.stderr)


def survey(
    source: CaseSource, line: Callable[[Case], bytes] | None = case_line, *, total: int | None = None
) -> tuple[dict[str, int], str, CaseSource]:
    """Group sizes and the MD5 of the cases' lines in one pass; a small dataset is kept so later passes cost
    nothing. Case ids must be unique (they match records, resumed runs and paired comparisons). A pass that takes
    long says how far it is on stderr (`total`: how many cases the source will give, when known)."""
    sizes: dict[str, int] = {}
    md5 = hashlib.md5()
    ids: set[str] = set()
    kept: list[Case] | None = []
    characters = 0
    reporter = _Reporter(total)
    for case in source():
        if len(ids) % 256 == 0 and ids:
            reporter.seen(len(ids))
        if not isinstance(case, Case):
            raise TaskError(f"a case must be an evaluator.Case, got {type(case).__name__}")
        if case.id in ids:
            raise TaskError(f"case id {case.id!r} is used twice: ids must be unique")
        ids.add(case.id)
        group = _group(case)
        sizes[group] = sizes.get(group, 0) + 1
        written = line(case) if line is not None else None
        if written is not None:
            md5.update(written)
        if kept is not None:
            kept.append(case)
            characters += len(written) if written is not None else len(case.prompt)
            if len(kept) > _KEPT_IN_MEMORY or characters > _KEPT_CHARACTERS:
                kept = None
    if kept is None:
        return sizes, md5.hexdigest(), source
    small = kept
    return sizes, md5.hexdigest(), lambda: iter(small)


def dataset_from_cases(
    cases: Iterable[Case] | Callable[[], Iterable[Case]],
    *,
    suite: str,
    source: str = "code",
    total: int | None = None,
    **info: Any,
) -> Dataset:
    """A dataset of cases given in code (a list, or a function that makes them afresh each time); `total`: how many
    the function makes, when known (a long first pass then says how far it is)."""
    if callable(cases):
        factory = cases

        def make() -> Iterator[Case]:
            return iter(factory())
    else:
        given = cases if not isinstance(cases, Iterator) else list(cases)  # a one-shot iterator is read once

        def make() -> Iterator[Case]:
            return iter(given)

    sizes, md5, kept = survey(make, total=total)
    if not sizes:
        raise TaskError(f"suite {suite!r} has no cases")
    details = DatasetInfo(suite=suite, source=source, md5=md5, cases=sum(sizes.values()), **info)
    return Dataset(details, sizes, kept)
