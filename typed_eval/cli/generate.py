"""`generate SUITE`: a suite's quizzes as CSV on stdout, the bytes its original generator writes."""

from __future__ import annotations

import argparse

from typed_eval.cli.common import prog
from typed_eval.core.errors import InputError
from typed_eval.core.suite import find_suites


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    generate = commands.add_parser(
        "generate", help="write a suite's quizzes as CSV on stdout, the bytes its original generator writes"
    )
    generate.add_argument(
        "suite", help="a suite with a generator (`suites NAME` shows it): its original generator's flags"
    )
    generate.add_argument("arguments", nargs=argparse.REMAINDER, help="the generator's flags (-h lists them)")
    generate.set_defaults(command=command_generate)


def command_generate(args: argparse.Namespace) -> int:
    """The suite's generator command line (`Suite.generate`), writing the bytes its original generator writes."""
    generators = {f.suite.name: f.suite.generate for f in find_suites(on_error=lambda _: None) if f.suite.generate}
    generate = generators.get(args.suite)
    if generate is None:
        raise InputError(f"no generator for suite {args.suite!r}: use {' or '.join(generators)}")
    return generate(args.arguments, f"{prog()} generate {args.suite}")
