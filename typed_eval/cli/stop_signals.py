"""How a run hears stop signals: Ctrl-C, SIGTERM and SIGHUP stop it as `--grace` says, whatever blocks its event
loop, and whenever it blocks.

The event loop takes the stop (its requests in flight given `--grace`); from then on a thread asks it every
`PING_S` whether it still runs. When it has not answered within `UNHEARD_S` (a scorer or a check holds it, when the
stop came or later, a sample finishing within its grace), the stop is raised in the main thread where the run is
(`StopForced`): the run ends as a second Ctrl-C ends it, its summary written. A call that never returns to Python (a
`re` match backtracking in C holds the interpreter: no thread of this process runs) is ended from outside: a
watchdog process, told of each signal by the interpreter's C handler (the wakeup fd) and of each answer of the loop,
kills the process `STUCK_S` after the loop's silence was due to be raised; and once the run is over, a process kept
alive by a thread that never returns (an `asyncio.to_thread` check) is killed `STUCK_S` later. The watchdog lives
until the command's event loop is closed (`StopSignals` around `asyncio.run`), so a command run in a process that
goes on after it (`main(argv)`) is never ended. Records are written a flushed line each, so every finished one is
kept (`--resume` continues).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from typed_eval.cli.common import EXIT_INTERRUPTED, EXIT_TERMINATED, prog
from typed_eval.engine.control import StopForced
from typed_eval.engine.runs import INTERRUPTED

__all__ = ["PING_S", "STUCK_S", "TERMINATED", "UNHEARD_S", "StopSignals"]

TERMINATED = "terminated (SIGTERM)"
PING_S = 0.5
"""How often a stopping run's event loop is asked whether it still runs."""
UNHEARD_S = 3.0
"""How long the event loop of a stopping run may leave a question unanswered (a scorer or a check blocking it)
before the stop is raised where the run is."""
STUCK_S = 5.0
"""Then, how long the process may stay in a call that never returns to Python before its watchdog ends it; and how
long it may take to exit once the stopped run is over."""
_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_ALIVE, _OVER = 0, 255
"""Told to the watchdog (with the numbers of the signals, which the interpreter's C handler writes): the event loop
answered, so its deadline moves on; the run is over, so the process exits within `STUCK_S` or is ended."""
_WATCHDOG = """
import os, select, signal, sys, time
for handled in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the terminal's and the service manager's are ours
    signal.signal(handled, signal.SIG_IGN)
parent, limit, after, stops, said = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5:]
deadline, signum, over = None, 0, False
while True:
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if not select.select([0], [], [], left)[0]:
        if os.getppid() != parent:  # the process is over; a child of it holds the pipe
            break
        sys.stderr.write(said[2 * over + (signum != signal.SIGINT)] + "\\n")
        sys.stderr.flush()
        os.kill(parent, signal.SIGKILL)
        break
    told = os.read(0, 64)
    if not told:
        break
    for byte in told:
        if byte == 0 and not over:
            deadline = time.monotonic() + limit
        elif byte == 255:
            deadline, over = time.monotonic() + after, True
        elif chr(byte) in stops and not over:  # another handled signal (a library's) arms nothing
            deadline, signum = deadline or time.monotonic() + limit, signum or byte
"""


class StopSignals:
    """The watchdog process of a command, kept until its event loop is closed (`asyncio.run` returned): a stopped
    run whose loop cannot close (a thread that never returns) is ended `STUCK_S` after its end, a process that goes
    on after it (a command run in process) is not."""

    def __init__(self) -> None:
        read_end, self._told = os.pipe()
        os.set_blocking(self._told, False)
        kept = "finished samples are kept (--resume continues)"
        stuck = (
            f"the run did not stop within {UNHEARD_S + STUCK_S:g} s (a call that never returns): it is ended; {kept}"
        )
        over = f"the process did not exit within {STUCK_S:g} s of the run's end (a thread that never returns): it " \
            f"is ended; {kept}"  # fmt: skip
        said = [f"{prog()}: {reason}; {why}" for why in (stuck, over) for reason in (INTERRUPTED, TERMINATED)]
        stops = "".join(map(chr, _STOPS))
        argv = [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(UNHEARD_S + STUCK_S), str(STUCK_S)]
        self._watchdog = subprocess.Popen([*argv, stops, *said], stdin=read_end)
        os.close(read_end)

    def __enter__(self) -> StopSignals:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self._told)  # the watchdog reads the end of its pipe and leaves
        self._watchdog.wait()

    def _tell(self, byte: int) -> None:
        """One byte to the watchdog; a full pipe already holds news of a live loop."""
        with suppress(BlockingIOError):
            os.write(self._told, bytes([byte]))

    @contextmanager
    def heard(self, stop: Callable[[str], None]) -> Iterator[None]:
        """Ctrl-C stops sending and lets requests in flight finish (a second one stops at once); SIGTERM (a service
        manager) and SIGHUP (the terminal or ssh session closed) do as the first Ctrl-C; whatever blocks the event
        loop, as the module says. Entered on the event loop."""
        loop = asyncio.get_running_loop()
        ended = threading.Event()
        first: list[int] = []
        forced: list[StopForced] = []

        def answer(answered: threading.Event, reason: str | None) -> None:
            """On the loop: take the stop (its first question), and say the loop runs."""
            if ended.is_set():
                return
            if reason is not None:
                stop(reason)
            answered.set()
            self._tell(_ALIVE)

        def watch(stopped: StopForced) -> None:
            """Ask the loop whether it runs until the block ends; raise the stop where the run is once it does not."""
            reason: str | None = stopped.reason
            while not ended.is_set():
                answered = threading.Event()
                try:
                    loop.call_soon_threadsafe(answer, answered, reason)
                except RuntimeError:  # the loop is closed: the block has ended
                    return
                if not answered.wait(UNHEARD_S) and not ended.is_set():
                    forced.append(stopped)
                    signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # its handler raises there
                    return
                reason = None
                ended.wait(PING_S)

        def handler(signum: int, _: object) -> None:
            interrupt = signum == signal.SIGINT
            stopped = StopForced(*((INTERRUPTED, EXIT_INTERRUPTED) if interrupt else (TERMINATED, EXIT_TERMINATED)))
            if forced:  # the watch thread's: raised where the run is
                stop(forced[0].reason)
                raise forced[0]
            if interrupt and signal.SIGINT in first:  # a second Ctrl-C: at once
                raise KeyboardInterrupt
            if first:
                return
            first.append(signum)
            threading.Thread(target=watch, args=(stopped,), name="typed-eval stop", daemon=True).start()

        previous = {handled: signal.signal(handled, handler) for handled in _STOPS}
        earlier_fd = signal.set_wakeup_fd(self._told, warn_on_full_buffer=False)
        try:
            yield
        finally:
            ended.set()
            signal.set_wakeup_fd(earlier_fd)
            for handled, earlier in previous.items():
                signal.signal(handled, earlier)
            if first or forced:  # stopped by a signal: the process is to exit once its event loop is closed
                self._tell(_OVER)
