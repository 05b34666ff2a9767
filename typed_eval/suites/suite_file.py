"""A user's suite file: a Python file that defines `TASK` (an `evaluator.Task`) and `CASES` (a list of
`evaluator.Case`) or a `cases()` function, run with `main.py run --suite path/to/file.py`, as inspect_ai runs
`inspect eval file.py`. The file is the user's own code and runs as such."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from typed_eval.contracts import Case
from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import TaskError
from typed_eval.core.suite import file_suite
from typed_eval.core.tasks import Task

__all__ = ["SUITE_FILE", "load_suite_file"]


def _import(path: Path) -> ModuleType:
    name = f"_typed_eval_suite_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"cannot load suite file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic models defined in the file look their module up
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise TaskError(f"suite file {path} failed to load: {type(exc).__name__}: {exc}") from None
    return module


def load_suite_file(path: Path) -> tuple[Task[object], Dataset]:
    """The file's task and cases; a file that lacks them, or whose cases are not Cases, is a one-line error."""
    if not path.is_file():
        raise TaskError(f"no suite file {path}: name an installed suite (main.py suites lists them) or a .py file")
    module = _import(path)
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        found = "no TASK" if task is None else f"TASK is a {type(task).__name__}"
        raise TaskError(f"suite file {path} must define TASK = evaluator.Task(...): {found}")
    cases = getattr(module, "CASES", None)
    make = getattr(module, "cases", None)
    given: Any = cases
    if cases is None and callable(make):
        given = _pulled(path, make)
    elif cases is None or isinstance(cases, str | bytes) or not hasattr(cases, "__iter__"):
        raise TaskError(_NO_CASES.format(path=path))
    try:
        return task, dataset_from_cases(given, suite=path.stem, source="file", path=str(path))
    except TaskError as exc:
        said = str(exc)
        raise TaskError(said if said.startswith(f"suite file {path}") else f"suite file {path}: {said}") from None


_NO_CASES = "suite file {path} must define CASES (a list of evaluator.Case) or a cases() function"


def _pulled(path: Path, make: Callable[[], object]) -> Callable[[], Iterator[Case]]:
    """`cases()` called afresh for each pass over the dataset and pulled a case at a time, as the built-in suites'
    cases are: a generator of 100,000 cases is never held whole (read into a list, 98 MB of cases took 315 MB).
    What it raises, when called or while it yields, is one line naming the file."""

    def failed(exc: Exception) -> TaskError:
        return TaskError(f"suite file {path}: cases() failed: {type(exc).__name__}: {exc}")

    def pull() -> Iterator[Case]:
        try:
            made = make()
        except Exception as exc:
            raise failed(exc) from None
        if made is None or isinstance(made, str | bytes) or not hasattr(made, "__iter__"):
            raise TaskError(_NO_CASES.format(path=path))
        cases = iter(made)
        while True:
            try:
                case = next(cases)
            except StopIteration:
                return
            except Exception as exc:
                raise failed(exc) from None
            yield case

    return pull


SUITE_FILE = file_suite(
    "suite-file", load_suite_file, "a Python file defining TASK and CASES or cases() (--suite FILE.py)", (".py",)
)
