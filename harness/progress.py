"""Progress of a run: a rich live bar on a terminal, plain periodic lines on stderr otherwise."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

from schemas import SampleRecord

__all__ = ["Progress"]

_PLAIN_EVERY_S = 10.0


class Progress:
    """Counts finished samples and shows done/total, rate, ETA, accuracy, invalid outputs and errors so far."""

    def __init__(self, total: int, *, quiet: bool = False) -> None:
        self.total = total
        self.done = self.correct = self.invalid = self.errors = self.requests = 0
        self._quiet = quiet
        self._started = self._last_line = time.monotonic()
        console = Console(stderr=True)
        self._rich = (
            None
            if quiet or not console.is_terminal
            else RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[stats]}"),
                console=console,
                transient=False,
            )
        )
        self._task = self._rich.add_task("quizzes", total=total, stats="") if self._rich is not None else None

    def _stats(self) -> str:
        answered = self.done - self.errors
        accuracy = f"{100 * self.correct / answered:.1f}%" if answered else "-"
        rate = self.done / max(time.monotonic() - self._started, 1e-9)
        return f"acc {accuracy} | invalid {self.invalid} | errors {self.errors} | {self.requests} req | {rate:.1f}/s"

    def advance(self, record: SampleRecord) -> None:
        self.done += 1
        self.correct += record.status == "correct"
        self.errors += record.status == "error"
        self.invalid += sum(not a.valid for a in record.attempts)
        self.requests += record.usage.requests
        if self._quiet:
            return
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, advance=1, stats=self._stats())
            return
        now = time.monotonic()
        if now - self._last_line >= _PLAIN_EVERY_S or self.done == self.total:
            self._last_line = now
            print(f"progress: {self.done}/{self.total} | {self._stats()}", file=sys.stderr, flush=True)

    def __enter__(self) -> Progress:
        if self._rich is not None:
            self._rich.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()
