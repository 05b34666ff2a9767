"""Progress of a run: a rich live display on a terminal, plain periodic lines on stderr otherwise."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text

from typed_eval.contracts import SampleRecord
from typed_eval.providers.batches import describe_states
from typed_eval.providers.transport import TrafficMeter

__all__ = ["Progress"]

_PLAIN_EVERY_S = 10.0


class _StatsColumn(ProgressColumn):
    """Rendered on every refresh, so backoff waits show even while no sample finishes."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self._progress = progress

    def render(self, task: Task) -> Text:
        return Text(str(task.fields.get("final", "")) or self._progress.stats())


class Progress:
    """Done/total, rate, ETA, mean score, invalid outputs, corrective retries, errors, transport retries and
    backoff waits in progress, tokens and cost so far, and the pace (requests in flight and per second, the limit
    the provider stated, "waiting for capacity" or "provider unavailable"), so a run waiting on a rate limit or
    an outage never looks stuck."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.total = 0
        self.label = "cases"
        self._traffic = TrafficMeter()
        self.done = self.invalid = self.retries = self.errors = self.unsupported = self.requests = self.tokens = 0
        self.score = 0.0
        self.cost: float | None = None
        self._quiet = quiet
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        console = Console(stderr=True)
        self._rich: RichProgress | None = None
        if not quiet and console.is_terminal:
            self._rich = RichProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                _StatsColumn(self),
                console=console,
            )
        self._task: TaskID | None = None
        self._began = False
        self._said: list[str] = []

    def stats(self) -> str:
        answered = self.done - self.errors - self.unsupported
        score = f"{100 * self.score / answered:.1f}%" if answered else "-"
        rate = self.done / max(time.monotonic() - self._started, 1e-9)
        cost = "cost ?" if self.cost is None else f"${self.cost:.4f}"
        traffic = self._traffic
        waiting = f" ({traffic.waiting_now} backing off)" if traffic.waiting_now else ""
        batches = describe_states(traffic.batch_states)
        pace = f" | {traffic.pacer.describe()}" if traffic.pacer is not None else ""
        refused = f" | unsupported {self.unsupported}" if self.unsupported else ""
        return (batches + " | " if batches else "") + (
            f"score {score} | invalid outputs {self.invalid} | corrective retries {self.retries} | "
            f"errors {self.errors}{refused} | transport retries {traffic.transport_retries}{waiting} | "
            f"{self.requests} req, {self.tokens} tok, {cost} | {rate:.1f}/s{pace}{self._notes(traffic)}"
        )

    def _notes(self, traffic: TrafficMeter) -> str:
        """What the provider sent that could not be true, said once each, in the display while the run lasts."""
        if traffic.pacer is None:
            return ""
        for note in traffic.pacer.report().notes:
            if note not in self._said:
                self._said.append(note)
        return "".join(f" | provider sent {note}" for note in self._said)

    def advance(self, record: SampleRecord) -> None:
        self.done += 1
        self.score += record.score or 0.0
        self.retries += record.corrective_retries
        self.errors += record.status == "error"
        self.unsupported += record.status == "unsupported"
        self.invalid += sum(not a.valid for a in record.attempts)
        self.requests += record.usage.requests
        self.tokens += (record.usage.input_tokens or 0) + (record.usage.output_tokens or 0)
        if record.cost.usd is not None:
            self.cost = (self.cost or 0.0) + record.cost.usd
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, advance=1)

    def start(self, total: int, label: str = "cases", traffic: TrafficMeter | None = None) -> None:
        """A run starts posing `total` samples (a resumed run: only those left): a bar of its own, named
        `label` (the model), below those of the runs before it; the counters start again."""
        if self._began:  # the earlier model's bar keeps its own figures
            self.finish()
        self._began = True
        self.total, self.label, self._started = total, label, time.monotonic()
        self._traffic = traffic or TrafficMeter()
        self.done = self.invalid = self.retries = self.errors = self.unsupported = self.requests = self.tokens = 0
        self.score, self.cost = 0.0, None
        self._said = []
        if self._rich is not None:
            self._task = self._rich.add_task(escape(label), total=total)  # a model name is text, never markup

    def finish(self) -> None:
        """The run being shown is over: its last figures now (before its report), and not again later."""
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, final=self.stats())
            self._rich.refresh()
        elif self._ticker is not None and self._began:
            self._line()
        self._began = False

    def _tick(self) -> None:
        while not self._stop.wait(_PLAIN_EVERY_S):
            if self._began:  # between runs (a report being printed) there is nothing to show
                self._line()

    def _line(self) -> None:
        print(f"progress: {self.label} {self.done}/{self.total} | {self.stats()}", file=sys.stderr, flush=True)

    def __enter__(self) -> Progress:
        if self._rich is not None:
            self._rich.start()
        elif not self._quiet:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            if self._began:
                self._line()
