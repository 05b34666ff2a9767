"""A user's suite file: a Python file that defines `TASK` (an `evaluator.Task`) and `CASES` (a list of
`evaluator.Case`) or a `cases()` function, run with `main.py run --suite path/to/file.py`, as inspect_ai runs
`inspect eval file.py`. The file is the user's own code and runs as such."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from farel_eval.datasets import Dataset, dataset_from_cases
from farel_eval.errors import TaskError
from farel_eval.tasks import Task

__all__ = ["load_suite_file"]


def _import(path: Path) -> ModuleType:
    name = f"_farel_eval_suite_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
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
        raise TaskError(
            f"no suite file {path}: name a built-in suite (farel, story-graph, lineage, novelty) or a .py file"
        )
    module = _import(path)
    task = getattr(module, "TASK", None)
    if not isinstance(task, Task):
        found = "no TASK" if task is None else f"TASK is a {type(task).__name__}"
        raise TaskError(f"suite file {path} must define TASK = evaluator.Task(...): {found}")
    cases = getattr(module, "CASES", None)
    make = getattr(module, "cases", None)
    if cases is None and callable(make):
        try:
            cases = make()
        except Exception as exc:
            raise TaskError(f"suite file {path}: cases() failed: {type(exc).__name__}: {exc}") from None
    if cases is None or isinstance(cases, str | bytes) or not hasattr(cases, "__iter__"):
        raise TaskError(f"suite file {path} must define CASES (a list of evaluator.Case) or a cases() function")
    try:
        return task, dataset_from_cases(cases, suite=path.stem, source="file", path=str(path))
    except TaskError as exc:
        raise TaskError(f"suite file {path}: {exc}") from None
