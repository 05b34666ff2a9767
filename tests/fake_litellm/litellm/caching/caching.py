"""`Cache`, which τ-bench makes only when its LLM cache is enabled (never here)."""

from __future__ import annotations

from typing import Any


class Cache:
    def __init__(self, **kwargs: Any) -> None:
        raise RuntimeError("the fake litellm has no cache")
