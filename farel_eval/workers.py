"""Pose a run's samples in several processes: past the one core a pydantic-ai agent's client work saturates.

The process that owns the run (its folder lock, `samples.jsonl`, the summary, the budgets) writes the samples
still to pose, in order, to a work file, and starts N - 1 worker processes; it and they share that stream:
each part takes the next free chunk of it (a counter under a file lock) whenever it has posed its last one,
so a part that started late or runs slower simply takes fewer. Each worker writes every record to its
standard output as one JSON line, then a last line with how its part ended; the owner appends each record as
it arrives, so a run has one writer and one record per sample, and resume, retry-errors and budgets work as in
one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from farel_eval.engine import Collector, EvaluationResult, RunControl, Sample, ToolChoice
from farel_eval.errors import EvaluatorError, ResultFileError
from farel_eval.local_server import die_with_parent
from farel_eval.schemas import RunStatus, SampleRecord
from farel_eval.tasks import Task

__all__ = [
    "WorkerProcesses", "budget_share", "claimed_samples", "pose_in_workers", "share_result_line", "write_record_line",
]  # fmt: skip

_LINE_LIMIT = 1 << 26
"""The longest record line a worker may send (64 MiB: a record holds every attempt's raw reply)."""
WORK_PREFIX = ".work-"
"""A segment's work file is `.work-<owner pid>.jsonl` with its claims counter beside it (`.claims`): a worker
left over from a killed owner cannot take chunks of a later segment's stream."""
CHUNK = 8
"""Samples a part takes from the stream at a time: small, so the parts end together."""


@dataclass(frozen=True)
class WorkerProcesses:
    """`count` parts, the owner and `count - 1` worker processes; `command(work_file, index)` is the argv of a
    worker (the same task, dataset, model and settings as the owner's, told to take its samples from
    `work_file` and print their records)."""

    count: int
    command: Callable[[Path, int], list[str]]


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
    sys.stdout.write('{"record":' + record.model_dump_json() + "}\n")
    sys.stdout.flush()


def share_result_line(result: EvaluationResult | None) -> None:
    """A worker's last line: how its part ended (None: it had nothing to pose)."""
    sys.stdout.write(json.dumps({"result": _ending(result)}) + "\n")
    sys.stdout.flush()


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


def budget_share(control: RunControl, count: int) -> RunControl:
    """One of `count` parts' share of a run's budgets, each part gating its samples as a whole run does, so the
    run overshoots by at most about one sample per part; its traffic gauges are the run's."""
    requests = -(-control.max_requests // count) if control.max_requests is not None else None
    cost = control.max_cost / count if control.max_cost is not None else None
    return RunControl(max_cost=cost, max_requests=requests, grace_s=control.grace_s, traffic=control.traffic)


PoseHere = Callable[[Path, Callable[[SampleRecord], None], RunControl], Awaitable[EvaluationResult | None]]
"""Pose this process's part of a work file's samples: each record to the callback, under the given control."""


async def pose_in_workers(
    task: Task[Any],
    workers: WorkerProcesses,
    run_dir: Path,
    samples: Iterator[Sample],
    *,
    pose_here: PoseHere,
    on_record: Callable[[SampleRecord], None],
    control: RunControl,
) -> EvaluationResult:
    """Pose `samples` in `workers.count` parts sharing one stream: this process (`pose_here`) and worker
    processes, none started for fewer samples than chunks. Records are taken as they come (`on_record` stores
    each) and the budgets applied to all of them together; once `control` stops, so does every part (SIGTERM
    to a worker: no new sample, those in flight finish). A worker that dies without saying how its part ended
    fails the run."""
    started = asyncio.get_running_loop().time()
    work, count = _write_work(samples, run_dir)
    parts = min(workers.count, -(-count // CHUNK))
    collected = Collector(task, keep=False, on_record=on_record, control=control)
    here = budget_share(control, workers.count)
    processes: dict[int, asyncio.subprocess.Process] = {}
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
            ends[0] = _ending(await pose_here(work, take, here) if count else None)
        finally:
            reached.set()

    async def start_and_read(index: int) -> None:
        await reached.wait()
        if (ends[0] is not None and ends[0]["status"] == "dnf") or control.stopping:
            return  # the model cannot be reached, or the run is stopped: no worker is started
        process = await asyncio.create_subprocess_exec(
            *workers.command(work, index), stdout=asyncio.subprocess.PIPE, limit=_LINE_LIMIT,
            preexec_fn=die_with_parent, start_new_session=True,  # stopped by us (SIGTERM), not by the terminal
        )  # fmt: skip
        processes[index] = process
        if control.stopping:  # stopped while it was starting
            process.send_signal(signal.SIGTERM)
        assert process.stdout is not None
        try:
            while line := await process.stdout.readline():
                message = json.loads(line)
                if "record" in message:
                    take(SampleRecord.model_validate(message["record"]))
                elif "result" in message:
                    ends[index] = message["result"]
        except (ValueError, ValidationError):  # a line cut off by the worker's death: the worker failed
            process.kill()
        await process.wait()

    async def stop_when_asked() -> None:
        await control.stopped()
        here.stop(control.reason or "stopped")
        for process in processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)

    stopper = asyncio.create_task(stop_when_asked())
    parts_done = [asyncio.create_task(own()), *(asyncio.create_task(start_and_read(i)) for i in range(1, parts))]
    try:
        await asyncio.gather(*parts_done)
    finally:
        for running in (stopper, *parts_done):  # after a failure, no part goes on storing records
            running.cancel()
        await asyncio.gather(stopper, *parts_done, return_exceptions=True)
        for process in processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for leftover in (work, work.with_suffix(".claims")):
            leftover.unlink(missing_ok=True)
    failed = sorted((i, p.returncode) for i, p in processes.items() if ends[i] is None)
    if failed and not control.stopping:  # a worker told to stop before it could say so is not a failure
        index, code = failed[0]
        raise EvaluatorError(f"worker {index + 1} of {workers.count} stopped without finishing its share (exit {code})")
    return _combined([end for end in ends if end is not None], collected, control, started)


def _ending(result: EvaluationResult | None) -> dict[str, Any]:
    """How a part ended, as a worker says it (None: it had nothing to pose)."""
    if result is None:
        return {"status": "finished", "reason": None, "tool_choice": None, "tool_choice_reason": None}
    return {"status": result.status, "reason": result.reason, "tool_choice": result.tool_choice,
            "tool_choice_reason": result.tool_choice_reason}  # fmt: skip


def _combined(
    ends: list[dict[str, Any]], collected: Collector, control: RunControl, started: float
) -> EvaluationResult:
    """How the run ended, from how each worker's part did: DNF if every part was; else stopped if the owner's
    budgets, or any part, stopped; a tool choice set free by any part is the run's."""
    status: RunStatus = "finished"
    reason: str | None = None
    ends = ends or [_ending(None)]
    if all(end["status"] == "dnf" for end in ends):
        status, reason = "dnf", ends[0]["reason"]
    elif control.stopping or any(end["status"] != "finished" for end in ends):
        stopped = next((end["reason"] for end in ends if end["status"] != "finished"), None)
        status, reason = "partial", control.reason or stopped
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
