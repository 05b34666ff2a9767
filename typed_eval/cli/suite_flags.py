"""The flags of `run` that suites declare as other spellings of their `-S` parameters (`Suite.flags`): accepted by
`run`, left out of its help (`suites NAME` shows them), and turned into the chosen suite's parameters; a flag that
suite does not declare is one line naming the suites that do."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from typed_eval.core.errors import InputError
from typed_eval.core.suite import FoundSuite, Suite, SuiteFlag, find_suites

__all__ = ["add_suite_flags", "flagged_suite", "given_keys", "given_values", "spelled_params"]

GIVEN = "suite_flags"
"""Where the parser keeps the suite flags given, in order: (flag, value) pairs."""
KEYS = "suite_keys"
"""Where the parser keeps the secrets given by suite flags (`SuiteFlag.key`), by name."""


class _SuiteFlagAction(argparse.Action):
    """Keeps `(flag, value)` apart from the run's own options, and a secret apart from both."""

    def __init__(self, option_strings: Sequence[str], dest: str, spelling: SuiteFlag, **kwargs: Any) -> None:
        self.spelling = spelling
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        value = self.spelling.value if self.spelling.value is not None else values
        if self.spelling.key:
            getattr(namespace, KEYS)[self.spelling.param] = value
        getattr(namespace, GIVEN).append((self.spelling.flag, value))


def add_suite_flags(parser: argparse.ArgumentParser, suites: Sequence[FoundSuite]) -> None:
    """Every flag the suites declare, once (the first suite's spelling), hidden from the parser's help."""
    parser.set_defaults(**{GIVEN: [], KEYS: {}})
    seen: set[str] = set()
    for found in suites:
        for spelling in found.suite.flags:
            if spelling.flag in seen or spelling.flag in parser._option_string_actions:
                continue
            seen.add(spelling.flag)
            parser.add_argument(
                spelling.flag,
                action=_SuiteFlagAction,
                spelling=spelling,
                dest=spelling.param,
                nargs=0 if spelling.value is not None else None,
                type=spelling.type or str,
                metavar=spelling.metavar,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )


def given_values(args: argparse.Namespace) -> list[object]:
    """The values of the suite flags given (for the one-line error to hide a URL's secrets)."""
    return [value for _, value in getattr(args, GIVEN, [])]


def given_keys(args: argparse.Namespace) -> dict[str, str]:
    """The secrets the suite flags gave, by the name the suite reads them under (`SuiteContext.keys`)."""
    return dict(getattr(args, KEYS, {}))


def flagged_suite(args: argparse.Namespace, default: str | None) -> str | None:
    """The suite a run with no `--suite` poses: the default, unless the suite flags given are not all its own and
    one other suite declares them all (`--dataset FILE` poses the suite that reads datasets)."""
    flags = {flag for flag, _ in getattr(args, GIVEN, [])}
    if not flags:
        return default
    installed = find_suites(on_error=lambda _: None)
    takers = [found.suite.name for found in installed if all(_declares(found.suite, flag) for flag in flags)]
    return default if default in takers or len(takers) != 1 else takers[0]


def spelled_params(args: argparse.Namespace, suite: Suite[Any]) -> dict[str, object]:
    """The chosen suite's parameters the flags give; a flag it does not declare is one line naming the suites that
    do."""
    mine = {spelling.flag: spelling for spelling in suite.flags}
    fields = suite.params.model_fields
    given: dict[str, object] = {}
    for flag, value in getattr(args, GIVEN, []):
        spelling = mine.get(flag)
        if spelling is None:
            takers = [f.suite.name for f in find_suites(on_error=lambda _: None) if _declares(f.suite, flag)]
            where = f"the {' and '.join(takers)} suite{'s' if len(takers) > 1 else ''}" if takers else "no suite"
            raise InputError(f"{flag} belongs to {where}, not {suite.name}")
        if not spelling.key:
            given[spelling.param] = _one_or_text(value, fields[spelling.param].annotation)
    return given


def _declares(suite: Suite[Any], flag: str) -> bool:
    return any(spelling.flag == flag for spelling in suite.flags)


def _one_or_text(value: object, annotation: Any) -> object:
    """A one-item list read by a flag's type (`--length 3`) is its item for a parameter that is not a list; several
    (`3,4`) go as text, for the parameter to refuse."""
    if isinstance(value, list) and "list" not in str(annotation):
        return value[0] if len(value) == 1 else ",".join(map(str, value))
    return value
