"""Pose multiple-choice quizzes to a model through a pydantic-ai agent, and record and score the answers.

The importable core: no argument parsing, no printing. `evaluate()` takes quizzes and a model, and
returns every sample record with the run's scores; `on_record` is called as each sample finishes.

    import asyncio, evaluator
    from schemas import Quiz
    quizzes = [Quiz(id="1", class_name="sums", prompt="2 + 2 = ?\\n1. 3\\n2. 4", options=("3", "4"), correct=2)]
    result = asyncio.run(evaluator.evaluate(quizzes, "test", mode="tool"))
    print(result.scores.macro_accuracy)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_ai import (
    Agent,
    AgentRunError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRequestRejectedError,
    UnexpectedModelBehavior,
    UserError,
    capture_run_messages,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from harness.answers import (
    DEFAULT_SYSTEM_PROMPT,
    OptionAnswer,
    mode_instructions,
    output_spec,
    question_text,
    relaxed_tag_answer,
    strict_tag_answer,
)
from harness.attempts import UserPrices, read_attempts, sample_cost, sample_usage
from harness.errors import EvaluatorError
from harness.providers import forces_tool_choice, resolve_model, without_forced_tool_choice
from harness.scoring import ScoreBook, score_records
from harness.transport import TRAFFIC, SampleTraffic, current_traffic
from schemas import AnswerMode, Quiz, RunStatus, SampleRecord, SampleStatus, Scores

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "EvaluationResult",
    "EvaluatorError",
    "RunControl",
    "UserPrices",
    "default_retries",
    "evaluate",
    "score_records",
]

ToolChoice = Literal["required", "auto"]


def default_retries(mode: AnswerMode) -> int:
    """Corrective retries by default: none in tag mode (parity with farel-bench), 3 otherwise."""
    return 0 if mode == "tag" else 3


@dataclass
class EvaluationResult:
    """Everything a run produced: records in quiz order, their scores, and how the run went."""

    records: list[SampleRecord]
    """In quiz order; empty when the run was made with `keep_records=False`."""
    scores: Scores
    status: RunStatus
    reason: str | None
    """Why the run is `dnf` (the model could not be reached) or `partial` (stopped), else None."""
    tool_choice: ToolChoice | None
    """Tool mode: whether the answer tool call was forced (`required`) or left to the model (`auto`)."""
    tool_choice_reason: str | None
    wall_s: float


@dataclass
class _Outcome:
    record: SampleRecord
    exception: BaseException | None


class _Poser:
    """Poses single quizzes with one agent; holds what every sample of a run shares."""

    def __init__(
        self,
        model: Model,
        *,
        mode: AnswerMode,
        retries: int,
        system_prompt: str | None,
        model_settings: ModelSettings | None,
        local: bool,
        prices: UserPrices | None,
    ) -> None:
        self.mode = mode
        self.retries = retries
        self.local = local
        self.prices = prices
        self.agent: Agent[int, object] = Agent(
            model,
            output_type=output_spec(mode),
            deps_type=int,
            instructions=mode_instructions(mode),
            system_prompt=system_prompt or (),
            model_settings=model_settings,
            retries=retries,
            validation_context=lambda ctx: ctx.deps,
        )

    async def pose(self, quiz: Quiz) -> _Outcome:
        started = time.perf_counter()
        output: object = None
        exception: BaseException | None = None
        traffic = SampleTraffic()
        counting = current_traffic.set(traffic)
        with capture_run_messages() as messages:
            try:
                output = (await self.agent.run(question_text(quiz, self.mode), deps=len(quiz.options))).output
            except UnexpectedModelBehavior as exc:
                exception = exc  # kept only if it is not the retries running out (see below)
            except UserError as exc:
                raise EvaluatorError(f"cannot ask this model in {self.mode} mode: {str(exc).splitlines()[0]}") from None
            except (AgentRunError, OSError) as exc:
                exception = exc
            finally:
                current_traffic.reset(counting)
                TRAFFIC.finished(traffic)
        latency = time.perf_counter() - started
        structured = output if isinstance(output, OptionAnswer) else None
        attempts = read_attempts(messages, self.mode, len(quiz.options), output=structured)
        if isinstance(exception, UnexpectedModelBehavior) and len(attempts) > self.retries:
            exception = None  # the retries ran out: every attempt is invalid and the sample is missing
        usage = sample_usage(messages)
        if self.mode == "tag":
            reply = output if isinstance(output, str) else (attempts[-1].raw if attempts else "")
            answer = strict_tag_answer(reply)
        else:
            answer = str(structured.answer) if structured is not None else None
        status: SampleStatus
        if exception is not None:
            status = "error"
        elif answer is None:
            status = "missing"
        else:
            status = "correct" if answer == str(quiz.correct) else "incorrect"
        record = SampleRecord(
            quiz_id=quiz.id,
            degree=quiz.degree,
            class_name=quiz.class_name,
            options=list(quiz.options),
            correct=quiz.correct,
            ambiguous=quiz.ambiguous,
            mode=self.mode,
            answer=answer,
            status=status,
            reasoning=structured.reasoning if structured is not None else None,
            relaxed_answer=relaxed_tag_answer(attempts[-1].raw)
            if self.mode == "tag" and status == "missing" and attempts
            else None,
            attempts=attempts,
            corrective_retries=max(len(attempts) - 1, 0),
            usage=usage,
            cost=sample_cost(messages, usage, local=self.local, prices=self.prices),
            latency_s=round(latency, 4),
            error=_describe(exception) if exception is not None else None,
            transport_retries=traffic.transport_retries,
            cache_hits=traffic.cache_hits,
        )
        return _Outcome(record, exception)


def _describe(exc: BaseException) -> str:
    """One line naming the failure: HTTP status and body for API errors, the message otherwise."""
    if isinstance(exc, ModelHTTPError):
        body = str(exc.body)[:300] if exc.body is not None else ""
        return f"HTTP {exc.status_code} from {exc.model_name}: {body}".strip().rstrip(":")
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unreachable(exc: BaseException | None) -> bool:
    """The model cannot answer at all: no connection, refused credentials, or no such model."""
    if isinstance(exc, ModelConnectionError | ModelRequestRejectedError | OSError):
        return True
    return isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403, 404)


def _refused_forced_choice(exc: BaseException | None) -> bool:
    """A request error that a server refusing `tool_choice: required` gives (llama-cpp-python: HTTP 500)."""
    return isinstance(exc, ModelHTTPError) and exc.status_code in (400, 422, 500)


@dataclass
class RunControl:
    """Stops a run cleanly, from outside (Ctrl-C) or by a budget: no new sample starts, those in flight get
    `grace_s` seconds to finish and are then cancelled (unrecorded, so a resume poses them again)."""

    max_cost: float | None = None
    """Stop starting samples once the known cost reaches this many USD."""
    max_requests: int | None = None
    """Stop starting samples once this many model requests were made."""
    grace_s: float = 10.0
    reason: str | None = None
    """Why the run was stopped; None while it runs."""
    _event: asyncio.Event | None = field(default=None, repr=False)

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


class _Collector:
    """Takes each finished sample: scores it, keeps it if asked, reports it, and applies the budgets."""

    def __init__(self, *, keep: bool, on_record: Callable[[SampleRecord], None] | None, control: RunControl) -> None:
        self.book = ScoreBook()
        self.records: list[tuple[int, SampleRecord]] | None = [] if keep else None
        self._on_record = on_record
        self._control = control

    def add(self, index: int, record: SampleRecord) -> None:
        self.book.add(record, index)
        if self.records is not None:
            self.records.append((index, record))
        if self._on_record is not None:
            self._on_record(record)
        control = self._control
        if control.max_requests is not None and self.book.requests >= control.max_requests:
            control.stop(f"--max-requests {control.max_requests} reached")
        spent = self.book.cost_usd
        if control.max_cost is not None and spent is not None and spent >= control.max_cost:
            control.stop(f"--max-cost ${control.max_cost:g} reached (${spent:.6f} spent)")


async def evaluate(
    quizzes: Iterable[Quiz],
    model: Model | str,
    *,
    mode: AnswerMode = "tool",
    retries: int | None = None,
    system_prompt: str | None = None,
    model_settings: ModelSettings | None = None,
    concurrency: int = 8,
    local: bool | None = None,
    prices: UserPrices | None = None,
    tool_choice: ToolChoice | None = None,
    on_record: Callable[[SampleRecord], None] | None = None,
    control: RunControl | None = None,
    keep_records: bool = True,
) -> EvaluationResult:
    """Pose every quiz to `model` in `mode` and score the answers.

    `model` is a pydantic-ai model or a model string (`openai:gpt-4o`, `test`). `retries` is the number
    of corrective retries after an invalid output (default: `default_retries(mode)`). `local` marks a
    model whose cost is 0 (default: a test model or loopback server). `tool_choice` forces or frees the
    answer tool call; None tries forcing and falls back to `auto` if the server refuses it on the first
    quiz. The first quiz is posed alone: if the model cannot be reached, the run stops there as `dnf`.
    `control` stops the run early (Ctrl-C, budgets); `keep_records=False` keeps memory flat on huge runs
    (records then reach only `on_record`).
    """
    pending = enumerate(quizzes)
    head = next(pending, None)
    if head is None:
        raise EvaluatorError("no quizzes to evaluate")
    if concurrency < 1:
        raise EvaluatorError(f"concurrency must be at least 1, got {concurrency}")
    if isinstance(model, str):
        resolved = resolve_model(model, mode=mode)
        model, local = resolved.model, resolved.local if local is None else local
    if tool_choice == "auto":
        model = without_forced_tool_choice(model)
    control = control or RunControl()
    retries = default_retries(mode) if retries is None else retries
    chosen: ToolChoice | None = None
    if mode == "tool":
        chosen = "required" if forces_tool_choice(model) else "auto"
    reason = "set by the caller" if tool_choice is not None else None

    def poser(for_model: Model) -> _Poser:
        return _Poser(
            for_model,
            mode=mode,
            retries=retries,
            system_prompt=system_prompt,
            model_settings=model_settings,
            local=bool(local),
            prices=prices,
        )

    started = time.perf_counter()
    current = poser(model)
    first = await current.pose(head[1])
    if chosen == "required" and tool_choice is None and _refused_forced_choice(first.exception):
        fallback = poser(without_forced_tool_choice(model))
        retried = await fallback.pose(head[1])
        if retried.exception is None:
            reason = f"the server refused a forced tool choice ({first.record.error})"
            current, first, chosen = fallback, retried, "auto"
    if control.max_cost is not None and first.record.cost.usd is None and first.exception is None:
        raise EvaluatorError(
            f"--max-cost needs a known price, and {first.record.cost.source} is all that is known of this "
            "model's cost: give --price-in and --price-out"
        )
    collected = _Collector(keep=keep_records, on_record=on_record, control=control)
    collected.add(0, first.record)
    status: RunStatus = "finished"
    why: str | None = None
    if _unreachable(first.exception):
        status, why = "dnf", first.record.error
    else:
        await _pose_rest(current, pending, collected, concurrency, control)
    book = collected.book
    if status == "finished" and book.answered == 0 and book.errors == book.samples:
        status, why = "dnf", first.record.error
    elif status == "finished" and control.stopping:
        status, why = "partial", control.reason
    records = [record for _, record in sorted(collected.records or [], key=lambda pair: pair[0])]
    return EvaluationResult(
        records=records,
        scores=book.scores(),
        status=status,
        reason=why,
        tool_choice=chosen,
        tool_choice_reason=reason if mode == "tool" else None,
        wall_s=round(time.perf_counter() - started, 3),
    )


async def _pose_rest(
    poser: _Poser, pending: Iterator[tuple[int, Quiz]], collected: _Collector, concurrency: int, control: RunControl
) -> None:
    """Pose the remaining quizzes with `concurrency` workers pulling from one iterator (memory stays flat).

    On a stop, no worker takes another quiz; samples in flight get `control.grace_s`, then are cancelled.
    """

    async def worker() -> None:
        for index, quiz in pending:
            if control.stopping:
                return
            outcome = await poser.pose(quiz)
            collected.add(index, outcome.record)

    workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
    everything: asyncio.Future[Any] = asyncio.gather(*workers)
    stop: asyncio.Future[Any] = asyncio.create_task(control.stopped())
    await asyncio.wait([everything, stop], return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if not everything.done():
        await asyncio.wait(workers, timeout=control.grace_s)
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    elif everything.exception() is not None:
        raise everything.exception()  # type: ignore[misc]
