"""Posing one sample: a pydantic-ai agent asks the case (or a task's session asks several times), its attempts are
read, priced and graded, and the sample's record made."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    ModelHTTPError,
    PendingModelResponse,
    UnexpectedModelBehavior,
    UserError,
    capture_run_messages,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings, merge_model_settings
from pydantic_core import to_jsonable_python

from typed_eval.contracts import (
    AnswerMode,
    Attempt,
    Case,
    Cost,
    RunSettings,
    SampleRecord,
    SampleStatus,
    TokenUsage,
    is_text_mode,
    status_of,
)
from typed_eval.core.attempts import (
    Verdicts,
    added_cost,
    added_usage,
    answers_held,
    priced_attempts,
    read_attempts,
    sample_cost,
    sample_usage,
    validation_errors,
)
from typed_eval.core.calls import (
    AtMostCalls,
    CaseFunctions,
    ChatMessage,
    Reply,
    chat_history,
    last_calls,
    reply_of,
    resent_calls,
    schemas_as_given,
    tool_definitions,
)
from typed_eval.core.errors import CaseScoringError, EvaluatorError, failure_line
from typed_eval.core.recent import RecentAgain
from typed_eval.core.run_config import user_prices
from typed_eval.core.secrets import Redactor, redacted_record
from typed_eval.core.tasks import EMPTY_REPLY, EmptyReplyAsText, Score, Task, TextReply
from typed_eval.engine.first_request import (
    DirectRequests,
    Replaying,
    RetriesRanOut,
    StructuredOutput,
    first_request,
    plain_parameters,
)
from typed_eval.engine.recording import SpanRecording, span_recording
from typed_eval.engine.traces import NO_TRACES, Traces
from typed_eval.providers.batches import Batching, without_pending
from typed_eval.providers.flow import Pacer
from typed_eval.providers.refusals import refuses_schema, scored_rejection
from typed_eval.providers.transport import SampleTraffic, TrafficMeter, current_traffic

__all__ = ["Outcome", "Poser"]


Halt = Callable[[float | None, int], str | None]
"""`halt(sample_cost, sample_requests)`: why a sample that asks several times may not send another request, or None."""


POSERS_KEPT = 128
"""Posers kept of the `pose_as` tasks met again (a task met once, as one made per case, has a poser that goes with its
sample), least recently used dropped: else an agent per case would be kept all run long (`RecentAgain`)."""


class OutputNotPosable(Exception):
    """pydantic-ai refused a case's own output type as its agent was made: that case's error, not the run's."""


class SampleHalted(Exception):
    """The run stopped while a sample was asking several times: the sample ends `missing`, never half-scored."""


@dataclass
class Outcome:
    record: SampleRecord
    exception: BaseException | None


class _Turns:
    """A sample's agent runs (one, or a task session's several): their attempts, usage and cost added up, and what
    the session spent beside them (an LLM judge). The `Conversation` a task's session asks through."""

    def __init__(self, poser: Poser, case: Case, repeat: int) -> None:
        self._poser, self._case, self.repeat = poser, case, repeat
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
        return await self._poser._ask(self._case, self.repeat, prompt, self)

    async def exchange(
        self, messages: Sequence[ChatMessage], functions: Sequence[Mapping[str, Any]], *, seed: int | None = None
    ) -> Reply:
        return await self._poser._exchange(self, messages, functions, seed)

    def add(self, attempts: list[Attempt], usage: TokenUsage, cost: Cost) -> None:
        """One agent run's attempts (its corrective retries are those after its first) and what it used."""
        self.attempts += attempts
        self.corrective_retries += max(len(attempts) - 1, 0)
        self.charge(usage, cost)

    def charge(self, usage: TokenUsage, cost: Cost) -> None:
        self.usage = added_usage(self.usage, usage)
        self._cost = cost if self._cost is None else added_cost(self._cost, cost)


class Poser:
    """Poses single cases with one agent; holds what every sample of a run shares.

    A task whose cases are posed differently (`Task.pose_as`) gets one poser per way of posing, made on first use
    (kept from its second: `POSERS_KEPT`); every one of them scores with the run's task.
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
        halt: Halt | None = None,
        traces: Traces = NO_TRACES,
        recording: SpanRecording | None = None,
    ) -> None:
        self.task = task
        self.traces = traces
        self.grader = grader or task
        self.recording = recording if recording is not None else span_recording(self.grader, traces)
        self.model = model = self.recording.instrumented(model)
        self.settings = settings
        self._posers: RecentAgain[Task[Any], Poser] = RecentAgain(POSERS_KEPT)
        self.redact = redact
        self.mode = settings.mode
        self.retries = settings.retries or 0  # resolved (`resolve_settings`): never None
        self.local = bool(settings.local)
        self.prices = user_prices(settings)
        self.traffic = traffic
        self.pacer = pacer
        self.model_settings = model_settings
        self.batching = batching
        self.halt = halt
        context = task.validation_context
        output_spec = task.output_spec(self.mode)
        capabilities: list[Any] = [batching.capability] if batching is not None else []
        self.calls = task.functions is not None and self.mode == "tool"
        """The answer is the calls the model makes among the case's functions (external tools, never run)."""
        capabilities += [EmptyReplyAsText()] if (task.empty_reply and is_text_mode(self.mode)) or self.calls else []
        capabilities += [AtMostCalls()] if self.calls else []
        toolsets = [CaseFunctions(task.functions, self.retries)] if self.calls and task.functions else None
        self.instructions = instructions = task.instructions_for(self.mode)
        self.requests = DirectRequests(model)
        self.exchanges = DirectRequests(schemas_as_given(model))
        self._new_agent = functools.partial(
            Agent[Case, Any],
            model,
            output_type=[output_spec, PendingModelResponse] if batching is not None else output_spec,
            capabilities=capabilities or None,
            toolsets=toolsets,
            deps_type=Case,
            instructions=instructions,
            system_prompt=settings.system_prompt or (),
            model_settings=model_settings or None,
            retries=self.retries,
            validation_context=(lambda ctx: context(ctx.deps)) if context is not None else None,
        )
        asked_alike = self.calls or is_text_mode(self.mode)
        self.structured = None if asked_alike or batching is not None else StructuredOutput.of(output_spec)
        self.direct = (asked_alike or self.structured is not None) and batching is None and not settings.system_prompt
        """A case's conversation is asked first without an agent run (`first_request`): the agent adds nothing to it,
        and is made only for a reply it would do more with."""
        self._agent = None if self.direct else self._new_agent()  # pydantic-ai refuses an output type as it makes one

    @property
    def agent(self) -> Agent[Case, Any]:
        if self._agent is None:
            self._agent = self._new_agent()
        return self._agent

    def _verdicts(
        self, case: Case, accepted: bool, error: BaseException | None, functions: Sequence[Mapping[str, Any]] | None
    ) -> Verdicts:
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
            offered=frozenset(str(doc.get("name")) for doc in functions) if functions is not None else None,
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

    def _poser_for(self, case: Case) -> Poser | OutputNotPosable:
        """This poser, or the one for the task and mode `pose_as` gives this case (or why pydantic-ai refused it)."""
        if self.task.pose_as is None:
            return self
        task, mode = self.task.pose_as(case, self.mode)
        if task is self.task and mode == self.mode:
            return self
        try:
            return self._posers.get(task, mode, lambda: self._made(task, mode))
        except (EvaluatorError, asyncio.CancelledError):
            raise
        except Exception as exc:  # pydantic-ai reads the output type as the poser is made: this case's error
            return OutputNotPosable(f"pydantic-ai cannot pose it: {type(exc).__name__}: {exc}")

    def _made(self, task: Task[Any], mode: AnswerMode) -> Poser:
        """A poser of another task or mode, sharing this one's model, traffic, pacing, grader and traces."""
        return Poser(
            task,
            self.model,
            self.settings.model_copy(update={"mode": mode}),
            model_settings=self.model_settings,
            traffic=self.traffic,
            redact=self.redact,
            pacer=self.pacer,
            grader=self.grader,
            batching=self.batching,
            halt=self.halt,
            traces=self.traces,
            recording=self.recording,
        )

    async def pose(self, case: Case, repeat: int = 0) -> Outcome:
        with self.traces.case(self.task.name, case, repeat, self.settings.repeats) as span:
            poser = self._poser_for(case)
            refused = poser if isinstance(poser, OutputNotPosable) else None
            outcome = await (poser if isinstance(poser, Poser) else self)._pose(case, repeat, refused)
            span.record(outcome.record)
        return outcome

    async def _ask(self, case: Case, repeat: int, prompt: str, turns: _Turns) -> Any:
        """One agent run, its attempts, usage and cost added to `turns`: the valid output, or None when the
        corrective retries ran out on invalid ones. A failed call raises (the sample is then an `error`)."""
        output: Any
        exception: BaseException | None = None
        batching, key = self.batching, (case.id, repeat)
        history = batching.pending.history(key) if batching is not None else None
        posed = self.task.messages
        prefix = 0  # the messages of the case's own conversation: posed, not answered
        if posed is not None:
            conversation = chat_history(posed(case, self.mode))
            prefix, history = len(conversation), history or conversation
        functions = self.task.functions(case) if self.calls and self.task.functions else None
        direct = self.direct and posed is not None and (functions is not None or not self.calls)
        while True:
            output = None
            with capture_run_messages() as captured:
                messages = captured
                try:
                    settings = self._settings_for(repeat)
                    asked = None if history else prompt
                    answered = history[prefix:] if history else None
                    left = max(self.retries - answers_held(answered), 0) if answered else None  # the sample's
                    model: Model | None = None  # the agent's own, or one replaying the reply asked directly
                    if direct and history:
                        direct, merged = False, merge_model_settings(self.model_settings or None, settings)
                        parameters, read = first_request(
                            self.task, case, functions, self.structured, self.retries, self.instructions
                        )
                        replied = await self.requests.ask_first(history, merged, parameters, read)
                        if isinstance(replied, Replaying):
                            model = replied
                        else:
                            messages, output = replied
                            if isinstance(output, RetriesRanOut):
                                raise UnexpectedModelBehavior(output.message) from output.cause
                    if messages is captured:
                        run = self.agent.run(
                            asked,
                            message_history=history,
                            deps=case,
                            model_settings=settings,
                            retries=left,
                            model=model,
                        )
                        output = (await run).output
                except UserError as exc:
                    first = str(exc).splitlines()[0]
                    raise EvaluatorError(
                        f"cannot ask this model in {self.mode} mode: {first}", parameter="mode"
                    ) from None
                except (EvaluatorError, asyncio.CancelledError):
                    raise
                except Exception as exc:  # a failed call or a malformed response is this sample's error
                    exception = exc
            if self.calls and isinstance(output, DeferredToolRequests) and exception is None:
                resent = resent_calls(messages, prefix, functions, self.retries)
                if resent is not None:  # a reply of valid and invalid calls, with retries left: asked again
                    history = resent
                    continue
            if batching is None or not isinstance(output, PendingModelResponse):
                break
            history = list(messages)
            await batching.wait(key, history, self.traffic)
        if batching is not None:
            batching.done(key, self.traffic)
            messages = without_pending(messages)
        messages = messages[prefix:]
        value = output.output if isinstance(output, TextReply) else output
        if self.calls and isinstance(output, DeferredToolRequests):
            value = last_calls(messages)  # every call as sent (pydantic-ai defers only the valid ones)
        if self.calls and value == EMPTY_REPLY:
            value = ""
        attempts = [
            a.model_copy(update={"raw": ""}) if a.raw == EMPTY_REPLY else a
            for a in read_attempts(messages, self._verdicts(case, value is not None, exception, functions))
        ]
        attempts = await self._scored(
            case, priced_attempts(attempts, messages, local=self.local, prices=self.prices), turns
        )
        usage = sample_usage(messages)
        turns.add(attempts, usage, sample_cost(messages, usage, local=self.local, prices=self.prices))
        if isinstance(exception, UnexpectedModelBehavior) and len(attempts) > self.retries:
            # the retries ran out: every attempt is invalid; the last one's calls are scored as they are
            return last_calls(messages) if self.calls else None
        if exception is not None:
            raise exception
        return value

    async def _scored(self, case: Case, attempts: list[Attempt], turns: _Turns) -> list[Attempt]:
        """A task answered by calls: each invalid attempt that a retry followed scored on its calls as sent, the score
        the sample would have had with no more retries (the last attempt's is the sample's own)."""
        if not self.calls:
            return attempts
        scored = []
        for k, attempt in enumerate(attempts):
            if not attempt.valid and k < len(attempts) - 1:
                verdict = await self.grader.grade(case, json.loads(attempt.raw))
                if verdict.usage is not None and verdict.cost is not None:  # a judge's requests are the sample's
                    turns.charge(verdict.usage, verdict.cost)
                attempt = attempt.model_copy(update={"score": verdict.value})
            scored.append(attempt)
        return scored

    async def _exchange(
        self, turns: _Turns, messages: Sequence[ChatMessage], functions: Sequence[Mapping[str, Any]], seed: int | None
    ) -> Reply:
        """One request of a session's own conversation, sent as it is (with `seed` when given); its reply counted
        with the sample. Refused (`SampleHalted`) once the run stops or this request would take it past a budget."""
        if self.halt is not None and (reason := self.halt(turns.cost.usd, turns.usage.requests)) is not None:
            raise SampleHalted(reason)
        own = ModelSettings(seed=seed) if seed is not None else self._settings_for(turns.repeat)
        settings = merge_model_settings(self.model_settings or None, own)
        parameters = plain_parameters(tool_definitions(functions))
        response = await self.exchanges.reply(chat_history(messages), settings, parameters)
        reply = reply_of(response)
        usage = sample_usage([response])
        cost = sample_cost([response], usage, local=self.local, prices=self.prices)
        raw = json.dumps([call.__dict__ for call in reply.calls], ensure_ascii=False) if reply.calls else reply.text
        attempt = Attempt(
            valid=True, raw=raw, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost_usd=cost.usd
        )
        turns.add([attempt], usage, cost)
        return reply

    async def _pose(self, case: Case, repeat: int, refused: OutputNotPosable | None = None) -> Outcome:
        started = time.perf_counter()
        value: Any = None
        exception: BaseException | None = None
        traffic = SampleTraffic(self.traffic, self.pacer, f"{case.id}\x00{repeat}", self.redact)
        counting = current_traffic.set(traffic)
        turns = _Turns(self, case, repeat)
        recording = self.recording.sample()  # the spans of the asking: pydantic_evals' `context_subtree` of its task
        with self.traces.execute(self.task.name), recording as spans:  # the asking, not the grading, as the task span
            try:
                if refused is not None:
                    raise refused
                if self.task.session is None:
                    value = await self._ask(case, repeat, self.task.question(case, self.mode), turns)
                else:
                    value = await self.task.session(case, turns)
            except SampleHalted:
                value = None  # what it spent is recorded, its partial answer is not scored
            except (EvaluatorError, asyncio.CancelledError):
                raise
            except Exception as exc:  # a failed call or a malformed response is this sample's error, not the run's
                exception = exc
            finally:
                current_traffic.reset(counting)
                traffic.set_waiting(False)
        latency = time.perf_counter() - started - traffic.wait_s
        attempts, usage = turns.attempts, turns.usage
        relaxed_output: Any = None
        relaxed: Score | None = None
        status: SampleStatus
        if isinstance(exception, ModelHTTPError):  # sent and answered, though pydantic-ai counts no request
            usage = usage.model_copy(update={"requests": usage.requests + 1})
        verdict = scored_rejection(self.task, case, exception)  # a failed call as the task's benchmark scores it
        if verdict is not None:
            status, exception = status_of(verdict.value), None
        elif exception is not None:
            status = "unsupported" if refuses_schema(exception) else "error"  # a refusal is the provider's answer
        elif value is None:
            status = "missing"
            reader = self.task.text_reader
            if is_text_mode(self.mode) and reader is not None and reader.relaxed is not None and attempts:
                relaxed_output = reader.relaxed(attempts[-1].raw)
                if relaxed_output is not None:
                    with contextlib.suppress(CaseScoringError):  # unscored, as the case's missing output is
                        relaxed = await self.grader.grade(case, relaxed_output)
        else:
            try:
                verdict = await self.grader.grade(case, value, latency, spans)
                status = status_of(verdict.value)
            except CaseScoringError as exc:  # this case's error (its output kept), not the run's
                exception, status = exc, "error"
        cost = turns.cost
        failed: list[Score | CaseScoringError] = [exception] if isinstance(exception, CaseScoringError) else []
        for graded in [*(g for g in (verdict, relaxed) if g is not None), *failed]:  # what an LLM judge spent grading
            usage = added_usage(usage, graded.usage) if graded.usage is not None else usage
            cost = added_cost(cost, graded.cost) if graded.cost is not None else cost
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
            error=failure_line(exception) if exception is not None else None,  # redacted with the whole record below
            transport_retries=traffic.transport_retries,
            cache_hits=traffic.cache_hits,
            rate_limited=traffic.rate_limited,
            wait_s=round(traffic.wait_s, 4),
        )
        return Outcome(redacted_record(record, self.redact), exception)  # a key a server echoes is not stored either
