"""τ-bench results in, runs out: a results file (one domain), re-scored whole (`import_scoring`), stored as a run of
the file's agent marked `imported` (`run()` with a session that hands each simulation over as the file holds it), under
a run id made from the file's bytes and the data it was scored on: importing it again is a no-op.

Each record is a simulation in the shape our runs store (case `<domain>/<task id>`, repeat = trial), its cost the
file's `agent_cost` (source `user`: a price from outside this program), the simulated user's cost and model in its
output. The run's dataset is the file's tasks; its parameters say which data the file was scored on, a sha256 of the
tasks the file stores and whether they are that data's (else "task version differs from ..."), and the file's own
settings; its `source_log` lists every stored reward that differs from ours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typed_eval.contracts import Case, RunSummary, SourceLog
from typed_eval.core.datasets import dataset_from_cases
from typed_eval.core.errors import InputError
from typed_eval.core.run_config import RunConfig
from typed_eval.core.tasks import Conversation, Score, Task
from typed_eval.engine.runs import Imported, run
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.replay import replay_model
from typed_eval.providers.resolve import ResolvedModel
from typed_eval.store.storage import SUMMARY_FILE, imported_run_dir, load_runs
from typed_eval.suites.tau import adapter
from typed_eval.suites.tau import data as tau_data
from typed_eval.suites.tau.import_files import ResultsFile, ResultsSource, read_results, shown
from typed_eval.suites.tau.import_scoring import NL_NOTE, Played, Rescoring, rescored, tasks_hash
from typed_eval.suites.tau.runner import tau_metrics

__all__ = ["TauImport", "import_results"]


@dataclass(frozen=True)
class TauImport:
    """A results file's import: where its run is stored, its summary and how re-scoring went (`rescoring`; None: the
    run was stored before, and nothing was imported)."""

    source: ResultsSource
    run_dir: Path
    summary: RunSummary
    domain: str
    rescoring: Rescoring | None


class MissingSimulation(Exception):
    """A (task, trial) of the run that the file has no simulation of: that sample's error."""


@dataclass(frozen=True)
class _Replayed:
    """The session: the simulation as the file holds it, charged what the file says the agent used and cost."""

    played: Mapping[tuple[str, int], Played]

    async def __call__(self, case: Case, conversation: Conversation) -> dict[str, Any]:
        found = self.played.get((case.id, conversation.repeat))
        if found is None:
            raise MissingSimulation(f"the results file has no simulation of trial {conversation.repeat} of this task")
        conversation.charge(found.usage, found.cost)
        return found.output


@dataclass(frozen=True)
class _Rescored:
    """The scorer: the score each simulation was given before the run was stored."""

    played: Mapping[tuple[str, int], Played]

    def __call__(self, case: Case, output: dict[str, Any]) -> Score:
        return self.played[case.id, int(output["trial"])].score


@dataclass(frozen=True)
class _Metrics:
    """τ-bench's run metrics, and the import's only when there are any (so their columns show only then): stored
    rewards that differ from ours, rewards kept from the file, tasks that differ from the data's."""

    differs: bool

    def __call__(self, sums: Mapping[str, float]) -> dict[str, float]:
        metrics = tau_metrics(sums)
        if sums.get("reward_mismatch"):
            metrics["tau-reward-mismatches"] = float(sums["reward_mismatch"])
        if sums.get("reward_from_file"):
            metrics["tau-rewards-from-file"] = float(sums["reward_from_file"])
        if self.differs:
            metrics["tau-tasks-differ"] = 1.0
        return metrics


async def import_results(source: ResultsSource, results_dir: Path, data: str | None) -> TauImport:
    """Store the results file `source` names as an imported run, scored on the installed data (`data` None) or the
    tau2-bench checkout at `data`; bad input is one line (`InputError`) and stores nothing."""
    body, results = read_results(source.path)
    path, info = source.path, results.info
    name = info.environment_info.domain_name
    if name not in adapter.DOMAINS:
        known = ", ".join(adapter.DOMAINS)
        raise InputError(f"{path}: domain {shown(name, 40)!r} is not one this suite knows ({known})")
    if source.domain is not None and source.domain != name:
        raise InputError(f"{path}: the submission lists it for {shown(source.domain, 40)}, but it holds {name}")
    loaded = tau_data.load([name], "base", data)
    model = source.submission or shown(info.agent_info.llm or info.agent_info.implementation or "unknown agent", 120)
    identity = f"{hashlib.sha256(body).hexdigest()}\0{loaded.source} {loaded.version}\0{loaded.path}"
    run_id = f"imported-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"
    stored_in, stored = imported_run_dir(results_dir, model, run_id)
    if stored:
        (found,) = load_runs(stored_in / SUMMARY_FILE)
        return TauImport(source, stored_in, found.summary, name, None)
    done = await rescored(path, results, loaded)
    task: Task[Any] = Task(
        name="tau",
        output_type=dict[str, Any],
        score=_Rescored(done.played),
        session=_Replayed(done.played),
        metrics=_Metrics(done.differs),
    )
    cases = list(done.cases.values())
    dataset = dataset_from_cases(cases, suite="tau", source="file", path=str(path), params=_params(done, results))
    resolved = ResolvedModel(replay_model(lambda _: None, model), model, None, local=False)
    config = RunConfig(
        mode="tool",
        retries=0,
        concurrency=1,
        repeats=info.num_trials,
        local=False,
        temperature=_temperature(info.agent_info.llm_args),
    )
    imported = Imported(run_id, source_log=lambda _: _source_log(source, done, results), lacking=done.lacking)
    outcome = await run(task, dataset, PreparedModel(resolved), config, results_dir=results_dir, imported=imported)
    return TauImport(source, outcome.run_dir, outcome.summary, name, done if outcome.result is not None else None)


def _source_log(source: ResultsSource, done: Rescoring, results: ResultsFile) -> SourceLog:
    """The file, and how re-scoring it compared: each mismatch, and what the run was told (version, kept rewards)."""
    notes = [done.task_version]
    if done.kept:
        notes.append(f"{done.kept} simulations keep the file's reward: {NL_NOTE}")
    if done.lacking:
        notes.append(done.lacking)
    if source.submission:
        notes.append(f"leaderboard submission {source.submission}, agent LLM {shown(results.info.agent_info.llm, 120)}")
    return SourceLog(
        path=str(source.path),
        format="tau2 leaderboard submission" if source.submission else "tau2 results",
        replies=len(done.played),
        matches_log_summary=not done.mismatches,
        mismatches=[m.line() for m in done.mismatches],
        notes=notes,
    )


def _params(done: Rescoring, results: ResultsFile) -> dict[str, Any]:
    """The dataset's parameters: the data the file was scored on, the task version, the file's own settings."""
    info = results.info
    return {
        "source": done.data[0],
        "version": done.data[1],
        "domains": [info.environment_info.domain_name],
        "split": None,
        "nl_assertions_judged": False,
        "results_tasks_sha256": tasks_hash(results.tasks),
        "task_version": done.task_version,
        "tasks_match_source": not done.differs,
        "agent_llm": shown(info.agent_info.llm, 200) if info.agent_info.llm else None,
        "user_llm": done.user_model,
        "num_trials": info.num_trials,
        "max_steps": info.max_steps,
        "max_errors": info.max_errors,
        "seed": info.seed,
        "rewards_kept_from_file": done.kept,
        "reward_mismatches": len(done.mismatches),
    }


def _temperature(arguments: Mapping[str, Any] | None) -> float | None:
    """The agent's sampling temperature as the file's `llm_args` give it (None: not given)."""
    value = (arguments or {}).get("temperature")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None
