#!/usr/bin/env python3
"""Response times and memory of the case viewer (`main.py view`) over two 100,000-record FaRel runs.

    python benchmarks/viewer.py                          # make the two runs in a temporary folder, measure
    python benchmarks/viewer.py --dir /tmp/viewer-runs   # make them there once (kept, reused), measure
    python benchmarks/viewer.py --records 20000          # smaller runs

The runs are made with our own storage code (`RunWriter`, `SampleRecord`, a summary scored by `ScoreBook`): two
models in tool mode on the same 100,000 generated FaRel quizzes (degrees 1 to 7, about 1 KB of prompt each), every
record with its prompt, options, an output `{"reasoning": ..., "answer": n}`, tokens, cost and latency; about 10%
of records have an invalid first attempt (each kind with the feedback our engine gives) then a fix, a few end
missing or in a failed call, and the second model answers about 30% of the quizzes differently from the first.

The viewer is started as `main.py view DIR --port 0`, a whole process, once per session, and asked over plain HTTP
(a new connection a request, the body read whole), timed by the wall clock: the first request of a session is
cold (DuckDB reads the run's `samples.jsonl`, from the page cache, into its tables), the rest warm (best and median
of `--repeats`). Sessions: (1) one run's grid, pages 1, 2 and 1000; (2) `disagree` over both runs, its HTML page,
a search, a run in progress (1,000 records appended to the first run, then the next request, which reads the file
again; the records are cut away afterwards, so `--dir` can be measured again); (3) the leaderboard (`/`), the page
the viewer opens on. The server's peak resident set (VmHWM) is read before each session ends. Cold rows are the
best of `--rounds` sessions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from typed_eval.contracts import (  # noqa: E402
    Attempt,
    Case,
    Cost,
    DatasetInfo,
    InvalidKind,
    Pacing,
    RunSettings,
    RunSummary,
    SampleRecord,
    SampleStatus,
    TokenUsage,
)
from typed_eval.core.scoring import ScoreBook  # noqa: E402
from typed_eval.engine.runs import RUNNING, program_version  # noqa: E402
from typed_eval.store.storage import RECORDS_FILE, SUMMARY_FILE, RunWriter, model_slug, parse_record  # noqa: E402
from typed_eval.suites.farel.suite import FAREL_TASK, generated_dataset  # noqa: E402

LENGTH, SEED = 7, 42
"""farel_bench.py -l 7 -r 42 -s: degrees 1 to 7, prompts of 1,056 characters on average."""
PER_NUMBER = 35
"""Quizzes `-l 7` makes per `-n`."""
APPENDED = 1_000
CONCURRENCY = 32
MANIFEST = "viewer-bench.json"
DIFFER = 0.30
INVALID_FIRST = 0.10
MISSING, ERROR = 0.003, 0.002
TOOL_TOKENS = 140
"""Input tokens of the instructions and the tool's definition, sent with every request."""


@dataclass(frozen=True)
class Model:
    name: str
    price_in: float
    price_out: float
    """USD per million tokens."""
    latency_s: float
    """Median seconds a request takes."""
    started: datetime
    opening: str


MODELS = (
    Model("openai:gpt-4o-mini", 0.15, 0.60, 1.1, datetime(2026, 11, 20, 9, 0, tzinfo=UTC), "Tracing the parents"),
    Model("anthropic:claude-3-5-haiku-latest", 0.80, 4.00, 2.0, datetime(2026, 11, 21, 9, 0, tzinfo=UTC),
          "Let me follow the family tree"),
)  # fmt: skip


# --- the runs ----------------------------------------------------------------------------------------------------


def _reasoning(case: Case, answer: int, opening: str, rng: random.Random) -> str:
    """A model's short reasoning: some of the quiz's statements, then the option chosen."""
    statements = [line[2:] for line in case.prompt.splitlines() if line.startswith("* ")]
    question = next((line for line in case.prompt.splitlines() if line.startswith("What is")), "")
    chosen = rng.sample(statements, min(len(statements), rng.randint(2, 5)))
    option = case.metadata["options"][answer - 1]
    return f"{opening}: {question} {' '.join(chosen)} So the answer is {answer}: {option}"


def _invalid(kind: InvalidKind, reasoning: str, answer: int, options: int) -> tuple[str, str]:
    """The raw reply of an invalid first attempt, and the feedback the engine gives it (as a real run records)."""
    if kind == "out_of_range":
        wrong = options + 1
        raw = json.dumps({"reasoning": reasoning, "answer": wrong})
        return raw, f"answer: {wrong} is not an option number: choose a number from 1 to {options}"
    if kind == "wrong_type":
        return json.dumps({"reasoning": reasoning, "answer": str(answer)}), "answer: Input should be a valid integer"
    if kind == "missing_field":
        return json.dumps({"reasoning": reasoning}), "answer: Field required"
    return f"{reasoning} The answer is {answer}.", "Please include your response in a tool call."


def _tokens(text: str) -> int:
    return len(text) // 4 + 8


def _record(case: Case, model: Model, chosen: int, rng: random.Random) -> SampleRecord:
    """One sample's record as the engine writes it: attempts with tokens and cost, the output, score and latency."""
    options = len(case.metadata["options"])
    roll = rng.random()
    base = dict(case_id=case.id, group=case.group, prompt=case.prompt, expected=case.expected,
                metadata=case.metadata, excluded=case.excluded, mode="tool")  # fmt: skip
    latency = round(model.latency_s * math.exp(rng.gauss(0, 0.35)), 4)
    if roll < ERROR:
        return SampleRecord(**base, status="error", attempts=[], corrective_retries=0, usage=TokenUsage(),
                            cost=Cost(usd=0.0, source="genai-prices"), latency_s=latency,
                            error=f"HTTP 529 from {model.name.split(':')[1]}: overloaded")  # fmt: skip
    asked = TOOL_TOKENS + _tokens(case.prompt)
    attempts: list[Attempt] = []

    def attempt(raw: str, feedback: str | None, kind: InvalidKind | None) -> None:
        nonlocal asked
        out = _tokens(raw)
        cost = (asked * model.price_in + out * model.price_out) / 1e6
        attempts.append(Attempt(valid=kind is None, invalid_kind=kind, raw=raw, feedback=feedback, input_tokens=asked,
                                output_tokens=out, cost_usd=cost))  # fmt: skip
        asked += out + (_tokens(feedback) if feedback else 0) + 10

    reasoning = _reasoning(case, chosen, model.opening, rng)
    output: dict[str, Any] | None = {"reasoning": reasoning, "answer": chosen}
    if roll < ERROR + MISSING:
        for _ in range(4):
            attempt(*_invalid("no_tool_call", reasoning, chosen, options), "no_tool_call")
        output = None
    else:
        if roll < ERROR + MISSING + INVALID_FIRST:
            kind: InvalidKind = rng.choice(["out_of_range", "wrong_type", "missing_field", "no_tool_call"])
            attempt(*_invalid(kind, reasoning, chosen, options), kind)
        attempt(json.dumps(output), None, None)
    latency = round(latency * (1 + 0.8 * (len(attempts) - 1)), 4)
    score = None if output is None else 1.0 if chosen == case.expected else 0.0
    status: SampleStatus = "missing" if output is None else "correct" if score == 1.0 else "incorrect"
    usage = TokenUsage(requests=len(attempts), input_tokens=sum(a.input_tokens or 0 for a in attempts),
                       output_tokens=sum(a.output_tokens or 0 for a in attempts))  # fmt: skip
    cost = Cost(usd=sum(a.cost_usd or 0.0 for a in attempts), source="genai-prices")
    return SampleRecord(**base, status=status, output=output, score=score, attempts=attempts,
                        corrective_retries=len(attempts) - 1, usage=usage, cost=cost, latency_s=latency)  # fmt: skip


def _answers(case: Case, rng: random.Random) -> tuple[int, int]:
    """The options the two models choose: the first right more often on low degrees; the second differs on
    about `DIFFER` of the quizzes (right more often than not where the first was wrong)."""
    options, right = len(case.metadata["options"]), int(case.expected)
    degree = int(case.metadata.get("degree") or 1)
    others = [n for n in range(1, options + 1) if n != right]
    first = right if rng.random() < 0.93 - 0.04 * degree else rng.choice(others)
    if rng.random() >= DIFFER:
        return first, first
    if first != right and rng.random() < 0.6:
        return first, right
    return first, rng.choice([n for n in range(1, options + 1) if n != first])


@dataclass
class _Writing:
    model: Model
    writer: RunWriter
    book: ScoreBook
    rng: random.Random
    latency: float = 0.0
    excluded: list[str] = field(default_factory=list)

    def add(self, record: SampleRecord) -> None:
        self.writer.append(record)
        self.book.add(record)
        self.latency += record.latency_s or 0.0
        if record.excluded:
            self.excluded.append(record.case_id)


def _summary(writing: _Writing, info: DatasetInfo, run_dir: Path) -> RunSummary:
    scores = writing.book.scores()
    scores.totals.pacing = Pacing()
    model = writing.model
    wall_s = round(writing.latency / CONCURRENCY + 3.0, 3)
    settings = RunSettings(model=model.name, mode="tool", retries=3, instructions=FAREL_TASK.instructions_for("tool"),
                           tool_choice="required", concurrency=CONCURRENCY, local=False, max_wait_s=600.0)  # fmt: skip
    return RunSummary(
        program_version=program_version(), run_id=run_dir.name, suite="farel", task=FAREL_TASK.name,
        model=model.name, mode="tool", status="finished", reason=None, started_at=model.started,
        finished_at=model.started + timedelta(seconds=wall_s), wall_s=wall_s, settings=settings, dataset=info,
        scores=scores, excluded_case_ids=sorted(writing.excluded),
    )  # fmt: skip


def make_runs(root: Path, records: int) -> dict[str, Any]:
    """The two runs under `root` (made once: a manifest names them), and the records a run in progress appends."""
    manifest = root / MANIFEST
    if manifest.is_file():
        made: dict[str, Any] = json.loads(manifest.read_text())
        if (
            made.get("records") == records
            and "rare" in made
            and (root / "appended.jsonl").is_file()
            and all((root / key / RECORDS_FILE).is_file() for key in made["runs"])
        ):
            print(f"using the runs made in {root}")
            return made
    started = time.perf_counter()
    for model in MODELS:
        shutil.rmtree(root / model_slug(model.name), ignore_errors=True)
    dataset = generated_dataset(LENGTH, -(-(records + APPENDED) // PER_NUMBER), SEED, shuffle=True)
    kept = dataset.limited(records)
    writings = []
    for index, model in enumerate(MODELS):
        run_dir = root / model_slug(model.name) / f"{model.started:%Y%m%dT%H%M%SZ}-tool-{index:04x}"
        book = ScoreBook(kept.group_sizes, aggregate=FAREL_TASK.aggregate, metrics=FAREL_TASK.metrics)
        writings.append(_Writing(model, RunWriter(run_dir), book, random.Random(SEED + index)))
    choices = random.Random(SEED)
    ids: set[str] = set()
    rare = ""
    for case in kept.cases():
        ids.add(case.id)
        if len(ids) == records // 2:  # a statement of one quiz: a search that finds a few cases
            rare = next(line[2:] for line in case.prompt.splitlines() if line.startswith("* "))
        for writing, answer in zip(writings, _answers(case, choices), strict=True):
            writing.add(_record(case, writing.model, answer, writing.rng))
    for writing in writings:
        writing.writer.write_summary(_summary(writing, kept.info, writing.writer.run_dir))
        writing.writer.close()
    first = writings[0]
    later = (case for case in dataset.limited(records + APPENDED).cases() if case.id not in ids)
    appended = [
        _record(case, first.model, _answers(case, choices)[0], first.rng).model_dump_json()
        for case, _ in zip(later, range(APPENDED), strict=False)
    ]
    (root / "appended.jsonl").write_text("\n".join(appended) + "\n")
    keys = [w.writer.run_dir.relative_to(root).as_posix() for w in writings]
    made = {"records": records, "runs": keys, "rare": rare}
    manifest.write_text(json.dumps(made))
    sizes = ", ".join(f"{(root / key / RECORDS_FILE).stat().st_size / 1e6:.0f} MB" for key in keys)
    print(f"made 2 runs of {records:,} records in {time.perf_counter() - started:.0f} s ({sizes})")
    return made


# --- the server --------------------------------------------------------------------------------------------------


class Viewer:
    """`main.py view DIR --port 0` as a subprocess, asked over HTTP."""

    def __init__(self, root: Path) -> None:
        started = time.perf_counter()
        command = [sys.executable, "main.py", "view", str(root), "--port", "0"]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.match(r"serving (http://\S+/)", line)
        if not found:
            self.process.kill()
            raise SystemExit(f"the viewer did not start: {line!r}")
        self.url = found.group(1)
        self.start_s = time.perf_counter() - started

    def get(self, path: str) -> tuple[float, bytes]:
        """Seconds to the whole body, and the body."""
        started = time.perf_counter()
        with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=300) as response:
            body: bytes = response.read()
        return time.perf_counter() - started, body

    def cpu_s(self) -> float:
        """CPU seconds the server has used (user and system, all its threads)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) / 1024

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Row:
    cold: list[float] = field(default_factory=list)
    cold_cpu: list[float] = field(default_factory=list)
    warm: list[float] = field(default_factory=list)
    size: int = 0
    note: str = ""


class Bench:
    def __init__(self, root: Path, made: dict[str, Any], repeats: int) -> None:
        self.root, self.repeats = root, repeats
        self.a, self.b = made["runs"]
        self.rare: str = made["rare"]
        self.rows: dict[str, Row] = {}
        self.peaks: dict[str, float] = {}
        self.starts: list[float] = []

    def _row(self, name: str) -> Row:
        return self.rows.setdefault(name, Row())

    def cold(self, viewer: Viewer, name: str, path: str) -> bytes:
        used = viewer.cpu_s()
        seconds, body = viewer.get(path)
        row = self._row(name)
        row.cold.append(seconds)
        row.cold_cpu.append(viewer.cpu_s() - used)
        row.size = len(body)
        return body

    def warm(self, viewer: Viewer, name: str, path: str) -> bytes:
        body = b""
        for _ in range(self.repeats):
            seconds, body = viewer.get(path)
            self._row(name).warm.append(seconds)
        self._row(name).size = len(body)
        return body

    def session(self, steps: Callable[[Viewer], None]) -> None:
        viewer = Viewer(self.root)
        self.starts.append(viewer.start_s)
        try:
            steps(viewer)
            name = steps.__name__.replace("_", " ")
            self.peaks[name] = max(self.peaks.get(name, 0.0), viewer.peak_mb())
        finally:
            viewer.stop()

    def one_run(self, viewer: Viewer) -> None:
        grid = f"/api/cases?runs={self.a}"
        self.cold(viewer, "one run, page 1 (JSON)", f"{grid}&page=1")
        for page in (1, 2, 1000):
            self.warm(viewer, f"one run, page {page} (JSON)", f"{grid}&page={page}")

    def two_runs(self, viewer: Viewer) -> None:
        both = f"runs={self.a},{self.b}"
        body = self.cold(viewer, "disagree, both runs, page 1 (JSON)", f"/api/cases?{both}&filter=disagree")
        self._row("disagree, both runs, page 1 (JSON)").note = f"{json.loads(body)['total']:,} rows"
        self.warm(viewer, "disagree, both runs, page 1 (JSON)", f"/api/cases?{both}&filter=disagree")
        self.warm(viewer, "disagree, both runs, page 1 (HTML)", f"/cases?{both}&filter=disagree")
        case = json.loads(body)["cases"][0]["case_id"]
        self.warm(viewer, "a case of it, both runs (HTML)", f"/case/{quote(case)}?{both}")
        for label, text in (("a word", "grand-aunt"), ("a statement", self.rare)):
            name = f"search q= {label}, both runs (JSON)"
            body = self.warm(viewer, name, f"/api/cases?{both}&q={quote(text)}")
            self._row(name).note = f"{text!r}: {json.loads(body)['total']:,} rows"
        self.in_progress(viewer)

    def in_progress(self, viewer: Viewer) -> None:
        """1,000 records appended to the first run, its summary saying it is running; the next request reads the
        file again. Then the run is put back as it was."""
        run_dir = self.root / self.a
        records, summary = run_dir / RECORDS_FILE, (run_dir / SUMMARY_FILE).read_text()
        size = records.stat().st_size
        try:
            with RunWriter(run_dir, resume=True) as writer:
                stored = RunSummary.model_validate_json(summary)
                writer.write_summary(stored.model_copy(update={"status": "partial", "reason": RUNNING}))
                for line in (self.root / "appended.jsonl").read_text().splitlines():
                    writer.append(parse_record(line))
            name = f"one run after {APPENDED:,} records appended, page 1 (JSON)"
            self.cold(viewer, name, f"/api/cases?runs={self.a}&page=1")
            self._row(name).note = "cold: the file read again"
            self.warm(viewer, name, f"/api/cases?runs={self.a}&page=1")
        finally:
            os.truncate(records, size)
            (run_dir / SUMMARY_FILE).write_text(summary)

    def leaderboard(self, viewer: Viewer) -> None:
        self.cold(viewer, "leaderboard / (HTML)", "/")
        self.warm(viewer, "leaderboard / (HTML)", "/")

    def report(self, rounds: int, load: tuple[float, float]) -> None:
        print(
            f"\n{os.cpu_count()} cores; load average {load[0]:.2f} before, {load[1]:.2f} after; cold: best [median] "
            f"of {rounds} sessions (a fresh server each); warm: {self.repeats} requests a session\n"
        )
        print("| request | cold s | cold CPU s | warm best s | warm median s | KB | |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for name, row in self.rows.items():
            cold = f"{min(row.cold):.2f} [{statistics.median(row.cold):.2f}]" if row.cold else ""
            used = f"{min(row.cold_cpu):.2f}" if row.cold_cpu else ""
            warm = (f"{min(row.warm):.3f}", f"{statistics.median(row.warm):.3f}") if row.warm else ("", "")
            print(f"| {name} | {cold} | {used} | {warm[0]} | {warm[1]} | {row.size / 1024:.0f} | {row.note} |")
        print(
            f"\nserver start (launch to the serving line): {min(self.starts):.2f} s; "
            "peak resident set (VmHWM), by session: "
            + ", ".join(f"{name} {mb:.0f} MB" for name, mb in self.peaks.items())
        )
        page, disagree = self.rows["one run, page 1 (JSON)"], self.rows["disagree, both runs, page 1 (JSON)"]
        medians = [statistics.median(self.rows[f"one run, page {n} (JSON)"].warm) for n in (1, 2, 1000)]
        checks = [
            ("first page of one run, cold", min(page.cold), f" (slowest session {max(page.cold):.2f} s)", 2.0),
            ("pages 1, 2, 1000 of one run, warm (the slowest median)", max(medians), "", 0.5),
            ("disagree over both runs, cold", min(disagree.cold),
             f" (slowest session {max(disagree.cold):.2f} s)", 3.0),
        ]  # fmt: skip
        print(f"\ntargets (cold: the best of {rounds} sessions):")
        for what, seconds, slowest, target in checks:
            verdict = "PASS" if seconds <= target else "FAIL"
            print(f"{what}: {seconds:.2f} s{slowest}, target {target:g} s: {verdict}")


# --- where the time goes ----------------------------------------------------------------------------------------


def profile(root: Path, made: dict[str, Any]) -> None:
    """The viewer's work in this process, phase by phase: DuckDB's load of each run (split into its two
    statements), the grid's query, the parse of the page's records, the HTML, and the leaderboard's read."""
    import duckdb

    from typed_eval.core.suite import find_suites
    from typed_eval.reports.leaderboard import build_board
    from typed_eval.reports.viewer import pages
    from typed_eval.store import case_store
    from typed_eval.store.case_store import CaseStore

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def timed(what: str, work: Any) -> Any:
        wall, used = time.perf_counter(), cpu()
        result = work()
        print(f"| {what} | {time.perf_counter() - wall:.3f} | {cpu() - used:.3f} |")
        return result

    a, b = made["runs"]
    print("\n| phase (in process) | wall s | CPU s (all threads) |\n| --- | ---: | ---: |")
    db = duckdb.connect(":memory:")
    load = case_store._LOAD.format(records="r", cells="r_cells", source=case_store._RECORDS, fields=case_store._FIELDS)
    records, cells = [statement for statement in load.split(";") if statement.strip()]
    timed("DuckDB: read the lines only (read_json_objects, count)", lambda: db.execute(
        f"SELECT count(*) FROM {case_store._RECORDS}", [str(root / a / RECORDS_FILE)]).fetchall())  # fmt: skip
    timed("DuckDB load, 1: the records table (from_json of the grid's fields)", lambda: db.execute(
        records, [str(root / a / RECORDS_FILE)]))  # fmt: skip
    timed("DuckDB load, 2: the cells table", lambda: db.execute(cells))
    db.close()
    store = CaseStore(root)
    suites = {found.suite.name: found.suite for found in find_suites(on_error=lambda _: None)}
    timed("one run, page 1, cold: load + query + parse", lambda: store.cases([a]))
    page = timed("one run, page 1, warm: query + parse", lambda: store.cases([a]))
    lines = [record.model_dump_json() for row in page.rows for cell in row.cells.values() for record in cell.records]
    timed(f"parse the page's {len(lines)} records (SampleRecord)", lambda: [parse_record(line) for line in lines])
    timed("disagree, cold (the second run loaded)", lambda: store.cases([a, b], filter="disagree"))
    shown = timed("disagree, warm", lambda: store.cases([a, b], filter="disagree"))
    query = {"runs": f"{a},{b}", "filter": "disagree"}
    timed("disagree page's HTML", lambda: pages.cases(store.entries([a, b]), shown, query, suites))
    timed("search, the first (each run's search text made)", lambda: store.cases([a, b], query=made["rare"]))
    timed("search, a statement, warm", lambda: store.cases([a, b], query=made["rare"]))
    timed("leaderboard: build_board (every record read)", lambda: build_board([e.run for e in store.runs()]))
    store.close()
    status = Path("/proc/self/status").read_text()
    peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
    print(f"\npeak resident set of this process: {int(peak) // 1024} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="folder for the runs (made once, then reused; default: a temp dir)")
    parser.add_argument("--records", type=int, default=100_000, help="records a run (default 100,000)")
    parser.add_argument("--repeats", type=int, default=5, help="warm requests of each kind a session (default 5)")
    parser.add_argument("--rounds", type=int, default=5, help="sessions of each kind, cold rows' best (default 5)")
    parser.add_argument("--profile", action="store_true", help="break the viewer's work down, in this process")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = args.dir or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        made = make_runs(root, args.records)
        if args.profile:
            profile(root, made)
            return
        load = os.getloadavg()[0]
        bench = Bench(root, made, args.repeats)
        for _ in range(args.rounds):
            bench.session(bench.one_run)
            bench.session(bench.two_runs)
            bench.session(bench.leaderboard)
        bench.report(args.rounds, (load, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
