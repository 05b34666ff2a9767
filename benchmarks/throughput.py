#!/usr/bin/env python3
"""Throughput of `main.py run` against the floors it is built on, and its memory on a huge run.

    python benchmarks/throughput.py                      # 1,800 quizzes, concurrency 32, 20 ms latency
    python benchmarks/throughput.py --workers 1 2 4      # the main.py rows: --workers 1, 2 and 4
    python benchmarks/throughput.py --memory 100000      # resident set of a 100,000-quiz run

A loopback mock OpenAI-compatible server (asyncio, keep-alive, fixed latency; it answers tool calls, tag
text or JSON) serves three clients, each run as a whole process on the same quizzes:
(a) a bare `openai.AsyncOpenAI` client sending pydantic-ai's own request body, the limit of any client
built on the openai SDK; (b) a bare pydantic-ai `Agent` with `ToolOutput`, the floor of the library we
build on; (c) `main.py run`, with everything it adds (records, attempts, files, progress, scoring), with
`--workers 1` and `--workers 2` (N processes, each with the same concurrency, sharing one run).
Each row's wall seconds and CPU seconds (user + system of the process and its children) are the least of
`--repeats` rounds, each round one run of every row in turn, so a shared machine's slow moments drop out;
the ratios under the table are taken within each round (median, least and most). The package's bytecode is
compiled first, as it is after a user's first run.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from loopback import LoopbackChat

REPO = Path(__file__).resolve().parent.parent


class MockServer(LoopbackChat):
    """OpenAI-compatible chat completions on loopback: `latency_s` per request, then a fixed answer."""

    def __init__(self, latency_s: float) -> None:
        self.first_body: dict[str, Any] | None = None
        self.requests = 0
        super().__init__(latency_s)

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.first_body is None:
            self.first_body = body
        self.requests += 1
        if body.get("tools"):
            name = body["tools"][0]["function"]["name"]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": name, "arguments": '{"answer": 1}'}}
                ],
            }
        elif body.get("response_format"):
            message = {"role": "assistant", "content": '{"answer": 1}'}
        else:
            message = {"role": "assistant", "content": "<ANSWER>1</ANSWER>"}
        return 200, {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }


def _prompts(length: int, number: int) -> list[str]:
    sys.path.insert(0, str(REPO))
    import farel_bench
    from farel_bench import TAG_INSTRUCTION

    return [
        q.prompt.replace("\n" + TAG_INSTRUCTION, "") for q in farel_bench.generate(length, number, 42, shuffle=True)
    ]


async def _bare_openai(url: str, prompts: list[str], concurrency: int, template: dict[str, Any]) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="k")
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> None:
        async with gate:
            body = {**template, "messages": [*template["messages"][:-1], {"role": "user", "content": prompt}]}
            await client.chat.completions.create(**body)

    await asyncio.gather(*(one(p) for p in prompts))


async def _bare_agent(url: str, prompts: list[str], concurrency: int) -> None:
    sys.path.insert(0, str(REPO))
    from pydantic_ai import Agent, ToolOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from typed_eval.suites.multiple_choice import OptionAnswer

    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=url, api_key="k"))
    agent = Agent(model, output_type=ToolOutput(OptionAnswer, name="select_answer"))
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> None:
        async with gate:
            await agent.run(prompt)

    await asyncio.gather(*(one(p) for p in prompts))


def _main_run(url: str, length: int, number: int, concurrency: int, results: str, workers: int = 1) -> list[str]:
    return [
        sys.executable,
        "main.py",
        "run",
        "--model",
        "m",
        "--base-url",
        url,
        "--length",
        str(length),
        "--number",
        str(number),
        "--concurrency",
        str(concurrency),
        "--results-dir",
        results,
        "--quiet",
        "--workers",
        str(workers),
    ]


def _timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds of a whole process, and the CPU seconds (user + system) of it and its children."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def throughput(length: int, number: int, concurrency: int, latency_ms: float, repeats: int, workers: list[int]) -> None:
    compileall.compile_dir(REPO / "typed_eval", quiet=1)  # as after a first run, whatever PYTHONDONTWRITEBYTECODE says
    server = MockServer(latency_ms / 1000)
    quizzes = len(_prompts(length, number))
    me = [sys.executable, __file__]
    shape = [server.url, str(length), str(number), str(concurrency)]
    runs: dict[str, list[tuple[float, float]]] = {"(a) bare openai.AsyncOpenAI": [], "(b) bare pydantic-ai Agent": []}
    rows = {n: f"(c) main.py run, --workers {n}" for n in workers}
    runs |= {row: [] for row in rows.values()}
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "body.json"
        for _ in range(repeats):
            runs["(b) bare pydantic-ai Agent"].append(_timed([*me, "_agent", *shape]))
            template.write_text(json.dumps(server.first_body))
            runs["(a) bare openai.AsyncOpenAI"].append(_timed([*me, "_openai", *shape, str(template)]))
            for n, row in rows.items():
                runs[row].append(_timed(_main_run(server.url, length, number, concurrency, scratch, n)))
    best = {name: min(times)[0] for name, times in runs.items()}
    cpu = {name: min(cpu for _, cpu in times) for name, times in runs.items()}
    client, agent = best["(a) bare openai.AsyncOpenAI"], best["(b) bare pydantic-ai Agent"]
    print(
        f"{quizzes} quizzes, concurrency {concurrency}, {latency_ms:g} ms latency, {os.cpu_count()} cores, "
        f"best of {repeats} (whole processes)\n"
    )
    print("| client | wall s | quizzes/s | vs bare client | vs bare agent | CPU s | CPU ms/quiz |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, seconds in best.items():
        print(
            f"| {name} | {seconds:.2f} | {quizzes / seconds:.0f} | {client / seconds:.2f} | {agent / seconds:.2f} "
            f"| {cpu[name]:.2f} | {cpu[name] / quizzes * 1000:.2f} |"
        )
    if 1 in rows:
        print(f"\nratios of throughput, per round (one run of each row, in turn), median [least, most] of {repeats}:")
        print(f"main.py run (1 worker) / the bare agent: {_paired(runs[rows[1]], runs['(b) bare pydantic-ai Agent'])}")
        for n, row in rows.items():
            if n > 1:
                print(f"main.py run with {n} workers / with 1: {_paired(runs[row], runs[rows[1]])}")


def _paired(runs: list[tuple[float, float]], against: list[tuple[float, float]]) -> str:
    """Throughput of `runs` over that of `against`, round by round: a machine whose speed drifts moves both
    runs of a round alike, so these ratios hold still where a ratio of bests of separate rounds does not."""
    ratios = sorted(other[0] / mine[0] for mine, other in zip(runs, against, strict=True))
    return f"{statistics.median(ratios):.2f} [{ratios[0]:.2f}, {ratios[-1]:.2f}]"


def memory(quizzes: int, concurrency: int) -> None:
    """A run of `quizzes` against the mock (no latency), its resident set sampled every second."""
    server = MockServer(0.0)
    number = -(-quizzes // 9)
    with tempfile.TemporaryDirectory() as scratch:
        command = _main_run(server.url, 3, number, concurrency, scratch)
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
        samples: list[tuple[float, int]] = []
        started = time.perf_counter()
        while process.poll() is None:
            try:
                status = Path(f"/proc/{process.pid}/status").read_text()
                rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
                samples.append((time.perf_counter() - started, rss // 1024))
            except (OSError, StopIteration):
                pass
            time.sleep(1.0)
        wall = time.perf_counter() - started
    peak = max(rss for _, rss in samples)
    tenth = max(1, len(samples) // 10)
    print(f"{number * 9} quizzes in {wall:.0f} s ({number * 9 / wall:.0f}/s), {server.requests} requests")
    print(
        f"resident set: peak {peak} MB; first tenth of the run max {max(r for _, r in samples[:tenth])} MB, "
        f"last tenth max {max(r for _, r in samples[-tenth:])} MB"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("_openai", "_agent"):
        url, length, number, concurrency = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
        prompts = _prompts(length, number)
        if sys.argv[1] == "_openai":
            asyncio.run(_bare_openai(url, prompts, concurrency, json.loads(Path(sys.argv[6]).read_text())))
        else:
            asyncio.run(_bare_agent(url, prompts, concurrency))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=3)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="main.py run's --workers rows")
    parser.add_argument("--memory", type=int, metavar="QUIZZES", help="measure the resident set of a run this big")
    args = parser.parse_args()
    if args.memory:
        memory(args.memory, args.concurrency)
    else:
        throughput(args.length, args.number, args.concurrency, args.latency_ms, args.repeats, args.workers)


if __name__ == "__main__":
    main()
