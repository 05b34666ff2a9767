"""Case-file checks run in child processes, each bounded in time, so no reply or assertion can stop a run.

Why a child: a regex that backtracks catastrophically, or a `python` assertion that blocks, calls `sys.exit()`
or `os._exit()`, cannot be interrupted inside this process (the event loop, and with it Ctrl-C and SIGTERM,
would wait on it). In a child it is killed when it passes `CHECK_TIME_LIMIT_S` (the assertion scores 0 with
the reason), or when the run is stopped; a child that exits is that assertion's failure. Children are kept
and reused (a check costs a pipe round trip, not a process start).
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typed_eval.suites.case_files.assertions import Graded, Output

__all__ = ["CHECK_TIME_LIMIT_S", "CheckPool", "run_check"]

CHECK_TIME_LIMIT_S = 10.0
"""How long one assertion's check may run before it is stopped and scores 0."""

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


def _failed(reason: str) -> Graded:
    return Graded(0.0, reason, passed=False)


class _Child:
    """One child process answering checks, a JSON line each way."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (_PACKAGE_ROOT, os.environ.get("PYTHONPATH"))))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "typed_eval.suites.case_files.check_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._claim = threading.Lock()
        self._reading = False
        self._abandoned = False
        self._starter = threading.current_thread()

    @property
    def alive(self) -> bool:
        """Running, and sure to go on: the thread that started it lives (when it ends, the kernel sends the child
        SIGTERM a moment later, which a check taken in that moment would meet as its end)."""
        return self.process.poll() is None and self._starter.is_alive()

    def stop(self) -> None:
        """Kill the process only: the thread waiting on its answer then reads the end of it and closes the pipes
        (closing them here could hand their descriptors to another file while that thread still reads)."""
        if self.alive:
            self.process.kill()

    def close(self) -> None:
        self.stop()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def abandon(self) -> None:
        """The run was stopped: kill the process; its pipes are closed by the thread reading them, or here when
        no thread has started to."""
        with self._claim:
            self._abandoned = True
            reading = self._reading
        if reading:
            self.stop()
        else:
            self.close()

    def exchange(self, payload: bytes, limit_s: float) -> dict[str, Any]:
        """Send one check and wait for its answer, at most `limit_s` seconds (then the child is killed)."""
        with self._claim:
            if self._abandoned:
                return {"score": 0.0, "passed": False, "reason": "the run was stopped"}
            self._reading = True
        try:
            return self._exchange(payload, limit_s)
        finally:
            with self._claim:
                self._reading = False
                abandoned = self._abandoned
            if abandoned:  # the run was stopped while this thread read: it closes what it read from
                self.close()

    def _exchange(self, payload: bytes, limit_s: float) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(payload)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._ended()
        deadline = time.monotonic() + limit_s
        descriptor = self.process.stdout.fileno()
        received = bytearray()
        while not received.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close()
                return {
                    "score": 0.0,
                    "passed": False,
                    "reason": f"the check ran past its time limit of {limit_s:g} s and was stopped",
                }
            ready, _, _ = select.select([descriptor], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:  # the process ended: it exited, or the run was stopped and it was killed
                return self._ended()
            received += chunk
        answer: dict[str, Any] = json.loads(received)
        return answer

    def _ended(self) -> dict[str, Any]:
        code = self.process.wait()
        self.close()
        return {"score": 0.0, "passed": False, "reason": f"the check ended its process (exit code {code})"}


@dataclass
class _Job:
    """One check on its way: the child that took it, once one has, and whether the run gave up on it."""

    payload: bytes
    child: _Child | None = None
    abandoned: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class CheckPool:
    """Children for checks, at most `size` at once: an idle one is reused, a new one started when all are busy
    (each is a Python process: a run at concurrency 32 does not start 32)."""

    def __init__(self, limit_s: float = CHECK_TIME_LIMIT_S, size: int = max(2, os.cpu_count() or 2)) -> None:
        self.limit_s = limit_s
        self._idle: list[_Child] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(size)

    def _take(self) -> _Child:
        """An idle child, or a new one. A child ends with the thread that started it (it is told to die with its
        parent, and Linux means the thread), so one left from an earlier event loop's threads may be gone."""
        with self._lock:
            while self._idle:
                child = self._idle.pop()
                if child.alive:
                    return child
                child.close()
        return _Child()

    def _give(self, child: _Child) -> None:
        if child.alive:
            with self._lock:
                self._idle.append(child)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()

    async def run(self, spec: Mapping[str, Any], output: Output, context: Mapping[str, Any]) -> Graded:
        """The check of `spec` on `output`, in a child; a stop of the run (cancellation) kills it at once."""
        try:
            request = {"spec": spec, "text": output.text, "value": output.value, "context": context}
            payload = json.dumps(request, ensure_ascii=False).encode() + b"\n"
        except RecursionError:
            return _failed("cannot check: the reply is nested too deeply to hand to the check")
        except (TypeError, ValueError) as exc:
            return _failed(f"cannot check: {exc}")
        job = _Job(payload)
        try:
            answer = await asyncio.to_thread(self._serve, job)
        except BaseException:  # the run was stopped: the check is abandoned, its child killed
            with job.lock:
                job.abandoned = True
                child = job.child
            if child is not None:
                child.abandon()
            raise
        return Graded(float(answer["score"]), str(answer["reason"]), passed=bool(answer["passed"]))

    def _serve(self, job: _Job) -> dict[str, Any]:
        """In a thread: wait for a free slot, then have a child answer the job (unless the run gave up on it)."""
        with self._slots:
            with job.lock:
                if job.abandoned:
                    return {"score": 0.0, "passed": False, "reason": "the run was stopped"}
                job.child = self._take()
                child = job.child
            answer = child.exchange(job.payload, self.limit_s)
            with job.lock:
                if not job.abandoned:  # else the run's side kills it
                    self._give(child)
                    job.child = None
            return answer


_POOL = CheckPool()
atexit.register(_POOL.close)


async def run_check(spec: Mapping[str, Any], output: Output, context: Mapping[str, Any]) -> Graded:
    """A check in the shared pool, bounded by `CHECK_TIME_LIMIT_S`."""
    return await _POOL.run(spec, output, context)
