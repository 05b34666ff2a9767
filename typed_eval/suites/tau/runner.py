"""A τ-bench task played and scored: the session talks the agent under test through a conversation with the
simulated user on a fresh environment of the task's domain; the scorer is τ-bench's evaluator on the trajectory.

Each trial (a case's repeat) samples with the seed `tau2 run` derives for it. What the user cost is counted apart
from the agent's (the record's own usage and cost are the agent's): in the output, and as score details summed into
the run's `tau-user-*` metrics. A conversation that could not go on, or an evaluation that raised, scores 0 with its
reason, as `tau2 run --skip-failed-samples` records it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, Field

from typed_eval.contracts import Case
from typed_eval.core.dialogue import DialogueLimits, Termination, Transcript, converse
from typed_eval.core.errors import InputError
from typed_eval.core.simulated_user import SimulatedUser
from typed_eval.core.tasks import Conversation, Score, Task
from typed_eval.suites.judge import Judge
from typed_eval.suites.tau import adapter
from typed_eval.suites.tau.data import Domain
from typed_eval.suites.tau.prompts import (
    NL_ASSERTIONS_PROMPT,
    agent_prompt,
    nl_assertions_request,
    trial_seed,
    user_prompt,
)

__all__ = ["TERMINATIONS", "TauCases", "TauScorer", "TauSession", "tau_case", "tau_metrics"]

T = TypeVar("T")

TERMINATIONS = (*get_args(Termination), "judge_stop")
"""τ-bench's termination reasons (`judge_stop`: NVIDIA's stuck-agent judge, in imported files): each is counted over
a run (`tau-ended-<reason>`)."""


class AssertionVerdict(BaseModel):
    """One expected outcome as τ³'s judge grades it (its field names)."""

    expectedOutcome: str = Field(description="the expected outcome being graded, repeated from the input")
    reasoning: str = Field(description="a short explanation for the classification")
    metExpectation: bool = Field(description="true if the agent satisfies the expected outcome")


class AssertionVerdicts(BaseModel):
    """The judge's answer: one verdict per expected outcome."""

    results: list[AssertionVerdict]


@dataclass(frozen=True)
class TauCases:
    """The run's tasks by case id, with their domains."""

    tasks: Mapping[str, tuple[Domain, Any]]
    seed: int
    limits: DialogueLimits
    turn: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    def get(self, case: Case) -> tuple[Domain, Any]:
        return self.tasks[case.id]

    async def in_turn(self, work: Callable[..., T], *args: Any) -> T:
        """`work` on τ-bench's environments (making one, replaying a trajectory, hashing a database) in a thread,
        one at a time: it holds the GIL throughout, so conversations in flight gain nothing from overlapping it,
        while each would hold a database's worth of memory (the airline one's is tens of MB)."""

        def in_order() -> T:
            with self.turn:
                return work(*args)

        return await asyncio.to_thread(in_order)


def tau_case(domain: Domain, task: Any) -> Case:
    """A τ-bench task as a case: its domain the group, the scenario's reason for calling the prompt shown."""
    instructions = task.user_scenario.instructions
    reason = getattr(instructions, "reason_for_call", None) or str(instructions)
    criteria = task.evaluation_criteria
    return Case(
        id=f"{domain.name}/{task.id}",
        prompt=str(reason),
        expected=criteria.model_dump(mode="json") if criteria is not None else None,
        group=domain.name,
        metadata={"domain": domain.name, "task_id": task.id},
    )


@dataclass(frozen=True)
class TauSession:
    """Plays a case's conversation (`Simulating`: the run hands it the simulated user)."""

    cases: TauCases
    user_spec: str | None = None
    endpoint: tuple[str | None, str | None] = field(default=(None, None), repr=False)
    user: SimulatedUser | None = None

    @property
    def user_model(self) -> str | None:
        return self.user_spec

    @property
    def user_endpoint(self) -> tuple[str | None, str | None]:
        return self.endpoint

    @property
    def test_user(self) -> str:
        return "###STOP###"

    def simulated_task(self, task: Task[Any], user: SimulatedUser) -> Task[Any]:
        return replace(task, session=replace(self, user=user))

    async def __call__(self, case: Case, conversation: Conversation) -> dict[str, Any]:
        if self.user is None:
            raise InputError("no simulated user: run the τ-bench suite through main.py, or give the session one")
        domain, task = self.cases.get(case)
        seed = trial_seed(self.cases.seed, conversation.repeat)
        try:  # a task whose initial state τ-bench's environment refuses: that simulation fails, as in τ-bench
            environment = await self.cases.in_turn(adapter.TauEnvironment, domain.construct, task)
        except Exception as exc:
            failure = f"τ-bench's environment refused the task's initial state: {type(exc).__name__}: {exc}"
            failed = Transcript([], "agent_error", " ".join(failure.split())[:400])
            return {"domain": domain.name, "task_id": task.id, "trial": conversation.repeat, "seed": seed,
                    "user_model": self.user.name, **failed.dump()}  # fmt: skip
        transcript = await converse(
            conversation,
            environment,
            self.user,
            policy=agent_prompt(domain.policy),
            scenario=user_prompt(domain.guidelines, str(task.user_scenario)),
            history=adapter.history_messages(task),
            limits=self.cases.limits,
            seed=seed,
        )
        return {"domain": domain.name, "task_id": task.id, "trial": conversation.repeat, "seed": seed,
                "user_model": self.user.name, **transcript.dump()}  # fmt: skip


@dataclass(frozen=True)
class TauScorer:
    """τ-bench's evaluator on a played conversation (`Judging`: NL assertions are judged by the run's judge)."""

    cases: TauCases
    judges_assertions: bool = False
    judge: Judge | None = None

    @property
    def needs_judge(self) -> bool:
        return self.judges_assertions

    @property
    def test_verdict(self) -> AssertionVerdicts:
        return AssertionVerdicts(results=[])

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        return replace(task, score=replace(self, judge=judge))

    async def __call__(self, case: Case, output: dict[str, Any]) -> Score:
        domain, task = self.cases.get(case)
        spent = _user_spending(output)
        ended = str(output.get("termination_reason"))
        if output.get("failure"):
            details = {"termination_reason": ended, "failure": output["failure"], **spent}
            return Score(0.0, {**details, f"ended_{ended}": 1})
        judged, usage, cost = None, None, None
        basis = {str(getattr(kind, "value", kind)) for kind in (task.evaluation_criteria.reward_basis
                                                                 if task.evaluation_criteria else [])}  # fmt: skip
        if "NL_ASSERTION" in basis and ended in ("agent_stop", "user_stop") and self.judge is not None:
            judged, usage, cost = await self._judged(task, output["messages"])
        try:
            trajectory = adapter.tau2_messages(output["messages"])
            evaluation = await self.cases.in_turn(adapter.combined_reward, domain.construct, task, trajectory,
                                                  ended, judged)  # fmt: skip
        except Exception as exc:  # τ-bench's evaluator raised: as a simulation that failed, scored 0; the run goes on
            failure = f"τ-bench's evaluator failed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            details = {"termination_reason": "agent_error", "failure": failure, **spent}
            return Score(0.0, {**details, "ended_agent_error": 1}, usage, cost)
        reward = evaluation.reward
        details = {"termination_reason": ended, f"ended_{ended}": 1, **_reward_details(reward), **spent}
        if evaluation.difference:
            details["database_difference"] = evaluation.difference
        return Score(float(reward.reward), details, usage, cost)

    async def _judged(self, task: Any, messages: list[dict[str, Any]]) -> tuple[adapter.Judged, Any, Any]:
        assert self.judge is not None
        assertions = list(task.evaluation_criteria.nl_assertions or [])
        request = nl_assertions_request([(str(m.get("role")), m.get("content")) for m in messages], assertions)
        ruling = await self.judge.rule(request, AssertionVerdicts, NL_ASSERTIONS_PROMPT)
        if ruling.verdict is None:  # no valid verdict after the judge's retries: every assertion unmet
            checks = [(a, False, f"the judge gave no valid verdict: {ruling.failure}") for a in assertions]
        else:
            checks = [(v.expectedOutcome, v.metExpectation, v.reasoning) for v in ruling.verdict.results]
        return adapter.Judged(checks), ruling.usage, ruling.cost


def _user_spending(output: Mapping[str, Any]) -> dict[str, Any]:
    usage = output.get("user_usage") or {}
    cost = (output.get("user_cost") or {}).get("usd")
    return {"user_requests": usage.get("requests", 0), "user_input_tokens": usage.get("input_tokens"),
            "user_output_tokens": usage.get("output_tokens"), "user_cost_usd": cost}  # fmt: skip


def _reward_details(reward: Any) -> dict[str, Any]:
    """τ-bench's reward info as score details: the basis, each part's reward and each check."""
    info: dict[str, Any] = {
        "reward_basis": [str(getattr(kind, "value", kind)) for kind in reward.reward_basis or []],
        "reward_breakdown": {str(getattr(k, "value", k)): v for k, v in (reward.reward_breakdown or {}).items()},
    }
    if reward.db_check is not None:
        info["db_match"] = "yes" if reward.db_check.db_match else "no"
    if reward.action_checks:
        info["action_checks"] = [
            {"name": c.action.name, "arguments": c.action.arguments, "met": c.action_match}
            for c in reward.action_checks
        ]
    if reward.communicate_checks:
        info["communicate_checks"] = [{"info": c.info, "met": c.met} for c in reward.communicate_checks]
    if reward.env_assertions:
        info["env_assertions"] = [
            {"function": c.env_assertion.func_name, "arguments": c.env_assertion.arguments, "met": c.met}
            for c in reward.env_assertions
        ]
    if reward.nl_assertions:
        info["nl_assertions"] = [
            {"assertion": c.nl_assertion, "met": c.met, "justification": c.justification} for c in reward.nl_assertions
        ]
    note = (reward.info or {}).get("note") if isinstance(reward.info, dict) else None
    if note:
        info["note"] = note
    return info


def tau_metrics(sums: Mapping[str, float]) -> dict[str, float]:
    """The run's simulator spending and its conversations by how they ended (the ways some ended)."""
    metrics = {f"tau-ended-{r}": float(sums[f"ended_{r}"]) for r in TERMINATIONS if sums.get(f"ended_{r}")}
    metrics["tau-user-requests"] = float(sums.get("user_requests", 0))
    metrics["tau-user-usd"] = float(sums.get("user_cost_usd", 0))
    return metrics
