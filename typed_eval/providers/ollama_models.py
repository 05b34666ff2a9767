"""Ollama: before a run, check the server answers and has the model (pull it on request); list local models."""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx
import ollama
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TransferSpeedColumn

from typed_eval.contracts import AnswerMode
from typed_eval.core.errors import ModelSetupError
from typed_eval.core.terminal import printable

__all__ = ["DEFAULT_OLLAMA_HOST", "OllamaModel", "ensure_ollama_model", "list_ollama_models", "ollama_host"]

DEFAULT_OLLAMA_HOST = "http://localhost:11434"


@dataclass(frozen=True)
class OllamaModel:
    name: str
    size_bytes: int | None
    parameters: str | None
    quantization: str | None
    capabilities: list[str] | None
    """None when the server does not report capabilities (older Ollama)."""


def ollama_host(base_url: str | None) -> str:
    """`base_url`, else `OLLAMA_BASE_URL`, else localhost; with or without the `/v1` of its OpenAI endpoint."""
    url = (base_url or os.environ.get("OLLAMA_BASE_URL") or DEFAULT_OLLAMA_HOST).rstrip("/")
    return url.removesuffix("/v1")


def _client(host: str) -> ollama.Client:
    return ollama.Client(host=host, timeout=30)


def _listed(client: ollama.Client, host: str) -> list[ollama.ListResponse.Model]:
    try:
        return list(client.list().models)
    except (ConnectionError, httpx.HTTPError) as exc:
        raise ModelSetupError(
            f"no Ollama server answers at {host}: start it (`ollama serve`) or name another ({exc})",
            parameter="base_url",
        ) from None
    except ollama.ResponseError as exc:
        raise ModelSetupError(f"the Ollama server at {host} answered HTTP {exc.status_code}: {exc.error}") from None
    except ValidationError as exc:
        raise ModelSetupError(f"unexpected answer from the Ollama server at {host}: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _find(names: list[str], model: str) -> str | None:
    wanted = model if ":" in model else f"{model}:latest"
    return next((n for n in names if n in (model, wanted)), None)


def ensure_ollama_model(host: str, model: str, *, mode: AnswerMode, pull: bool, console: Console | None = None) -> None:
    """Raise `ModelSetupError` unless the server answers, has `model` (pulled if `pull`) and, in tool mode, tools."""
    client = _client(host)
    found = _find([m.model for m in _listed(client, host) if m.model], model)
    if found is None and not pull:
        raise ModelSetupError(
            f"Ollama at {host} has no model {model!r}: pull it here, or run `ollama pull {model}`", parameter="pull"
        )
    if found is None:
        _pull(client, model, console)
        found = _find([m.model for m in _listed(client, host) if m.model], model)
        if found is None:
            raise ModelSetupError(f"Ollama at {host} reported pulling {model!r} but does not list it")
    try:
        capabilities = client.show(found).capabilities
    except (ollama.ResponseError, ConnectionError, httpx.HTTPError, ValidationError) as exc:
        raise ModelSetupError(f"Ollama at {host} cannot describe {model!r}: {_first_line(exc)}") from None
    if mode == "tool" and capabilities is not None and "tools" not in capabilities:
        raise ModelSetupError(
            f"Ollama model {model!r} does not support tools (capabilities: {', '.join(capabilities) or 'none'}): "
            "use the tag or prompted mode, or a model with tool support",
            parameter="mode",
        )


def _pull(client: ollama.Client, model: str, console: Console | None) -> None:
    """Pull `model`, drawing a progress bar on `console` (none without one: the library prints nothing)."""
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    try:
        with Progress(*columns, console=console, transient=True, disable=console is None) as progress:
            tasks: dict[str, TaskID] = {}
            for update in client.pull(model, stream=True):
                key = update.digest or (update.status or "")
                if key not in tasks:
                    said = escape(printable(f"pull {model}: {update.status}"))  # the server's words, never markup
                    tasks[key] = progress.add_task(said, total=update.total)
                progress.update(tasks[key], total=update.total, completed=update.completed or 0)
    except ollama.ResponseError as exc:
        raise ModelSetupError(f"cannot pull {model!r} from Ollama: {exc.error}") from None
    except (ConnectionError, httpx.HTTPError) as exc:
        raise ModelSetupError(f"pulling {model!r} from Ollama failed: {exc}") from None


def list_ollama_models(host: str) -> list[OllamaModel]:
    client = _client(host)
    models: list[OllamaModel] = []
    for entry in _listed(client, host):
        name = entry.model or ""
        try:
            capabilities = client.show(name).capabilities
        except (ollama.ResponseError, httpx.HTTPError, ValidationError):
            capabilities = None
        details = entry.details
        models.append(
            OllamaModel(
                name=name,
                size_bytes=entry.size,
                parameters=details.parameter_size if details else None,
                quantization=details.quantization_level if details else None,
                capabilities=list(capabilities) if capabilities is not None else None,
            )
        )
    return models
