"""The multi-turn task: a session that plays a case on its own backends, and BFCL's checker as its scorer.

A case's output is its trajectory (see `loop.play`). Scored as BFCL's evaluator scores it: a case whose turns were
cut short (force-terminated) fails without a check; otherwise each turn's steps that decoded to calls are handed to
BFCL's `multi_turn_checker` as the call texts BFCL would have decoded. A call that was not run here as a plain call
of an offered function (an unknown name, a non-literal argument, a function not offered yet) is handed over as a
call of an undefined name: it fails there as it failed here, and nothing a model wrote is ever evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typed_eval.contracts import Case
from typed_eval.core.tasks import Conversation, Score, Task
from typed_eval.suites.bfcl.multi_turn.backend_pool import BackendPool
from typed_eval.suites.bfcl.multi_turn.cases import MultiTurnCase
from typed_eval.suites.bfcl.multi_turn.decoded_calls import NOT_RUN, literal_call
from typed_eval.suites.bfcl.multi_turn.loop import Mode, play

__all__ = ["CAUSES", "NOT_RUN", "MultiTurnRunner", "checker_calls", "multi_turn_case"]

CAUSES = (
    "force_terminated",
    "missing_call",
    "wrong_function",
    "wrong_argument",
    "acted_on_miss_param",
    "state_drift",
)
"""Where a failed case went wrong (`Score.details["cause"]`, and `cause_<cause>: 1`, which the run sums into the task
metrics' input), for a per-model table; `unknown` when the checker named no turn."""


def multi_turn_case(case: MultiTurnCase) -> Case:
    """A multi-turn entry as a case: its first user text as the prompt, its ground truth expected."""
    first = next((m["content"] for turn in case.turns for m in turn), "")
    return Case(
        id=case.id,
        prompt=first,
        expected=case.ground_truth,
        group=case.category,
        metadata={"turns": case.turns, "involved_classes": case.involved_classes,
                  "held_out": {str(k): [d["name"] for d in v] for k, v in case.held_out.items()}},
    )  # fmt: skip


class MultiTurnRunner:
    """The cases (by id) and the backend workers of a run: `task(mode)` poses them, `score` checks them.
    `offered_only` (see `loop.play`): False resolves calls as BFCL does, a held-out function even before its turn."""

    def __init__(self, cases: Mapping[str, MultiTurnCase], pool: BackendPool, *, offered_only: bool = True) -> None:
        self.cases, self.pool, self.offered_only = cases, pool, offered_only

    def task(self, mode: Mode, name: str = "bfcl") -> Task[Any]:
        """The task whose session plays a case in `mode` (`tool`: function calling; `text`: BFCL's prompting)."""

        async def session(case: Case, conversation: Conversation) -> dict[str, Any]:
            return await self.session(case, conversation, mode)

        return Task(name=name, output_type=dict[str, Any], score=self.score, session=session)

    async def session(self, case: Case, conversation: Conversation, mode: Mode) -> dict[str, Any]:
        found = self.cases[case.id]
        lease = await self.pool.open(found.involved_classes, found.initial_config, found.long_context)
        try:
            return await play(found, conversation, lease, mode, offered_only=self.offered_only)
        finally:
            await lease.close()

    async def score(self, case: Case, output: dict[str, Any]) -> Score:
        """BFCL's verdict (1 or 0) with its error type and message, the first failed turn and the cause."""
        found = self.cases[case.id]
        turns = output.get("turns", [])
        if len(turns) != len(found.ground_truth):
            message = (
                f"Model was force-terminated during inference phase. The length of the model result turns "
                f"({len(turns)}) does not match the length of the ground truth turns ({len(found.ground_truth)})."
            )
            details = {"error_type": "multi_turn:force_terminated", "error_message": message}
            return Score(0.0, {**details, "failed_turn": len(turns) - 1, **cause_of("force_terminated")})
        payload = {
            "entry": found.entry(),
            "category": found.category,
            "decoded": checker_calls(found, turns),
            "ground_truth": found.ground_truth,
        }
        verdict = await self.pool.check(payload)
        if verdict["valid"]:
            return Score(1.0)
        details = {key: value for key, value in verdict.items() if key not in ("valid", "cause")}
        return Score(0.0, {**details, **cause_of(str(verdict.get("cause")))})


def cause_of(cause: str) -> dict[str, Any]:
    """The cause, and a count of 1 under `cause_<cause>`: summed over a run, the failures by cause."""
    return {"cause": cause, f"cause_{cause}": 1}


def checker_calls(case: MultiTurnCase, turns: list[dict[str, Any]]) -> list[list[list[str]]]:
    """Per turn, per step that decoded to calls, the call texts BFCL's checker replays (its decoded result lists);
    a call not run here, or one that is not a plain call with literal arguments, as `NOT_RUN`."""
    names = {doc["name"] for doc in case.functions} | {doc["name"] for docs in case.held_out.values() for doc in docs}
    decoded: list[list[list[str]]] = []
    for turn in turns:
        steps = []
        for step in turn.get("steps", []):
            executed = step.get("executed") or []
            if executed:
                steps.append([safe_call(call, names) for call in executed])
        decoded.append(steps)
    return decoded


def safe_call(call: Any, names: set[str]) -> str:
    """The call's text when it was run and is a plain call of one of the case's functions with literal arguments."""
    text = call.get("call") if isinstance(call, dict) else None
    if isinstance(text, str) and call.get("run") is True and not isinstance(literal_call(text, names), str):
        return text
    return NOT_RUN
