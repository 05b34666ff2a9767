"""`suites`: every suite installed, with its parameters; `suites NAME`: one suite's whole surface (its `-S`
parameters with type, default, choices and help, the flags that spell them, its modes, its commands); and the suite
a `run` names, with its parameters from `-S key=value` and the suite's flags."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from typed_eval.cli.common import prog
from typed_eval.cli.suite_about import describe
from typed_eval.cli.suite_flags import flagged_suite, spelled_params
from typed_eval.contracts import AnswerMode
from typed_eval.core.datasets import Dataset
from typed_eval.core.errors import InputError, TaskError
from typed_eval.core.suite import (
    FoundSuite,
    Suite,
    SuiteContext,
    find_suites,
    open_suite,
    registered,
    same_named,
    suite_named,
)
from typed_eval.core.tasks import Task
from typed_eval.core.terminal import printable


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    suites = commands.add_parser("suites", help="list the suites installed, with their parameters and defaults")
    suites.add_argument("name", nargs="?", help="show this suite's parameters, flags, modes and commands")
    suites.set_defaults(command=command_suites)


def command_suites(args: argparse.Namespace) -> int:
    """Each suite: its name, package and version, description, then a line per parameter with its default; with a
    name, that suite in full."""
    if args.name is not None:
        found, _ = suite_named(args.name)
        print(printable("\n".join(describe(found))))
        return 0
    broken: list[TaskError] = []

    def report(exc: TaskError) -> None:
        print(f"{prog()}: error: {printable(str(exc))}", file=sys.stderr)
        broken.append(exc)

    installed = find_suites(on_error=report)
    twins = same_named(installed)
    for found in installed:
        suite = found.suite
        origin = f" ({found.package} {found.version})" if found.package else ""
        if suite.name in twins:  # told apart by where each is registered
            origin = f"{origin[:-1]}, {found.entry_point})" if origin else f" ({found.entry_point})"
        print(printable(f"{suite.name}{origin}: {suite.description}"))
        defaults = suite.defaults()
        for name, info in suite.params.model_fields.items():
            default = "required" if info.is_required() else f"default {defaults[name]!r}"
            about = f": {info.description}" if info.description else ""
            print(printable(f"  -S {name}=...  ({default}){about}"))
        if suite.paths:
            print(printable(f"  --suite FILE{'|'.join(suite.paths)}"))
    for name, same in twins.items():
        print(printable(f"{prog()}: note: {len(same)} installed suites are named {name!r}: "
                        f"{', '.join(map(registered, same))}: `--suite {name}` runs neither, "
                        "`--suite MODULE:OBJECT` picks one"), file=sys.stderr)  # fmt: skip
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


def default_suite(installed: Sequence[FoundSuite]) -> str | None:
    """The suite `run` poses when no `--suite` is given: the first installed one that says it is the default."""
    return next((found.suite.name for found in installed if found.suite.default), None)


def suite_from_args(args: argparse.Namespace, context: SuiteContext) -> tuple[FoundSuite, Task[Any], Dataset]:
    """The suite `--suite` names with its parameters (`-S`, the older flags, a file named as the suite); then its
    task and dataset."""
    name = args.suite or flagged_suite(args, default_suite(find_suites(on_error=lambda _: None)))
    if name is None:
        raise InputError("no --suite given, and no installed suite is the default: `suites` lists them")
    found, from_name = suite_named(name)
    values = {**from_name, **spelled_params(args, found.suite), **parameter_values(args.suite_param or [])}
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
