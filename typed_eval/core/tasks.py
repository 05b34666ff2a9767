"""A task is a prompt, a typed output and a scorer: what any benchmark hands to `evaluate()`.

The output type is any type pydantic validates (usually a pydantic model, nested as deep as it likes).
In the structured modes pydantic-ai asks for it and validates it (tool call, response format, or a schema
stated in the prompt); in the text modes the task's reader turns the reply into an output, or None.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import (
    DeferredToolRequests,
    ModelResponse,
    ModelRetry,
    NativeOutput,
    PromptedOutput,
    RunContext,
    TextOutput,
    TextPart,
    ToolCallPart,
    ToolOutput,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.output import OutputSpec
from pydantic_ai.profiles import ModelProfile
from pydantic_core import to_json, to_jsonable_python

from typed_eval.contracts import Aggregate, AnswerMode, Case, Cost, InvalidKind, TokenUsage, is_text_mode
from typed_eval.core.calls import ChatMessage, Functions, Reply
from typed_eval.core.errors import CaseScoringError, TaskError

__all__ = ["Conversation", "Score", "Scorer", "Session", "Task", "TextReader", "TextReply"]

OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class Score:
    """A scorer's verdict: a value in [0, 1] and what it found on the way (stored with the record)."""

    value: float
    details: dict[str, Any] = field(default_factory=dict)
    """JSON-compatible (a non-finite number is stored as null). Numbers in it are summed over the run and handed to
    the task's `metrics`."""
    usage: TokenUsage | None = None
    """What scoring itself asked of a model (an LLM judge): added to the sample's usage."""
    cost: Cost | None = None
    """What those requests cost: added to the sample's cost."""


Scorer = Callable[[Case, OutputT], float | Score | Awaitable[float | Score]]
"""`score(case, output)`: a float in [0, 1] or a `Score`, or an awaitable of either (an LLM judge). A scorer taking a
parameter named `seconds` is given the seconds the sample's requests took (None when not timed): what a duration
check reads."""


class Conversation(Protocol):
    """What a task's `session` asks the model through, for one sample."""

    async def ask(self, prompt: str) -> Any:
        """One request (with its corrective retries) in the task's output and mode, with the run's settings: the valid
        output, or None when the retries ran out. A failed call raises: let it, and the sample is an `error`."""

    @property
    def repeat(self) -> int:
        """Which posing of the case this sample is (0, 1, ... with `repeats`): a trial's index."""

    async def exchange(
        self, messages: Sequence[ChatMessage], functions: Sequence[Mapping[str, Any]], *, seed: int | None = None
    ) -> Reply:
        """One request of a conversation the session keeps itself: `messages` in OpenAI's chat format (`system`,
        `user`, `assistant` with optional `tool_calls`, `tool` with `tool_call_id`) sent as they are, `functions`
        offered as tools (`{"name", "description", "parameters"}`; none: no tools). The reply comes back unread: no
        corrective retry, no call executed. Paced, budgeted and counted with the sample like every request; once the
        run stops (Ctrl-C, a budget) it raises instead: let that propagate, and the sample is `missing` (what it
        spent recorded, nothing scored). `seed`: the sampling seed this request carries instead of the run's (a
        benchmark's own per-trial seed)."""

    def charge(self, usage: TokenUsage, cost: Cost) -> None:
        """Count what the session spent beside its requests (an LLM judge, an embeddings endpoint) with the sample."""


Session = Callable[[Case, Conversation], Awaitable[Any]]
"""`session(case, conversation)`: a case that takes several requests, returning the output to score."""


@dataclass(frozen=True)
class TextReader(Generic[OutputT]):
    """How the text modes read a plain-text reply: `read` gives the output, or None when it cannot.

    A reply that cannot be read is an invalid output of kind `invalid_kind`; with retries left, the
    model is told `feedback` and asked again.
    """

    read: Callable[[str], OutputT | None]
    feedback: str = "Your reply could not be read: answer in the format the question asks for."
    invalid_kind: InvalidKind = "unreadable"
    relaxed: Callable[[str], OutputT | None] | None = None
    """A lenient reading, tried on replies `read` cannot read: reported beside the score, never counted."""
    example: str | None = None
    """A reply `read` can read: what the offline `test` model answers."""


EMPTY_REPLY = "\u2063empty reply\u2063"
"""What `EmptyReplyAsText` puts in a reply with no text, so that pydantic-ai reads it (and not sends it back)."""


class EmptyReplyAsText(AbstractCapability[Any]):
    """A reply with no text and no tool call read as the text "" (a suite may grade it so),
    where pydantic-ai would ask the model again."""

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        return empty_reply_as_text(response)


def empty_reply_as_text(response: ModelResponse) -> ModelResponse:
    """A reply with no text and no tool call given the text `EMPTY_REPLY` (what `EmptyReplyAsText` makes of it)."""
    if any(isinstance(p, ToolCallPart) or (isinstance(p, TextPart) and p.content) for p in response.parts):
        return response
    return replace(response, parts=[*response.parts, TextPart(EMPTY_REPLY)])


@dataclass(frozen=True)
class TextReply:
    """What a text-mode run ends with: the reply and what the reader made of it (None: unreadable)."""

    text: str
    output: Any


@dataclass(frozen=True)
class Task(Generic[OutputT]):
    """What is asked and how the answer is judged: `Task(name="graph", output_type=Graph, score=grade)`."""

    name: str
    output_type: Any
    """Any type pydantic validates: a model (validated as its own config says: strict where its author
    asks for it), a list of models, a union..."""
    score: Scorer[OutputT]
    reader: Callable[[str], OutputT | None] | TextReader[OutputT] | None = None
    """For the text modes; without one, the text modes validate the reply as JSON of `output_type`."""
    instructions: str | Callable[[AnswerMode], str | None] | None = None
    """Told to the model on every request (per mode, when a function)."""
    prompt: Callable[[Case, AnswerMode], str] | None = None
    """The text posed for a case in a mode (default: `case.prompt` as it is)."""
    validation_context: Callable[[Case], Any] | None = None
    """Handed to pydantic as the validation context of this case's output (multiple choice: its option count)."""
    tool_name: str = "final_result"
    """The output tool's name in tool mode (and the schema's name in the other structured modes)."""
    tool_description: str | None = None
    aggregate: Aggregate = "mean"
    """The headline score: the mean over all scored cases, or `macro`, the mean of the group means."""
    metrics: Callable[[Mapping[str, float]], dict[str, float]] | None = None
    """Run-wide figures from the numeric score details summed over the run (e.g. precision and recall from
    edge counts)."""
    example: Any = None
    """A valid output (JSON-compatible): what the offline `test` model answers. Without one, pydantic-ai's
    TestModel makes up data that fits the schema."""
    pose_as: Callable[[Case, AnswerMode], tuple[Task[Any], AnswerMode]] | None = None
    """For cases that differ in what they ask for (plain text for some, a JSON schema for others):
    the task whose output type, reader, instructions and prompt pose this case, and the mode it is posed in.
    The scorer, name and aggregate stay this task's. Default: this task, in the run's mode."""
    session: Session | None = None
    """For cases that take several requests (an answer loop): instead of one request of the case's prompt, the sample
    is `session(case, conversation)`, which asks as often as it needs and returns the output to score (any
    JSON-compatible value). Every request's attempts, usage and cost are the sample's, as is what it charges."""
    empty_reply: bool = False
    """True: in the text modes an empty reply is the text "" (read by `reader`), not sent back for another."""
    bounded_scores: bool = True
    """False: a score may be any finite number (e.g. an assertion's that may give 5)."""
    spans: bool = False
    """True: each sample's asking is recorded as OpenTelemetry spans (pydantic-ai's instrumentation, in memory) and
    the scorer is given them (a parameter `spans`: the SDK's finished spans, None when they could not be recorded)."""
    functions: Functions | None = None
    """For tasks whose answer is the calls a model makes among functions offered per case: `functions(case)` gives
    the case's function definitions (name, description, JSON schema of the parameters). In tool mode they are the
    request's tools, posed as external tools: nothing is run, the model may call none, one or several, and the output
    scored is the calls (`[{"name", "arguments"}]`, arguments as sent) or the text when it called none."""
    messages: Callable[[Case, AnswerMode], Sequence[ChatMessage]] | None = None
    """The conversation posed for a case in a mode (`{"role", "content"}` messages, a system message of its own
    allowed), instead of `prompt`: sent as it is."""
    rejected: Callable[[Case, str], Score] | None = None
    """How a case is scored when the provider rejects its request as no resend can change (a 4xx but 401, 403, 404,
    408, 409 and 429: a context length exceeded), given the error's line: a benchmark may score such a failed call
    as its reply. None: the case's error, left out of the score (as every other failed call is)."""
    asks_once: tuple[AnswerMode, ...] = ()
    """Modes in which the task's original benchmark asked once: no corrective retries there unless the run sets
    `retries` (multiple choice: `tag`, as the benchmarks that read an answer tag score it); 3 in the others."""
    _adapter: TypeAdapter[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise TaskError("a task needs a name")
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(self.output_type)
        except Exception as exc:
            raise TaskError(
                f"task {self.name!r}: output_type {self.output_type!r} is not a type pydantic validates: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        object.__setattr__(self, "_adapter", adapter)

    @property
    def text_reader(self) -> TextReader[OutputT] | None:
        if self.reader is None or isinstance(self.reader, TextReader):
            return self.reader
        return TextReader(self.reader)

    def question(self, case: Case, mode: AnswerMode) -> str:
        return self.prompt(case, mode) if self.prompt is not None else case.prompt

    def instructions_for(self, mode: AnswerMode) -> str | None:
        if callable(self.instructions):
            return self.instructions(mode)
        if self.instructions is not None:
            return self.instructions
        if mode == "tool" and self.functions is None:
            return f"Answer by calling the {self.tool_name} tool."
        return None

    def output_spec(self, mode: AnswerMode) -> OutputSpec[Any]:
        """What the agent must produce in `mode` (pydantic-ai validates it and asks again when invalid)."""
        name, description = self.tool_name, self.tool_description
        if mode == "tool" and self.functions is not None:
            return [str, DeferredToolRequests]
        if mode == "tool":
            return ToolOutput(self.output_type, name=name, description=description)
        if mode == "native":
            return NativeOutput(self.output_type, name=name, description=description)
        if mode == "prompted":
            return PromptedOutput(self.output_type, name=name, description=description)
        return TextOutput(self._read_reply)

    def _read_reply(self, ctx: RunContext[Case], text: str) -> TextReply:
        """Read a text reply; with retries left, an unreadable one is sent back with the reader's feedback."""
        reply, feedback = self.read_reply(text, ctx.deps)
        if reply.output is None and ctx.retry < ctx.max_retries:
            raise ModelRetry(feedback)
        return reply

    def read_reply(self, text: str, case: Case | None) -> tuple[TextReply, str]:
        """A text reply as the task's reader reads it (its output None when it cannot), and what the model is told
        when it is asked again for one it could not read."""
        reader = self.text_reader
        text = "" if text == EMPTY_REPLY else text
        if reader is None:
            try:
                return TextReply(text, self.validate_json(text, case)), ""
            except ValidationError as exc:  # what is wrong, as the structured modes' retries say it
                wrong = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'output'}: {e['msg']}" for e in exc.errors()[:5])
                return TextReply(text, None), f"Your reply is not valid JSON of the requested shape: {wrong}"
            except ValueError:
                return TextReply(text, None), "Your reply is not valid JSON of the requested shape."
        return TextReply(text, reader.read(text)), reader.feedback

    def validate_json(self, text: str, case: Case | None) -> Any:
        """A reply as JSON of the output type (in a code fence or not); raises pydantic's `ValidationError`."""
        body = text.strip()
        if body.startswith("```"):
            body = body.strip("`").removeprefix("json").strip()
        return self._adapter.validate_json(body or "{}", context=self.context_for(case))

    def context_for(self, case: Case | None) -> Any:
        return self.validation_context(case) if self.validation_context is not None and case is not None else None

    def test_model(self, mode: AnswerMode) -> Model:
        """pydantic-ai's TestModel answering with this task's example, so every mode runs offline."""
        example = None if self.example is None else json.dumps(to_jsonable_python(self.example))
        reader = self.text_reader
        if is_text_mode(mode):
            text = reader.example if reader is not None else example
            return TestModel(custom_output_text=text) if text is not None else TestModel()
        if mode == "tool":
            return TestModel(custom_output_args=to_jsonable_python(self.example)) if example else TestModel()
        profile = ModelProfile(supports_json_schema_output=True)
        return TestModel(custom_output_text=example, profile=profile) if example else TestModel(profile=profile)

    @staticmethod
    def dump(output: Any) -> Any:
        """An output as JSON-compatible data (what a record stores)."""
        return to_jsonable_python(output)

    async def grade(
        self, case: Case, output: OutputT, seconds: float | None = None, spans: Sequence[Any] | None = None
    ) -> Score:
        """Run the scorer (given `seconds` and `spans` when it takes parameters of those names); a value outside
        [0, 1], details that are not JSON or a scorer that raises is the task's bug, said in one line, unless it
        raises `CaseScoringError` (that case's error). The details come back as the record stores them."""
        try:
            given = {"seconds": seconds, "spans": spans}
            scorer: Any = self.score  # `Scorer` declares two parameters; one taking these is given them too
            verdict = scorer(case, output, **{name: value for name, value in given.items() if _takes(scorer, name)})
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except CaseScoringError:
            raise
        except Exception as exc:
            raise TaskError(
                f"the scorer of task {self.name!r} failed on case {case.id!r}: {type(exc).__name__}: {exc}"
            ) from exc
        result = verdict if isinstance(verdict, Score) else Score(_number(verdict, self.name, case.id))
        value = _number(result.value, self.name, case.id)
        if not math.isfinite(value) or (self.bounded_scores and not 0.0 <= value <= 1.0):
            raise TaskError(f"the scorer of task {self.name!r} gave {value} for case {case.id!r}: scores are in [0, 1]")
        return replace(result, value=value, details=_json_details(result.details, self.name, case.id))


def _takes(scorer: Callable[..., Any], name: str) -> bool:
    """Whether a scorer takes a parameter `name` (the sample's `seconds`, its `spans`) that a keyword can set."""
    try:
        found = inspect.signature(scorer).parameters.get(name)
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return found is not None and found.kind in (found.POSITIONAL_OR_KEYWORD, found.KEYWORD_ONLY)


def _json_details(details: object, task: str, case_id: str) -> dict[str, Any]:
    """Details as JSON data, as a record stores them (NaN and infinities as null), so what is scored in memory is
    what a stored run scores again."""
    if not isinstance(details, Mapping):
        raise TaskError(
            f"the scorer of task {task!r} gave details of type {type(details).__name__} for case "
            f"{case_id!r}: Score.details is a dict"
        )
    try:
        data: dict[str, Any] = json.loads(to_json(details, inf_nan_mode="null"))
    except ValueError as exc:  # pydantic's serialization error is one
        raise TaskError(
            f"the scorer of task {task!r} gave details that are not JSON for case {case_id!r}: "
            f"{str(exc).splitlines()[0]}"
        ) from None
    return data


def _number(value: object, task: str, case_id: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TaskError(
            f"the scorer of task {task!r} returned {value!r} for case {case_id!r}: return a float "
            "in [0, 1] or evaluator.Score"
        )
    return float(value)
