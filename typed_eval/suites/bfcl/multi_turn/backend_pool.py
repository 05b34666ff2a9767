"""BFCL's backends run in worker processes, so that a backend call that hangs or crashes is its case's error and
never the run's.

The backends are Python objects a model drives with arguments of its choosing (a huge exponent, a deep path...):
a call that never returns cannot be stopped in a thread, only in a process. A few long-lived workers (fresh
interpreters running this module, so nothing of the evaluator's threads, sockets or main script is inherited or
re-run) each hold the backends of several cases, keyed by a lease; each request is answered within a timeout,
else the worker is killed and the case whose request it was fails with `BackendFailure`. The other cases on that
worker lose nothing: a case's state is its fresh instances plus the calls run so far, so on its next request it is
rebuilt on another worker by replaying them (the backends are deterministic: their randomness is seeded by the
case's configuration).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = ["BackendFailure", "BackendPool", "CaseLease", "serve"]

DEFAULT_TIMEOUT = 30.0
"""Seconds a worker has to answer one request (a step's calls, opening a case, a check): BFCL's ground truth of all
800 cases runs through its checker in about a second."""


MEMORY_LIMIT = 4 * 1024**3
"""Bytes of address space a worker may use: a call building a gigantic value fails with MemoryError (which BFCL's
executor reports as the call's error) before it can exhaust the machine."""


class BackendFailure(Exception):
    """A case's backends hung, crashed the worker, or raised out of BFCL's executor: that case's error."""


class _WorkerLost(Exception):
    """The worker a lease was on is gone (killed for another case): rebuild there and ask again."""


def serve(conn: Connection) -> None:
    """A worker's loop: requests `(kind, lease, payload)` answered `("ok", reply)` or `("failed", reason)`."""
    from typed_eval.suites.bfcl.multi_turn.backend import CaseBackends
    from typed_eval.suites.bfcl.multi_turn.checking import check_case

    cases: dict[int, CaseBackends] = {}
    while True:
        try:
            kind, lease, payload = conn.recv()
        except (EOFError, OSError):
            return
        reply: Any = None
        try:
            if kind == "open":
                cases[lease] = CaseBackends(**payload)
            elif kind == "run":
                reply = [cases[lease].run(call, payload["offered"]) for call in payload["calls"]]
            elif kind == "close":
                cases.pop(lease, None)
            elif kind == "check":
                reply = check_case(**payload)
            conn.send(("ok", reply))
        except BaseException as error:
            conn.send(("failed", f"{type(error).__name__}: {str(error)[:500]}"))


@dataclass
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    leases: int = 0
    alive: bool = True

    def kill(self) -> None:
        self.alive = False
        self.process.kill()
        self.conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(1)


class BackendPool:
    """Up to `workers` backend processes, started when first needed; `close()` ends them."""

    def __init__(self, workers: int = 2, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._size, self.timeout = max(1, workers), timeout
        self._workers: list[_Worker] = []
        self._leases = itertools.count()
        self._finalizer = weakref.finalize(self, _kill_all, self._workers)  # at the latest when the run's process ends

    async def open(self, involved_classes: list[str], initial_config: dict[str, Any], long_context: bool) -> CaseLease:
        """A case's fresh backends, loaded with its initial configuration."""
        lease = CaseLease(self, next(self._leases), {"involved_classes": involved_classes,
                          "initial_config": initial_config, "long_context": long_context})  # fmt: skip
        for _ in range(3):
            try:
                await lease.start()
                return lease
            except _WorkerLost:
                lease.release()
        raise BackendFailure("the backend workers keep failing")

    async def check(self, payload: dict[str, Any]) -> dict[str, Any]:
        """BFCL's multi-turn checker on a case (see `checking.check_case`), on a worker."""
        for _ in range(2):
            worker = self.worker()
            worker.leases += 1
            try:
                result: dict[str, Any] = await self.request(worker, ("check", -1, payload))
                return result
            except _WorkerLost:
                continue
            finally:
                worker.leases -= 1
        raise BackendFailure("the backend workers keep failing")

    def worker(self) -> _Worker:
        """The least busy live worker, or a new one while there are fewer than `workers`."""
        self._workers[:] = [w for w in self._workers if w.alive]
        idle = min(self._workers, key=lambda w: w.leases, default=None)
        if idle is not None and (idle.leases == 0 or len(self._workers) >= self._size):
            return idle
        parent, child = socket.socketpair()
        root = str(Path(__file__).resolve().parents[4])  # the folder holding the typed_eval package
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # what a backend prints is not the run's output
            stderr=subprocess.DEVNULL,
            env=env,
        )
        child.close()
        worker = _Worker(process, Connection(parent.detach()))
        self._workers.append(worker)
        return worker

    async def request(self, worker: _Worker, message: tuple[str, int, Any]) -> Any:
        async with worker.lock:
            if not worker.alive:
                raise _WorkerLost
            try:
                worker.conn.send(message)
                status, reply = await asyncio.wait_for(_receive(worker.conn), self.timeout)
            except TimeoutError:
                worker.kill()
                raise BackendFailure(f"BFCL's backends did not answer within {self.timeout:g} s") from None
            except (EOFError, OSError):
                worker.kill()
                raise BackendFailure("BFCL's backends crashed their worker process") from None
        if status != "ok":
            raise BackendFailure(f"BFCL's backends failed: {reply}")
        return reply

    def close(self) -> None:
        self._finalizer()


def _kill_all(workers: list[_Worker]) -> None:
    for worker in workers:
        if worker.alive:
            worker.kill()
    workers.clear()


async def _receive(conn: Connection) -> Any:
    """The next message on `conn`, awaited without a thread."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(conn.fileno())
    return conn.recv()


class CaseLease:
    """One case's backends on a worker: each step's calls run there in order, their results returned."""

    def __init__(self, pool: BackendPool, key: int, spec: dict[str, Any]) -> None:
        self._pool, self._key, self._spec = pool, key, spec
        self._history: list[dict[str, Any]] = []
        self._worker: _Worker | None = None

    async def start(self) -> None:
        """Open the case on a worker and replay the calls run so far (after its worker was lost)."""
        self._worker = self._pool.worker()
        self._worker.leases += 1
        await self._pool.request(self._worker, ("open", self._key, self._spec))
        for payload in self._history:
            await self._pool.request(self._worker, ("run", self._key, payload))

    async def run(self, calls: list[str], offered: list[str]) -> list[tuple[str, bool]]:
        """Each call's result text and whether it was run as a plain call (see `CaseBackends.run`)."""
        payload = {"calls": calls, "offered": offered}
        for _ in range(3):
            try:
                if self._worker is None or not self._worker.alive:
                    self.release()
                    await self.start()
                assert self._worker is not None
                results = await self._pool.request(self._worker, ("run", self._key, payload))
                self._history.append(payload)
                return [(str(text), bool(plain)) for text, plain in results]
            except _WorkerLost:
                continue
        raise BackendFailure("the backend workers keep failing")

    async def close(self) -> None:
        worker = self._worker
        self.release()
        if worker is not None and worker.alive:
            with contextlib.suppress(_WorkerLost, BackendFailure):
                await self._pool.request(worker, ("close", self._key, None))

    def release(self) -> None:
        if self._worker is not None:
            self._worker.leases -= 1
            self._worker = None


def orphan_watch(parent: int) -> None:
    """End this worker once the run's process is gone, even in the middle of a call that never returns."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))  # a runaway call: MemoryError, not swap
    threading.Thread(target=orphan_watch, args=(os.getppid(),), daemon=True).start()
    serve(Connection(int(sys.argv[1])))
