"""Every model string the program knows, made ready to ask: pydantic-ai's, `local:` (a llama-cpp-python server
started here and always stopped), `ollama:` (checked, pulled on request), and those a plug-in answers (the
entry-point group `typed_eval.models`: `replay:`, a published log replayed, is a suite's own).

The library and the command line share this, so every model the CLI can run, `evaluate()` can run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from typed_eval.core.errors import ModelSetupError
from typed_eval.core.plugins import plugin_points
from typed_eval.core.run_config import RunConfig, config_with
from typed_eval.core.tasks import Task
from typed_eval.providers.local_server import DEFAULT_LOCAL_MODEL, LlamaServer, check_mode, locate_local_model
from typed_eval.providers.resolve import ResolvedModel, resolve_model
from typed_eval.providers.transport import ResponseCache, http_client

__all__ = ["DEFAULT_LOCAL_MODEL", "MODEL_PLUGINS", "PreparedModel", "open_model"]


@dataclass(frozen=True)
class PreparedModel:
    """A model ready to be asked, with the defaults that suit where it runs."""

    resolved: ResolvedModel
    tool_choice: Literal["required", "auto"] | None = None
    tool_choice_reason: str | None = None
    concurrency: int | None = None
    """What suits the model (local servers: 1); None for the caller's default."""
    max_tokens: int | None = None
    model_file: str | None = None
    chat_format: str | None = None


MODEL_PLUGINS = "typed_eval.models"
"""The entry-point group of model strings answered by a plug-in: its name is the prefix (`replay` answers
`replay:LOGFILE`), its value a function taking the text after `prefix:` and returning a `ResolvedModel`."""


def _plugin(spec: str) -> Callable[[str], ResolvedModel] | None:
    """The plug-in that answers `spec`'s prefix, if one is installed."""
    prefix, sep, _ = spec.partition(":")
    if not sep:
        return None
    for entry in plugin_points(MODEL_PLUGINS):
        if entry.name == prefix:
            try:
                found: Callable[[str], ResolvedModel] = entry.load()
            except Exception as exc:
                raise ModelSetupError(
                    f"the plug-in for {prefix}: models ({entry.value}) cannot be loaded: {type(exc).__name__}: {exc}",
                    parameter="model",
                ) from None
            return found
    return None


@asynccontextmanager
async def open_model(
    spec: str,
    config: RunConfig | None = None,
    *,
    api_key: str | None = None,
    cache_path: Path | None = None,
    pull: bool = False,
    console: Console | None = None,
    on_status: Callable[[str], None] | None = None,
    task: Task[Any] | None = None,
    **changes: Any,
) -> AsyncIterator[PreparedModel]:
    """The model named by `spec`, with whatever it needs running for as long as the `with` block lasts.

    `config` (a `RunConfig`, with `changes` to its fields checked as `evaluate()` checks them) gives the
    `mode`, `base_url`, `request_timeout`, `tool_choice`, `chat_format` and `batch`. `local:NAME` starts
    llama-cpp-python's server on a free loopback port and stops it on every way out; `ollama:NAME` checks the
    server has the model (pulling it when `pull`, drawing progress on `console`); a prefix that an installed plug-in
    names (the entry-point group `typed_eval.models`: `replay:LOGFILE` answers from a published log) is answered
    by it; `test` is pydantic-ai's TestModel answering with `task`'s example output; `batch` picks an
    OpenAI-compatible server's Batch API. `on_status` hears what is being done. Requests go through a metered HTTP
    client (transport retries counted per sample), answered from the response cache at `cache_path` if given.
    """
    settings = config_with(config, **changes)
    mode, base_url, tool_choice = settings.mode, settings.base_url, settings.tool_choice
    async with AsyncExitStack() as stack:
        cache = stack.enter_context(closing(ResponseCache(cache_path))) if cache_path is not None else None
        http = http_client(cache=cache, timeout=settings.request_timeout)
        stack.push_async_callback(http.aclose)
        plugin = None if spec.startswith(("local:", "ollama:")) else _plugin(spec)
        if spec.strip() == "test" and task is not None:
            yield PreparedModel(ResolvedModel(task.test_model(mode), "test", None, local=True), tool_choice)
        elif plugin is not None:
            yield PreparedModel(plugin(spec.partition(":")[2]), tool_choice)
        elif spec.startswith("local:"):
            local = locate_local_model(spec, chat_format=settings.chat_format)
            check_mode(local, mode)
            if on_status is not None:
                on_status(f"starting llama-cpp-python's server for {spec} ({local.path.name})")
            server = stack.enter_context(LlamaServer(local))
            resolved = replace(resolve_model(local.path.stem, base_url=server.url, http_client=http), name=spec)
            yield PreparedModel(
                resolved,
                tool_choice or "auto",
                None if tool_choice else "llama-cpp-python's server accepts only tool_choice auto",
                concurrency=1,
                max_tokens=512,
                model_file=str(local.path),
                chat_format=local.chat_format,
            )
        elif spec.startswith("ollama:"):
            from typed_eval.providers.ollama_models import (  # only here: 0.1 s of start-up
                ensure_ollama_model,
                ollama_host,
            )

            host = ollama_host(base_url)
            ensure_ollama_model(host, spec.removeprefix("ollama:"), mode=mode, pull=pull, console=console)
            resolved = resolve_model(spec, base_url=f"{host}/v1", api_key=api_key, http_client=http)
            yield PreparedModel(resolved, tool_choice)
        else:
            batch = settings.batch
            resolved = resolve_model(spec, base_url=base_url, api_key=api_key, http_client=http, batch=batch)
            yield PreparedModel(resolved, tool_choice)
