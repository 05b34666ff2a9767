"""`suites`: every suite installed, with its parameters; and the suite a `run` names, its `-S key=value` parameters
and the older flags that spell some of them (`--length`, `--number`, `--people`...)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from typed_eval.cli.common import prog
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import InputError, TaskError
from typed_eval.core.suite import FoundSuite, Suite, SuiteContext, find_suites, open_suite, suite_named
from typed_eval.core.tasks import Task
from typed_eval.core.terminal import printable
from typed_eval.schemas import AnswerMode

SPELLED = (
    "quizzes", "length", "number", "people", "count", "seed", "questions", "max_answers", "coherence_threshold",
    "novelty_threshold", "embedding_model", "embedding_base_url", "unambiguous",
)  # fmt: skip
"""Flags of `run` that spell the suite parameter of their name: `--people 12` is `-S people=12`."""
NEGATED = {"no_shuffle": "shuffle"}
"""Flags that set a parameter to False: `--no-shuffle` is `-S shuffle=false`."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    suites = commands.add_parser("suites", help="list the suites installed, with their parameters and defaults")
    suites.set_defaults(command=command_suites)


def command_suites(args: argparse.Namespace) -> int:
    """Each suite: its name, package and version, description, then a line per parameter with its default."""
    broken: list[TaskError] = []

    def report(exc: TaskError) -> None:
        print(f"{prog()}: error: {printable(str(exc))}", file=sys.stderr)
        broken.append(exc)

    for found in find_suites(on_error=report):
        suite = found.suite
        origin = f" ({found.package} {found.version})" if found.package else ""
        print(printable(f"{suite.name}{origin}: {suite.description}"))
        defaults = suite.defaults()
        for name, info in suite.params.model_fields.items():
            default = "required" if info.is_required() else f"default {defaults[name]!r}"
            about = f": {info.description}" if info.description else ""
            print(printable(f"  -S {name}=...  ({default}){about}"))
        if suite.paths:
            print(printable(f"  --suite FILE{'|'.join(suite.paths)}"))
    return 2 if broken else 0


def parameter_values(pairs: Sequence[str]) -> dict[str, str]:
    """`-S key=value` texts as a mapping (the last of a key repeated wins, as `inspect eval -T` does)."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise InputError(f"-S takes key=value, got {pair!r}")
        values[key.strip()] = value
    return values


def _spelled(args: argparse.Namespace, found: FoundSuite) -> dict[str, object]:
    """The parameters the older flags give; a flag the suite has no parameter for is one line naming the suites
    that take it."""
    fields = found.suite.params.model_fields
    given: dict[str, object] = {}
    flags = [(dest, dest, getattr(args, dest)) for dest in SPELLED]
    flags += [(dest, key, False if getattr(args, dest) else None) for dest, key in NEGATED.items()]
    for dest, key, value in flags:
        if value is None or (value is False and dest not in NEGATED):
            continue
        flag = "--" + dest.replace("_", "-")
        if key not in fields:
            takers = [f.suite.name for f in find_suites(on_error=lambda _: None) if key in f.suite.params.model_fields]
            where = f"the {' and '.join(takers)} suite{'s' if len(takers) > 1 else ''}" if takers else "no suite"
            raise InputError(f"{flag} belongs to {where}, not {found.suite.name}")
        given[key] = _one_or_text(value, fields[key].annotation)
    return given


def _one_or_text(value: object, annotation: Any) -> object:
    """`--length 3` for a one-number parameter is 3; several (`3,4`) go as text, for the parameter to refuse."""
    if isinstance(value, list) and "list" not in str(annotation):
        return value[0] if len(value) == 1 else ",".join(map(str, value))
    return value


def suite_from_args(args: argparse.Namespace, context: SuiteContext) -> tuple[FoundSuite, Task[Any], Dataset]:
    """The suite `--suite` names with its parameters (`-S`, the older flags, a file named as the suite); then its
    task and dataset."""
    found, from_name = suite_named(args.suite)
    values: dict[str, object] = {**from_name, **_spelled(args, found), **parameter_values(args.suite_param or [])}
    try:
        params = found.suite.parse(values)
    except InputError as exc:  # it names the parameter as -S spells it, not as a flag of `run`
        raise InputError(str(exc)) from None
    task, dataset = open_suite(found, params, context)
    return found, task, dataset


def answer_modes(given: Sequence[str] | None, suite: Suite[Any], *, default_run: bool) -> list[AnswerMode]:
    """The modes `--mode` names, in order (`all`: every mode the suite poses); none given: tool, and with no
    `--model` either (the default run) tool and tag when the suite has a tag mode. A mode the suite does not pose is
    one line."""
    if not given:
        first: AnswerMode = "tool" if "tool" in suite.modes else suite.modes[0]
        return [first, "tag"] if default_run and first != "tag" and "tag" in suite.modes else [first]
    modes: list[AnswerMode] = []
    for name in given:
        for mode in suite.modes if name == "all" else [name]:
            if mode not in suite.modes:
                known = suite.modes
                use = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
                raise InputError(f"the {suite.name} suite has no {mode} mode: use --mode {use}")
            modes.append(mode)
    return list(dict.fromkeys(modes))
