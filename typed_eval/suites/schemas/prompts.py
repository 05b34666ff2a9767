"""JSONSchemaBench's request for an instance: its system message, its few-shot pairs for the case's set (none for a
schema of no set, as its `default` task), and the schema as the last user message."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["MAX_SHOTS", "SYSTEM", "Shots", "load_shots", "request_messages"]

SYSTEM = "You need to generate a JSON object that matches the schema below."
MAX_SHOTS = 2
_SHOTS = Path(__file__).parent / "few_shots.json"

Shots = dict[str, list[tuple[str, str]]]
"""The (schema, instance) pairs JSONSchemaBench shows before a schema of a set, by set."""


def load_shots() -> Shots:
    """The benchmark's pairs (sample/README.md says where they were read from)."""
    data: dict[str, list[list[str]]] = json.loads(_SHOTS.read_text(encoding="utf-8"))
    return {name: [(pair[0], pair[1]) for pair in pairs] for name, pairs in data.items()}


def request_messages(schema_text: str, pairs: Sequence[tuple[str, str]], system: str = SYSTEM) -> list[dict[str, Any]]:
    """The chat messages posing `schema_text` (the schema as `json.dumps` writes it) after the few-shot `pairs`."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for schema, instance in pairs:
        messages += [{"role": "user", "content": schema}, {"role": "assistant", "content": instance}]
    return [*messages, {"role": "user", "content": schema_text}]
