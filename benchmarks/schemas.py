#!/usr/bin/env python3
"""The schemas suite's costs: validating an instance, and a run against a local mock beside a FaRel run.

    python benchmarks/schemas.py --data DIR       # (a) validation time per instance over JSONSchemaBench's data/
    python benchmarks/schemas.py --run            # (b) the sample against the mock, per request, beside FaRel's
    python benchmarks/schemas.py --start --data DIR   # (c) first request and peak memory of a run over DIR
    python benchmarks/schemas.py --posing --data DIR  # (d) how each mode poses each schema of DIR, counted

(a) For every schema under DIR (`DIR/<set>/<file>.json`, JSONSchemaBench's data/ folder: 9,558 schemas) a validator
is compiled once (the suite's `Validators`) and reused for the mock's instances of that schema
(benchmarks/schemas_mock.py: a generated instance meant to be valid and one broken from it), each checked `--checks`
times; the time of each check is taken alone (`perf_counter_ns` around `problems()`), and the median, 90th and 99th
percentiles and the most are printed, with the compile times.
(b) `main.py run --suite schemas` in tool mode over the shipped sample's schemas the mock holds a valid and an invalid
instance for (260, each `--copies` times: 1,820 cases, as throughput.py's 1,800 quizzes), and `main.py run` (FaRel,
tool mode) over as many quizzes, both against a loopback mock with the FaRel throughput benchmark's settings
(benchmarks/throughput.py: concurrency 32, 20 ms latency, keep-alive), each as a whole process, in turn, `--repeats`
rounds, with a bare pydantic-ai `Agent` posing the same schemas with the same messages (the floor of the library, as
in throughput.py): wall and CPU seconds per request (the least over rounds) and the ratios within each round
(median, least, most).
(c) `main.py run --suite schemas -S path=DIR` (tool mode, or each `--mode` given, `--retries 0`, its own concurrency)
against the mock holding every schema of DIR it has a valid and an invalid instance for (any other answered `{}`), no
latency: the seconds from the process's start to the first request the mock receives, and the process's peak resident
set (`ru_maxrss` of the child, from `wait4`), per round. Each run is the exec of a small launcher started before the
mock is scripted: a child forked from the benchmark itself would carry the benchmark's resident set (about 100 MB once
the mock holds its instances) as its peak, whatever the run's own.
(d) Every schema under DIR noted as the suite notes it, and in each structured mode posed as the suite poses it (its
task, and the schema pydantic-ai sends for it: the tool's parameters, the response format): the cases per difference
between what is posed and the original, per mode, each case's notes checked against what is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from schemas_mock import SchemaMock, held_out, instances
from throughput import REPO, MockServer, _main_run, _timed

sys.path.insert(0, str(REPO))
from typed_eval.contracts import AnswerMode
from typed_eval.suites.schemas.validation import SchemaProblem, Validators, problems

SAMPLE = REPO / "typed_eval" / "suites" / "schemas" / "sample"


def _percentile(ordered: list[int], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1e6


def validation(data: Path, checks: int) -> None:
    """(a): each check of an instance timed alone, validators compiled once per schema."""
    validators = Validators()
    compile_ns: list[int] = []
    check_ns: list[int] = []
    schemas = unusable = uncheckable = valid = 0
    for path in sorted(data.glob("*/*.json")):
        schemas += 1
        text = json.dumps(json.loads(path.read_text(encoding="utf-8")))
        started = time.perf_counter_ns()
        try:
            validator = validators.for_text(text)
        except SchemaProblem:
            unusable += 1
            continue
        compile_ns.append(time.perf_counter_ns() - started)
        for instance in instances(json.loads(text)):
            for _ in range(checks):
                started = time.perf_counter_ns()
                try:
                    found = problems(validator, instance)
                except SchemaProblem:
                    uncheckable += 1
                    break
                check_ns.append(time.perf_counter_ns() - started)
                valid += not found
    check_ns.sort()
    compile_ns.sort()
    print(f"{schemas:,} schemas under {data}, {unusable} not compiled (the case's error), {os.cpu_count()} cores")
    print(f"{len(check_ns):,} checks ({checks} of each instance, {valid:,} found valid), {uncheckable} out of time")
    print("| what | median ms | p90 ms | p99 ms | most ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, times in (("check an instance (validator reused)", check_ns), ("compile a schema, once", compile_ns)):
        print(
            f"| {name} | {_percentile(times, 0.5):.3f} | {_percentile(times, 0.9):.3f} | "
            f"{_percentile(times, 0.99):.3f} | {times[-1] / 1e6:.1f} |"
        )


async def _bare_agent(url: str, data: Path, concurrency: int) -> None:
    """The floor of the library: a bare pydantic-ai `Agent` per schema (`StructuredDict` of the schema as posed, a
    tool output), asked with the same messages, nothing recorded or scored."""
    from pydantic_ai import Agent, ModelMessage, ModelRequest, ModelResponse, StructuredDict, ToolOutput
    from pydantic_ai.exceptions import UnexpectedModelBehavior
    from pydantic_ai.messages import SystemPromptPart, TextPart, UserPromptPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from typed_eval.suites.schemas.outputs import WRAPPER, sent_schema
    from typed_eval.suites.schemas.prompts import SYSTEM, load_shots

    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=url, api_key="k"))
    shots = load_shots()
    gate = asyncio.Semaphore(concurrency)

    async def one(path: Path) -> None:
        text = json.dumps(json.loads(path.read_text(encoding="utf-8")))
        sent = sent_schema(json.loads(text))
        shown = sent.schema if sent.object_root else {"type": "object", "properties": {WRAPPER: sent.schema}}
        history: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart(SYSTEM)])]
        for schema, instance in shots[path.parent.name]:  # the set's pairs
            history += [ModelRequest(parts=[UserPromptPart(schema)]), ModelResponse(parts=[TextPart(instance)])]
        output = ToolOutput(StructuredDict(shown), name="final_result")  # type: ignore[arg-type]
        agent = Agent(model, output_type=output, retries=0)
        async with gate:
            with contextlib.suppress(UnexpectedModelBehavior):  # an invalid instance, not asked again
                await agent.run(text, message_history=history)

    await asyncio.gather(*(one(path) for path in sorted(data.glob("*/*.json"))))


def run(concurrency: int, latency_ms: float, repeats: int, copies: int) -> None:
    """(b): the sample's schemas (`copies` times over) and as many FaRel quizzes, each a whole `main.py run`."""
    compileall.compile_dir(REPO / "typed_eval", quiet=1)
    chosen = held_out(SAMPLE)
    mock = SchemaMock([entry for _, entry in chosen], latency_ms / 1000)
    farel = MockServer(latency_ms / 1000)
    number = -(-len(chosen) * copies // 9)  # FaRel makes 9 quizzes of length 3 per number
    rows: dict[str, list[tuple[float, float]]] = {"schemas": [], "bare agent, schemas": [], "farel": []}
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "data"
        for case_id, _ in chosen:
            (data / case_id).parent.mkdir(parents=True, exist_ok=True)
            for copy in range(copies):
                shutil.copy(SAMPLE / f"{case_id}.json", data / f"{case_id}-{copy}.json")
        schemas = [sys.executable, "main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--mode", "tool",
                   "--model", "m", "--base-url", mock.url, "--api-key", "k", "--concurrency", str(concurrency),
                   "--results-dir", scratch, "--quiet", "--retries", "0"]  # fmt: skip
        for _ in range(repeats):
            before = len(mock.requests)
            rows["schemas"].append(_timed(schemas))
            asked = len(mock.requests) - before
            bare = [sys.executable, __file__, "_agent", mock.url, str(data), str(concurrency)]
            rows["bare agent, schemas"].append(_timed(bare))
            before = farel.requests
            rows["farel"].append(_timed(_main_run(farel.url, 3, number, concurrency, scratch)))
            quizzes = farel.requests - before
    print(
        f"{asked} schemas (the sample's with a known valid and invalid instance, {copies} copies) and {quizzes} "
        "FaRel quizzes, tool "
        f"mode, concurrency {concurrency}, {latency_ms:g} ms latency, {os.cpu_count()} cores, best of {repeats} "
        "(whole processes)\n"
    )
    print("| run | requests | wall s | ms/request | requests/s | CPU s | CPU ms/request |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, count in (("schemas", asked), ("bare agent, schemas", asked), ("farel", quizzes)):
        wall, cpu = min(w for w, _ in rows[name]), min(c for _, c in rows[name])
        label = name if name.startswith("bare") else f"main.py run, {name}"
        print(
            f"| {label} | {count} | {wall:.2f} | {1000 * wall / count:.2f} | {count / wall:.0f} "
            f"| {cpu:.2f} | {1000 * cpu / count:.2f} |"
        )
    ratios = sorted((s[0] / asked) / (f[0] / quizzes) for s, f in zip(rows["schemas"], rows["farel"], strict=True))
    cpu_ratios = sorted((s[1] / asked) / (f[1] / quizzes) for s, f in zip(rows["schemas"], rows["farel"], strict=True))
    floor = sorted(b[0] / s[0] for s, b in zip(rows["schemas"], rows["bare agent, schemas"], strict=True))
    print(f"\nper-request time, schemas / FaRel, per round, median [least, most] of {repeats}:")
    print(f"wall {statistics.median(ratios):.2f} [{ratios[0]:.2f}, {ratios[-1]:.2f}]; "
          f"CPU {statistics.median(cpu_ratios):.2f} [{cpu_ratios[0]:.2f}, {cpu_ratios[-1]:.2f}]")  # fmt: skip
    print(f"throughput of main.py run / the bare agent on the same schemas: {statistics.median(floor):.2f} "
          f"[{floor[0]:.2f}, {floor[-1]:.2f}]")  # fmt: skip


_LAUNCH = "import json, os, sys; cwd, argv = json.loads(sys.stdin.readline()); os.chdir(cwd); os.execv(argv[0], argv)"
"""A launcher: made while the benchmark is small, it becomes the run it is told (`exec`), whose `ru_maxrss` is then its
own (Linux records the resident set of the process an `exec` replaces, and a `fork` starts with the parent's)."""


def start(data: Path, modes: list[str], concurrency: int | None, repeats: int, keep: Path | None) -> None:
    """(c): the time from a `main.py run` process's start to the first request the mock receives, and the process's
    peak resident set (its `ru_maxrss`, from `wait4`), over every schema under `data`."""
    compileall.compile_dir(REPO / "typed_eval", quiet=1)
    launchers = [
        subprocess.Popen([sys.executable, "-c", _LAUNCH], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        for _ in range(repeats)
    ]
    started = time.perf_counter()
    chosen = held_out(data)
    scripted = time.perf_counter() - started
    mock = SchemaMock([entry for _, entry in chosen], 0.0, answer_all=True)
    cases = len(list(data.glob("*/*.json")))
    print(f"{cases:,} schemas under {data} ({len(chosen):,} with a known valid and invalid instance, scripted in "
          f"{scripted:.0f} s; the others answered {{}}), mode {', '.join(modes)}, concurrency "
          f"{concurrency or 'by default'}, no latency, {os.cpu_count()} cores\n")  # fmt: skip
    print("| round | first request s | peak RSS MB | wall s | requests | load average before |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    rows: list[tuple[float, float]] = []
    for round_, process in enumerate(launchers, 1):
        with tempfile.TemporaryDirectory() as scratch:
            results = keep if keep is not None else Path(scratch)
            command = [sys.executable, "main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--model", "m",
                       "--base-url", mock.url, "--api-key", "k", "--results-dir", str(results), "--quiet", "--retries",
                       "0"]  # fmt: skip
            command += [flag for mode in modes for flag in ("--mode", mode)]
            command += ["--concurrency", str(concurrency)] if concurrency is not None else []
            load = os.getloadavg()[0]
            mock.first_at, before = None, len(mock.requests)
            assert process.stdin is not None
            began = time.monotonic()
            process.stdin.write(json.dumps([str(REPO), command]) + "\n")
            process.stdin.close()
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - began
        if process.returncode != 0:
            raise SystemExit(f"main.py run exited with {process.returncode}")
        first = (mock.first_at or float("nan")) - began
        peak = usage.ru_maxrss / 1024  # KiB on Linux
        rows.append((first, peak))
        print(f"| {round_} | {first:.2f} | {peak:.0f} | {wall:.0f} | {len(mock.requests) - before:,} | {load:.1f} |")
    if repeats > 1:
        first, peak = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"\nmedian of {repeats} rounds: first request {first:.2f} s, peak {peak:.0f} MB")


STRUCTURED: tuple[AnswerMode, ...] = ("tool", "native", "prompted")
ROWS = (
    "posed as given",
    "`type: object` added (object keywords, no type)",
    "wrapped under `response`: no type, no object keyword (JSONSchemaBench would add `type: object`)",
    "wrapped under `response`: a type other than `object`",
    "a recursive `$ref` cut to any value",
    "`$ref`s past 20,000 nodes left open",
    "a `$ref` to an anchor left open",
    "not posed: the case's error (`problem`)",
    "any difference, said in the record's `posed_as`",
)
"""(d)'s rows: what posing a schema changed, as its case's notes say it."""


def _sent_root(case_task: Any, mode: AnswerMode) -> Any:
    """The JSON schema pydantic-ai sends for a case's task in a structured mode: the tool's parameters, or the
    response format's and prompted instructions' schema."""
    from typed_eval.engine.first_request import StructuredOutput

    found = StructuredOutput.of(case_task.output_spec(mode))
    if found is None:
        raise SystemExit(f"pydantic-ai keeps the output of a {mode} task otherwise")
    parameters = found.parameters
    if mode == "tool":
        return parameters.output_tools[0].parameters_json_schema
    return parameters.output_object.json_schema if parameters.output_object is not None else None


def posing(data: Path) -> None:
    """(d): for every schema under `data`, how each mode poses it, from the case's `posed_as` notes, each checked
    against the schema pydantic-ai sends in the structured modes (wrapped under `response`, `type: object` added)."""
    from typed_eval.core.datasets import Dataset
    from typed_eval.suites.schemas.data import PROBLEM
    from typed_eval.suites.schemas.outputs import TYPED, WRAPPER
    from typed_eval.suites.schemas.suite import NOTES, SCHEMAS, WRAPPED, SchemasParams

    modes: tuple[AnswerMode, ...] = (*STRUCTURED, "text")
    task, dataset = SCHEMAS.build(SchemasParams(path=str(data)))
    assert task.pose_as is not None and isinstance(dataset, Dataset)
    rows: dict[str, dict[str, int]] = {}
    cases = 0

    def count(row: str, mode: AnswerMode) -> None:
        rows.setdefault(row, dict.fromkeys(modes, 0))[mode] += 1

    for case in dataset.cases():
        cases += 1
        original = json.loads(case.prompt) if not case.metadata.get(PROBLEM) else None
        notes = [str(note) for note in case.metadata.get(NOTES, [])]
        for mode in modes:
            if original is None:
                count(ROWS[7], mode)
                continue
            if mode == "text":  # the schema is the last user message, as the benchmark sends it; nothing else is
                count(ROWS[0], mode)
                continue
            sent = _sent_root(task.pose_as(case, mode)[0], mode)
            wrapped = isinstance(sent, dict) and set(sent) == {"type", "properties", "required"}
            wrapped = wrapped and set(sent["properties"]) == {WRAPPER} and sent["required"] == [WRAPPER]
            typed = not wrapped and isinstance(sent, dict) and sent.get("type") == "object"
            untyped = isinstance(original, dict) and "type" not in original and "$ref" not in original
            if (
                wrapped != (WRAPPED in notes)
                or (TYPED in notes and not typed)
                or (untyped and typed) > (TYPED in notes)
            ):
                raise SystemExit(f"{case.id} in {mode} mode: posed {'wrapped' if wrapped else 'bare'}; notes {notes}")
            for note in notes or [ROWS[0]]:
                if note == WRAPPED:
                    root = sent["properties"][WRAPPER] if isinstance(sent, dict) else None
                    note = ROWS[2] if isinstance(root, dict) and "type" not in root else ROWS[3]
                elif note == TYPED:
                    note = ROWS[1]
                elif note.startswith("recursive $ref"):
                    note = ROWS[4]
                elif note.startswith("$refs past"):
                    note = ROWS[5]
                elif note.endswith("(an anchor) left open"):
                    note = ROWS[6]
                count(note, mode)
        for mode in STRUCTURED:
            if original is not None and notes:
                count(ROWS[8], mode)
    print(f"{cases:,} schemas under {data}: cases per difference between the schema posed and the original, per mode")
    print(f"\n| difference | {' | '.join(modes)} |\n| --- |{' ---: |' * len(modes)}")
    for row, counts in sorted(rows.items(), key=lambda item: ROWS.index(item[0])):
        print(f"| {row} | {' | '.join(f'{counts[mode]:,}' for mode in modes)} |")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_agent":
        asyncio.run(_bare_agent(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="JSONSchemaBench's data/ folder: time validation over it")
    parser.add_argument("--checks", type=int, default=3, help="checks of each instance (a)")
    parser.add_argument("--run", action="store_true", help="time a run of the sample against the mock (b)")
    parser.add_argument("--concurrency", type=int, help="(b) 32 by default; (c) main.py run's default unless given")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, help="rounds: (b) 3 by default, (c) 1")
    parser.add_argument("--copies", type=int, default=7, help="each schema posed this often (b): 1,820 requests")
    parser.add_argument(
        "--start", action="store_true", help="(c) instead of (a): first request and peak memory of a run over --data"
    )
    parser.add_argument("--mode", action="append", help="(c): the run's mode, repeatable (default tool)")
    parser.add_argument(
        "--posing", action="store_true", help="(d) instead of (a): how each mode poses each schema of --data, counted"
    )
    parser.add_argument("--keep", type=Path, help="(c): store the runs under this folder (default: thrown away)")
    args = parser.parse_args()
    if args.data is None and not args.run:
        parser.error("give --data DIR, --run, or both")
    if args.data is not None and not args.data.is_dir():
        parser.error(f"--data {args.data}: not a folder")
    if (args.start or args.posing) and args.data is None:
        parser.error("--start and --posing read --data DIR: give it")
    if args.posing:
        posing(args.data)
    if args.start:
        start(args.data, args.mode or ["tool"], args.concurrency, args.repeats or 1, args.keep)
    elif args.data is not None and not args.posing:
        validation(args.data, args.checks)
    if args.run:
        run(args.concurrency or 32, args.latency_ms, args.repeats or 3, args.copies)


if __name__ == "__main__":
    main()
