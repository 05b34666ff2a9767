"""Simulated users: the second model a conversation suite's session talks to, opened for as long as a run lasts.

Why here and not in the session: a model named by a spec (`local:...`, a server with its key) must be started and
closed with the run, as an LLM judge is; a suite only says which model it wants (`Simulating.user_model`, None: the
run's own) and is handed a `SimulatedUser`. What the offline `test` model says as the user is the suite's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic_ai.models.test import TestModel

from typed_eval.core.attempts import UserPrices
from typed_eval.core.errors import EvaluatorError
from typed_eval.core.run_config import RunConfig
from typed_eval.core.simulated_user import SimulatedUser
from typed_eval.core.tasks import Task
from typed_eval.providers.prepared_model import PreparedModel, open_model
from typed_eval.suites.judge import asked_as_the_run

__all__ = ["Simulating", "simulated"]


@runtime_checkable
class Simulating(Protocol):
    """The part of a task (its session) that talks to a simulated user."""

    @property
    def user_model(self) -> str | None:
        """The model that plays the user, opened like `--model` (None: the run's own)."""

    @property
    def user_endpoint(self) -> tuple[str | None, str | None]:
        """Its server and key (`None`: the run's, when it is the run's model; else the provider's own)."""

    @property
    def test_user(self) -> str:
        """What the offline `test` model says as the user."""

    def simulated_task(self, task: Task[Any], user: SimulatedUser) -> Task[Any]:
        """`task`, its session talking to `user`."""


@asynccontextmanager
async def simulated(
    task: Task[Any],
    run_model: PreparedModel,
    *,
    cache_path: Path | None = None,
    request_timeout: float | None = None,
    prices: UserPrices | None = None,
    temperature: float | None = None,
) -> AsyncIterator[Task[Any]]:
    """The task with its simulated user for as long as the block lasts (tasks that simulate none come back as they
    are): the session's `user_model`, or the run's own model (sharing its `prices`), with the run's temperature,
    timeout and answer cap; the offline `test` model says the session's `test_user`."""
    session = task.session
    if not isinstance(session, Simulating):
        yield task
        return
    async with AsyncExitStack() as stack:
        prepared, spec = run_model, (session.user_model or run_model.resolved.name).strip()
        if spec == "test":
            prepared = replace(run_model, resolved=replace(run_model.resolved, model=TestModel(
                custom_output_text=session.test_user), name="test", local=True))  # fmt: skip
        elif session.user_model is not None and (spec != run_model.resolved.name or any(session.user_endpoint)):
            base_url, api_key = session.user_endpoint
            try:
                prepared = await stack.enter_async_context(
                    open_model(
                        spec,
                        RunConfig(base_url=base_url, request_timeout=request_timeout),
                        api_key=api_key,
                        cache_path=cache_path,
                    )
                )
            except EvaluatorError as exc:
                if exc.parameter in ("model", "base_url"):  # the user's model, not the run's
                    exc.parameter = "user_model"
                raise
        model, settings = asked_as_the_run(prepared, temperature, request_timeout)
        user = SimulatedUser(
            model,
            prepared.resolved.name,
            settings,
            local=prepared.resolved.local,
            prices=prices if prepared is run_model else None,
        )
        yield session.simulated_task(task, user)
