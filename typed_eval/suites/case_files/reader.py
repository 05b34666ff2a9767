"""A case file read as its tool reads it: prompts, tests, `defaultTest`, options and vars, with `file://`
references followed relative to the file."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typed_eval.core.errors import InputError, TaskError
from typed_eval.suites.case_files.assertions import (
    json_text,
    load_value_file,
    load_yaml,
)
from typed_eval.suites.case_files.check_types import read_text, read_value_bytes
from typed_eval.suites.case_files.documents import (
    MEDIA,
    dereferenced,
    resolved,
)
from typed_eval.suites.case_files.js import js_trim
from typed_eval.suites.case_files.yaml12 import YamlError

__all__ = ["CASE_FILE_SUFFIXES", "REFUSED_OPTIONS", "Reader"]


CASE_FILE_SUFFIXES = (".yaml", ".yml", ".json")

REFUSED_OPTIONS = ("transform", "postprocess", "rubricPrompt")
"""Test options that change what is scored with JavaScript or another grading prompt: refused, never ignored."""


@dataclass
class Reader:
    """The parts of a case file being read, with where they came from (for one-line errors)."""

    path: Path

    @property
    def base(self) -> Path:
        return self.path.parent

    def where(self, what: str = "") -> str:
        return f"case file {self.path}" + (f": {what}" if what else "")

    def load(self, path: Path) -> Any:
        try:
            text = read_value_bytes(path, f"case file {path}").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read case file {path}: {exc}") from None
        except ValueError as exc:
            raise InputError(str(exc)) from None
        try:
            return load_yaml(text, "object")  # a date is the empty object promptfoo's tests get
        except YamlError as exc:
            raise InputError(f"case file {path} is not valid YAML: {exc}") from None

    def prompts(self, given: Any) -> list[str]:
        entries = given if isinstance(given, list) else [given]
        if given is None or not entries:
            raise TaskError(self.where("it needs prompts (templates with {{var}} placeholders, or file:// paths)"))
        return [self._prompt(entry, n) for n, entry in enumerate(entries, 1)]

    def _prompt(self, entry: Any, n: int) -> str:
        if isinstance(entry, Mapping):
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str):
            raise TaskError(self.where(f"prompt {n} must be a string, a file:// path or {{raw: ...}}"))
        reference = entry.removeprefix("file://")
        legacy = entry == reference and re.fullmatch(r"\S+\.(txt|md|j2)", entry) and (self.base / entry).is_file()
        if entry == reference and not legacy:
            return entry
        if Path(reference).suffix in (".json", ".jsonl", ".py", ".js", ".yaml", ".yml"):
            raise TaskError(self.where(f"prompt {n}: only text prompt files are supported, not {reference}"))
        text = load_value_file("file://" + reference, self.base, self.where(f"prompt {n}"))
        return str(text)

    def tests(self, given: Any) -> list[Any]:
        entries = given if isinstance(given, list) else [given]
        if given is None or not entries:
            raise TaskError(self.where("it has no tests"))
        tests: list[Any] = []
        for entry in entries:
            if not isinstance(entry, str):
                tests.append(entry)
                continue
            path = self.base / entry.removeprefix("file://")
            if path.suffix not in CASE_FILE_SUFFIXES:
                raise TaskError(self.where(f"tests from {entry}: only YAML and JSON test files are supported"))
            loaded = dereferenced(self.load(path), f"case file {path}")
            tests.extend(loaded if isinstance(loaded, list) else [loaded])
        return tests

    def variables(self, given: Any, where: str) -> dict[str, Any]:
        """The vars as promptfoo hands them to prompts and assertions: `file://` ones read (YAML as its JSON, other
        text trimmed), one trailing newline cut from each string, then `{{name}}` in a var's text filled from
        the others (`resolved`)."""
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise TaskError(f"{where}: vars must be a mapping")
        out: dict[str, Any] = {}
        for name, value in given.items():
            if isinstance(value, list):
                raise TaskError(
                    f"{where}: var {name} is a list (promptfoo poses each value as its own test): "
                    "write one test per value"
                )
            if isinstance(value, str) and value.startswith("file://"):
                value = self._var_file(value, f"{where}, var {name}")
            out[str(name)] = value
        for name, value in out.items():
            if isinstance(value, str) and value.endswith("\n"):
                out[name] = value[:-1]
        return resolved(out)

    def _var_file(self, reference: str, where: str) -> str:
        path = (self.base / reference.removeprefix("file://")).resolve()
        if path.suffix in (".py", ".js", ".mjs", ".cjs", ".ts", ".pdf") or path.suffix.lower() in MEDIA:
            raise TaskError(f"{where}: {reference}: only text and YAML var files are supported")
        if path.suffix in (".yaml", ".yml"):
            return json_text(load_value_file(reference, self.base, where, "iso"))  # promptfoo's JSON.stringify
        return js_trim(read_text(path, reference, where))
