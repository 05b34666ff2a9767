"""Pose a task's cases to a model through a pydantic-ai agent, and record and score every output.

No argument parsing, no printing: `evaluate()` takes a task, cases and a model, and returns every sample
record with the run's scores; `on_record` is called as each sample finishes.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai import (
    Agent,
    ModelConnectionError,
    ModelHTTPError,
    ModelMessage,
    ModelRequestRejectedError,
    ModelResponse,
    PendingModelResponse,
    UnexpectedModelBehavior,
    UserError,
    capture_run_messages,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from typed_eval.core.attempts import (
    Verdicts,
    added_cost,
    added_usage,
    read_attempts,
    sample_cost,
    sample_usage,
    validation_errors,
)
from typed_eval.core.errors import EvaluatorError, InputError, TaskError
from typed_eval.core.scoring import ScoreBook
from typed_eval.core.secrets import Redactor
from typed_eval.core.settings import check_settings, settings_with, user_prices
from typed_eval.core.tasks import EMPTY_REPLY, EmptyReplyAsText, Score, Task, TextReply
from typed_eval.providers.batches import Batching, BatchOptions, PendingRequests, without_pending
from typed_eval.providers.flow import DEFAULT_MAX_WAIT_S, Pacer, WaitedTooLong
from typed_eval.providers.models import PreparedModel, open_model
from typed_eval.providers.resolve import (
    ResolvedModel,
    forces_tool_choice,
    with_default_retries,
    without_forced_tool_choice,
)
from typed_eval.providers.transport import SampleTraffic, TrafficMeter, current_traffic, meter_model
from typed_eval.schemas import (
    AnswerMode,
    Attempt,
    Case,
    Cost,
    RunSettings,
    RunStatus,
    SampleRecord,
    SampleStatus,
    Scores,
    TokenUsage,
    is_text_mode,
)

__all__ = [
    "CREDENTIALS_REFUSED",
    "DEFAULT_CONCURRENCY",
    "Collector",
    "EvaluationResult",
    "RunControl",
    "Sample",
    "ToolChoice",
    "batch_options",
    "check_settings",
    "default_retries",
    "evaluate",
    "evaluate_samples",
    "model_name",
    "model_settings_for",
    "prepared_model",
    "repeated",
    "resolved_settings",
    "settings_with",
    "user_prices",
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


CREDENTIALS_REFUSED = "stopped: the server refused the credentials mid-run"
"""The start of a run's reason when a 401 or 403 came after the first case (the run is `partial`)."""


def default_retries(mode: AnswerMode) -> int:
    """Corrective retries by default: none in FaRel's tag mode (parity with farel-bench), 3 otherwise."""
    return 0 if mode == "tag" else 3


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


@dataclass
class RunControl:
    """Stops a run cleanly, from outside (Ctrl-C) or by a budget: no new sample starts, those in flight get
    `grace_s` seconds to finish and are then cancelled (unrecorded, so a resume poses them again)."""

    max_cost: float | None = None
    """Stop starting samples once the known cost reaches this many USD."""
    max_requests: int | None = None
    """Stop starting samples once this many model requests were made."""
    grace_s: float = 10.0
    budget_named: tuple[float | None, int | None] | None = None
    """The whole run's (max_cost, max_requests) when these are one part's share of them (`--workers`): what a
    stop's reason names, since the user set those."""
    reason: str | None = None
    """Why the run was stopped; None while it runs."""
    traffic: TrafficMeter = field(default_factory=TrafficMeter)
    """This run's transport retries and backoff waits, as they happen (for a progress display)."""
    pacer: Pacer | None = None
    """The gate every request of the run goes through (see `typed_eval.providers.flow`); None: one of the run's own,
    made for its concurrency. Runs handed the same pacer keep one pace between them."""
    _event: asyncio.Event | None = field(default=None, repr=False)

    @property
    def named_budget(self) -> tuple[float | None, int | None]:
        return self.budget_named or (self.max_cost, self.max_requests)

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self._event is not None:
                self._event.set()

    @property
    def stopping(self) -> bool:
        return self.reason is not None

    async def stopped(self) -> None:
        self._event = self._event or asyncio.Event()
        if self.reason is None:
            await self._event.wait()


@dataclass
class _Outcome:
    record: SampleRecord
    exception: BaseException | None


class _Turns:
    """A sample's agent runs (one, or a task session's several): their attempts, usage and cost added up, and what
    the session spent beside them (an LLM judge). The `Conversation` a task's session asks through."""

    def __init__(self, poser: _Poser, case: Case, repeat: int) -> None:
        self._poser, self._case, self._repeat = poser, case, repeat
        self.attempts: list[Attempt] = []
        self.corrective_retries = 0
        self.usage = TokenUsage()
        self._cost: Cost | None = None

    @property
    def cost(self) -> Cost:
        if self._cost is None:  # nothing was asked
            return sample_cost([], self.usage, local=self._poser.local, prices=self._poser.prices)
        return self._cost

    async def ask(self, prompt: str) -> Any:
        return await self._poser._ask(self._case, self._repeat, prompt, self)

    def add(self, attempts: list[Attempt], usage: TokenUsage, cost: Cost) -> None:
        """One agent run's attempts (its corrective retries are those after its first) and what it used."""
        self.attempts += attempts
        self.corrective_retries += max(len(attempts) - 1, 0)
        self.charge(usage, cost)

    def charge(self, usage: TokenUsage, cost: Cost) -> None:
        self.usage = added_usage(self.usage, usage)
        self._cost = cost if self._cost is None else added_cost(self._cost, cost)


class _Poser:
    """Poses single cases with one agent; holds what every sample of a run shares.

    A task whose cases are posed differently (`Task.pose_as`) gets one poser per way of posing, made on first use;
    every one of them scores with the run's task.
    """

    def __init__(
        self,
        task: Task[Any],
        model: Model,
        settings: RunSettings,
        *,
        model_settings: ModelSettings,
        traffic: TrafficMeter,
        redact: Redactor,
        pacer: Pacer | None,
        grader: Task[Any] | None = None,
        batching: Batching | None = None,
    ) -> None:
        self.task = task
        self.grader = grader or task
        self.model = model
        self.settings = settings
        self._posers: dict[tuple[int, AnswerMode], tuple[Task[Any], _Poser]] = {}
        self.redact = redact
        self.mode = settings.mode
        self.retries = default_retries(self.mode) if settings.retries is None else settings.retries
        self.local = bool(settings.local)
        self.prices = user_prices(settings)
        self.traffic = traffic
        self.pacer = pacer
        self.model_settings = model_settings
        self.batching = batching
        context = task.validation_context
        output_spec = task.output_spec(self.mode)
        capabilities: list[Any] = [batching.capability] if batching is not None else []
        if task.empty_reply and is_text_mode(self.mode):
            capabilities.append(EmptyReplyAsText())
        self.agent: Agent[Case, Any] = Agent(
            model,
            output_type=[output_spec, PendingModelResponse] if batching is not None else output_spec,
            capabilities=capabilities or None,
            deps_type=Case,
            instructions=task.instructions_for(self.mode),
            system_prompt=settings.system_prompt or (),
            model_settings=model_settings or None,
            retries=self.retries,
            validation_context=(lambda ctx: context(ctx.deps)) if context is not None else None,
        )

    def _priced(self, attempts: list[Attempt], messages: Sequence[ModelMessage]) -> list[Attempt]:
        """Each attempt with its own request's tokens and cost: a corrective retry resends the conversation so far,
        so it costs more than the first request, and what the retries cost is read from these."""
        responses = [m for m in messages if isinstance(m, ModelResponse)]
        priced: list[Attempt] = []
        for attempt, response in zip(attempts, responses, strict=True):
            usage = sample_usage([response])
            cost = sample_cost([response], usage, local=self.local, prices=self.prices)
            update = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost_usd": cost.usd}
            priced.append(attempt.model_copy(update=update))
        return priced

    def _verdicts(self, case: Case, accepted: bool, error: BaseException | None) -> Verdicts:
        task, reader = self.task, self.task.text_reader

        def recheck(raw: str) -> Any:
            return validation_errors(lambda text: task.validate_json(text, case), raw)

        return Verdicts(
            mode=self.mode,
            tool_name=task.tool_name,
            accepted=accepted,
            final_error=error,
            unreadable_kind=reader.invalid_kind if reader is not None else "unreadable",
            unreadable_feedback=reader.feedback if reader is not None else None,
            recheck=recheck if reader is None or not is_text_mode(self.mode) else None,
        )

    def _settings_for(self, repeat: int) -> ModelSettings | None:
        """Each repeat after the first samples from its own seed: the run's seed plus the repeat index, or the
        index alone on a local server (which otherwise derives the seed from the request, so repeats would all
        answer alike). Repeats are then different requests, which a response cache does not merge."""
        if not repeat:
            return None
        seed = self.model_settings.get("seed")
        if seed is not None:
            return ModelSettings(seed=seed + repeat)
        return ModelSettings(seed=repeat) if self.local else None

    def _poser_for(self, case: Case) -> _Poser:
        """This poser, or the one for the task and mode `pose_as` gives this case."""
        if self.task.pose_as is None:
            return self
        task, mode = self.task.pose_as(case, self.mode)
        if task is self.task and mode == self.mode:
            return self
        key = (id(task), mode)
        if key not in self._posers:
            poser = _Poser(
                task,
                self.model,
                self.settings.model_copy(update={"mode": mode}),
                model_settings=self.model_settings,
                traffic=self.traffic,
                redact=self.redact,
                pacer=self.pacer,
                grader=self.grader,
                batching=self.batching,
            )
            self._posers[key] = (task, poser)  # the task is kept so its id is not reused
        return self._posers[key][1]

    async def pose(self, case: Case, repeat: int = 0) -> _Outcome:
        return await self._poser_for(case)._pose(case, repeat)

    async def _ask(self, case: Case, repeat: int, prompt: str, turns: _Turns) -> Any:
        """One agent run, its attempts, usage and cost added to `turns`: the valid output, or None when the
        corrective retries ran out on invalid ones. A failed call raises (the sample is then an `error`)."""
        output: Any
        exception: BaseException | None = None
        batching, key = self.batching, (case.id, repeat)
        history = batching.pending.history(key) if batching is not None else None
        while True:
            output = None
            with capture_run_messages() as messages:
                try:
                    settings = self._settings_for(repeat)
                    asked = None if history else prompt
                    left = max(self.retries - _answers(history), 0) if history else None  # the sample's, not the run's
                    output = (
                        await self.agent.run(
                            asked, message_history=history, deps=case, model_settings=settings, retries=left
                        )
                    ).output
                except UserError as exc:
                    first = str(exc).splitlines()[0]
                    raise EvaluatorError(
                        f"cannot ask this model in {self.mode} mode: {first}", parameter="mode"
                    ) from None
                except (EvaluatorError, asyncio.CancelledError):
                    raise
                except Exception as exc:  # a failed call or a malformed response is this sample's error
                    exception = exc
            if batching is None or not isinstance(output, PendingModelResponse):
                break
            history = list(messages)
            await batching.wait(key, history, self.traffic)
        if batching is not None:
            batching.done(key, self.traffic)
            messages = without_pending(messages)
        value = output.output if isinstance(output, TextReply) else output
        attempts = [a.model_copy(update={"raw": ""}) if a.raw == EMPTY_REPLY else a
                    for a in read_attempts(messages, self._verdicts(case, value is not None, exception))]  # fmt: skip
        attempts = self._priced(attempts, messages)
        usage = sample_usage(messages)
        turns.add(attempts, usage, sample_cost(messages, usage, local=self.local, prices=self.prices))
        if isinstance(exception, UnexpectedModelBehavior) and len(attempts) > self.retries:
            return None  # the retries ran out: every attempt is invalid
        if exception is not None:
            raise exception
        return value

    async def _pose(self, case: Case, repeat: int) -> _Outcome:
        started = time.perf_counter()
        value: Any = None
        exception: BaseException | None = None
        traffic = SampleTraffic(self.traffic, self.pacer, f"{case.id}\x00{repeat}", self.redact)
        counting = current_traffic.set(traffic)
        turns = _Turns(self, case, repeat)
        try:
            if self.task.session is None:
                value = await self._ask(case, repeat, self.task.question(case, self.mode), turns)
            else:
                value = await self.task.session(case, turns)
        except (EvaluatorError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a failed call or a malformed response is this sample's error, not the run's
            exception = exc
        finally:
            current_traffic.reset(counting)
            traffic.set_waiting(False)
        latency = time.perf_counter() - started - traffic.wait_s
        attempts, usage = turns.attempts, turns.usage
        verdict: Score | None = None
        relaxed_output: Any = None
        relaxed: Score | None = None
        status: SampleStatus
        if exception is not None:
            status = "error"
        elif value is None:
            status = "missing"
            reader = self.task.text_reader
            if is_text_mode(self.mode) and reader is not None and reader.relaxed is not None and attempts:
                relaxed_output = reader.relaxed(attempts[-1].raw)
                if relaxed_output is not None:
                    relaxed = await self.grader.grade(case, relaxed_output)
        else:
            verdict = await self.grader.grade(case, value)
            status = "correct" if verdict.value == 1.0 else "incorrect" if verdict.value == 0.0 else "partial"
        cost = turns.cost
        for graded in (verdict, relaxed):  # what an LLM judge spent grading counts with the sample
            if graded is not None and graded.usage is not None:
                usage = added_usage(usage, graded.usage)
            if graded is not None and graded.cost is not None:
                cost = added_cost(cost, graded.cost)
        record = SampleRecord(
            case_id=case.id,
            repeat=repeat,
            group=case.group,
            prompt=case.prompt,
            expected=to_jsonable_python(case.expected),
            metadata=to_jsonable_python(case.metadata),
            excluded=case.excluded,
            weight=case.weight,
            mode=self.mode,
            status=status,
            output=Task.dump(value) if value is not None else None,
            score=verdict.value if verdict is not None else None,
            score_details=to_jsonable_python(verdict.details) if verdict is not None and verdict.details else None,
            relaxed_output=Task.dump(relaxed_output) if relaxed is not None else None,
            relaxed_score=relaxed.value if relaxed is not None else None,
            attempts=attempts,
            corrective_retries=turns.corrective_retries,
            usage=usage,
            cost=cost,
            latency_s=round(latency, 4),
            error=_describe(exception) if exception is not None else None,  # redacted with the whole record below
            transport_retries=traffic.transport_retries,
            cache_hits=traffic.cache_hits,
            rate_limited=traffic.rate_limited,
            wait_s=round(traffic.wait_s, 4),
        )
        if self.redact.active:  # a key a server or model echoes in an answer is not stored either
            record = SampleRecord.model_validate(_redacted(record.model_dump(mode="json"), self.redact))
        return _Outcome(record, exception)


def _redacted(value: Any, redact: Redactor) -> Any:
    """Every text in a record's JSON redacted (its numbers and structure left alone: a secret of digits is no
    reason to rewrite a number)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value


def _answers(history: list[ModelMessage]) -> int:
    """How many answers a conversation continued from a batch already holds: each was invalid (else the
    conversation would have ended), so each used one of the sample's corrective retries."""
    return sum(isinstance(m, ModelResponse) and m.state != "suspended" for m in history)


def _describe(exc: BaseException) -> str:
    """One line naming the failure: HTTP status and body for API errors, the message otherwise."""
    if isinstance(exc, ModelHTTPError):
        body = " ".join(str(exc.body).split())[:300] if exc.body is not None else ""
        return f"HTTP {exc.status_code} from {exc.model_name}: {body}".strip().rstrip(":")
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unreachable(exc: BaseException | None) -> bool:
    """The model cannot answer at all: no connection, refused credentials, or no such model."""
    if isinstance(exc, ModelConnectionError | ModelRequestRejectedError | OSError):
        return True
    return isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403, 404)


def _refused_credentials(exc: BaseException | None) -> bool:
    """A key revoked or refused mid-run: every later request would fail the same way."""
    return isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403)


def _refused_forced_choice(exc: BaseException | None) -> bool:
    """A request error that a server refusing `tool_choice: required` gives (llama-cpp-python: HTTP 500)."""
    return isinstance(exc, ModelHTTPError) and exc.status_code in (400, 422, 500)


def _names_tool_choice(exc: BaseException | None) -> bool:
    """The refusal says it is about the tool choice (else it may be a passing fault: ask once more first)."""
    body = " ".join(str(exc.body).split()).lower() if isinstance(exc, ModelHTTPError) else ""
    return "tool_choice" in body or "tool choice" in body


class Collector:
    """Takes each finished sample: scores it, keeps it if asked, reports it, and applies the budgets.

    The cost budget also gates each new sample: one starts only if the spend so far plus what the samples
    in flight and it are likely to cost (the mean cost of a sample so far) stays within `max_cost`, so a
    run at high concurrency overshoots by at most about one sample's cost, not by all those in flight.
    """

    def __init__(
        self, task: Task[Any], *, keep: bool, on_record: Callable[[SampleRecord], None] | None, control: RunControl
    ) -> None:
        self.book = ScoreBook(aggregate=task.aggregate, metrics=task.metrics)
        self.records: list[tuple[int, SampleRecord]] | None = [] if keep else None
        self._on_record = on_record
        self._control = control
        self._in_flight = 0
        self._settled = asyncio.Event()
        self.first_error: str | None = None
        """The error of the first sample recorded, which says why a run where every sample failed is `dnf`."""

    def add(self, index: int, record: SampleRecord, exception: BaseException | None = None) -> None:
        if not self.book.samples:
            self.first_error = record.error
        self.book.add(record, index)
        if self.records is not None:
            self.records.append((index, record))
        if self._on_record is not None:
            self._on_record(record)
        control = self._control
        if _refused_credentials(exception):
            control.stop(f"{CREDENTIALS_REFUSED}: {record.error}")
        if control.max_requests is not None and self.book.requests >= control.max_requests:
            control.stop(f"max_requests {control.named_budget[1]} reached")
        if control.max_cost is not None and record.cost.usd is None and record.status != "error":  # untrue usage
            case = record.case_id
            control.stop(f"max_cost ${control.named_budget[0]:g} cannot be kept: the cost of case {case!r} is unknown")
        spent = self.book.cost_usd
        if control.max_cost is not None and spent is not None and spent >= control.max_cost:
            control.stop(f"max_cost ${control.named_budget[0]:g} reached")

    async def admit(self) -> bool:
        """Wait until one more sample fits the budgets beside those in flight; False once none may start."""
        control = self._control
        while not control.stopping:
            each = self.book.cost_per_sample
            spent = self.book.cost_usd or 0.0
            if control.max_cost is None or each is None or spent + (self._in_flight + 1) * each <= control.max_cost:
                self._in_flight += 1
                return True
            if not self._in_flight:
                control.stop(f"max_cost ${control.named_budget[0]:g} reached: the next sample would pass it")
                return False
            settled = self._settled
            await settled.wait()
        return False

    def release(self) -> None:
        """A sample admitted by `admit` is done (recorded or not): wake those waiting for room."""
        self._in_flight -= 1
        self._settled.set()
        self._settled = asyncio.Event()


DEFAULT_CONCURRENCY = 8
"""Requests in flight when neither the caller nor the model (a local server: 1) says how many."""


def model_name(model: Model) -> str:
    """How a run names a model it was handed as an object: `system:model_name` (e.g. `openai:gpt-4o`)."""
    return f"{model.system}:{model.model_name}" if model.system else model.model_name


async def prepared_model(
    model: Model | str | PreparedModel, settings: RunSettings, task: Task[Any], stack: AsyncExitStack
) -> PreparedModel:
    """`model` ready to be asked: a model string opened (`open_model`, closed with `stack`), a `Model` as it is."""
    if isinstance(model, str):
        return await stack.enter_async_context(open_model(model, settings, task=task))
    if isinstance(model, PreparedModel):
        return model
    return PreparedModel(ResolvedModel(model, model_name(model), None, local=False), settings.tool_choice)


def resolved_settings(
    settings: RunSettings, prepared: PreparedModel, task: Task[Any], *, pacer: Pacer | None = None
) -> RunSettings:
    """`settings` filled in for a run of `task` on `prepared`: each None marked "resolved" replaced by the value the
    run uses, and the fields the run fills set. `pacer`: the run's, whose limits are then the run's."""
    resolved, mode = prepared.resolved, settings.mode
    rpm, tpm = settings.rpm, settings.tpm
    max_wait_s: float | None = settings.max_wait_s or DEFAULT_MAX_WAIT_S
    if settings.batch:  # a batch is queued, not paced
        rpm, tpm, max_wait_s = None, None, None
    elif pacer is not None:
        rpm, tpm, max_wait_s = pacer.rpm, pacer.tpm, pacer.max_wait_s
    tool = mode == "tool"
    return settings.model_copy(
        update={
            "model": resolved.name,
            "base_url": resolved.base_url,
            "retries": default_retries(mode) if settings.retries is None else settings.retries,
            "max_tokens": settings.max_tokens or prepared.max_tokens,
            "instructions": task.instructions_for(mode),
            "tool_choice": settings.tool_choice or prepared.tool_choice if tool else None,
            "tool_choice_reason": settings.tool_choice_reason or prepared.tool_choice_reason if tool else None,
            "concurrency": settings.concurrency or prepared.concurrency or DEFAULT_CONCURRENCY,
            "local": resolved.local if settings.local is None else settings.local,
            "model_file": prepared.model_file,
            "chat_format": prepared.chat_format,
            "rpm": rpm,
            "tpm": tpm,
            "max_wait_s": max_wait_s,
        }
    )


def model_settings_for(settings: RunSettings, given: ModelSettings | None = None) -> ModelSettings:
    """The pydantic-ai model settings that `settings` make, with a caller's own (`given`) on top."""
    made = ModelSettings()
    if settings.temperature is not None:
        made["temperature"] = settings.temperature
    if settings.seed is not None:
        made["seed"] = settings.seed
    if settings.max_transport_retries is not None:  # else the SDK's default, with no client copy per request
        made["max_retries"] = settings.max_transport_retries
    if settings.request_timeout is not None and not settings.batch:  # a batch has no per-request timeout
        made["timeout"] = settings.request_timeout
    if settings.max_tokens is not None:
        made["max_tokens"] = settings.max_tokens
    made.update(given or {})
    return made


async def evaluate(
    task: Task[Any],
    cases: Iterable[Case],
    model: Model | str | PreparedModel,
    settings: RunSettings | None = None,
    *,
    model_settings: ModelSettings | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    control: RunControl | None = None,
    keep_records: bool = True,
    batch: BatchOptions | bool | None = None,
    pacer: Pacer | None = None,
    **changes: Any,
) -> EvaluationResult:
    """Pose every case of `task` to `model` as `settings` say, validate and score the outputs.

    `model` is a pydantic-ai `Model` (FunctionModel and TestModel included), a `PreparedModel` (`open_model`) or a
    model string: any of pydantic-ai's (`openai:gpt-4o`, `anthropic:...`), `test`, `ollama:NAME`,
    `local:smollm2-135m` (its server is started for the run and stopped after it) or `replay:LOGFILE`. `settings`
    (a `RunSettings`; default: every default) say how: `mode`, `retries` (corrective retries after an invalid
    output; default `default_retries(mode)`), `concurrency` (default 8, or what suits the model string: a local
    server 1, with its 512-token answer cap), `repeats` (every case posed that many times; records carry the
    repeat index, scores are means over all of them), `local` (a model whose cost is 0; default: a test model or
    a loopback server), `tool_choice` (None tries forcing the output tool call and falls back to `auto` if the
    server refuses it on the first case), `temperature`, `seed`, `max_tokens`, `system_prompt`, `price_in` and
    `price_out`... Each keyword in `changes` overrides one of them (`mode="tag", retries=0`; `prices=UserPrices(...)`
    sets both prices), checked: an unknown name or a bad value raises `InputError` naming it (`.parameter`).

    `model_settings` are pydantic-ai's, on top of those the settings make. The first case is posed alone: if the
    model cannot be reached, the run stops there as `dnf`. `control` stops the run early (Ctrl-C, budgets);
    `keep_records=False` keeps memory flat on huge runs (records then reach only `on_record`). If a worker fails,
    the others are cancelled before this raises. `batch` sends every request through the provider's batch API
    (`BatchOptions`, or True for the default ones: half the price, results within a day), all samples at once;
    corrective retries go out as follow-up batches. `pacer` paces every request (a `Pacer`: `rpm`, `tpm`,
    `max_wait_s`; see `typed_eval.providers.flow`): the limits the provider states are kept, a 429 waits without
    spending a transport retry, an outage holds the requests; runs handed one pacer share its pace. Without one the
    run makes its own, from the settings' `rpm`, `tpm` and `max_wait_s`.
    """
    settings = settings_with(settings, **changes)
    if pacer is not None:
        control = control or RunControl()
        control.pacer = pacer
    return await evaluate_samples(
        task,
        repeated(cases, settings.repeats),
        model,
        settings,
        model_settings=model_settings,
        on_record=on_record,
        control=control,
        keep_records=keep_records,
        batch=batch,
    )


def batch_options(batch: BatchOptions | bool | None, settings: RunSettings) -> BatchOptions | None:
    """How a run batches: as `batch` says (True: the default options), else as `settings.batch` does."""
    if isinstance(batch, BatchOptions):
        return batch
    return BatchOptions() if batch or (batch is None and settings.batch) else None


async def evaluate_samples(
    task: Task[Any],
    samples: Iterable[Sample],
    model: Model | str | PreparedModel,
    settings: RunSettings | None = None,
    *,
    model_settings: ModelSettings | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    control: RunControl | None = None,
    keep_records: bool = True,
    batch: BatchOptions | bool | None = None,
    batch_store: PendingRequests | None = None,
    reached: bool = False,
) -> EvaluationResult:
    """`evaluate()` over given (case, repeat) pairs: what a resumed run with repeats poses. With `batch`,
    `batch_store` keeps the requests that wait on a batch (a run folder's `batches.jsonl`), and gives those a
    resumed sample continues from. `reached`: the model has answered this run already (a worker's part of it), so
    a first sample that fails is that sample's error, not a model that cannot be reached."""
    if not isinstance(task, Task):
        raise TaskError(f"must be an evaluator.Task, got {type(task).__name__}", parameter="task")
    settings = settings_with(settings)
    options = batch_options(batch, settings)
    settings = settings.model_copy(update={"batch": options is not None})
    control = control or RunControl()
    pending = ((index, case, repeat) for index, (case, repeat) in enumerate(samples))
    head = next(pending, None)
    if head is None:
        raise EvaluatorError("no cases to evaluate", parameter="cases")
    async with AsyncExitStack() as stack:
        prepared = await prepared_model(model, settings, task, stack)
        settings = resolved_settings(settings, prepared, task, pacer=control.pacer)
        asked = prepared.resolved.model
        meter_model(asked)
        return await _evaluate(
            task,
            head,
            pending,
            asked,
            settings,
            model_settings=with_default_retries(asked, model_settings_for(settings, model_settings)) or {},
            control=control,
            collected=Collector(task, keep=keep_records, on_record=on_record, control=control),
            batching=_batching(task, asked, control, options, batch_store),
            reached=reached,
        )


async def _evaluate(
    task: Task[Any],
    head: _Numbered,
    pending: Iterator[_Numbered],
    model: Model,
    settings: RunSettings,
    *,
    model_settings: ModelSettings,
    control: RunControl,
    collected: Collector,
    batching: Batching | None,
    reached: bool,
) -> EvaluationResult:
    redact = Redactor.for_run(model=model)
    mode, tool_choice = settings.mode, settings.tool_choice
    concurrency = settings.concurrency or DEFAULT_CONCURRENCY
    pacer = None  # a batch is queued, not paced
    if batching is None:
        max_wait_s = settings.max_wait_s or DEFAULT_MAX_WAIT_S
        pacer = control.pacer or Pacer(
            rpm=settings.rpm, tpm=settings.tpm, max_wait_s=max_wait_s, concurrency=concurrency
        )
    if tool_choice == "auto":
        model = without_forced_tool_choice(model)
    chosen: ToolChoice | None = None
    if mode == "tool":
        chosen = "required" if forces_tool_choice(model) else "auto"
    reason = "set by the caller" if tool_choice is not None else None

    def poser(for_model: Model) -> _Poser:
        return _Poser(
            task,
            for_model,
            settings,
            model_settings=model_settings,
            traffic=control.traffic,
            redact=redact,
            pacer=pacer,
            batching=batching,
        )

    control.traffic.pacer = pacer
    started = time.perf_counter()
    current = poser(model)
    if batching is not None:  # every sample at once: a batch's turnaround is hours, so none goes first alone
        await _pose_rest(current, itertools.chain([head], pending), collected, batching.options.max_requests, control)
        return _result(collected, "finished", None, chosen, reason if mode == "tool" else None, control, started)

    def stopped_first() -> EvaluationResult:
        """Stopped (Ctrl-C, the max wait) while the first case was in flight: nothing to record."""
        return EvaluationResult(
            records=[], scores=ScoreBook(aggregate=task.aggregate).scores(), status="partial", reason=control.reason,
            tool_choice=chosen, tool_choice_reason=reason if mode == "tool" else None,
            wall_s=round(time.perf_counter() - started, 3),
        )  # fmt: skip

    posed = await _pose_unless_stopped(current, head[1], head[2], control)
    if posed is None:
        return stopped_first()
    first = posed
    may_free = chosen == "required" and tool_choice is None
    if may_free and _refused_forced_choice(first.exception) and not _names_tool_choice(first.exception):
        posed = await _pose_unless_stopped(current, head[1], head[2], control)  # a transient fault passes on a
        if posed is None:  # second try; a refusal repeats
            return stopped_first()
        first = posed
    if may_free and _refused_forced_choice(first.exception):
        fallback = poser(without_forced_tool_choice(model))
        retried = await _pose_unless_stopped(fallback, head[1], head[2], control)
        if retried is None:
            return stopped_first()
        if retried.exception is None:
            reason = f"the server refused a forced tool choice ({first.record.error})"
            current, first, chosen = fallback, retried, "auto"
    if control.max_cost is not None and first.record.cost.usd is None and first.exception is None:
        raise EvaluatorError(
            f"needs a known price, and {first.record.cost.source} is all that is known of this model's cost: give "
            "its prices (USD per million input and output tokens)",
            parameter="max_cost",
        )
    collected.add(head[0], first.record)
    status: RunStatus = "finished"
    why: str | None = None
    if _unreachable(first.exception) and not reached:
        status, why = "dnf", first.record.error
    else:
        await _pose_rest(current, pending, collected, concurrency, control)
    return _result(collected, status, why, chosen, reason if mode == "tool" else None, control, started)


def _result(
    collected: Collector, status: RunStatus, why: str | None, chosen: ToolChoice | None, reason: str | None,
    control: RunControl, started: float,
) -> EvaluationResult:  # fmt: skip
    book = collected.book
    if status == "finished" and book.samples and book.answered == 0 and book.errors == book.samples:
        status, why = "dnf", collected.first_error
    elif status == "finished" and control.stopping:
        status, why = "partial", control.reason
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


def _batching(
    task: Task[Any], model: Model, control: RunControl, batch: BatchOptions | None, store: PendingRequests | None
) -> Batching | None:
    if batch is None:
        return None
    if task.session is not None:
        raise EvaluatorError(
            f"the {task.name} task asks each case in a loop of its own; batches take one question a case",
            parameter="batch",
        )
    if control.max_cost is not None or control.max_requests is not None:
        raise EvaluatorError(
            "sends every sample at once and prices a batch when it ends, so a cost or request budget cannot stop "
            "it in time: limit the cases instead",
            parameter="batch",
        )
    return Batching(model, batch, store or PendingRequests())


async def _pose_unless_stopped(poser: _Poser, case: Case, repeat: int, control: RunControl) -> _Outcome | None:
    """Pose one case; a stop while it is in flight gives it `control.grace_s`, then cancels it (None)."""
    posing = asyncio.create_task(poser.pose(case, repeat))
    stop = asyncio.create_task(control.stopped())
    try:
        await asyncio.wait({posing, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not posing.done():
            await asyncio.wait({posing}, timeout=control.grace_s)
        if posing.done() and not posing.cancelled() and isinstance(posing.exception(), WaitedTooLong):
            control.stop(str(posing.exception()))
            return None
        return posing.result() if posing.done() else None
    finally:
        for task in (posing, stop):
            task.cancel()
        await asyncio.gather(posing, stop, return_exceptions=True)


async def _pose_rest(
    poser: _Poser, pending: Iterator[_Numbered], collected: Collector, concurrency: int, control: RunControl
) -> None:
    """Pose the remaining cases with `concurrency` workers pulling from one iterator (memory stays flat).

    On a stop, no worker takes another case; samples in flight get `control.grace_s`, then are cancelled.
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
                try:
                    outcome = await poser.pose(item[1], item[2])
                except WaitedTooLong as exc:  # the sample stays unrecorded: a resume poses it
                    control.stop(str(exc))
                    return
                collected.add(item[0], outcome.record, outcome.exception)
            finally:
                collected.release()

    another()
    stop = asyncio.create_task(control.stopped())
    try:
        while not stop.done() and (running := {task for task in workers if not task.done()}):
            await asyncio.wait(running | {stop}, return_when=asyncio.FIRST_COMPLETED)
            _raise_failure({task for task in workers if task.done()})  # a worker made since may have ended too
        _raise_failure({task for task in workers if task.done()})
        if running := {task for task in workers if not task.done()}:
            done, _ = await asyncio.wait(running, timeout=control.grace_s)
            _raise_failure(done)
    finally:
        for task in (*workers, stop):
            task.cancel()
        await asyncio.gather(*workers, stop, return_exceptions=True)


def _raise_failure(done: set[asyncio.Task[Any]]) -> None:
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
