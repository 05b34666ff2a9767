"""Pose a run's samples in several processes: past the one core a pydantic-ai agent's client work saturates.

The process that owns the run (its folder lock, `samples.jsonl`, the summary, the budgets) writes the samples
still to pose, in order, to a work file, and orders its worker processes to pose from it; it and they share that
stream: each part takes the next free chunk of it (a counter under a file lock) whenever it has posed its last
one, so a part that started late or runs slower simply takes fewer. Each worker writes every record to its
standard output as one JSON line, then a last line with how its part ended; the owner appends each record as
it arrives, so a run has one writer and one record per sample, and resume, retry-errors and budgets work as in
one process.

The workers are forked from the command before its event loop starts (`WorkerPool`): each begins with every
module imported and the cases read, where a freshly started interpreter spent 1.5 s of CPU getting there, time
in which the owner posed alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import gc
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

from pydantic import ValidationError

from typed_eval.contracts import RunStatus, SampleRecord
from typed_eval.core.errors import EvaluatorError, ResultFileError
from typed_eval.core.tasks import Task
from typed_eval.engine.collector import Collector
from typed_eval.engine.control import Budget, StopState
from typed_eval.engine.evaluation import EvaluationResult, Sample, ToolChoice
from typed_eval.providers.local_server import die_with_parent

__all__ = [
    "UNHEARD_STOP_S",
    "WorkerPool",
    "WorkerProcesses",
    "WorkerShare",
    "claimed_samples",
    "pose_in_workers",
    "share_result_line",
    "stop_when_told",
    "write_record_line",
]

_LINE_LIMIT = 1 << 31
"""The longest record line a worker may send (2 GiB, a bound on the buffer only: a record holds every attempt's raw
reply, and a model may write tens of megabytes; one process stores whatever it is sent)."""
WORK_PREFIX = ".work-"
"""A segment's work file is `.work-<owner pid>.jsonl` with its claims counter beside it (`.claims`): a worker
left over from a killed owner cannot take chunks of a later segment's stream."""
CHUNK = 8
"""Samples a part takes from the stream at a time: small, so the parts end together."""
_ORDERS, _REPORTS = 0, 1
"""A worker's standard input carries its owner's orders; its standard output, its records."""
_STOP = b"stop"
_RECORD_OPENING, _RECORD_CLOSING = b'{"record":', b"}\n"
"""A record's line: the record's JSON wrapped, read by the owner in one pass of pydantic's parser."""
UNHEARD_STOP_S = 3.0
"""How long after its grace period a worker told to stop may take to say how its part ended before it is killed."""
_CLOSE_WAIT_S = 5.0
"""How long a closed pool waits for an idle worker to exit before killing it."""


@dataclass(frozen=True)
class _Worker:
    pid: int
    orders: int
    reports: int


class WorkerPool:
    """`count - 1` worker processes forked now, before the caller starts an event loop (a fork copies no running
    loop), each serving orders until the pool is closed: `serve(order)` poses the part an order names and returns
    its exit code (a non-zero code ends the worker with it). Each worker is in its own session (a terminal's Ctrl-C
    reaches the owner, which stops its workers) and dies with the owner, however the owner dies."""

    def __init__(self, count: int, serve: Callable[[str], int]) -> None:
        self.count = count
        self._workers: list[_Worker] = []
        self._codes: dict[int, int] = {}
        owner = os.getpid()
        gc.freeze()  # what the command made so far (its cases, a suite's data) stays shared with the workers: their
        sys.stdout.flush()  # collections never write to those pages, so a fork copies none of them
        sys.stderr.flush()
        try:
            for _ in range(count - 1):
                orders_read, orders = os.pipe()
                reports, reports_write = os.pipe()
                pid = os.fork()
                if pid == 0:
                    owner_ends = [*self._workers, _Worker(pid, orders, reports)]
                    _serve_orders(owner, orders_read, reports_write, owner_ends, serve)
                os.close(orders_read)
                os.close(reports_write)
                self._workers.append(_Worker(pid, orders, reports))
        except OSError as exc:
            self.close()
            raise EvaluatorError(f"cannot start {count - 1} worker processes: {exc.strerror or exc}") from None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def order(self, index: int, order: str) -> bool:
        """Give worker `index` (1 to count - 1) an order; False if it is gone."""
        return self._write(index, order.encode("utf-8") + b"\n")

    def stop(self, index: int) -> None:
        """Worker `index` poses no new sample of its order; those in flight finish and it reports how it ended."""
        self._write(index, _STOP + b"\n")

    def _write(self, index: int, data: bytes) -> bool:
        try:
            os.write(self._workers[index - 1].orders, data)
            return True
        except OSError:  # it died: its end of the pipe is closed
            return False

    @contextlib.asynccontextmanager
    async def reports(self, index: int) -> AsyncIterator[asyncio.StreamReader]:
        """Worker `index`'s report lines, read while the context lasts (an order's, up to its last line)."""
        reader = asyncio.StreamReader(limit=_LINE_LIMIT)
        pipe = os.fdopen(os.dup(self._workers[index - 1].reports), "rb", buffering=0)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            yield reader
        finally:
            transport.close()

    def kill(self, index: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._workers[index - 1].pid, signal.SIGKILL)

    async def exit_code(self, index: int) -> int:
        """How worker `index` ended (it closed its reports: it is ending)."""
        if index not in self._codes:
            _, status = await asyncio.to_thread(os.waitpid, self._workers[index - 1].pid, 0)
            self._codes[index] = os.waitstatus_to_exitcode(status)
        return self._codes[index]

    @property
    def exit_codes(self) -> list[int | None]:
        """How each worker ended (None: not known yet)."""
        return [self._codes.get(index) for index in range(1, self.count)]

    def close(self) -> None:
        """End every worker: an idle one exits once its orders end; one still there after a while is killed."""
        for worker in self._workers:
            for fd in (worker.orders, worker.reports):
                with contextlib.suppress(OSError):
                    os.close(fd)
        deadline = time.monotonic() + _CLOSE_WAIT_S
        for index, worker in enumerate(self._workers, start=1):
            if index not in self._codes:
                self._codes[index] = _reap(worker.pid, deadline)
        self._workers = []


def _reap(pid: int, deadline: float) -> int:
    """The exit code of a worker that is ending, killed (-9) if it is still there at `deadline`."""
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            ended = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    return os.waitstatus_to_exitcode(ended[1])


def _serve_orders(
    owner: int, orders: int, reports: int, owner_ends: list[_Worker], serve: Callable[[str], int]
) -> NoReturn:
    """A forked worker's life: its standard input and output made the pipes to its owner, orders served until
    they end (the pool closed) or one fails."""
    code = 0
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != owner:  # the owner died before it could be watched
            os._exit(1)
        for ends in owner_ends:  # the owner's ends of this worker's pipes and the others': else orders never end
            os.close(ends.orders)
            os.close(ends.reports)
        os.dup2(orders, _ORDERS)
        os.dup2(reports, _REPORTS)
        os.close(orders)
        os.close(reports)
        while (order := _read_line(_ORDERS)) is not None:
            if order != _STOP and (code := serve(order.decode("utf-8"))):
                break
    except BaseException:  # whatever happens in the fork must not go on as the owner
        traceback.print_exc()
        code = 70
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _read_line(fd: int) -> bytes | None:
    """One line of a pipe, without its end, read a byte at a time so nothing after it is taken (None: the pipe
    ended)."""
    line = bytearray()
    while (byte := os.read(fd, 1)) != b"\n":
        if not byte:
            return None
        line += byte
    return bytes(line)


@contextlib.contextmanager
def stop_when_told(stop: Callable[[], None]) -> Iterator[None]:
    """A worker's part stops (no new sample; those in flight finish) when its owner says so or is gone."""
    loop = asyncio.get_running_loop()

    def readable() -> None:
        said = os.read(_ORDERS, 4096)  # while a part is posed, its owner says nothing but "stop"
        if not said or _STOP in said:
            loop.remove_reader(_ORDERS)
            stop()

    loop.add_reader(_ORDERS, readable)
    try:
        yield
    finally:
        loop.remove_reader(_ORDERS)


@dataclass(frozen=True)
class WorkerProcesses:
    """A run's parts: this process and `pool`'s workers, each ordered to pose from a work file with
    `order(work_file, trace_parent)` (what the pool's `serve` understands: the same task, dataset, model and settings;
    the run span its traces go under, if it traces)."""

    pool: WorkerPool
    order: Callable[[Path, str | None], str]

    @property
    def count(self) -> int:
        return self.pool.count


@dataclass(frozen=True)
class WorkerShare:
    """A worker's side of `WorkerProcesses`: its part of the stored run whose work file `work` is (`run()`, given it as
    its `RunControl`'s `workers`, poses it, gives each record to `on_record` only, and stores nothing)."""

    work: Path
    parts: int = 1
    """How many parts the run is posed in (the owner's included): this one's budgets are its share."""
    trace_parent: str | None = None
    """The W3C `traceparent` of the owner's run span, which this part's spans go under (None: no traces)."""


def claimed_samples(samples: Iterable[Sample], work_file: Path) -> Iterator[Sample]:
    """The samples of a shared work stream this part takes: `samples` is every sample still to pose, in the
    work file's order (each part reads them from its own dataset), and this part yields those in the chunks it
    claims, one chunk at a time, as it is asked for the next. The dataset is read once, forward, however the
    chunks fall."""
    wanted = {(str(case_id), int(repeat)) for case_id, repeat in map(json.loads, _read(work_file).splitlines())}
    chunks = -(-len(wanted) // CHUNK)
    claims = work_file.with_suffix(".claims")
    current = _claim(claims)
    position = 0
    for case, repeat in samples:
        if (case.id, repeat) not in wanted:
            continue
        while position >= (current + 1) * CHUNK:
            current = _claim(claims)
        if current >= chunks:
            return
        if position >= current * CHUNK:
            yield case, repeat
        position += 1


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultFileError(f"cannot read the work file {path}: {exc.strerror or exc}") from None


def _claim(claims: Path) -> int:
    """The next free chunk of the stream, taken: a counter every part increments under an exclusive lock."""
    try:
        with claims.open("r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            taken = int(handle.read() or 0)
            handle.seek(0)
            handle.write(str(taken + 1))
            handle.truncate()
            return taken
    except (OSError, ValueError) as exc:
        raise ResultFileError(f"cannot take work from {claims}: {exc}") from None


def write_record_line(record: SampleRecord) -> None:
    """A worker's record, to its owner."""
    _report(_RECORD_OPENING + record.model_dump_json().encode() + _RECORD_CLOSING)


def share_result_line(result: EvaluationResult | None) -> None:
    """A worker's last line: how its part ended (None: it had nothing to pose)."""
    _report(json.dumps({"result": _ending(result)}).encode() + b"\n")


def _report(line: bytes) -> None:
    """A line to the owner, on the reports pipe itself: `sys.stdout` may be anything the command was given (a
    caller's capture, when the command runs in its process)."""
    sent = memoryview(line)
    while sent:
        sent = sent[os.write(_REPORTS, sent) :]


def _write_work(samples: Iterable[Sample], run_dir: Path) -> tuple[Path, int]:
    """The samples still to pose, in order, and a claims counter at 0; how many there are. Work files of an
    earlier segment (its owner killed) are removed first."""
    work, count = run_dir / f"{WORK_PREFIX}{os.getpid()}.jsonl", 0
    try:
        for stale in run_dir.glob(f"{WORK_PREFIX}*"):
            stale.unlink(missing_ok=True)
        with work.open("w", encoding="utf-8") as handle:
            for case, repeat in samples:
                handle.write(json.dumps([case.id, repeat]) + "\n")
                count += 1
        work.with_suffix(".claims").write_text("0", encoding="utf-8")
    except OSError as exc:
        raise ResultFileError(f"cannot write the work file in {run_dir}: {exc.strerror or exc}") from None
    return work, count


PoseHere = Callable[[Path, Callable[[SampleRecord], None], Budget, StopState], Awaitable[EvaluationResult | None]]
"""Pose this process's part of a work file's samples: each record to the callback, with the given budget share and
stop state."""


async def pose_in_workers(
    task: Task[Any],
    workers: WorkerProcesses,
    run_dir: Path,
    samples: Iterator[Sample],
    *,
    pose_here: PoseHere,
    on_record: Callable[[SampleRecord], None],
    budget: Budget,
    stop: StopState,
    trace_parent: str | None = None,
) -> EvaluationResult:
    """Pose `samples` in `workers.count` parts sharing one stream: this process (`pose_here`) and worker
    processes, none ordered for fewer samples than chunks, nor before this process's first record (a model that
    cannot be reached is found by one request). Records are taken as they come (`on_record` stores each) and the
    budgets applied to all of them together; once `stop` stops the run, so does every part (no new sample, those in
    flight finish). A worker that dies without saying how its part ended fails the run. `trace_parent`: the run span the
    workers' spans go under."""
    started = asyncio.get_running_loop().time()
    work, count = _write_work(samples, run_dir)
    parts = min(workers.count, -(-count // CHUNK))
    collected = Collector(task, keep=False, on_record=on_record, budget=budget, stop=stop)
    here = StopState(grace_s=stop.grace_s)
    pool, ordered = workers.pool, set[int]()
    ends: list[dict[str, Any] | None] = [None] * max(parts, 1)
    position = 0
    reached = asyncio.Event()
    """This process's first sample is recorded (or its part ended): the model is reachable, workers may start."""

    def take(record: SampleRecord) -> None:
        nonlocal position
        collected.add(position, record)
        position += 1
        reached.set()

    async def own() -> None:
        try:
            ends[0] = _ending(await pose_here(work, take, budget.share(workers.count), here) if count else None)
        finally:
            reached.set()

    async def order_and_read(index: int) -> None:
        await reached.wait()
        if (ends[0] is not None and ends[0]["status"] == "dnf") or stop.stopping:
            return  # the model cannot be reached, or the run is stopped: no worker is ordered
        ordered.add(index)
        async with pool.reports(index) as reports:
            if not pool.order(index, workers.order(work, trace_parent)):
                return
            if stop.stopping:  # stopped while it was being ordered
                pool.stop(index)
            try:
                while line := await reports.readline():
                    if line.startswith(_RECORD_OPENING) and line.endswith(_RECORD_CLOSING):
                        take(SampleRecord.model_validate_json(line[len(_RECORD_OPENING) : -len(_RECORD_CLOSING)]))
                        continue
                    message = json.loads(line)
                    if "result" in message:
                        ends[index] = message["result"]
                        return
            except (ValueError, ValidationError):  # a line cut off by the worker's death: the worker failed
                pool.kill(index)

    async def stop_when_asked() -> None:
        await stop.stopped()
        here.stop(stop.reason or "stopped")
        for index in ordered:
            if ends[index] is None:
                pool.stop(index)
        await asyncio.sleep(stop.grace_s + UNHEARD_STOP_S)
        for index in ordered:  # the worker's event loop is held (a scorer blocks it): its finished records are here
            if ends[index] is None:
                pool.kill(index)

    stopper = asyncio.create_task(stop_when_asked())
    parts_done = [asyncio.create_task(own()), *(asyncio.create_task(order_and_read(i)) for i in range(1, parts))]
    try:
        await asyncio.gather(*parts_done)
    finally:
        for running in (stopper, *parts_done):  # after a failure, no part goes on storing records
            running.cancel()
        await asyncio.gather(stopper, *parts_done, return_exceptions=True)
        for index in ordered:
            if ends[index] is None:  # failed or cancelled: it may be posing still
                pool.kill(index)
        for leftover in (work, work.with_suffix(".claims")):
            leftover.unlink(missing_ok=True)
    failed = [index for index in sorted(ordered) if ends[index] is None]
    if failed and not stop.stopping:  # a worker told to stop before it could say so is not a failure
        code = await pool.exit_code(failed[0])
        raise EvaluatorError(
            f"worker {failed[0] + 1} of {pool.count} stopped without finishing its share (exit {code})"
        )
    return _combined([end for end in ends if end is not None], collected, stop, started)


def _ending(result: EvaluationResult | None) -> dict[str, Any]:
    """How a part ended, as a worker says it (None: it had nothing to pose)."""
    if result is None:
        return {"status": "finished", "reason": None, "tool_choice": None, "tool_choice_reason": None}
    return {
        "status": result.status,
        "reason": result.reason,
        "tool_choice": result.tool_choice,
        "tool_choice_reason": result.tool_choice_reason,
    }


def _combined(ends: list[dict[str, Any]], collected: Collector, stop: StopState, started: float) -> EvaluationResult:
    """How the run ended, from how each worker's part did: DNF if every part was, or if every sample of the run
    failed (as in one process: a part whose own samples all failed says nothing of the run); else stopped if the
    owner's budgets, or any part, stopped; a tool choice set free by any part is the run's."""
    status: RunStatus = "finished"
    reason: str | None = None
    ends = ends or [_ending(None)]
    book = collected.book
    if all(end["status"] == "dnf" for end in ends):
        status, reason = "dnf", ends[0]["reason"]
    elif book.samples and book.answered == 0 and book.errors == book.samples:
        status, reason = "dnf", collected.first_error
    elif stop.stopping or any(end["status"] == "partial" for end in ends):
        stopped = next((end["reason"] for end in ends if end["status"] == "partial"), None)
        status, reason = "partial", stop.reason or stopped
    freed = next((end for end in ends if end["tool_choice"] == "auto"), None)
    chosen: ToolChoice | None = "auto" if freed is not None else ends[0]["tool_choice"]
    return EvaluationResult(
        records=[],
        scores=collected.book.scores(),
        status=status,
        reason=reason,
        tool_choice=chosen,
        tool_choice_reason=(freed or ends[0])["tool_choice_reason"],
        wall_s=round(asyncio.get_running_loop().time() - started, 3),
    )
