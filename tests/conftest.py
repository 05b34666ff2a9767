"""Shared paths: the fixtures live in the repository (tests/fixtures), so a clone runs its tests alone."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from typed_eval.contracts import Attempt

REPO = Path(__file__).resolve().parent.parent
FAREL_FIXTURES = REPO / "tests" / "fixtures" / "farel-bench"
"""farel-bench's published dataset and five of its published logs (MIT: its LICENSE beside them)."""
PUBLISHED_CSV = FAREL_FIXTURES / "farel-bench.csv"
PUBLISHED_MD5 = "0b08876d7a221c9b9812ea85d746449a"
PYTHON = sys.executable


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers more than the cores this process may use, since many tests spend their time waiting on
    a process, a server or a clock (on 2 cores, the same tests and environment: 4 workers 7 min 25 s, 3 workers
    8 min 41 s, 2 about 10 min)."""
    return len(os.sched_getaffinity(0)) + 2


def without_usage(attempts: list[Attempt]) -> list[Attempt]:
    """Attempts as their verdicts: what each attempt's request used and cost left out (asserted on its own)."""
    return [a.model_copy(update={"input_tokens": None, "output_tokens": None, "cost_usd": None}) for a in attempts]


@pytest.fixture(autouse=True)
def collectable() -> Iterator[None]:
    """A test that calls the CLI's `main()` in this process freezes the collector (`gc.freeze()`, for a quick exit of
    the command): thawed after it, so what later tests make is collected, and DuckDB's objects are freed before the
    interpreter ends (else its bindings report them as leaked)."""
    yield
    gc.unfreeze()
