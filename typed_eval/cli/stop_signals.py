"""How a run hears stop signals: Ctrl-C, SIGTERM and SIGHUP stop it as `--grace` says, whatever blocks its event
loop.

Three stages, each only when the one before did not end the run. The event loop takes the stop (its requests in
flight given `--grace`). When it has not within `UNHEARD_S` (a scorer or a check holds it), the stop is raised in
the main thread where the run is (`StopForced`): the run ends as a second Ctrl-C ends it, its summary written. A call
that never returns to Python (a `re` match backtracking in C holds the interpreter: no thread of this process runs)
is ended from outside: a watchdog process, told of each signal by the interpreter's C handler (the wakeup fd), kills
the process `STUCK_S` later. Records are written a flushed line each, so every finished one is kept (`--resume`
continues).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from typed_eval.cli.common import EXIT_INTERRUPTED, EXIT_TERMINATED, prog
from typed_eval.engine.control import StopForced
from typed_eval.engine.runs import INTERRUPTED

__all__ = ["STUCK_S", "TERMINATED", "UNHEARD_S", "stopped_by_signals"]

TERMINATED = "terminated (SIGTERM)"
UNHEARD_S = 3.0
"""How long the event loop may leave a stop signal untaken (a scorer or a check blocking it) before the stop is
raised where the run is."""
STUCK_S = 5.0
"""Then, how long the process may stay in a call that never returns to Python before its watchdog ends it."""
_HEARD = b"\0"
"""Told to the watchdog when the event loop took a stop: the run ends as `--grace` says, however long that takes."""
_WATCHDOG = """
import os, select, signal, sys, time
for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the terminal's and the service manager's are ours
    signal.signal(handled, signal.SIG_IGN)
parent, limit, said = int(sys.argv[1]), float(sys.argv[2]), {2: sys.argv[3]}
deadline, signum = None, 0
while True:
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if not select.select([0], [], [], left)[0]:
        sys.stderr.write(said.get(signum, sys.argv[4]) + "\\n")
        sys.stderr.flush()
        os.kill(parent, signal.SIGKILL)
        break
    told = os.read(0, 64)
    if not told:
        break
    for byte in told:
        deadline, signum = (None, 0) if byte == 0 else (deadline or time.monotonic() + limit, signum or byte)
"""


def _watchdog() -> tuple[subprocess.Popen[bytes], int]:
    """The watchdog process and the write end of its pipe (to be the wakeup fd)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    stuck = f"the run did not stop within {UNHEARD_S + STUCK_S:g} s (a call that never returns): it is ended; " \
        "finished samples are kept (--resume continues)"  # fmt: skip
    said = [f"{prog()}: {reason}; {stuck}" for reason in (INTERRUPTED, TERMINATED)]
    argv = [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(UNHEARD_S + STUCK_S), *said]
    watchdog = subprocess.Popen(argv, stdin=read_end)
    os.close(read_end)
    return watchdog, write_end


@contextmanager
def stopped_by_signals(stop: Callable[[str], None]) -> Iterator[None]:
    """Ctrl-C stops sending and lets requests in flight finish (a second one stops at once); SIGTERM (a service
    manager) and SIGHUP (the terminal or ssh session closed) do as the first Ctrl-C; whatever blocks the event loop,
    as the module says."""
    loop = asyncio.get_running_loop()
    heard, ended = threading.Event(), threading.Event()
    first: list[int] = []
    forced: list[StopForced] = []
    watchdog, told = _watchdog()

    def take(reason: str) -> None:
        if ended.is_set():  # taken after the run ended: its pipe is closed
            return
        heard.set()
        os.write(told, _HEARD)
        stop(reason)

    def watch(stopped: StopForced) -> None:
        if heard.wait(UNHEARD_S) or ended.is_set():
            return
        forced.append(stopped)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # its handler raises in the thread

    def handler(signum: int, _: object) -> None:
        interrupt = signum == signal.SIGINT
        stopped = StopForced(*((INTERRUPTED, EXIT_INTERRUPTED) if interrupt else (TERMINATED, EXIT_TERMINATED)))
        if forced:  # the watchdog's: raised where the run is
            stop(forced[0].reason)
            raise forced[0]
        if interrupt and signal.SIGINT in first:  # a second Ctrl-C: at once
            raise KeyboardInterrupt
        if first:
            return
        first.append(signum)
        loop.call_soon_threadsafe(take, stopped.reason)
        threading.Thread(target=watch, args=(stopped,), name="typed-eval stop", daemon=True).start()

    previous = {handled: signal.signal(handled, handler) for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    earlier_fd = signal.set_wakeup_fd(told, warn_on_full_buffer=False)
    try:
        yield
    finally:
        ended.set()
        signal.set_wakeup_fd(earlier_fd)
        for handled, earlier in previous.items():
            signal.signal(handled, earlier)
        os.close(told)  # the watchdog reads the end of its pipe and leaves
        watchdog.wait()
