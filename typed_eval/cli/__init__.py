"""Command line: `python main.py run --suite NAME --model M ...` evaluates a model on a suite's cases and stores the
run; `suites` lists the suites installed, `generate` writes a suite's quizzes as its original generator does,
`import` stores published results as runs, `models` lists a provider's models here, `view` serves the case
viewer. A module per command.

Every expected failure (bad input, unknown model, missing key, unreachable server, corrupt file) ends
as one line on stderr and a non-zero exit; records already written stay on disk.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence

from typed_eval.cli import generate, imports, models, run, suites, view
from typed_eval.cli.common import flags_of, notes_in_one_line, prog, reported
from typed_eval.core.errors import OneLineArgumentParser

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=prog(), description="Evaluate models on typed tasks: the suites installed (`suites`), or your own."
    )
    commands = parser.add_subparsers(dest="command_name", required=True)
    for command in (run, suites, generate, imports, models, view):
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    gc.freeze()  # what the imports made lives as long as the process: collections skip it, and so does the exit
    with notes_in_one_line(prog()):  # from the parser on: it reads the installed suites' flags
        parser = build_parser()
        args = parser.parse_args(imports.spelled_out(sys.argv[1:] if argv is None else argv))
        args.flags = flags_of(parser)
        logging.getLogger("genai-prices").addHandler(logging.NullHandler())  # its update failures: our one line
        logging.getLogger("genai-prices").propagate = False
        return reported(args, lambda: args.command(args))
