"""What every command shares: the program's name, exit codes, argument types and the one-line error."""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from typed_eval.cli.suite_flags import given_keys, given_values
from typed_eval.core.errors import EvaluatorError
from typed_eval.core.plugins import PluginGroupWarning
from typed_eval.core.secrets import Redactor
from typed_eval.core.terminal import printable
from typed_eval.engine.control import StopForced

PROG = "typed-eval"
EXIT_DNF = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141
EXIT_TRY_LATER = 75
"""The provider gave no capacity, or stayed out of service, past --max-wait: resume later (sysexits' EX_TEMPFAIL)."""
RESULTS_DIR = Path("result")


def prog() -> str:
    """`main.py` when run as `python main.py`, the console script's name otherwise."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name in ("main.py", PROG) else PROG


FLAG_OF = {"seed": "--model-seed", "max_wait_s": "--max-wait", "prices": "--price-in/--price-out"}
"""Library parameters set by a flag of another name (the parser's `--seed` is the generator's)."""


def flags_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The flag that sets each library parameter (`concurrency` -> `--concurrency`), from the parser's actions,
    subcommands' included: how an error about a parameter names it on the command line."""
    flags: dict[str, str] = {}
    parsers = [parser]
    while parsers:
        for action in parsers.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif action.option_strings:
                flags.setdefault(action.dest, max(action.option_strings, key=len))
    return flags | FLAG_OF


def error_line(exc: EvaluatorError, flags: dict[str, str], redact: Redactor | None = None) -> str:
    """`prog: error: message`: the flag of the parameter the error is about (the parameter's own name when no flag
    sets it), then what is wrong; no key or URL credentials in it; control characters shown escaped."""
    message = f"{flags.get(exc.parameter, exc.parameter)}: {exc.message}" if exc.parameter else str(exc)
    if redact is not None:
        message = redact(message)
    return f"{prog()}: error: {printable(message)}"


def reported(args: argparse.Namespace, command: Callable[[], int]) -> int:
    """A command's exit code, its expected failures said in one line (no key or URL credentials in it)."""
    urls = [getattr(args, name, None) for name in ("base_url", "update_prices")]
    urls += [pair.partition("=")[2] for pair in getattr(args, "suite_param", None) or []]
    urls += [str(value) for value in given_values(args)]
    keys = [getattr(args, "api_key", None), *given_keys(args).values()]
    try:
        return command()
    except EvaluatorError as exc:
        print(error_line(exc, getattr(args, "flags", {}), Redactor.for_run(keys=keys, urls=urls)), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # a second Ctrl-C, or a stop the run could not take: what is written is kept
        reason, code = (exc.reason, exc.exit_code) if isinstance(exc, StopForced) else ("interrupted", EXIT_INTERRUPTED)
        print(f"{prog()}: {reason}; finished samples are kept (--resume continues)", file=sys.stderr)
        return code
    except BrokenPipeError:  # the reader of the output left (`| head`, a worker's owner that died): say no more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


MAX_CONCURRENCY = 100_000
"""More requests in flight than any provider or machine serves: a number past it is a typo."""


def concurrency(text: str) -> int:
    value = positive(text)
    if value > MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_CONCURRENCY:,}, got {value:,}")
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def price(text: str) -> float:
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def rate(text: str) -> float:
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def seconds(text: str) -> float:
    value = finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def grace(text: str) -> float:
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more, got {text}")
    return value


@contextmanager
def notes_in_one_line(program: str) -> Iterator[None]:
    """Warnings meant for the user (a plug-in under a group's earlier name) as one line each on stderr, as the
    program's errors are, each said once."""

    def one_line(message: Warning | str, *_: object, **__: object) -> None:
        print(f"{program}: note: {printable(str(message))}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("once", PluginGroupWarning)
        warnings.showwarning = one_line
        yield
