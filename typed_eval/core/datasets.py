"""A run's cases: streamed from their source, never held whole, with a limit and resume filters applied.

`cases()` yields the dataset afresh each time (regenerating it, or reading the file again), so a run of
100,000 cases keeps only those in flight in memory; small datasets are kept after the first pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError

from typed_eval.core.errors import InputError, TaskError
from typed_eval.schemas import Case, DatasetInfo

__all__ = ["Dataset", "case_line", "dataset_from_cases", "survey"]

CaseSource = Callable[[], Iterator[Case]]


@dataclass(frozen=True)
class Dataset:
    info: DatasetInfo
    group_sizes: dict[str, int]
    """Cases per group, in dataset order (ungrouped cases count under the group name "all")."""
    _source: CaseSource
    _limit: int | None = None

    def cases(self) -> Iterator[Case]:
        """The cases to pose, in dataset order, with the limit applied."""
        quota = self._quotas()
        taken: dict[str, int] = {}
        for case in self._source():
            group = _group(case)
            seen = taken.get(group, 0)
            taken[group] = seen + 1
            if quota is None or seen < quota.get(group, 0):
                yield case

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
"""Datasets up to this size are kept after the first pass instead of being generated or parsed again."""


def survey(
    source: CaseSource, line: Callable[[Case], bytes] | None = case_line
) -> tuple[dict[str, int], str, CaseSource]:
    """Group sizes and the MD5 of the cases' lines in one pass; a small dataset is kept so later passes cost
    nothing. Case ids must be unique (they match records, resumed runs and paired comparisons)."""
    sizes: dict[str, int] = {}
    md5 = hashlib.md5()
    ids: set[str] = set()
    kept: list[Case] | None = []
    for case in source():
        if not isinstance(case, Case):
            raise TaskError(f"a case must be an evaluator.Case, got {type(case).__name__}")
        if case.id in ids:
            raise TaskError(f"case id {case.id!r} is used twice: ids must be unique")
        ids.add(case.id)
        group = _group(case)
        sizes[group] = sizes.get(group, 0) + 1
        if line is not None:
            md5.update(line(case))
        if kept is not None:
            kept.append(case)
            if len(kept) > _KEPT_IN_MEMORY:
                kept = None
    if kept is None:
        return sizes, md5.hexdigest(), source
    small = kept
    return sizes, md5.hexdigest(), lambda: iter(small)


def dataset_from_cases(
    cases: Iterable[Case] | Callable[[], Iterable[Case]], *, suite: str, source: str = "code", **info: Any
) -> Dataset:
    """A dataset of cases given in code (a list, or a function that makes them afresh each time)."""
    if callable(cases):
        factory = cases

        def make() -> Iterator[Case]:
            return iter(factory())
    else:
        given = cases if not isinstance(cases, Iterator) else list(cases)  # a one-shot iterator is read once

        def make() -> Iterator[Case]:
            return iter(given)

    sizes, md5, kept = survey(make)
    if not sizes:
        raise TaskError(f"suite {suite!r} has no cases")
    details = DatasetInfo(suite=suite, source=source, md5=md5, cases=sum(sizes.values()), **info)
    return Dataset(details, sizes, kept)
