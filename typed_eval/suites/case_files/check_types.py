"""What the assertions' checks work with: the output graded, a verdict (`Graded`), a check, an assertion as read
from the file, the judge's protocol; and the values a check is given (JSON and YAML text, files)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from typed_eval.contracts import Cost, TokenUsage
from typed_eval.core.errors import TaskError
from typed_eval.core.files import FileTooLarge, NotRegularFile, read_regular
from typed_eval.suites.case_files import yaml12
from typed_eval.suites.case_files.js import (
    JsonError,
    json_parse,
    json_stringify,
)

__all__ = [
    "ASSERTION_TYPES",
    "JSON_CHECKS",
    "KNOWN_KEYS",
    "LIST_CHECKS",
    "MAX_VALUE_FILE_BYTES",
    "REFUSED_KEYS",
    "TEXT_CHECKS",
    "Assertion",
    "CannotCheck",
    "Check",
    "Graded",
    "Output",
    "Rubric",
    "json_text",
    "load_value_file",
    "load_yaml",
    "read_text",
    "read_value_bytes",
]


TEXT_CHECKS = ("equals", "contains", "icontains", "starts-with", "regex")
LIST_CHECKS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
JSON_CHECKS = ("is-json", "contains-json")
ASSERTION_TYPES: tuple[str, ...] = (*TEXT_CHECKS, *LIST_CHECKS, *JSON_CHECKS, "python", "llm-rubric")
"""The types a case file may use; all but `llm-rubric` also as `not-TYPE` (the pass inverted)."""

REFUSED_KEYS = ("transform", "contextTransform")
"""Assertion keys that would change what is checked with JavaScript: refused, never silently ignored."""
KNOWN_KEYS = frozenset({"type", "value", "weight", "threshold", "config", "metric", "description", *REFUSED_KEYS})


@dataclass(frozen=True)
class Output:
    """A model's output as assertions see it: the text (JSON, compact as JavaScript writes it, for a structured
    output) and the value itself (the text, or the parsed object handed to `python`)."""

    text: str
    value: Any


def load_yaml(text: str, dates: yaml12.DateReading = "refused") -> Any:
    """YAML 1.2 as promptfoo reads it (`typed_eval.suites.case_files.yaml12`), its dates read as `dates` says;
    YamlError in one line."""
    return yaml12.load(text, dates)


def json_text(value: Any) -> str:
    """A value as JavaScript's JSON.stringify writes it (compact), which is what promptfoo compares text with."""
    return json_stringify(value)


@dataclass(frozen=True)
class Graded:
    """One assertion's result: a score (a python assertion's may lie outside [0, 1]), why, and whether it passed."""

    score: float
    reason: str
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Anything else worth storing with the result (a judge's name)."""
    usage: TokenUsage | None = None
    """What a judge's requests used, and cost: counted with the sample."""
    cost: Cost | None = None
    passed: bool | None = None
    """None: the score decides (a judge's verdict passes at 0.5 or more, or at the assertion's threshold)."""


class Rubric(Protocol):
    """An LLM judge: grades a text against a rubric, giving a score in [0, 1] and its reason."""

    async def __call__(self, rubric: str, output: str) -> Graded: ...


class CannotCheck(Exception):
    """A reply the check cannot evaluate (nested deeper than Python reads): the assertion scores 0 with why."""


Check = Callable[[Output, Mapping[str, Any]], Graded]
"""A deterministic check of an output; the mapping is promptfoo's assertion context (prompt, vars, test, config)."""


@dataclass(frozen=True)
class Assertion:
    """A checked assertion, ready to grade outputs."""

    type: str
    weight: float
    spec: dict[str, Any]
    """What the case stores and a check is rebuilt from: type, value (rendered), weight (and a script's path and
    MD5, a threshold), JSON-compatible."""
    threshold: float | None = None


def load_value_file(reference: str, base: Path, where: str, dates: yaml12.DateReading = "refused") -> Any:
    """A `file://` value: JSON and YAML files parsed (a YAML date read as `dates` says), anything else as text;
    relative to the case file."""
    path = (base / reference.removeprefix("file://")).resolve()
    if path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts"):
        raise TaskError(f"{where}: {reference}: a script is a value only of a python assertion")
    text = read_text(path, reference, where)
    if path.suffix == ".json":
        try:
            return json_parse(text)
        except JsonError as exc:
            raise TaskError(f"{where}: {reference} is not valid JSON: {exc}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            return load_yaml(text, dates)
        except yaml12.YamlError as exc:
            raise TaskError(f"{where}: {reference} is not valid YAML: {exc}") from None
    return text


def read_text(path: Path, reference: str, where: str) -> str:
    try:
        return read_value_bytes(path, reference).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{where}: cannot read {reference}: {exc}") from None
    except ValueError as exc:
        raise TaskError(f"{where}: {exc}") from None


MAX_VALUE_FILE_BYTES = 16 * 1024 * 1024
"""The most a file a case file names (`file://`, a tests file) may hold: 16 MiB. promptfoo reads any file whole; a
var naming `/dev/zero`, or a file of gigabytes, would fill the memory before the first request."""


def read_value_bytes(path: Path, reference: str) -> bytes:
    """The bytes of a regular file of at most `MAX_VALUE_FILE_BYTES`; `ValueError` saying, in one line, why `reference`
    (how the case file names it) is not one. Opened without blocking, so a FIFO with no writer is refused, not
    waited for."""
    try:
        return read_regular(path, MAX_VALUE_FILE_BYTES)
    except NotRegularFile as exc:
        raise ValueError(f"{reference} is {exc.kind}, not a regular file: name a file") from None
    except FileTooLarge:
        raise ValueError(f"{reference} is larger than {MAX_VALUE_FILE_BYTES // (1024 * 1024)} MiB, the most a file "
                         "a case file names may hold") from None  # fmt: skip
    except OSError as exc:
        raise ValueError(f"cannot read {reference}: {exc.strerror or exc}") from None
