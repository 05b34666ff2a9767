"""`suites NAME`: what one suite declares, as lines of text: its parameters (`-S`, with type, default, choices and
help), the flags of `run` that spell them, the secrets its flags give, its modes, files and commands."""

from __future__ import annotations

import enum
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic.fields import FieldInfo

from typed_eval.cli.common import prog
from typed_eval.core.suite import FoundSuite, Suite, SuiteFlag

__all__ = ["describe", "type_text"]

_NAMES: dict[Any, str] = {int: "INT", float: "NUMBER", str: "TEXT", bool: "BOOL", Path: "PATH"}
"""How a parameter's type reads on the command line."""


def type_text(annotation: Any) -> tuple[str, list[str]]:
    """A parameter's type as the command line writes it (`INT`, `INT,INT,...`), and its choices, if any."""
    origin = typing.get_origin(annotation)
    arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is Literal:
        return "CHOICE", [_value_text(a) for a in typing.get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "CHOICE", [_value_text(member.value) for member in annotation]
    if origin in (list, tuple, Sequence) and arguments:
        item, _ = type_text(arguments[0])
        return f"{item},{item},...", []
    if origin is not None and len(arguments) == 1:  # `X | None`
        return type_text(arguments[0])
    return _NAMES.get(annotation, "VALUE"), []


def _value_text(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return _value_text(value.value)
    if isinstance(value, list | tuple):
        return ",".join(_value_text(v) for v in value)
    return str(value)


def _flag_text(spelling: SuiteFlag) -> str:
    if spelling.value is not None:
        return f"{spelling.flag} sets {_value_text(spelling.value)}"
    return f"also {spelling.flag} {spelling.metavar or spelling.param.upper()}"


def _parameter(suite: Suite[Any], name: str, info: FieldInfo, default: object) -> list[str]:
    kind, choices = type_text(info.annotation)
    said = ["required" if info.is_required() else f"default {_value_text(default)}"]
    if choices:
        said.append(f"one of {', '.join(choices)}")
    said += [_flag_text(s) for s in suite.flags if s.param == name and not s.key]
    lines = [f"  -S {name}={kind}  {'; '.join(said)}"]
    if info.description:
        lines.append(f"      {info.description}")
    return lines


def describe(found: FoundSuite) -> list[str]:
    """The suite's name, origin and description, then its modes, parameters, secrets, files and commands."""
    suite = found.suite
    origin = f" ({found.package} {found.version})" if found.package else ""
    lines = [f"{suite.name}{origin}: {suite.description}" if suite.description else f"{suite.name}{origin}"]
    lines.append(f"modes (--mode): {', '.join(suite.modes)}")
    defaults = suite.defaults()
    fields = suite.params.model_fields
    lines.append("parameters (-S KEY=VALUE):" if fields else "parameters: none")
    for name, info in fields.items():
        lines += _parameter(suite, name, info, defaults[name])
    secrets = [s for s in suite.flags if s.key]
    if secrets:
        lines.append("secrets (never stored):")
        for spelling in secrets:
            lines.append(f"  {spelling.flag} {spelling.metavar or spelling.param.upper()}")
            if spelling.help:
                lines.append(f"      {spelling.help}")
    if suite.paths:
        lines.append(f"files: --suite FILE{'|'.join(suite.paths)}")
    commands: list[str] = []
    if suite.generate is not None:
        commands.append(f"  {prog()} generate {suite.name} ...  its generator (-h lists its flags)")
    if suite.importer is not None:
        also = "".join(f"; also {prog()} {alias}" for alias in suite.importer.aliases)
        commands.append(f"  {prog()} import {suite.name} ...  {suite.importer.help}{also}")
    if commands:
        lines += ["commands:", *commands]
    also = "".join(f"; also {flag}" for flag in suite.board_flags)
    lines.append(f"leaderboard: format_result.py --suite {suite.name}  its runs, its public table's columns{also}")
    if suite.default:
        lines.append("default: `run` poses it when no --suite is given")
    return lines
