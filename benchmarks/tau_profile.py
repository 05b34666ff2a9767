"""Where `tau2 run` and our `tau` suite spend their CPU, for `tau_compare.py --profile`: each pipeline run again per
domain under py-spy (from τ-bench's pipeline venv, every process of the tree sampled, idle threads left out, so a
sample is CPU), each sample put in the first phase of `PHASES` whose frame is on its stack; then CPU milliseconds per
conversation step (a message of the trajectory) for τ-bench's evaluation against the conversation itself; then the
pieces of that evaluation timed in this process on τ-bench's own modules (a database loaded, hashed; a whole
`EnvironmentEvaluator.calculate_reward`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

PHASES = (
    ("evaluation: databases loaded", ("EnvironmentEvaluator.calculate_reward", "evaluate_simulation",
     "combined_reward"), ("DB.load", "load_file", ".load (tau2/domains", "FlightDB", "RetailDB", "TelecomDB",
     "_validated", "_database.<locals>")),
    ("evaluation: databases hashed", ("EnvironmentEvaluator.calculate_reward",), ("get_db_hash", "get_dict_hash")),
    ("evaluation: trajectory replayed, golden actions", ("EnvironmentEvaluator.calculate_reward",), ()),
    ("evaluation: actions, communication, rest", ("evaluate_simulation", "combined_reward", "TauScorer.__call__"), ()),
    ("database difference (ours, failed DB checks)", ("database_difference",), ()),
    ("conversation: its environment made", ("TauEnvironment.__init__", "get_environment (tau2", "get_info (tau2/run"),
     ()),
    ("conversation: tool calls", ("Environment.get_response", "TauEnvironment.call"), ()),
    ("conversation: model requests (client, HTTP)", ("generate (tau2/utils/llm_utils", "model_request",
     "Conversation.exchange", "_Turns.exchange", "SimulatedUser.reply", "AsyncCompletions.create",
     "completion (litellm"), ()),
    ("conversation: loop (orchestrator, dialogue)", ("Orchestrator.", "converse (", "_step (", "_Dialogue."), ()),
    ("results written", ("run_tasks.<locals>._save", "typed_eval/store", "save_results_summary", "Collector"), ()),
    ("console display", ("ConsoleDisplay", "rich/"), ()),
    ("imports, start-up", ("_find_and_load",), ()),
)  # fmt: skip
"""(name, frames one of which puts a sample in this phase, frames one of which must also be on its stack)."""


def phase_of(frames: list[str]) -> str:
    for name, anywhere, also in PHASES:
        if any(a in f for f in frames for a in anywhere) and (not also or any(x in f for f in frames for x in also)):
            return name
    return "other"


def read_profile(path: Path, rate: int) -> Counter[str]:
    """CPU seconds per phase from py-spy's raw (collapsed) output."""
    seconds: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        seconds[phase_of(stack.split(";"))] += int(count) / rate
    return seconds


def _steps(trials: dict[Any, Any]) -> int:
    return sum(len(t.messages or ()) for t in trials.values())


def profile_both(args: Any, mock: Any, domains: list[str], work: Path) -> None:
    from tau_compare import ours_command, read_ours, read_tau2, tau2_command, tau2_env, timed

    spy = str(Path(args.tau2_python).parent / "py-spy")
    rate = 50
    trials = args.profile_trials
    run_args = argparse.Namespace(**{**vars(args), "trials": trials})
    print(f"\n## profile (py-spy, {rate} samples a second, {trials} trial(s) a task, one domain a process)\n")
    rows: dict[str, dict[str, Counter[str]]] = {"tau2": {}, "ours": {}}
    steps: dict[str, dict[str, int]] = {"tau2": {}, "ours": {}}
    for domain in domains:
        folder = work / "profile" / domain
        folder.mkdir(parents=True, exist_ok=True)
        record = [spy, "record", "--rate", str(rate), "--subprocesses", "--format", "raw", "-o"]
        theirs = tau2_command(args.tau2_python, domain, mock.url, run_args, folder / "tau2")
        timed([*record, str(folder / "tau2.txt"), "--", *theirs], tau2_env(mock.url), folder / "tau2.log", mock)
        ours = ours_command(domain, mock.url, run_args, 1, folder / "ours")
        command = [*record, str(folder / "ours.txt"), "--", *ours]
        timed(command, dict(os.environ), folder / "ours.log", mock, args.ours_repo)
        rows["tau2"][domain] = read_profile(folder / "tau2.txt", rate)
        rows["ours"][domain] = read_profile(folder / "ours.txt", rate)
        steps["tau2"][domain] = _steps(read_ours(folder / "ours"))  # τ-bench keeps none for failed simulations
        steps["ours"][domain] = steps["tau2"][domain]
        read_tau2(folder / "tau2", [domain])  # it must have written its results
    names = [name for name, _, _ in PHASES] + ["other"]
    header = " | ".join(f"{side} {d}" for d in domains for side in ("tau2", "ours"))
    print(f"| CPU s by phase | {header} |")
    print("| --- | " + " | ".join("---:" for _ in domains for _ in range(2)) + " |")
    for name in [*names, "all"]:
        cells = []
        for domain in domains:
            for side in ("tau2", "ours"):
                got = rows[side][domain]
                cells.append(f"{sum(got.values()) if name == 'all' else got.get(name, 0.0):.1f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nCPU ms per conversation step (a message of the trajectory, ours counted; same trajectories both sides):\n")
    print("| domain | steps | side | evaluation | conversation | rest |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for domain in domains:
        for side in ("tau2", "ours"):
            got, n = rows[side][domain], steps[side][domain] or 1
            evaluation = sum(v for k, v in got.items() if k.startswith(("evaluation", "database difference")))
            conversation = sum(v for k, v in got.items() if k.startswith("conversation"))
            rest = sum(got.values()) - evaluation - conversation
            print(f"| {domain} | {n} | {side} | {1000 * evaluation / n:.1f} | {1000 * conversation / n:.1f} | "
                  f"{1000 * rest / n:.1f} |")  # fmt: skip
    pieces(args.tau2_python, domains)


def pieces(python: str, domains: list[str]) -> None:
    """τ-bench's evaluation timed piece by piece on its own modules: a fresh environment (its database loaded), its
    database hashed, and `EnvironmentEvaluator.calculate_reward` on the golden actions played as a trajectory."""
    code = f"""
import json, time
from loguru import logger
logger.disable("tau2")
from tau2.registry import registry
from tau2.data_model.message import AssistantMessage, ToolCall
from tau2.evaluator.evaluator_env import EnvironmentEvaluator
from tau2.run import load_tasks
for domain in {domains!r}:
    make = registry.get_env_constructor(domain)
    tasks = [t for t in load_tasks(domain, "base") if t.evaluation_criteria and t.evaluation_criteria.actions]
    env = make(); started = time.process_time()
    for _ in range(5): make()
    made = (time.process_time() - started) / 5
    started = time.process_time()
    for _ in range(5): env.get_db_hash()
    hashed = (time.process_time() - started) / 5
    total, runs = 0.0, 0
    for task in tasks[:20]:
        env, initial, trajectory = make(), task.initial_state, []
        if initial is not None and initial.message_history:
            continue
        env.set_state(initialization_data=initial and initial.initialization_data,
                      initialization_actions=initial and initial.initialization_actions, message_history=[])
        for n, action in enumerate(task.evaluation_criteria.actions):
            call = ToolCall(id=str(n), name=action.name, arguments=action.arguments, requestor=action.requestor)
            trajectory += [AssistantMessage(role="assistant", tool_calls=[call]), env.get_response(call)]
        started = time.process_time()
        try:
            EnvironmentEvaluator.calculate_reward(environment_constructor=make, task=task, full_trajectory=trajectory)
        except Exception:
            continue
        total += time.process_time() - started; runs += 1
    print(json.dumps({{"domain": domain, "made_ms": 1000 * made, "hashed_ms": 1000 * hashed,
                      "evaluated_ms": 1000 * total / max(runs, 1)}}))
"""
    print("\nτ-bench's evaluation piece by piece (CPU ms, τ-bench's own modules in its venv):\n")
    print("| domain | environment made (database loaded) | database hashed | EnvironmentEvaluator.calculate_reward |")
    print("| --- | ---: | ---: | ---: |")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False, timeout=900, env=env)
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            got = json.loads(line)
            print(f"| {got['domain']} | {got['made_ms']:.0f} | {got['hashed_ms']:.0f} | {got['evaluated_ms']:.0f} |")
    if done.returncode:
        print(f"(timing the pieces failed: {done.stderr.strip().splitlines()[-1:]})")


def summary(path: Path, rate: int, top: int = 40) -> None:
    """The functions a raw py-spy profile spends most in, with and without their callees (for a closer look)."""
    own, anywhere, total = Counter[str](), Counter[str](), 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        total += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            anywhere[frame] += int(count)
    print(f"{total / rate:.1f} CPU s")
    for label, counter in (("self", own), ("with callees", anywhere)):
        print(f"--- {label}")
        for frame, n in counter.most_common(top):
            print(f"{n / rate:8.1f} s {100 * n / total:5.1f}% {frame[:150]}")


if __name__ == "__main__":
    summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 50)
