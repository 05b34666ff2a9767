"""A stop signal ends a run whenever and wherever its work blocks: a scorer that blocks the event loop after the stop
was taken (a sample finishing within its grace), a check a scorer hands to a thread that never returns, a worker
process's blocked scorer (`--workers`). The run is a process, signalled as a user or a service manager signals it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO
from typed_eval.cli.stop_signals import STUCK_S, UNHEARD_S
from typed_eval.engine.workers import UNHEARD_STOP_S

SUITE = """
import asyncio, os, re, time
from pathlib import Path
import evaluator

HERE = Path(__file__).parent
BLOCK, STARTED = HERE / "block", HERE / "started"


def spin() -> float:
    while BLOCK.exists():  # a check that never ends, off the event loop
        pass
    return 1.0


async def score(case, output):
    how = BLOCK.read_text() if BLOCK.exists() else ""
    if how == "worker":  # only in a worker process (each is its own session): the owner poses on
        if os.getsid(0) != os.getpid():
            await asyncio.sleep(0.05)
            return 1.0
    elif case.id != "c2" or not how:
        return 1.0
    STARTED.write_text(case.id)
    if how == "thread":
        return await asyncio.to_thread(spin)
    await asyncio.sleep(1.0)  # in flight when the stop comes, then within its grace: the stop is taken by now
    if how == "late C":
        re.match(r"(a|aa)+$", "a" * 60 + "!")  # backtracks for ages in C: no Python handler runs meanwhile
    while True:
        pass


TASK = evaluator.Task(name="late", output_type=int, score=score, example=1)
CASES = [evaluator.Case(id=f"c{n}", prompt="Say 1.", expected=1) for n in range(int((HERE / "cases").read_text()))]
"""
KEPT = "finished samples are kept"


def start(tmp_path: Path, how: str, cases: int, *flags: str) -> tuple[subprocess.Popen[str], list[str]]:
    """The run started with c2's scorer (or every worker's) blocking as `how` says, once its scorer has begun."""
    (tmp_path / "late.py").write_text(SUITE)
    (tmp_path / "block").write_text(how)
    (tmp_path / "cases").write_text(str(cases))
    command = [PYTHON, "main.py", "run", "--suite", str(tmp_path / "late.py"), "--model", "test", "--results-dir",
               str(tmp_path / "runs"), "--quiet", *flags]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists():
        if process.poll() is not None or time.monotonic() >= deadline:
            process.kill()
            pytest.fail(f"the run ended or stalled before its scorer began: {process.communicate()[1]}")
        time.sleep(0.05)
    return process, command


def ended(process: subprocess.Popen[str], signum: int, within: float) -> tuple[int, list[str], float]:
    """Exit status, standard error lines and seconds taken once `signum` is sent; the process killed if it is not
    over within `within` seconds."""
    sent = time.monotonic()
    process.send_signal(signum)
    try:
        _, stderr = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"the run did not end within {within} s of the signal")
    return process.returncode, stderr.splitlines(), time.monotonic() - sent


def records(tmp_path: Path) -> tuple[Path, list[str]]:
    (run,) = (tmp_path / "runs" / "test").iterdir()
    return run, [json.loads(line)["case_id"] for line in (run / "samples.jsonl").read_text().splitlines()]


def resumed(tmp_path: Path, command: list[str], cases: int) -> None:
    (tmp_path / "block").unlink()
    done = run_cli(*command[1:], "--resume")  # the resume is no test of processes: in this one
    assert done.returncode == 0, done.stderr
    assert sorted(records(tmp_path)[1], key=lambda case: int(case[1:])) == [f"c{n}" for n in range(cases)]


@pytest.mark.parametrize(
    ("signum", "code", "reason"),
    [(signal.SIGTERM, 143, "terminated (SIGTERM)"), (signal.SIGINT, 130, "interrupted by the user")],
)
def test_a_scorer_that_blocks_after_the_stop_was_taken_is_stopped_where_it_is(
    tmp_path: Path, signum: int, code: int, reason: str
) -> None:
    process, command = start(tmp_path, "python", 5, "--concurrency", "1", "--grace", "5")
    code_, stderr, waited = ended(process, signum, 30)
    run, kept = records(tmp_path)
    assert (code_, kept, stderr) == (code, ["c0", "c1"], [f"main.py: {reason}; {KEPT} (--resume continues)"])
    assert 1.0 + UNHEARD_S <= waited < 1.0 + UNHEARD_S + 3  # the scorer's second in flight, then the loop's silence
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["reason"]) == ("partial", reason)
    resumed(tmp_path, command, 5)


def test_a_scorer_stuck_in_c_after_the_stop_was_taken_is_ended_by_the_watchdog(tmp_path: Path) -> None:
    process, command = start(tmp_path, "late C", 5, "--concurrency", "1", "--grace", "5")
    code, stderr, waited = ended(process, signal.SIGHUP, 30)  # the terminal closed: as SIGTERM
    assert (code, records(tmp_path)[1], stderr) == (-signal.SIGKILL, ["c0", "c1"], [
        f"main.py: terminated (SIGTERM); the run did not stop within 8 s (a call that never returns): it is ended; "
        f"{KEPT} (--resume continues)"])  # fmt: skip
    assert UNHEARD_S + STUCK_S <= waited < 1.0 + UNHEARD_S + STUCK_S + 3  # after the loop's last answer, in the second
    resumed(tmp_path, command, 5)


def test_a_check_in_a_thread_that_never_returns_does_not_keep_a_stopped_run_alive(tmp_path: Path) -> None:
    process, command = start(tmp_path, "thread", 5, "--concurrency", "1", "--grace", "1")
    code, stderr, waited = ended(process, signal.SIGTERM, 30)
    run, kept = records(tmp_path)
    assert (code, kept, stderr) == (-signal.SIGKILL, ["c0", "c1"], [
        f"main.py: terminated (SIGTERM); {KEPT} in {run} (--resume continues)",
        f"main.py: terminated (SIGTERM); the process did not exit within 5 s of the run's end (a thread that never "
        f"returns): it is ended; {KEPT} (--resume continues)"])  # fmt: skip
    assert 1.0 + STUCK_S <= waited < 1.0 + STUCK_S + 3  # its grace, then the time a run has to exit
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["reason"]) == ("partial", "terminated (SIGTERM)")
    resumed(tmp_path, command, 5)


def test_a_worker_whose_scorer_blocks_is_ended_after_the_grace_period(tmp_path: Path) -> None:
    process, command = start(tmp_path, "worker", 40, "--workers", "2", "--concurrency", "1", "--grace", "1")
    blocked = (tmp_path / "started").read_text()
    code, stderr, waited = ended(process, signal.SIGTERM, 30)
    run, kept = records(tmp_path)
    assert (code, blocked in kept, len(kept) == len(set(kept))) == (143, False, True)
    assert stderr == [f"main.py: terminated (SIGTERM); {KEPT} in {run} (--resume continues)"]
    assert 1.0 + UNHEARD_STOP_S <= waited < 1.0 + UNHEARD_STOP_S + 3  # the grace, then the worker's silence
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["status"], summary["reason"]) == ("partial", "terminated (SIGTERM)")
    resumed(tmp_path, command, 40)
