#!/usr/bin/env python3
"""The `bfcl` suite against BFCL's own pipeline (`bfcl generate` + `bfcl evaluate`) on one mock server: every
case's verdict, every category's accuracy, what each sends, and the wall time and memory of each.

    python benchmarks/bfcl_single_turn.py --setup /tmp/bfcl-pipeline-venv        # BFCL's pipeline, once
    python benchmarks/bfcl_single_turn.py /tmp/bfcl-pipeline-venv/bin/python       # both modes, 3,641 cases

BFCL's pipeline runs in a throwaway venv, never ours: `bfcl-eval==2026.3.23` with its declared dependencies is
over 6 GB (torch with CUDA), yet `bfcl generate` and `bfcl evaluate` for the two registry models used here import
only what `--setup` installs (about 0.6 GB, no torch): the package with `--no-deps`, then SETUP_PACKAGES. Our
venv needs `pip install --no-deps bfcl-eval==2026.3.23` too: that is where the suite reads the data.

One loopback mock (`bfcl_mock.py`) serves both clients with scripted replies built from each case's ground
truth (right calls and the usual ways to be wrong), picked by a hash of the conversation, so both get the same
reply for the same case. Function calling: BFCL's `openbmb/MiniCPM-SALA-FC` (its only chat-completions registry
model; OPENAI_BASE_URL) against `main.py run --mode tool`. Prompt: BFCL's `gpt-4o-2024-11-20` (the Responses
API, also OPENAI_BASE_URL) against `main.py run --mode text`. Each is timed as whole processes: BFCL's
`generate --num-threads N` then `evaluate`, ours one `main.py run --concurrency N` (with `--workers 1`, then 2),
the peak memory being the most the process tree held at once (resident set, summed over its processes, sampled
every 0.1 s; forked workers share pages, so the proportional set, PSS, is given too). The verdicts are then
compared case for case (`bfcl_compare.py`); prompt-mode Java and JavaScript are left out of the agreement
count unless `--java-js-prompt` (their decoding with tree-sitter is not in the suite yet). The CPU seconds other
processes spent meanwhile are listed at the end: the machine may be shared (`--repeats N` runs every row N times,
in turn, and shows each row's best).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bfcl_compare import Side, agreement, read_bfcl, read_ours, request_differences  # noqa: E402
from bfcl_mock import MockServer, build_scripts  # noqa: E402

BFCL_VERSION = "2026.3.23"
SETUP_PACKAGES = [
    "openai",
    "anthropic",
    "cohere==5.18.0",
    "mistralai==1.7.0",
    "google-genai",
    "boto3",
    "qwen-agent",
    "soundfile",
    "writer-sdk",
    "datamodel-code-generator==0.25.7",
    "tree_sitter==0.21.3",
    "tree-sitter-java==0.21.0",
    "tree-sitter-javascript==0.21.4",
    "numpy==1.26.4",
    "pandas",
    "typer",
    "tenacity",
    "filelock==3.20.0",
    "python-dotenv",
    "tabulate",
    "overrides",
    "tqdm",
    "requests",
    "pydantic",
    "mpmath==1.3.0",
]
"""What `bfcl generate` and `bfcl evaluate` import for these models, found by trying (BFCL's pins where it pins):
`constants/model_config.py` imports every vendor handler, so every vendor SDK; no torch, no sentence-transformers,
no faiss (only its memory categories import them)."""
MODES = {
    "fc": ("openbmb/MiniCPM-SALA-FC", "openbmb_MiniCPM-SALA-FC", "tool"),
    "prompt": ("gpt-4o-2024-11-20", "gpt-4o-2024-11-20", "text"),
}
"""Our mode name -> BFCL's registry model, its result folder, our --mode."""
JAVA_JS = ("simple_java", "simple_javascript")


def setup(venv: Path) -> None:
    """BFCL's pipeline in a throwaway venv: the package without its dependencies, then what it imports."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", f"bfcl-eval=={BFCL_VERSION}"], check=True)
    subprocess.run([*pip, *SETUP_PACKAGES], check=True)
    print(f"BFCL's pipeline is in {venv}; run: python {Path(__file__).name} {venv / 'bin' / 'python'}")


def pipeline_missing(python: str | None) -> str | None:
    """Why BFCL's pipeline cannot run from that python, or None."""
    if not python:
        return "no python of BFCL's pipeline venv given"
    if not Path(python).is_file():
        return f"BFCL's pipeline venv not found: {python} does not exist"
    probe = [python, "-c", "import importlib.metadata as m; print(m.version('bfcl-eval'))"]
    found = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.strip()
    if found != BFCL_VERSION:
        return f"{python} has no bfcl-eval {BFCL_VERSION} (found: {found or 'none'})"
    return None


def _tree(pid: int) -> list[int]:
    """The process and its descendants (from /proc/<pid>/task/*/children)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                stack += [int(child) for child in children.read_text().split()]
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """Resident and proportional set (kB) of one process, 0 if it is gone."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0, 0
    fields = {line.split(":")[0]: int(line.split()[1]) for line in rollup[1:] if line.endswith("kB")}
    return fields.get("Rss", 0), fields.get("Pss", 0)


@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    rss_mb: float
    pss_mb: float
    server_cpu_s: float = 0.0
    """CPU seconds of this process meanwhile: the mock server (and the memory sampler)."""


def timed(command: list[str], env: dict[str, str], log: Path) -> Measured:
    """Runs a command to its end: wall seconds, CPU seconds of it and its children, the tree's peak memory."""
    before = os.times()
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            sizes = [_memory_kb(pid) for pid in _tree(process.pid)]
            peak[0] = max(peak[0], sum(rss for rss, _ in sizes))
            peak[1] = max(peak[1], sum(pss for _, pss in sizes))
            done.wait(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    code = process.wait()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    after = os.times()
    if code != 0:
        sys.exit(f"{command[0]} {' '.join(command[1:4])}... failed (exit {code}); its output: {log}")
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    server = after.user - before.user + after.system - before.system
    return Measured(wall, cpu, peak[0] / 1024, peak[1] / 1024, server)


def run_bfcl(python: str, mode: str, url: str, threads: int, categories: str, root: Path) -> dict[str, Measured]:
    model = MODES[mode][0]
    env = {**os.environ, "BFCL_PROJECT_ROOT": str(root), "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "mock"}
    bfcl = [python, "-m", "bfcl_eval"]
    generate = [*bfcl, "generate", "--model", model, "--test-category", categories, "--num-threads", str(threads)]
    evaluate = [*bfcl, "evaluate", "--model", model, "--test-category", categories]
    return {
        "generate": timed(generate, env, root / "generate.log"),
        "evaluate": timed(evaluate, env, root / "evaluate.log"),
    }


def run_ours(mode: str, url: str, concurrency: int, workers: int, categories: str, results: Path) -> Measured:
    suite = ["-S", f"categories={categories}"]
    command = [sys.executable, "main.py", "run", "--suite", "bfcl", *suite, "--mode", MODES[mode][2]]
    command += ["--model", f"mock-{mode}", "--base-url", url, "--api-key", "mock", "--retries", "0"]
    command += ["--concurrency", str(concurrency), "--workers", str(workers), "--results-dir", str(results), "--quiet"]
    return timed(command, dict(os.environ), results.with_suffix(".log"))


def read_run(results: Path) -> Side:
    from typed_eval.store.storage import read_records

    (samples,) = results.glob("*/*/samples.jsonl")
    return read_ours(read_records(samples.parent))


def _cpu_by_process() -> dict[tuple[int, str], float]:
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
        found[(int(stat.parent.name), name)] = (int(rest[11]) + int(rest[12])) / ticks
    return found


def arguments(description: str, categories: str) -> Any:
    """The command line both BFCL benchmarks read (`categories`: their default)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("bfcl_python", nargs="?", help="the python of the venv holding BFCL's pipeline (--setup)")
    parser.add_argument("--setup", type=Path, metavar="VENV", help="make BFCL's pipeline venv there, then stop")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--categories", default=categories, help=f"comma-separated (default: {categories})")
    parser.add_argument("--concurrency", type=int, default=8, help="BFCL's --num-threads and our --concurrency")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="our --workers rows")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of every row; each row's best is shown")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the mock's delay per request")
    parser.add_argument("--java-js-prompt", action="store_true", help="count prompt-mode Java/JS in the agreement")
    parser.add_argument("--keep", type=Path, help="keep both pipelines' files in this folder")
    parser.add_argument("--show", type=int, default=20, help="disagreeing cases listed per mode")
    args = parser.parse_args()
    if args.setup:
        setup(args.setup)
        sys.exit(0)
    missing = pipeline_missing(args.bfcl_python)
    if missing:
        print(
            f"{missing}; make it with `python {sys.argv[0]} --setup /tmp/bfcl-pipeline-venv`, then pass "
            "/tmp/bfcl-pipeline-venv/bin/python",
            file=sys.stderr,
        )
        sys.exit(2)
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        print(f"--keep {args.keep} is not empty (BFCL's generate would skip what it holds)", file=sys.stderr)
        sys.exit(2)
    return args


def compare(args: Any, server: MockServer, cases: int, version: str | None) -> None:
    """Both pipelines in each mode against the server, then what they scored, sent and spent."""
    compileall.compile_dir(REPO / "typed_eval", quiet=1)
    others_before, load_before = _cpu_by_process(), os.getloadavg()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        print(
            f"{cases} cases (bfcl-eval {version}), mock latency {args.latency_ms:g} ms, "
            f"concurrency {args.concurrency}, {os.cpu_count()} cores, load average {load_before[0]:.2f} at start\n"
        )
        for mode in args.modes:
            report_mode(args, mode, server, work, cases)
    elapsed = time.perf_counter() - started
    report_others(others_before, elapsed)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "single_turn")
    from typed_eval.suites.bfcl.data import load_installed, parse_categories

    names = None if args.categories == "single_turn" else args.categories
    data = load_installed(parse_categories(names))
    compare(args, MockServer(build_scripts(data.cases), args.latency_ms / 1000), len(data.cases), data.version)


def measure_round(args: Any, mode: str, server: MockServer, work: Path) -> dict[str, Measured]:
    """One run of each pipeline, in turn, into fresh folders (BFCL's generate skips the cases it has results for)."""
    root = work / f"bfcl-{mode}"
    root.mkdir(parents=True)
    measured = run_bfcl(args.bfcl_python, mode, server.url(f"bfcl-{mode}"), args.concurrency, args.categories, root)
    for n in args.workers:
        results = work / f"ours{n}-{mode}"
        measured[f"ours{n}"] = run_ours(
            mode, server.url(f"ours{n}-{mode}"), args.concurrency, n, args.categories, results
        )
    return measured


def report_mode(args: Any, mode: str, server: MockServer, work: Path, cases: int) -> None:
    rounds = []
    for index in range(args.repeats):
        server.record = index == 0  # the first round's requests are compared; the rest only timed
        rounds.append(measure_round(args, mode, server, work if index == 0 else work / f"round{index}"))
    server.record = True
    best = {row: min((r[row] for r in rounds), key=lambda m: m.wall_s) for row in rounds[0]}
    bfcl = {"generate": best["generate"], "evaluate": best["evaluate"]}
    ours = {n: best[f"ours{n}"] for n in args.workers}
    root = work / f"bfcl-{mode}"
    both = bfcl.values()
    total = Measured(
        sum(m.wall_s for m in both),
        sum(m.cpu_s for m in both),
        max(m.rss_mb for m in both),
        max(m.pss_mb for m in both),
        sum(m.server_cpu_s for m in both),
    )
    if args.repeats > 1:
        walls = "; ".join(
            f"round {i + 1}: BFCL {r['generate'].wall_s + r['evaluate'].wall_s:.1f} s, "
            + ", ".join(f"--workers {n} {r[f'ours{n}'].wall_s:.1f} s" for n in args.workers)
            for i, r in enumerate(rounds)
        )
        print(f"({walls}; each row below is its best round)\n")
    model, folder, our_mode = MODES[mode]
    print(f"## {mode}: BFCL `{model}` against `main.py run --mode {our_mode}` ({cases} cases)\n")
    print("| pipeline | wall s | CPU s | peak RSS MB | peak PSS MB | wall vs BFCL | mock's CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = [(f"BFCL generate --num-threads {args.concurrency}", bfcl["generate"]), ("BFCL evaluate", bfcl["evaluate"])]
    rows += [("BFCL generate + evaluate", total)]
    rows += [(f"main.py run --concurrency {args.concurrency} --workers {n}", m) for n, m in ours.items()]
    for name, m in rows:
        ratio = m.wall_s / total.wall_s
        cells = f"{m.wall_s:.2f} | {m.cpu_s:.2f} | {m.rss_mb:.0f} | {m.pss_mb:.0f} | {ratio:.2f} | {m.server_cpu_s:.2f}"
        print(f"| {name} | {cells} |")
    theirs = read_bfcl(root, folder)
    exclude = () if mode == "fc" or args.java_js_prompt else JAVA_JS
    runs = {n: read_run(work / f"ours{n}-{mode}") for n in args.workers}
    print()
    for n, ours in runs.items():
        report_agreement(theirs, ours, exclude, f"--workers {n}", args.show)
    report_accuracy(theirs, runs, exclude)
    report_requests(server, mode, args.keep)


def report_agreement(theirs: Side, ours: Side, exclude: tuple[str, ...], label: str, show: int) -> None:
    result = agreement(theirs, ours, exclude)
    compared = result.same + len(result.differ)
    note = f" ({', '.join(exclude)}: {result.excluded} cases left out)" if exclude else ""
    print(
        f"verdicts, BFCL against ours ({label}): {result.same} of {compared} cases the same (valid and error "
        f"type; {result.valid_both} valid on both sides), {len(result.differ)} differ{note}"
    )
    for case_id, a, b in result.differ[:show]:
        print(f"  {case_id}: BFCL {a} / ours {b}")


def report_accuracy(theirs: Side, runs: dict[int, Side], exclude: tuple[str, ...]) -> None:
    """Each category's accuracy as each side reported it (BFCL's score file header, our records)."""
    categories = sorted(set(theirs.accuracy).union(*(ours.accuracy for ours in runs.values())))
    print("\n| category | BFCL | " + " | ".join(f"ours, --workers {n}" for n in runs) + " | same |")
    print("| --- | ---: | " + " | ".join("---:" for _ in runs) + " | --- |")
    for category in categories:
        counts = [theirs.accuracy.get(category)] + [ours.accuracy.get(category) for ours in runs.values()]
        same = "yes" if len(set(counts)) == 1 else "NO"
        note = " (left out of the agreement)" if category in exclude else ""
        print(f"| {category}{note} | " + " | ".join(_percent(c) for c in counts) + f" | {same} |")
    print()


def _percent(counts: tuple[int, int] | None) -> str:
    return "absent" if counts is None else f"{100 * counts[0] / counts[1]:.2f} ({counts[0]}/{counts[1]})"


def report_requests(server: MockServer, mode: str, keep: Path | None) -> None:
    def bodies(client: str) -> list[tuple[str, dict[str, Any]]]:
        found = [(r.key, r.body) for r in server.requests if r.client == client]
        if keep:
            with (keep / f"requests-{client}.jsonl").open("w") as out:
                out.writelines(json.dumps({"key": key, "body": body}) + "\n" for key, body in found)
        return found

    bfcl, ours = bodies(f"bfcl-{mode}"), bodies(f"ours1-{mode}")
    paired, kinds, examples = request_differences(bfcl, ours)
    unknown = Counter(r.client for r in server.requests if r.variant is None and r.client.endswith(mode))
    print(f"requests: BFCL {len(bfcl)}, ours {len(ours)}, {paired} pairs; not matched to a case: {dict(unknown)}")
    for kind, count in kinds.most_common():
        example = f" (e.g. {examples[kind][:300]})" if examples[kind] else ""
        print(f"  {count} x {kind}{example}")
    print()


def report_others(before: dict[tuple[int, str], float], elapsed: float) -> None:
    after = _cpu_by_process()
    mine = set(_tree(os.getpid()))
    spent: Counter[str] = Counter()
    for (pid, name), seconds in after.items():
        if pid not in mine:
            spent[name] += seconds - before.get((pid, name), 0.0)
    busy = [(name, s) for name, s in spent.most_common(8) if s >= 0.5]
    listed = ", ".join(f"{name} {s:.0f} s" for name, s in busy) or "none above 0.5 s"
    load = os.getloadavg()[0]
    print(f"other processes' CPU during the {elapsed:.0f} s of this script: {listed}; load average now {load:.2f}")


if __name__ == "__main__":
    main()
