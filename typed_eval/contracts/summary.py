"""Scores of a run and the versioned summary file that stores them with the run's settings."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from typed_eval.contracts.record import AnswerMode, InvalidKind

__all__ = [
    "SCHEMA_VERSION",
    "Aggregate",
    "ChosenSettings",
    "Compliance",
    "DatasetInfo",
    "GroupScore",
    "Pacing",
    "RunSettings",
    "RunStatus",
    "RunSummary",
    "Scores",
    "SourceLog",
    "Totals",
]

SCHEMA_VERSION = 2
"""Version of the summary and record files; bump it, and add a migration (`typed_eval.store.migrations`), on any
breaking change. Version 1 was one suite's only (its suite declares how its runs read today); 2 is the typed-task
format."""

RunStatus = Literal["finished", "partial", "dnf"]
"""`dnf`: the model could not be reached at all (did not finish); `partial`: stopped before the end."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GroupScore(_Model):
    """Counts and mean score of one group (a multiple-choice suite's class: correct, incorrect, missing, all)."""

    group: str
    correct: int = 0
    partial: int = 0
    """Scored above 0 and below 1 (scored tasks only)."""
    incorrect: int = 0
    missing: int = 0
    errors: int = 0
    """Failed calls: left out of the score and counted here."""
    unsupported: int = Field(default=0, exclude_if=lambda count: count == 0)
    """Schemas the provider refused: left out of the score and counted here (left out of the file when none, so a
    run with no refusal is stored as before)."""
    excluded: int = 0
    """Cases recorded but left out of the score (e.g. ambiguous quizzes)."""
    score: float | None = None
    """Mean score of the scored cases (correct, partial, incorrect, missing), weighted by case weight, 0-100: for a
    multiple-choice suite, the accuracy. None when none was scored."""
    cost_usd: float | None = Field(default=None, exclude_if=lambda cost: cost is None)
    """What the group's samples cost, failed calls included; None when no sample's cost is known (left out of the
    file then, so a run stored before it was counted reads as before)."""

    @property
    def cost_per_correct(self) -> float | None:
        """What a solved case of the group cost: its samples' cost over its correct ones."""
        return self.cost_usd / self.correct if self.cost_usd is not None and self.correct else None

    @property
    def scored(self) -> int:
        return self.correct + self.partial + self.incorrect + self.missing


class Compliance(_Model):
    """How well the model kept to the answer format, next to how often it was right."""

    valid_first_try: float | None
    """Percent of answered samples whose first output was valid."""
    valid_after_retries: float | None
    """Percent of answered samples that ended with a valid output."""
    mean_corrective_retries: float | None
    corrective_retries: int
    invalid_outputs: int
    invalid_by_kind: dict[InvalidKind, int]
    relaxed_recoverable: int = 0
    """Text modes: missing replies a relaxed reading would have answered (of which correct: next field)."""
    relaxed_recoverable_correct: int = 0


class Pacing(_Model):
    """What flow control met in a run (all its segments): the provider's rationing and outages, waited out."""

    rate_limited: int = 0
    """Responses answered HTTP 429, each sent again once there was capacity (none a sample's failure)."""
    waits: int = 0
    """Requests that waited for capacity, or for an outage to end, before going out."""
    wait_s: float = 0.0
    """Those waits added up (requests waiting side by side each count)."""
    outages: int = 0
    """Times the provider failed several samples in a row, and requests were held until it answered again."""
    outage_s: float = 0.0
    sent_into_outage: int = 0
    """Requests that failed in an outage or made one (probes included)."""
    stated_rpm: float | None = None
    """The request limit the provider stated (per minute), as last read."""
    stated_tpm: float | None = None
    notes: list[str] = Field(default_factory=list)
    """What the provider stated that could not be true (clamped or ignored)."""


class Totals(_Model):
    """Run-wide sums."""

    requests: int
    input_tokens: int | None
    """None when no sample's count is known (imported logs)."""
    output_tokens: int | None
    reasoning_tokens: int | None
    cache_read_tokens: int | None
    cost_usd: float | None
    """Sum of the known costs; None when no sample's cost is known."""
    cost_complete: bool
    """False when some samples' cost is unknown, so `cost_usd` is a lower bound."""
    cost_sources: list[str]
    mean_latency_s: float | None
    transport_retries: int = 0
    cache_hits: int = 0
    pacing: Pacing | None = None
    """None for runs made before flow control, imported ones and batches."""


Aggregate = Literal["macro", "mean"]
"""How the headline score is made: the mean of the group scores (multiple choice: macro accuracy),
or the mean score over all scored cases."""


class Scores(_Model):
    """Mean score per group, the headline score, task metrics, format compliance and totals."""

    groups: list[GroupScore]
    score: float | None
    """The headline, 0-100, made as `aggregate` says; None when nothing was scored."""
    aggregate: Aggregate = "macro"
    macro_score: float | None
    """Plain mean of the group scores (0-100): for a multiple-choice suite, its macro accuracy."""
    mean_score: float | None
    """Mean score over all scored cases, weighted by case weight (difficulty weights: sum(R x D) / sum(D)), 0-100."""
    metrics: dict[str, float | None] = Field(default_factory=dict)
    """Task-specific run-wide figures (e.g. a graph's edge precision, recall and F1, in percent); None for a figure
    that is not a finite number (NaN, an infinity)."""
    samples: int
    correct: int
    partial: int = 0
    incorrect: int
    missing: int
    errors: int
    unsupported: int = Field(default=0, exclude_if=lambda count: count == 0)
    """Samples whose schema the provider refused (status `unsupported`): left out of the score, as errors are."""
    excluded: int
    compliance: Compliance
    totals: Totals


class DatasetInfo(_Model):
    """Which cases were posed: enough to regenerate or recognise them."""

    suite: str
    """The suite the cases came from: an installed suite's name, or a suite file's."""
    source: Literal["generated", "file", "stdin", "code"]
    """`code`: cases handed to the library directly."""
    path: str | None = None
    md5: str
    """MD5 of the cases (a suite with a published dataset: of its file's bytes, so the two can be compared)."""
    cases: int
    params: dict[str, JsonValue] = Field(default_factory=dict)
    """The generator's arguments (e.g. length, number, seed, shuffle)."""
    limit: int | None = None
    suite_params: dict[str, JsonValue] | None = Field(default=None, exclude_if=lambda params: params is None)
    """The suite's parameters as the run was made with them (`-S key=value`); None for cases handed to the library."""
    suite_version: str | None = Field(default=None, exclude_if=lambda version: version is None)
    """The version of the package that registered the suite (left out, as the parameters, when not known)."""


class SourceLog(_Model):
    """Where an imported run came from (a published log), and whether re-scoring it gave the log's own counts."""

    path: str
    format: str
    """The log's format, as the suite's importer names it."""
    replies: int
    matches_log_summary: bool | None
    """None when the log has no summary lines to check against."""
    mismatches: list[str] = Field(default_factory=list)
    """One line per group whose re-scored counts differ from the log's summary line."""
    notes: list[str] = Field(default_factory=list)


class ChosenSettings(_Model):
    """The settings a caller chooses and a run stores, declared once: the caller's `RunConfig` (typed_eval.core) adds
    what is never stored, the run's `RunSettings` what it fills in. A None is the run's to resolve, once, when it
    starts (`typed_eval.engine.settings.resolve_settings`); `RunSettings` holds the value used."""

    base_url: str | None = None
    """An OpenAI-compatible (or Ollama) server to send the requests to; stored without credentials."""
    mode: AnswerMode = "tool"
    retries: int | None = None
    """Corrective retries after an invalid output; None: 0 in the modes the task asks once, else 3 (resolved)."""
    temperature: float | None = None
    seed: int | None = None
    """The model's sampling seed, where the provider takes one."""
    max_tokens: int | None = None
    """Output tokens per request at most; None: the provider's (a local server's 512, resolved)."""
    system_prompt: str | None = None
    repeats: int = 1
    """How many times each case is posed."""
    judge_model: str | None = None
    """The model an LLM judge grades with; stored, and a resume must keep it. None when nothing is judged."""
    tool_choice: Literal["required", "auto"] | None = None
    """Tool mode: whether the output tool call is forced; None: forced, unless the server refuses it (resolved)."""
    concurrency: int | None = None
    """Requests in flight; None: what suits the model (a local server: 1), else 8 (resolved)."""
    price_in: float | None = None
    """USD per million input tokens, for a model with no known price (with `price_out`)."""
    price_out: float | None = None
    local: bool | None = None
    """The model runs here and costs nothing; None: told by the model (a test model or a loopback server), resolved."""
    chat_format: str | None = None
    """A local model's llama-cpp-python chat handler (default: its own); resolved."""
    batch: bool = False
    """Sent through the provider's batch API (batch prices; see each record's `cost.batch_price`)."""
    rpm: float | None = None
    """A cap on requests per minute (`--rpm`); the provider's stated limits apply besides. Resolved from the run's
    pacer when it is handed one."""
    tpm: float | None = None
    """A cap on tokens per minute (`--tpm`)."""
    max_wait_s: float | None = None
    """How long requests may wait with nothing answered before the run stops as partial (`--max-wait`); None: 600 s,
    resolved (None stored for a batch, which is not paced, and for an imported run)."""
    request_timeout: float | None = None
    """Seconds one request may take before it fails; None: the provider SDK's (600)."""
    max_transport_retries: int | None = None
    """Resends of a request after HTTP 429/5xx, a timeout or a dropped connection; None: the SDK's default (2)."""


class RunSettings(ChosenSettings):
    """What a run used, as its `summary.json` stores it: the caller's choices resolved, and the run's own fields.
    Never holds an API key. Every field has a default, so a summary written before a field existed reads as it did.
    """

    model: str = ""
    """The model's name as the run records it (`openai:gpt-4o`, `local:smollm2-135m`)."""
    instructions: str | None = None
    """What the evaluator adds to tell the model how to answer in this mode (from its task)."""
    tool_choice_reason: str | None = None
    """Why the tool choice is what it is."""
    workers: int = 1
    """Processes that posed the samples (`--workers`), each with `concurrency` requests in flight."""
    model_file: str | None = None
    """A local model's GGUF file."""
    updated_prices: bool = False
    """genai-prices' price data was refreshed from the network for this run (`--update-prices`), not the installed
    (from its config's `update_prices`, a URL, not stored)."""


class RunSummary(_Model):
    """The `summary.json` of a stored run."""

    schema_version: int = SCHEMA_VERSION
    program_version: str
    run_id: str
    suite: str
    task: str
    """The task's name (its output type and scorer)."""
    model: str
    mode: AnswerMode
    status: RunStatus
    reason: str | None = None
    """Why the run is `dnf` or `partial`."""
    imported: bool = False
    """Made from a published log rather than run here."""
    source_log: SourceLog | None = None
    started_at: datetime
    finished_at: datetime
    wall_s: float
    settings: RunSettings
    dataset: DatasetInfo
    scores: Scores
    excluded_case_ids: list[str] = Field(default_factory=list)
