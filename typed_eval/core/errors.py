"""The evaluator's exceptions: each message is one line that names the bad value and the fix."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from typed_eval.contracts import Cost, TokenUsage

__all__ = [
    "CaseProblem",
    "CaseScoringError",
    "EvaluatorError",
    "InputError",
    "ModelSetupError",
    "OneLineArgumentParser",
    "ResultFileError",
    "TaskError",
    "error_text",
    "failure_line",
]


class EvaluatorError(Exception):
    """Base of every error the CLI turns into one line and a non-zero exit.

    `parameter` names what the error is about when that is one parameter of the library (a `RunSettings` field
    such as `concurrency` or `mode`, or an argument such as `prices`, `api_key`, `resume`); the message then
    says what is wrong with it, and reads after its name: `str()` is `concurrency: must be at least 1, got 0`,
    and the command line says `--concurrency: must be at least 1, got 0`.
    """

    exit_code = 1

    def __init__(self, message: str = "", *, parameter: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        """What is wrong, without the parameter's name."""
        self.parameter = parameter

    def __str__(self) -> str:
        return f"{self.parameter}: {self.message}" if self.parameter else self.message


class InputError(EvaluatorError):
    """Bad input from the user: a malformed quiz file, a bad template, conflicting flags."""

    exit_code = 2


class ModelSetupError(EvaluatorError):
    """The model cannot be set up: unknown name, missing API key, missing optional package."""

    exit_code = 2


class TaskError(EvaluatorError):
    """A task or suite defined wrong: an output type pydantic cannot validate, a scorer that fails or
    gives a value outside [0, 1], a suite file without TASK and CASES."""

    exit_code = 2


class CaseProblem(Exception):
    """A case that cannot be posed as its data stands (a schema no validator takes, a reference it cannot follow):
    the case's error with this reason, never the model's; a run none of whose cases can be posed says so."""


class CaseScoringError(Exception):
    """A scorer's failure on one case only, not the task's bug (a user's evaluator that raised or took too long): the
    sample is recorded as an `error` with this message, its output kept, and the run goes on; what the scoring asked
    of a model before it failed (an LLM judge) counted with the sample."""

    def __init__(self, message: str, *, usage: TokenUsage | None = None, cost: Cost | None = None) -> None:
        super().__init__(message)
        self.usage, self.cost = usage, cost


class ResultFileError(EvaluatorError):
    """A stored result file that cannot be read or does not match its schema."""

    exit_code = 2


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (`prog: error: ...`), exit 2, like every other error."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def error_text(exc: BaseException | None) -> str:
    """The body of an HTTP error, its whitespace folded and lowercased ("" for any other error): what a check for a
    server's phrase ("context length", "tool_choice") reads."""
    from pydantic_ai.exceptions import ModelHTTPError  # pydantic-ai's import is heavy: only once a sample failed

    return " ".join(str(exc.body).split()).lower() if isinstance(exc, ModelHTTPError) else ""


def failure_line(exc: BaseException) -> str:
    """One line naming the failure: HTTP status and body for API errors, the message otherwise."""
    from pydantic_ai.exceptions import ModelHTTPError  # pydantic-ai's import is heavy: only once a sample failed

    if isinstance(exc, ModelHTTPError):
        body = " ".join(str(exc.body).split())[:300] if exc.body is not None else ""
        return f"HTTP {exc.status_code} from {exc.model_name}: {body}".strip().rstrip(":")
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
