"""Turn a model string from the command line into a pydantic-ai model, and adjust its profile."""

from __future__ import annotations

import copy
import inspect
import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from pydantic_ai import UserError
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers import Provider, infer_provider, infer_provider_class
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.settings import ModelSettings

from typed_eval.core.errors import ModelSetupError

__all__ = [
    "DEFAULT_TRANSPORT_RETRIES",
    "ResolvedModel",
    "forces_tool_choice",
    "is_loopback",
    "resolve_model",
    "safe_url",
    "with_default_retries",
    "without_forced_tool_choice",
]

PROVIDER_ALIASES = {"google-gla": "google"}
"""Older prefixes users still type, mapped to pydantic-ai's current provider names."""

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
DEFAULT_TRANSPORT_RETRIES = 2
"""Resends of a request after a transport fault, for every provider: the OpenAI and Anthropic SDKs' default."""
_NO_KEY = "not-needed"
"""Sent as the API key to a loopback OpenAI-compatible server when none is given (they ignore it)."""


@dataclass(frozen=True)
class ResolvedModel:
    """A ready model and the facts about it that a run records."""

    model: Model
    name: str
    """The model as the user named it (aliases resolved), e.g. `openai:gpt-4o`."""
    base_url: str | None
    """The server's URL with any credentials removed."""
    local: bool
    """Runs on this machine (test model, loopback server): its cost is 0."""


def safe_url(url: str) -> str:
    """The URL without user, password, query or fragment, so no secret reaches a result file."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def is_loopback(url: str | None) -> bool:
    return url is not None and (urlsplit(url).hostname or "") in _LOOPBACK_HOSTS


def _split(spec: str) -> tuple[str | None, str]:
    provider, sep, name = spec.partition(":")
    if not sep:
        return None, spec
    return PROVIDER_ALIASES.get(provider, provider), name


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    http_client: httpx2.AsyncClient | None = None,
    batch: bool = False,
) -> ResolvedModel:
    """Build the model for `spec`: `provider:name`, or any name with `base_url` (OpenAI-compatible; with
    `batch`, through its Responses and Batch APIs, which is what OpenAI's batches serve).

    `http_client` (see `typed_eval.providers.transport`) is given to every provider that takes one, to meter and cache
    its requests. Raises `ModelSetupError` with a one-line fix for unknown models, missing keys or extras.
    """
    spec = spec.strip()
    if not spec:
        raise ModelSetupError(
            "empty model name: pass provider:name, e.g. openai:gpt-4o-mini, or 'test'", parameter="model"
        )
    provider, name = _split(spec)
    if base_url is not None and urlsplit(base_url).query:
        raise ModelSetupError(
            f"{safe_url(base_url)!r} has a query string, which the client would put in the middle of every "
            "request path: give the URL without it",
            parameter="base_url",
        )
    if base_url is not None and provider in (None, "openai", "openai-chat"):
        if not urlsplit(base_url).scheme.startswith("http"):
            raise ModelSetupError(
                f"bad URL {safe_url(base_url)!r}: expected http(s)://host:port/v1", parameter="base_url"
            )
        key = api_key or os.environ.get("OPENAI_API_KEY") or (_NO_KEY if is_loopback(base_url) else None)
        if key is None:
            raise ModelSetupError(
                f"missing API key for {safe_url(base_url)}: pass one or set OPENAI_API_KEY", parameter="api_key"
            )
        # OpenAI-compatible servers (llama.cpp, vLLM, LM Studio) take `max_tokens`; llama-cpp-python ignores
        # `max_completion_tokens`, which pydantic-ai sends by default, and generates until the context is full.
        profile = OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False)
        compatible = OpenAIProvider(base_url=base_url, api_key=key, http_client=http_client)
        model: Model
        if batch:
            batched = OpenAIModelProfile(openai_supports_batch_api=True)
            model = OpenAIResponsesModel(name, provider=compatible, profile=batched)
        else:
            model = OpenAIChatModel(name, provider=compatible, profile=profile)
        return ResolvedModel(model, spec, safe_url(base_url), local=is_loopback(base_url))
    if provider is None:
        raise ModelSetupError(
            f"unknown model {spec!r}: name it as provider:model (e.g. openai:{spec}), "
            "or give the base URL of the OpenAI-compatible server that serves it",
            parameter="model",
        )
    full = f"{provider}:{name}"
    try:
        model = infer_model(
            full, provider_factory=lambda p: _provider(p, base_url=base_url, api_key=api_key, http_client=http_client)
        )
    except UserError as exc:
        message, parameter = _setup_message(full, str(exc))
        raise ModelSetupError(message, parameter=parameter) from None
    except ValueError:
        raise ModelSetupError(
            f"unknown model provider {provider!r} in {spec!r}: use one of pydantic-ai's providers "
            "(openai, openrouter, anthropic, google, ollama, groq, mistral, ...) or an OpenAI-compatible server's "
            "base URL",
            parameter="model",
        ) from None
    except ImportError as exc:
        raise ModelSetupError(
            f"model {full!r} needs an optional package ({exc.name}): pip install 'pydantic-ai-slim[{provider}]'",
            parameter="model",
        ) from None
    url = base_url or _provider_url(model)
    return ResolvedModel(model, full, safe_url(url) if url else None, local=is_loopback(url))


def _provider(
    name: str, *, base_url: str | None, api_key: str | None, http_client: httpx2.AsyncClient | None
) -> Provider[Any]:
    cls = infer_provider_class(name)
    options: dict[str, Any] = {k: v for k, v in (("base_url", base_url), ("api_key", api_key)) if v is not None}
    if http_client is not None and "http_client" in inspect.signature(cls.__init__).parameters:
        options["http_client"] = http_client
    if not options:
        return infer_provider(name)
    try:
        return cls(**options)
    except TypeError:
        taken = next(iter(options))  # base_url when both were given
        raise ModelSetupError(f"provider {name!r} does not take one", parameter=taken) from None


def _provider_url(model: Model) -> str | None:
    provider = model.provider
    return getattr(provider, "base_url", None) if provider is not None else None


def _setup_message(spec: str, text: str) -> tuple[str, str]:
    """pydantic-ai's refusal of `spec` as one line, and the parameter it is about."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    env = re.search(r"`([A-Z][A-Z0-9_]*)`", first)
    if env and "environment variable" in first:
        variable = env.group(1)
        if variable.endswith("_BASE_URL"):
            return f"no server URL for {spec}: set {variable} or pass one", "base_url"
        return f"missing API key for {spec}: set {variable} or pass one", "api_key"
    if first.startswith("Unknown model"):
        return f"unknown model {spec!r}: check the provider prefix and name ({first})", "model"
    return f"cannot use model {spec!r}: {first}", "model"


def with_default_retries(model: Model, settings: ModelSettings | None) -> ModelSettings | None:
    """`settings` with `DEFAULT_TRANSPORT_RETRIES` for a model whose SDK would retry nothing (Google's), so every
    provider resends a failed request alike unless told otherwise. Other SDKs already do (and are left alone: a
    per-request count costs the OpenAI client a copy of itself per request)."""
    if not model.system.startswith("google") or "max_retries" in (settings or {}):
        return settings
    return ModelSettings(**(settings or {}), max_retries=DEFAULT_TRANSPORT_RETRIES)


def forces_tool_choice(model: Model) -> bool:
    """Whether output tool calls go out with `tool_choice: required` for this model."""
    return bool(model.profile.get("supports_forced_tool_choice", True))


def without_forced_tool_choice(model: Model) -> Model:
    """A copy of `model` that sends `tool_choice: auto`, for servers that refuse a forced tool choice.

    The profile is a cached property of every pydantic-ai model, so the copy gets its own resolved
    profile with forcing off; the original model is left as it was.
    """
    clone = copy.copy(model)
    vars(clone)["profile"] = {**model.profile, **ModelProfile(supports_forced_tool_choice=False)}
    return clone
