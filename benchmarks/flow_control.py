#!/usr/bin/env python3
"""Flow control of `main.py run` (rate-limit pacing, outage handling) side by side with inspect_ai, same servers.

    python benchmarks/flow_control.py --inspect-python /work/inspect-venv/bin/python
    python benchmarks/flow_control.py --rounds 3                  # median of 3 rounds, ratios round by round
    python benchmarks/flow_control.py --scenarios outage          # one scenario only

Each tool runs as a whole process, on the 450 published FaRel quizzes (degrees 1-3, 50 a class, seed 42,
shuffled), against a fresh loopback OpenAI-compatible server (`tests/fake_provider.Rationed`) built just before
it starts, so both meet the same capacity:
(1) rate limit: 1,200 requests a minute refilled continuously (20 a second, a bucket of 20), OpenAI's
`x-ratelimit-*` headers on every answer and `Retry-After` on a 429, 300 ms latency, concurrency 32;
(2) the same with `main.py run --workers 2` (inspect_ai's row of (1) is its reference);
(3) outage: every request answered HTTP 503 from 3 s after the first request for 20 s, 100 ms latency,
concurrency 8.
inspect_ai (installed in a venv of its own; `--inspect-python`) runs `benchmarks/inspect_farel_task.py`, the same
prompts with farel-bench's `<ANSWER>` instruction, as `openai-api/loopback/m` with `--max-connections` the
concurrency and its defaults otherwise (unlimited retries, `--no-fail-on-error` so that a failed sample is
counted, not fatal). The server answers a tool call to typed-eval and the tag to inspect_ai, correct either way.
Wall seconds are whole processes (start-up included); 429s, requests and requests into the outage are the server's
counts. With `--rounds N`, a table cell is the median of the rounds (counts: the worst round), and the ratios
against inspect_ai are taken within each round.
"""

from __future__ import annotations

import argparse
import compileall
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import farel_bench  # noqa: E402
from tests.fake_openai import FakeOpenAI, answer_key, completion, text, tool_call  # noqa: E402
from tests.fake_provider import Bucket, Rationed  # noqa: E402

TASK = Path(__file__).resolve().parent / "inspect_farel_task.py"
RPM, BUCKET, RL_LATENCY_S, RL_CONCURRENCY = 1200, 20, 0.3, 32
OUTAGE, OUTAGE_LATENCY_S, OUTAGE_CONCURRENCY = (3.0, 20.0), 0.1, 8
IDEAL_S = 450 / (RPM / 60)
"""The issue's floor for the rate-limit scenario: 450 requests at 20 a second."""

READ_LOG = """
import json, sys
from inspect_ai.log import list_eval_logs, read_eval_log
logs = list_eval_logs(sys.argv[1])
log = read_eval_log(logs[0]) if logs else None
samples = (log.samples or []) if log else []
correct = sum(1 for s in samples if not s.error and any(v.value == "C" for v in (s.scores or {}).values()))
print(json.dumps({
    "status": log.status if log else "no log",
    "error": str(log.error.message)[:300] if log and log.error else None,
    "samples": len(samples),
    "errors": sum(1 for s in samples if s.error),
    "correct": correct,
}))
"""


@dataclass
class Outcome:
    """One run of one tool: the process's wall seconds, what it recorded, and what the server saw."""

    wall_s: float
    recorded: int
    errors: int
    correct: int
    served: int
    refused: int
    unavailable: int
    into_outage: int
    most_in_flight: int
    status: str
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return self.served + self.refused + self.unavailable

    @property
    def answered(self) -> int:
        return self.recorded - self.errors

    @property
    def throughput(self) -> float:
        return self.answered / self.wall_s


class Server:
    """A fresh `Rationed` provider behind `FakeOpenAI`, its bucket built on entry (its clock starts then)."""

    def __init__(self, reply: Callable[[dict[str, Any]], dict[str, Any]], scenario: str) -> None:
        self.reply, self.scenario = reply, scenario
        self.first: float | None = None
        self.last: float | None = None
        self.resumed: float | None = None
        """Seconds from the outage's end to the first request received after it that was answered."""
        self._lock = threading.Lock()

    def __enter__(self) -> Server:
        if self.scenario == "outage":
            self.provider = Rationed(self.reply, latency_s=OUTAGE_LATENCY_S, outage=OUTAGE)
        else:
            self.provider = Rationed(self.reply, requests=Bucket(RPM, capacity=BUCKET), latency_s=RL_LATENCY_S)
        self.http = FakeOpenAI(self._timed).__enter__()
        return self

    def _timed(self, request: dict[str, Any]) -> Any:
        received = time.monotonic()
        with self._lock:
            self.first = self.first if self.first is not None else received
        answer = self.provider(request)
        if answer.status == 200:
            with self._lock:
                self.last = time.monotonic()
                if self.scenario == "outage" and self.first is not None:
                    after = received - (self.first + sum(OUTAGE))
                    if after >= 0 and (self.resumed is None or after < self.resumed):
                        self.resumed = after
        return answer

    @property
    def url(self) -> str:
        return self.http.url

    def __exit__(self, *_: object) -> None:
        self.http.__exit__()


def _reply(quizzes: list[Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    key = answer_key(quizzes)

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        correct = key(request).correct
        if request.get("tools"):
            return completion(tool_call({"answer": correct}, request["tools"][0]["function"]["name"]))
        return completion(text(f"<ANSWER>{correct}</ANSWER>"))

    return reply


def _concurrency(scenario: str) -> int:
    return OUTAGE_CONCURRENCY if scenario == "outage" else RL_CONCURRENCY


def _server_counts(server: Server, started: float) -> dict[str, Any]:
    p = server.provider
    span = (server.last - server.first) if server.first is not None and server.last is not None else None
    return {
        "first_s": None if server.first is None else server.first - started,
        "resumed_s": server.resumed,
        "served": p.served,
        "refused": p.refused,
        "unavailable": p.unavailable,
        "into_outage": p.into_outage,
        "most_in_flight": p.most_in_flight,
        "span_s": span,
    }


def run_farel(scenario: str, reply: Callable[[dict[str, Any]], dict[str, Any]], workers: int) -> Outcome:
    with tempfile.TemporaryDirectory() as scratch, Server(reply, scenario) as server:
        command = [
            sys.executable,
            "main.py",
            "run",
            "--model",
            "m",
            "--base-url",
            server.url,
            "--results-dir",
            scratch,
            "--quiet",
            "--concurrency",
            str(_concurrency(scenario)),
            "--workers",
            str(workers),
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - started
        counts = _server_counts(server, started)
        found = glob.glob(os.path.join(scratch, "*", "*", "summary.json"))
        if not found:
            print(f"typed-eval wrote no summary (exit {done.returncode}): {done.stderr[-1500:]}", file=sys.stderr)
            return _failed(wall, counts, f"exit {done.returncode}")
        summary = json.loads(Path(found[0]).read_text())
    scores = summary["scores"]
    status = summary["status"] + (f" ({summary['reason']})" if summary.get("reason") else "")
    if done.returncode:
        status += f", exit {done.returncode}"
    notes = {
        **counts,
        "pacing": scores["totals"].get("pacing"),
        "transport_retries": scores["totals"].get("transport_retries"),
    }
    return _outcome(wall, counts, (scores["samples"], scores["errors"], scores["correct"]), status, notes)


def run_inspect(
    scenario: str, reply: Callable[[dict[str, Any]], dict[str, Any]], inspect_python: str, dataset: Path
) -> Outcome:
    with tempfile.TemporaryDirectory() as scratch, Server(reply, scenario) as server:
        env = {**os.environ, "LOOPBACK_BASE_URL": server.url, "LOOPBACK_API_KEY": "k", "INSPECT_DISPLAY": "none"}
        shutil.copy(TASK, scratch)  # inspect_ai takes a task file by a relative path only
        command = [
            inspect_python,
            "-m",
            "inspect_ai",
            "eval",
            TASK.name,
            "-T",
            f"dataset={dataset}",
            "--model",
            "openai-api/loopback/m",
            "--max-connections",
            str(_concurrency(scenario)),
            "--log-dir",
            os.path.join(scratch, "logs"),
            "--display",
            "none",
            "--no-fail-on-error",
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        counts = _server_counts(server, started)
        read = subprocess.run(
            [inspect_python, "-c", READ_LOG, os.path.join(scratch, "logs")], capture_output=True, text=True
        )
    if done.returncode:
        print(f"inspect_ai (exit {done.returncode}): {done.stderr[-1500:]}", file=sys.stderr)
    if read.returncode:
        return _failed(wall, counts, f"exit {done.returncode}")
    log = json.loads(read.stdout)
    status = log["status"] + (f" ({log['error']})" if log["error"] else "")
    return _outcome(wall, counts, (log["samples"], log["errors"], log["correct"]), status, counts)


def _failed(wall: float, counts: dict[str, Any], status: str) -> Outcome:
    return _outcome(wall, counts, (0, 0, 0), status, counts)


def _outcome(
    wall: float, counts: dict[str, Any], samples: tuple[int, int, int], status: str, notes: dict[str, Any]
) -> Outcome:
    """A tool's run: its (recorded, errors, correct) samples beside the server's counts."""
    recorded, errors, correct = samples
    return Outcome(
        wall, recorded, errors, correct, counts["served"], counts["refused"], counts["unavailable"],
        counts["into_outage"], counts["most_in_flight"], status, notes,
    )  # fmt: skip


def _find_inspect(option: str | None) -> str | None:
    """The python of a venv holding inspect_ai: `--inspect-python`, else the one behind `inspect` on PATH."""
    if option:
        return option
    script = shutil.which("inspect")
    if script is None:
        return None
    first = Path(script).read_text(errors="replace").splitlines()[0]
    return first[2:].strip() if first.startswith("#!") else None


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _spread(ratios: list[float]) -> str:
    ratios = sorted(ratios)
    return f"{statistics.median(ratios):.2f}" + (f" [{ratios[0]:.2f}, {ratios[-1]:.2f}]" if len(ratios) > 1 else "")


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


ROWS = {
    "rate-limit": ("rate limit, 1,200 RPM, 300 ms, concurrency 32", 1),
    "workers": ("rate limit, 1,200 RPM, 300 ms, concurrency 32, --workers 2", 2),
    "outage": ("20 s outage (503) from 3 s, 100 ms, concurrency 8", 1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspect-python", help="the python of a venv with inspect_ai (default: `inspect` on PATH)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every run, in turn (default 1)")
    parser.add_argument(
        "--scenarios", nargs="+", choices=list(ROWS), default=list(ROWS), help="which scenarios (default: all)"
    )
    parser.add_argument("--verbose", action="store_true", help="print each run's outcome as it ends")
    args = parser.parse_args()

    compileall.compile_dir(REPO / "typed_eval", quiet=1)  # as after a user's first run
    quizzes = list(farel_bench.generate(3, 50, 42, shuffle=True))
    reply = _reply(quizzes)
    inspect_python = _find_inspect(args.inspect_python)
    if inspect_python is not None and not Path(inspect_python).exists():
        inspect_python = None
    if inspect_python is None:
        print("inspect_ai: not found (give --inspect-python PATH, a venv's python with inspect-ai): its rows skipped\n")

    farel: dict[str, list[Outcome]] = {name: [] for name in args.scenarios}
    inspect: dict[str, list[Outcome]] = {name: [] for name in args.scenarios if name != "workers"}
    with tempfile.TemporaryDirectory() as scratch:
        dataset = Path(scratch) / "quizzes.jsonl"
        dataset.write_text(
            "".join(json.dumps({"id": q.id, "prompt": q.prompt, "correct": q.correct}) + "\n" for q in quizzes)
        )
        for round_no in range(args.rounds):
            for name in args.scenarios:
                scenario = "outage" if name == "outage" else "rate-limit"
                outcome = run_farel(scenario, reply, ROWS[name][1])
                farel[name].append(outcome)
                _say(args.verbose, round_no, name, "typed-eval", outcome)
                if inspect_python is not None and name in inspect:
                    outcome = run_inspect(scenario, reply, inspect_python, dataset)
                    inspect[name].append(outcome)
                    _say(args.verbose, round_no, name, "inspect_ai", outcome)

    _report(farel, inspect, len(quizzes), args.rounds, inspect_python)


def _say(verbose: bool, round_no: int, name: str, tool: str, outcome: Outcome) -> None:
    if verbose:
        print(f"round {round_no + 1}, {name}, {tool}: {outcome}", file=sys.stderr, flush=True)


def _note(runs: list[Outcome], key: str) -> str:
    """The median of a server-side figure over the rounds that have it, or -."""
    values = [r.notes[key] for r in runs if r.notes.get(key) is not None]
    return f"{_median(values):.1f}" if values else "-"


def _row(label: str, tool: str, runs: list[Outcome], total: int) -> str:
    wall = _median([r.wall_s for r in runs])
    worst = max(runs, key=lambda r: (r.errors, -r.recorded, r.refused, r.into_outage))
    refused = max(r.refused for r in runs)
    share = max(r.refused / r.requests if r.requests else 0.0 for r in runs)
    into = max(r.into_outage for r in runs)
    return (
        f"| {label} | {tool} | {wall:.1f} | {_note(runs, 'first_s')} | {_note(runs, 'span_s')} "
        f"| {worst.recorded}/{total} | {worst.errors} "
        f"| {max(r.requests for r in runs)} | {refused} ({share:.0%}) | {into} "
        f"| {_median([r.throughput for r in runs]):.1f} |"
    )


def _report(
    farel: dict[str, list[Outcome]],
    inspect: dict[str, list[Outcome]],
    total: int,
    rounds: int,
    inspect_python: str | None,
) -> None:
    version = "?"
    if inspect_python is not None:
        probe = [inspect_python, "-c", "import inspect_ai; print(inspect_ai.__version__)"]
        version = subprocess.run(probe, capture_output=True, text=True).stdout.strip() or "?"
    print(
        f"{total} FaRel quizzes, loopback servers, {os.cpu_count()} cores, "
        f"{'median of ' + str(rounds) + ' rounds' if rounds > 1 else 'one round'} (whole processes); "
        f"inspect_ai {version}\n"
    )
    print(
        "| scenario | client | wall s | 1st request at s | serving s | recorded | errors | requests | 429s "
        "| into outage | answered/s |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, runs in farel.items():
        label = ROWS[name][0]
        print(_row(label, "typed-eval", runs, total))
        if inspect.get(name):
            print(_row(label, f"inspect_ai {version}", inspect[name], total))
    print(
        "\n(wall s: the whole process, start-up included; 1st request at s: from launch to the server's first "
        "request; serving s: from it to the last answer; 429s: worst round, share of all requests; answered/s: "
        "answered samples per wall second)"
    )
    if "outage" in farel:
        back = [f"typed-eval {_note(farel['outage'], 'resumed_s')} s"]
        if inspect.get("outage"):
            back.append(f"inspect_ai {_note(inspect['outage'], 'resumed_s')} s")
        print(f"first answered request after the outage ended: {', '.join(back)} after its end")
    print()

    failed = 0

    def check(what: str, ok: bool) -> None:
        nonlocal failed
        failed += not ok
        print(f"  {_verdict(ok)}  {what}")

    for name, runs in farel.items():
        print(ROWS[name][0] + (f" (typed-eval, --workers {ROWS[name][1]})" if ROWS[name][1] > 1 else " (typed-eval)"))
        recorded, errors = min(r.recorded for r in runs), max(r.errors for r in runs)
        check(f"recorded {recorded}/{total} (every round)", recorded == total)
        check(f"errors {errors} (every round)", errors == 0)
        reference = inspect.get("rate-limit" if name == "workers" else name) or []
        if name == "outage":
            into = max(r.into_outage for r in runs)
            check(f"requests sent into the outage {into} <= 60 (worst round)", into <= 60)
            if reference:
                ratios = [mine.wall_s / theirs.wall_s for mine, theirs in zip(runs, reference, strict=True)]
                check(
                    f"wall time / inspect_ai's {_spread(ratios)} <= 0.8 (median of rounds)",
                    statistics.median(ratios) <= 0.8,
                )
        else:
            wall = _median([r.wall_s for r in runs])
            check(f"wall {wall:.1f} s <= 1.15 x {IDEAL_S:.1f} s = {1.15 * IDEAL_S:.2f} s", wall <= 1.15 * IDEAL_S)
            share = max(r.refused / r.requests if r.requests else 0.0 for r in runs)
            check(f"429s {share:.1%} of requests <= 10% (worst round)", share <= 0.10)
            if reference:
                ratios = [mine.throughput / theirs.throughput for mine, theirs in zip(runs, reference, strict=True)]
                check(
                    f"throughput / inspect_ai's {_spread(ratios)} >= 1.3 (median of rounds)",
                    statistics.median(ratios) >= 1.3,
                )
                serving = [
                    theirs.notes["span_s"] / mine.notes["span_s"]
                    for mine, theirs in zip(runs, reference, strict=True)
                    if mine.notes.get("span_s") and theirs.notes.get("span_s")
                ]
                if serving:
                    print(f"  info  the same over the serving span only (no start-up): {_spread(serving)}")
    for name, runs in inspect.items():
        notes = [r.status for r in runs if not r.status.startswith("success")]
        if notes:
            print(f"inspect_ai, {name}: {'; '.join(notes)}")
    for name, runs in farel.items():
        notes = [r.status for r in runs if r.status != "finished"]
        if notes:
            print(f"typed-eval, {name}: {'; '.join(notes)}")
    print(f"\n{'all targets met' if not failed else f'{failed} target(s) missed'}")


if __name__ == "__main__":
    main()
