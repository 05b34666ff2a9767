"""LLM judges: a second pydantic-ai agent whose typed output is a verdict (a score and its reason).

Why typed: the verdict is validated like any output (a score outside its range is sent back for a retry), so a judge's
answer is never parsed by hand. What the judge spends is handed back with its verdict, so a sample's usage and cost
include the grading of it. Case files' `llm-rubric` assertions are judged here, and so are the novelty suite's
answers (for coherence); `judged()` gives a task its judge for as long as a run lasts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field
from pydantic_ai import Agent, UnexpectedModelBehavior, capture_run_messages
from pydantic_ai.models import Model
from pydantic_ai.models.test import TestModel
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from typed_eval.contracts import Cost, TokenUsage
from typed_eval.core.attempts import UserPrices, sample_cost, sample_usage
from typed_eval.core.errors import EvaluatorError, InputError
from typed_eval.core.secrets import Redactor
from typed_eval.core.tasks import Task
from typed_eval.providers.prepared_model import PreparedModel, open_model
from typed_eval.providers.resolve import ResolvedModel, without_forced_tool_choice
from typed_eval.suites.case_files.assertions import Graded

__all__ = [
    "JUDGE_INSTRUCTIONS",
    "Judge",
    "JudgeVerdict",
    "Judging",
    "Ruling",
    "asked_as_the_run",
    "judge_name",
    "judged",
    "open_judge",
]

JUDGE_INSTRUCTIONS = (
    "You grade an output against a rubric. Read the output, then decide how far it meets the rubric: score 1 when "
    "it meets it fully, 0 when it does not meet it at all, and a value in between when it meets it in part. Judge "
    "only what the rubric asks for. Give your reason in one or two sentences, then the score."
)

VerdictT = TypeVar("VerdictT", bound=BaseModel)


class JudgeVerdict(BaseModel):
    """What the judge answers, through its output tool."""

    reason: str = Field(description="Why the output does or does not meet the rubric, in one or two sentences.")
    score: float = Field(ge=0, le=1, description="How far the output meets the rubric: 0 not at all, 1 fully.")


@dataclass(frozen=True)
class Ruling(Generic[VerdictT]):
    """A judge's typed verdict, or None (with why) when it gave no valid one after its retries; and what it cost."""

    verdict: VerdictT | None
    failure: str | None
    usage: TokenUsage
    cost: Cost


class Judge:
    """Grades with `model` (rubrics by calling it; any typed verdict with `rule`); `name` is recorded with verdicts."""

    def __init__(
        self,
        model: Model,
        name: str,
        *,
        local: bool = False,
        prices: UserPrices | None = None,
        model_settings: ModelSettings | None = None,
        retries: int = 2,
    ) -> None:
        self.name = name
        self.local = local
        self.prices = prices
        self._model = model
        self._redact = Redactor.for_run(model=model)
        self._settings = model_settings
        self._retries = retries
        self._agents: dict[tuple[type[BaseModel], str], Agent[None, Any]] = {}

    @property
    def model(self) -> Model:
        """The model it grades with (a pydantic_evals LLMJudge of a dataset is handed it)."""
        return self._model

    @property
    def model_settings(self) -> ModelSettings | None:
        """The run's temperature, timeout and answer cap, as the judge asks with them."""
        return self._settings

    async def rule(self, prompt: str, verdict: type[VerdictT], instructions: str) -> Ruling[VerdictT]:
        """Ask for a verdict of type `verdict`; a call that fails (not an invalid verdict) stops the run in one line."""
        key = (verdict, instructions)
        if key not in self._agents:
            self._agents[key] = Agent(
                self._model,
                output_type=verdict,
                instructions=instructions,
                model_settings=self._settings,
                retries=self._retries,
            )
        given: VerdictT | None = None
        failure: str | None = None
        with capture_run_messages() as messages:
            try:
                given = (await self._agents[key].run(prompt)).output
            except UnexpectedModelBehavior as exc:  # no valid verdict after the retries
                failure = " ".join(str(exc).split())
            except Exception as exc:
                text = self._redact(" ".join(str(exc).split()))  # a server may echo the key or the URL's password
                raise EvaluatorError(f"the judge {self.name} failed: {type(exc).__name__}: {text}") from None
        usage = sample_usage(messages)
        return Ruling(given, failure, usage, sample_cost(messages, usage, local=self.local, prices=self.prices))

    async def __call__(self, rubric: str, output: str) -> Graded:
        prompt = f"<Output>\n{output}\n</Output>\n<Rubric>\n{rubric}\n</Rubric>"
        ruling = await self.rule(prompt, JudgeVerdict, JUDGE_INSTRUCTIONS)
        extra = {"judge": self.name}
        if ruling.verdict is None:  # the assertion scores 0
            return Graded(0.0, f"the judge gave no valid verdict: {ruling.failure}", extra, ruling.usage, ruling.cost)
        return Graded(ruling.verdict.score, ruling.verdict.reason, extra, ruling.usage, ruling.cost)


@runtime_checkable
class Judging(Protocol):
    """The part of a task an LLM judge grades with (a case file's scorer, the novelty suite's answer loop)."""

    @property
    def judge(self) -> Any:
        """The judge given (None before `judged_task`)."""

    @property
    def needs_judge(self) -> bool:
        """False when nothing in this task is judged (a case file with no llm-rubric assertion)."""

    @property
    def test_verdict(self) -> Any:
        """What the offline `test` model answers as this judge (None: pydantic-ai's made-up verdict)."""

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        """`task`, graded by `judge`."""


def _judging(task: Task[Any]) -> Judging | None:
    for part in (task.score, task.session):
        if isinstance(part, Judging):
            return part
    return None


def judge_name(task: Task[Any]) -> str | None:
    """The model a task's LLM judge grades with (what a run stores, and a resume must keep); None when unjudged."""
    judge = judging.judge if (judging := _judging(task)) is not None else None
    return judge.name if isinstance(judge, Judge) else None


@asynccontextmanager
async def judged(
    task: Task[Any],
    judge_spec: str | None,
    run_model: PreparedModel,
    *,
    cache_path: Path | None = None,
    request_timeout: float | None = None,
    prices: UserPrices | None = None,
    temperature: float | None = None,
) -> AsyncIterator[Task[Any]]:
    """The task with its judge, for as long as the block lasts: `judge_spec` (opened like `--model`, without the
    run's base URL or key), or the run's own model. Tasks that judge nothing come back as they are."""
    judging = _judging(task)
    if judging is None:
        if judge_spec is not None:
            raise InputError(
                f"the {task.name} task judges nothing: a judge grades the llm-rubric assertions of a case file and "
                "the answers of the novelty suite",
                parameter="judge_model",
            )
        yield task
        return
    if not judging.needs_judge:
        yield task
        return
    async with open_judge(
        judge_spec,
        run_model,
        cache_path=cache_path,
        request_timeout=request_timeout,
        prices=prices,
        temperature=temperature,
        task=task,
        test_verdict=judging.test_verdict,
    ) as judge:
        yield judging.judged_task(task, judge)


@asynccontextmanager
async def open_judge(
    judge_spec: str | None,
    run_model: PreparedModel,
    *,
    cache_path: Path | None = None,
    request_timeout: float | None = None,
    prices: UserPrices | None = None,
    temperature: float | None = None,
    task: Task[Any] | None = None,
    test_verdict: Any = None,
) -> AsyncIterator[Judge]:
    """A judge on `judge_spec`, or on the run's model (whose `prices` it then shares), with the run's temperature,
    timeout and answer cap. `test_verdict` is what the offline `test` model answers as the judge."""
    async with AsyncExitStack() as stack:
        prepared = run_model
        spec = judge_spec.strip() if judge_spec is not None else run_model.resolved.name
        if spec == "test" and test_verdict is not None:
            answers = TestModel(custom_output_args=to_jsonable_python(test_verdict))
            prepared = PreparedModel(ResolvedModel(answers, "test", None, local=True))
        elif spec != run_model.resolved.name:
            try:
                prepared = await stack.enter_async_context(
                    open_model(spec, cache_path=cache_path, request_timeout=request_timeout, task=task)
                )
            except EvaluatorError as exc:
                if exc.parameter == "model":  # the judge's model, not the run's
                    exc.parameter = "judge_model"
                raise
        model, settings = asked_as_the_run(prepared, temperature, request_timeout)
        yield Judge(
            model,
            prepared.resolved.name,
            local=prepared.resolved.local,
            prices=prices if prepared is run_model else None,
            model_settings=settings,
        )


def asked_as_the_run(
    prepared: PreparedModel, temperature: float | None, request_timeout: float | None
) -> tuple[Model, ModelSettings]:
    """A second model of a run (a judge, a simulated user) and the settings it is asked with: the run's temperature,
    timeout and answer cap, its tool choice left to it where the server refuses a forced one."""
    model = prepared.resolved.model
    if prepared.tool_choice == "auto":
        model = without_forced_tool_choice(model)
    settings = ModelSettings()
    if temperature is not None:
        settings["temperature"] = temperature
    if prepared.max_tokens is not None:
        settings["max_tokens"] = prepared.max_tokens
    if request_timeout is not None:
        settings["timeout"] = request_timeout
    return model, settings
