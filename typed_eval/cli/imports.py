"""`import NAME ...`: published results stored as runs, by the importer the suite declares (`Suite.importer`), which
reads the rest of the command line itself; a command an importer names as its alias (`main.py ALIAS ...`) is the
same as `import NAME ...`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from typed_eval.cli.common import prog
from typed_eval.core.errors import InputError
from typed_eval.core.suite import FoundSuite, SuiteCommand, find_suites


def _importers(installed: Sequence[FoundSuite]) -> dict[str, SuiteCommand]:
    return {found.suite.name: found.suite.importer for found in installed if found.suite.importer is not None}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    importers = _importers(find_suites(on_error=lambda _: None))
    names = ", ".join(f"{name} ({importer.help})" for name, importer in importers.items())
    parser = commands.add_parser("import", help="store published results as runs, re-scored: " + (names or "none"))
    parser.add_argument("source", metavar="SUITE", help="a suite with an importer (`suites NAME` shows it)")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the importer's arguments (-h lists them)")
    parser.set_defaults(command=command_import)
    for name, importer in importers.items():
        for alias in importer.aliases:
            commands.add_parser(alias, help=f"the same as `import {name}`", add_help=False)


def spelled_out(argv: Sequence[str]) -> list[str]:
    """The command line with an importer's alias (`ALIAS ...`) spelled as `import NAME ...`."""
    if argv:
        for name, importer in _importers(find_suites(on_error=lambda _: None)).items():
            if argv[0] in importer.aliases:
                return ["import", name, *argv[1:]]
    return list(argv)


def command_import(args: argparse.Namespace) -> int:
    """The suite's importer, handed the rest of the command line."""
    importers = _importers(find_suites(on_error=lambda _: None))
    importer = importers.get(args.source)
    if importer is None:
        raise InputError(f"no importer for suite {args.source!r}: use {' or '.join(importers) or 'none'}")
    return importer.run(args.arguments, prog())
