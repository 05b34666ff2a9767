"""Pose a task's cases to a model and record and score every output: `evaluate()`, and the loop that poses a run's
samples (the first alone, the rest by workers pulling from one stream) under its budgets, stop state and pacer.

No argument parsing, no printing: `evaluate()` takes a task, cases and a model, the run's `RunConfig` and how the
caller drives it (`RunControl`), and returns every sample record with the run's scores; the control's `on_record` is
called as each sample finishes.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai import ModelConnectionError, ModelHTTPError, ModelRequestRejectedError
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from typed_eval.contracts import Case, RunSettings, RunStatus, SampleRecord, Scores
from typed_eval.core.errors import EvaluatorError, InputError, TaskError, error_text
from typed_eval.core.run_config import BatchOptions, RunConfig, config_with
from typed_eval.core.scoring import ScoreBook
from typed_eval.core.secrets import Redactor
from typed_eval.core.tasks import Task
from typed_eval.engine.collector import NOTHING_POSABLE, Collector
from typed_eval.engine.control import Budget, RunControl, StopState, control_of
from typed_eval.engine.forced_choice import names_tool_choice, refuses_forced_choice, with_earlier_tries
from typed_eval.engine.posing import Outcome, Poser
from typed_eval.engine.set_aside import SetAside
from typed_eval.engine.settings import (
    DEFAULT_CONCURRENCY,
    batch_options,
    model_settings_for,
    prepared_model,
    resolve_settings,
)
from typed_eval.engine.traces import NO_TRACES, Traces, run_traces
from typed_eval.providers.batches import Batching, PendingRequests
from typed_eval.providers.flow import DEFAULT_MAX_WAIT_S, Pacer, WaitedTooLong
from typed_eval.providers.prepared_model import PreparedModel
from typed_eval.providers.prices import updated_prices
from typed_eval.providers.resolve import forces_tool_choice, with_default_retries, without_forced_tool_choice
from typed_eval.providers.transport import TrafficMeter, meter_model

__all__ = [
    "EvaluationResult",
    "Sample",
    "ToolChoice",
    "evaluate",
    "evaluate_samples",
    "pose_samples",
    "repeated",
]

ToolChoice = Literal["required", "auto"]

Sample = tuple[Case, int]
"""A case and which posing of it this is (its repeat index, from 0)."""


_Numbered = tuple[int, Case, int]
"""A sample's position in the run, its case and its repeat index."""


def repeated(cases: Iterable[Case], repeats: int) -> Iterator[Sample]:
    """Every case `repeats` times, one whole pass after another (an interrupted run has whole passes first)."""
    if repeats < 1:
        raise InputError(f"must be at least 1, got {repeats}", parameter="repeats")
    if repeats == 1:
        return ((case, 0) for case in cases)
    kept = list(cases)
    return ((case, repeat) for repeat in range(repeats) for case in kept)


@dataclass
class EvaluationResult:
    """Everything a run produced: records in case order, their scores, and how the run went."""

    records: list[SampleRecord]
    """In case order; empty when the run was made with `keep_records=False`."""
    scores: Scores
    status: RunStatus
    reason: str | None
    """Why the run is `dnf` (the model could not be reached) or `partial` (stopped), else None."""
    tool_choice: ToolChoice | None
    """Tool mode: whether the output tool call was forced (`required`) or left to the model (`auto`)."""
    tool_choice_reason: str | None
    wall_s: float


def _unreachable(exc: BaseException | None) -> bool:
    """The model cannot answer at all: no connection, refused credentials, no such model, or a first request rejected
    (HTTP 400, 422: as every request would be, a parameter the server refuses), unless the rejection names the
    prompt's length: that is the sample's error, and the run goes on."""
    if isinstance(exc, ModelConnectionError | ModelRequestRejectedError | OSError):
        return not _prompt_too_long(exc)
    return isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403, 404)


_TOO_LONG = ("context length", "context_length", "context window", "maximum context", "prompt is too long",
             "too many tokens", "input is too long")  # fmt: skip
"""How servers say a prompt is longer than the model takes (OpenAI, vLLM, llama.cpp, Anthropic, Ollama)."""


def _prompt_too_long(exc: BaseException) -> bool:
    body = error_text(exc)
    return isinstance(exc, ModelHTTPError) and 400 <= exc.status_code < 500 and any(s in body for s in _TOO_LONG)


async def evaluate(
    task: Task[Any],
    cases: Iterable[Case],
    model: Model | str | PreparedModel,
    config: RunConfig | None = None,
    control: RunControl | None = None,
    **changes: Any,
) -> EvaluationResult:
    """Pose every case of `task` to `model` as `config` says, validate and score the outputs.

    Two objects, so the signature stays short and what the run is stays apart from how this process drives it:
    `config` (a `RunConfig`) is what the run is, `control` (a `RunControl`) how the caller drives and watches it.

    `model` is a pydantic-ai `Model` (FunctionModel and TestModel included), a `PreparedModel` (`open_model`) or a
    model string: any of pydantic-ai's (`openai:gpt-4o`, `anthropic:...`), `test`, `ollama:NAME`,
    `local:smollm2-135m` (its server is started for the run and stopped after it) or `replay:LOGFILE`. `config`
    (default: every default) says how: `mode`, `retries` (corrective retries after an invalid output; default
    `default_retries(mode, task)`), `concurrency` (default 8, or what suits the model string: a local server 1,
    with its 512-token answer cap), `repeats` (every case posed that many times; records carry the repeat index,
    scores are means over all of them), `local` (a model whose cost is 0; default: a test model or a loopback
    server), `tool_choice` (None tries forcing the output tool call and falls back to `auto` if the server refuses
    it on the first case), `temperature`, `seed`, `max_tokens`, `system_prompt`, `price_in` and `price_out`, the
    budgets `max_cost` and `max_requests`, `model_settings` (pydantic-ai's, on top of those the config makes),
    `batch` (every request through the provider's batch API, all samples at once: half the price, results within a
    day; corrective retries go out as follow-up batches; `batch_options` says how)... Each keyword in `changes`
    overrides one of them (`mode="tag", retries=0`; `prices=UserPrices(...)` sets both prices), checked: an unknown
    name or a bad value raises `InputError` naming it (`.parameter`).

    `control` (default: the run left to itself): `stop` (a `StopState`) stops the run early from outside (Ctrl-C);
    `on_record` is called as each sample finishes; `keep_records=False` keeps memory flat on huge runs (records then
    reach only `on_record`); `pacer` paces every request (a `Pacer`: `rpm`, `tpm`, `max_wait_s`; see
    `typed_eval.providers.flow`): the limits the provider states are kept, a 429 waits without spending a transport
    retry, an outage holds the requests; runs handed one pacer share its pace. Without one the run makes its own,
    from the config's `rpm`, `tpm` and `max_wait_s`. The first case is posed alone: if the model cannot be reached,
    the run stops there as `dnf`. If a worker fails, the others are cancelled before this raises.
    """
    config = config_with(config, **changes)
    return await evaluate_samples(task, repeated(cases, config.repeats), model, config, control)


async def evaluate_samples(
    task: Task[Any],
    samples: Iterable[Sample],
    model: Model | str | PreparedModel,
    config: RunConfig | None = None,
    control: RunControl | None = None,
    *,
    batch_store: PendingRequests | None = None,
) -> EvaluationResult:
    """`evaluate()` over given (case, repeat) pairs. With `config.batch`, `batch_store` keeps the requests that wait
    on a batch, and gives those a resumed sample continues from."""
    config = config_with(config)
    control = control_of(control, stores=False)
    options = batch_options(config)
    async with AsyncExitStack() as stack:
        if config.update_prices is not None:
            stack.enter_context(updated_prices(config.update_prices))
        prepared = await prepared_model(model, config, task, stack)
        settings = resolve_settings(config, prepared, task, batch=options is not None, pacer=control.pacer)
        traces = stack.enter_context(
            run_traces(config, task.name, settings, prepared.resolved.model, dataset_name=task.name)
        )
        result = await pose_samples(
            task,
            samples,
            prepared,
            settings,
            model_settings=config.model_settings,
            on_record=control.on_record,
            budget=Budget.of(config),
            stop=control.stop,
            pacer=control.pacer,
            traffic=control.traffic,
            keep_records=control.keep_records,
            batch=options,
            batch_store=batch_store,
            traces=traces,
        )
        traces.finish(result.status, result.scores.score, result.scores.samples)
        return result


async def pose_samples(
    task: Task[Any],
    samples: Iterable[Sample],
    prepared: PreparedModel,
    settings: RunSettings,
    *,
    model_settings: ModelSettings | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    budget: Budget | None = None,
    stop: StopState | None = None,
    pacer: Pacer | None = None,
    traffic: TrafficMeter | None = None,
    keep_records: bool = True,
    batch: BatchOptions | None = None,
    batch_store: PendingRequests | None = None,
    reached: bool = False,
    traces: Traces = NO_TRACES,
) -> EvaluationResult:
    """Pose (case, repeat) pairs to a prepared model with a run's resolved `settings`, under its `budget`, `stop`
    state and `pacer` (None: one of its own, from the settings), its transport gauged on `traffic`. `reached`: the
    model has answered this run already (a worker's part of it), so a first sample that fails is that sample's
    error, not a model that cannot be reached. `traces`: the run's spans (`typed_eval.engine.traces`)."""
    if not isinstance(task, Task):
        raise TaskError(f"must be an evaluator.Task, got {type(task).__name__}", parameter="task")
    budget, stop, traffic = budget or Budget(), stop or StopState(), traffic or TrafficMeter()
    pending = ((index, case, repeat) for index, (case, repeat) in enumerate(samples))
    head = next(pending, None)
    if head is None:
        raise EvaluatorError("no cases to evaluate", parameter="cases")
    asked = prepared.resolved.model
    meter_model(asked)
    if batch is None:  # a batch is queued, not paced
        pacer = pacer or Pacer(
            rpm=settings.rpm,
            tpm=settings.tpm,
            max_wait_s=settings.max_wait_s or DEFAULT_MAX_WAIT_S,
            concurrency=settings.concurrency or DEFAULT_CONCURRENCY,
        )
    else:
        pacer = None
    traffic.pacer = pacer
    return await _evaluate(
        task,
        head,
        pending,
        asked,
        settings,
        model_settings=_without_batch_retries(
            with_default_retries(asked, model_settings_for(settings, model_settings)) or {}, batch
        ),
        budget=budget,
        stop=stop,
        pacer=pacer,
        traffic=traffic,
        collected=Collector(task, keep=keep_records, on_record=on_record, budget=budget, stop=stop),
        batching=_batching(task, asked, budget, batch, batch_store),
        reached=reached,
        traces=traces,
    )


async def _evaluate(
    task: Task[Any],
    head: _Numbered,
    pending: Iterator[_Numbered],
    model: Model,
    settings: RunSettings,
    *,
    model_settings: ModelSettings,
    budget: Budget,
    stop: StopState,
    pacer: Pacer | None,
    traffic: TrafficMeter,
    collected: Collector,
    batching: Batching | None,
    reached: bool,
    traces: Traces,
) -> EvaluationResult:
    redact = Redactor.for_run(model=model)
    mode, tool_choice = settings.mode, settings.tool_choice
    concurrency = settings.concurrency or DEFAULT_CONCURRENCY
    if tool_choice == "auto":
        model = without_forced_tool_choice(model)
    chosen: ToolChoice | None = None
    if mode == "tool":
        chosen = "required" if forces_tool_choice(model) else "auto"
    reason = "set by the caller" if tool_choice is not None else None

    def poser(for_model: Model) -> Poser:
        return Poser(
            task,
            traces.instrumented(for_model),
            settings,
            model_settings=model_settings,
            traffic=traffic,
            redact=redact,
            pacer=pacer,
            batching=batching,
            halt=collected.halt,
            traces=traces,
        )

    started = time.perf_counter()
    current = poser(model)
    if batching is not None:  # every sample at once: a batch's turnaround is hours, so none goes first alone
        await _pose_rest(current, itertools.chain([head], pending), collected, batching.options.max_requests, stop)
        return _result(collected, "finished", None, chosen, reason if mode == "tool" else None, stop, started)

    def stopped_first() -> EvaluationResult:
        """Stopped (Ctrl-C, the max wait) while the first case was in flight: nothing to record."""
        return EvaluationResult(
            records=[],
            scores=ScoreBook(aggregate=task.aggregate).scores(),
            status="partial",
            reason=stop.reason,
            tool_choice=chosen,
            tool_choice_reason=reason if mode == "tool" else None,
            wall_s=round(time.perf_counter() - started, 3),
        )

    posed = await _pose_unless_stopped(current, head[1], head[2], stop)
    if posed is None:
        return stopped_first()
    first = posed
    refused = first.record.status == "unsupported"  # a refused schema: the provider's answer, no tool choice to free
    may_free = chosen == "required" and tool_choice is None and not refused
    earlier: list[SampleRecord] = []  # the case's tries before the one kept: each request sent is counted
    if may_free and refuses_forced_choice(first.exception) and not names_tool_choice(first.exception):
        posed = await _pose_unless_stopped(current, head[1], head[2], stop)  # a transient fault passes on a
        if posed is None:  # second try; a refusal repeats
            return stopped_first()
        earlier.append(first.record)
        first = posed
    if may_free and refuses_forced_choice(first.exception):
        fallback = poser(without_forced_tool_choice(model))
        retried = await _pose_unless_stopped(fallback, head[1], head[2], stop)
        if retried is None:
            return stopped_first()
        if retried.exception is None:
            reason = f"the server refused a forced tool choice ({first.record.error})"
            earlier.append(first.record)
            current, first, chosen = fallback, retried, "auto"
        else:
            earlier.append(retried.record)
    first = with_earlier_tries(first, earlier)
    usage = first.record.usage
    priced = usage.input_tokens is not None and usage.output_tokens is not None  # no usage: the collector stops it
    if budget.max_cost is not None and first.record.cost.usd is None and first.exception is None and priced:
        raise EvaluatorError(
            f"needs a known price, and {first.record.cost.source} is all that is known of this model's cost: give "
            "its prices (USD per million input and output tokens)",
            parameter="max_cost",
        )
    collected.add(head[0], first.record, first.exception)
    status: RunStatus = "finished"
    why: str | None = None
    if _unreachable(first.exception) and not reached and first.record.status != "unsupported":
        status, why = "dnf", first.record.error
    else:
        await _pose_rest(current, SetAside(pending, pacer), collected, concurrency, stop)
    return _result(collected, status, why, chosen, reason if mode == "tool" else None, stop, started)


def _result(
    collected: Collector,
    status: RunStatus,
    why: str | None,
    chosen: ToolChoice | None,
    reason: str | None,
    stop: StopState,
    started: float,
) -> EvaluationResult:
    book = collected.book
    if status == "finished" and book.samples and book.answered == 0 and book.errors == book.samples:
        status, why = "dnf", collected.first_error
        if collected.unposable == book.samples:
            why = f"{NOTHING_POSABLE}: {why}"
    elif status == "finished" and stop.stopping:
        status, why = "partial", stop.reason
    records = [record for _, record in sorted(collected.records or [], key=lambda pair: pair[0])]
    return EvaluationResult(
        records=records,
        scores=book.scores(),
        status=status,
        reason=why,
        tool_choice=chosen,
        tool_choice_reason=reason,
        wall_s=round(time.perf_counter() - started, 3),
    )


def _without_batch_retries(settings: ModelSettings, batch: BatchOptions | None) -> ModelSettings:
    """A batch's requests are run by the provider, with no SDK client to retry them: no `max_retries` (pydantic-ai
    2.68 drops it, 2.62, which pydantic-evals pins, refuses a Gemini batch that has it)."""
    if batch is None or "max_retries" not in settings:
        return settings
    kept = ModelSettings(**settings)
    del kept["max_retries"]
    return kept


def _batching(
    task: Task[Any], model: Model, budget: Budget, batch: BatchOptions | None, store: PendingRequests | None
) -> Batching | None:
    if batch is None:
        return None
    if task.session is not None:
        raise EvaluatorError(
            f"the {task.name} task asks each case in a loop of its own; batches take one question a case",
            parameter="batch",
        )
    if budget.limited:
        raise EvaluatorError(
            "sends every sample at once and prices a batch when it ends, so a cost or request budget cannot stop "
            "it in time: limit the cases instead",
            parameter="batch",
        )
    return Batching(model, batch, store or PendingRequests())


async def _pose_unless_stopped(poser: Poser, case: Case, repeat: int, stop: StopState) -> Outcome | None:
    """Pose one case; a stop while it is in flight gives it `stop.grace_s`, then cancels it (None)."""
    posing = asyncio.create_task(poser.pose(case, repeat))
    stopped = asyncio.create_task(stop.stopped())
    try:
        await asyncio.wait({posing, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not posing.done():
            await asyncio.wait({posing}, timeout=stop.grace_s)
        if posing.done() and not posing.cancelled() and isinstance(posing.exception(), WaitedTooLong):
            stop.stop(str(posing.exception()))
            return None
        return posing.result() if posing.done() else None
    finally:
        for task in (posing, stopped):
            task.cancel()
        await asyncio.gather(posing, stopped, return_exceptions=True)


async def _pose_rest(
    poser: Poser, pending: Iterator[_Numbered], collected: Collector, concurrency: int, stop: StopState
) -> None:
    """Pose the remaining cases with `concurrency` workers pulling from one iterator (memory stays flat); from a
    `SetAside`, a sample whose failure may be an outage's first is set aside for later instead of recorded.

    On a stop, no worker takes another case; samples in flight get `stop.grace_s`, then are cancelled.
    If one worker fails, every other one is cancelled before the failure is raised, so no request is sent
    after this returns.
    """

    workers: set[asyncio.Task[None]] = set()

    def another() -> None:
        """One more worker, while fewer than `concurrency` run: made as the samples come, so a concurrency far
        beyond the number of samples costs nothing."""
        if len(workers) < concurrency:
            workers.add(asyncio.create_task(worker()))

    async def worker() -> None:
        while await collected.admit():
            try:
                item = next(pending, None)
                if item is None:
                    return
                another()
                started = time.monotonic()
                try:
                    outcome = await poser.pose(item[1], item[2])
                except WaitedTooLong as exc:  # the sample stays unrecorded: a resume poses it
                    stop.stop(str(exc))
                    return
                if not isinstance(pending, SetAside) or not pending.hold(item, started, outcome.exception):
                    collected.add(item[0], outcome.record, outcome.exception)
            finally:
                collected.release()

    another()
    stopped = asyncio.create_task(stop.stopped())
    try:
        while not stopped.done() and (running := {task for task in workers if not task.done()}):
            await asyncio.wait(running | {stopped}, return_when=asyncio.FIRST_COMPLETED)
            _raise_failure({task for task in workers if task.done()})  # a worker made since may have ended too
        _raise_failure({task for task in workers if task.done()})
        if running := {task for task in workers if not task.done()}:
            done, _ = await asyncio.wait(running, timeout=stop.grace_s)
            _raise_failure(done)
    finally:
        for task in (*workers, stopped):
            task.cancel()
        await asyncio.gather(*workers, stopped, return_exceptions=True)


def _raise_failure(done: set[asyncio.Task[Any]]) -> None:
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
