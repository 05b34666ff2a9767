"""A run's config resolved, once, into the settings it uses and stores; the model opened and asked as they say.

`resolve_settings` is the one place a None of the caller's `RunConfig` becomes the value used (the mode's corrective
retries, the model's concurrency and answer cap, the pacer's limits...) and the run's own fields are filled in.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from typed_eval.contracts import AnswerMode, ChosenSettings, RunSettings
from typed_eval.core.run_config import BatchOptions, RunConfig
from typed_eval.core.tasks import Task
from typed_eval.providers.flow import DEFAULT_MAX_WAIT_S, Pacer
from typed_eval.providers.prepared_model import PreparedModel, open_model
from typed_eval.providers.resolve import ResolvedModel

__all__ = [
    "DEFAULT_CONCURRENCY",
    "batch_options",
    "default_retries",
    "model_name",
    "model_settings_for",
    "prepared_model",
    "resolve_settings",
]

DEFAULT_CONCURRENCY = 8
"""Requests in flight when neither the caller nor the model (a local server: 1) says how many."""


def default_retries(mode: AnswerMode, task: Task[Any]) -> int:
    """Corrective retries by default: none in the modes where the task's original benchmark asked once
    (`Task.asks_once`), so scores there line up with its published ones; 3 otherwise."""
    return 0 if mode in task.asks_once else 3


def resolve_settings(
    config: RunConfig,
    prepared: PreparedModel,
    task: Task[Any],
    *,
    batch: bool,
    pacer: Pacer | None = None,
    workers: int = 1,
    imported: bool = False,
) -> RunSettings:
    """What a run of `task` on `prepared` uses, as `config` asks: each None resolved, the run's own fields filled.
    `batch`: sent through a batch API (not paced); `pacer`: the run's, whose limits are then the run's; `workers`:
    processes posing the run; `imported`: a replay of published results (not paced either)."""
    resolved, mode = prepared.resolved, config.mode
    rpm, tpm = config.rpm, config.tpm
    max_wait_s: float | None = config.max_wait_s or DEFAULT_MAX_WAIT_S
    if batch or imported:  # a batch is queued, a replay answers at once: neither is paced
        rpm, tpm, max_wait_s = None, None, None
    elif pacer is not None:
        rpm, tpm, max_wait_s = pacer.rpm, pacer.tpm, pacer.max_wait_s
    tool = mode == "tool"
    chosen = config.model_dump(include=set(ChosenSettings.model_fields))
    return RunSettings(
        **{
            **chosen,
            "base_url": resolved.base_url,
            "retries": default_retries(mode, task) if config.retries is None else config.retries,
            "max_tokens": config.max_tokens or prepared.max_tokens,
            "tool_choice": config.tool_choice or prepared.tool_choice if tool else None,
            "concurrency": config.concurrency or prepared.concurrency or DEFAULT_CONCURRENCY,
            "local": resolved.local if config.local is None else config.local,
            "chat_format": prepared.chat_format,
            "batch": batch,
            "rpm": rpm,
            "tpm": tpm,
            "max_wait_s": max_wait_s,
        },
        model=resolved.name,
        instructions=task.instructions_for(mode),
        tool_choice_reason=prepared.tool_choice_reason if tool else None,
        workers=workers,
        model_file=prepared.model_file,
        updated_prices=config.update_prices is not None,
    )


def batch_options(config: RunConfig) -> BatchOptions | None:
    """How a run batches: `config.batch_options` when `config.batch` (None there: the default options), else not."""
    if not config.batch:
        return None
    return config.batch_options or BatchOptions()


def model_name(model: Model) -> str:
    """How a run names a model it was handed as an object: `system:model_name` (e.g. `openai:gpt-4o`)."""
    return f"{model.system}:{model.model_name}" if model.system else model.model_name


async def prepared_model(
    model: Model | str | PreparedModel, config: RunConfig, task: Task[Any], stack: AsyncExitStack
) -> PreparedModel:
    """`model` ready to be asked: a model string opened (`open_model`, closed with `stack`), a `Model` as it is."""
    if isinstance(model, str):
        return await stack.enter_async_context(open_model(model, config, task=task))
    if isinstance(model, PreparedModel):
        return model
    return PreparedModel(ResolvedModel(model, model_name(model), None, local=False), config.tool_choice)


def model_settings_for(settings: RunSettings, given: ModelSettings | None = None) -> ModelSettings:
    """The pydantic-ai model settings that a run's `settings` make, with a caller's own (`given`) on top."""
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
