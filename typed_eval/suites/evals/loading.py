"""A pydantic_evals dataset file read by pydantic_evals itself (`Dataset.from_file`, YAML or JSON as `to_file` writes
them), with the output type and custom evaluator classes the user names; and its cases as this program's.

Inputs become the prompt as a task given them would see them in text: a string as it is, anything else (a dict, a
list, a model) as its JSON, indented by two (`render_inputs`; a pydantic-ai task that asks
`agent.run(render_inputs(inputs))` is posed the same). Case names are the case ids (an unnamed case is `Case N`, as
pydantic_evals names it), `expected_output` the expected value, and the metadata is kept on the record.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_json, to_jsonable_python
from pydantic_evals import Case as EvalsCase
from pydantic_evals import Dataset as EvalsDataset
from pydantic_evals.evaluators import Evaluator

from typed_eval.contracts import Case
from typed_eval.core.errors import InputError
from typed_eval.core.files import read_regular
from typed_eval.core.named import import_named

__all__ = ["MAX_DATASET_BYTES", "case_id", "evaluator_types", "load_dataset", "output_type", "render_inputs", "to_case"]

MAX_DATASET_BYTES = 256 * 1024 * 1024
"""The most a dataset file (or the `$schema` file it names) is read of: 256 MiB."""


def output_type(spec: str | None, what: str = "output type", default: Any = str) -> Any:
    """The type `--output-type module:Class` names (`default` when none is named), checked to be one pydantic
    validates; `what` names it in an error (`inputs type`)."""
    if spec is None:
        return default
    target = import_named(spec, f"{what} {spec!r}")
    try:
        TypeAdapter(target)
    except Exception as exc:
        raise InputError(f"{what} {spec!r}: not a type pydantic validates: {str(exc).splitlines()[0]}") from None
    return target


def evaluator_types(specs: Sequence[str]) -> list[type[Evaluator[Any, Any, Any]]]:
    """The custom evaluator classes named: `module:Class`, or `module` for every Evaluator class it defines."""
    found: list[type[Evaluator[Any, Any, Any]]] = []
    for spec in specs:
        if ":" in spec:
            target = import_named(spec, f"evaluator {spec!r}")
            if not (inspect.isclass(target) and issubclass(target, Evaluator)):
                raise InputError(f"evaluator {spec!r}: not a pydantic_evals Evaluator class")
            found.append(target)
            continue
        try:
            module = importlib.import_module(spec)
        except Exception as exc:
            raise InputError(f"evaluators {spec!r}: cannot import it: {type(exc).__name__}: {exc}") from None
        defined = [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Evaluator)
            and value.__module__ == module.__name__
            and not inspect.isabstract(value)
        ]
        if not defined:
            raise InputError(f"evaluators {spec!r}: the module defines no pydantic_evals Evaluator class")
        found += defined
    return list(dict.fromkeys(found))


def load_dataset(
    path: Path, output: Any, evaluators: Sequence[type[Evaluator[Any, Any, Any]]], inputs: Any = Any
) -> EvalsDataset[Any, Any, Any]:
    """The dataset as pydantic_evals reads it, inputs validated as `inputs` and expected outputs as `output`; what it
    refuses (a malformed file, a case that does not fit, an evaluator it cannot build) is one line naming the case or
    the evaluator."""
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise InputError(f"dataset {str(path)!r}: a pydantic_evals dataset is a .yaml, .yml or .json file")
    try:
        text = read_regular(path, MAX_DATASET_BYTES).decode("utf-8")
    except OSError as exc:
        raise InputError(f"cannot read dataset {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"dataset {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    fmt: Literal["yaml", "json"] = "json" if path.suffix.lower() == ".json" else "yaml"
    try:
        return EvalsDataset[inputs, output, Any].from_text(
            text, fmt=fmt, custom_evaluator_types=evaluators, default_name=path.stem
        )
    except ExceptionGroup as group:  # evaluators it could not build: the first one's line names it
        first = str(group.exceptions[0])
        unknown, known, _ = first.partition(" is not in the provided")
        if known:  # pydantic_evals' own line goes on to list every evaluator it has
            first = f"{unknown} is none of pydantic_evals' evaluators: name its module (--evaluators MODULE)"
        raise InputError(f"dataset {path}: {' '.join(first.split())}") from None
    except Exception as exc:
        raise InputError(f"dataset {path}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    """An exception as one line: pydantic's validation error (or one it caused) as its first error, with where."""
    for found in (exc, exc.__cause__):
        if isinstance(found, ValidationError):
            first = found.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            return f"{where}: {first['msg']}" if where else first["msg"]
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def case_id(case: EvalsCase[Any, Any, Any], number: int) -> str:
    """The case's name, or `Case N` (from 1) as pydantic_evals names an unnamed case in its report."""
    return case.name or f"Case {number}"


def render_inputs(inputs: Any) -> str:
    """The prompt for a case's inputs: a string as it is, anything else as JSON indented by two."""
    if isinstance(inputs, str):
        return inputs
    return to_json(inputs, indent=2).decode("utf-8")


def to_case(case: EvalsCase[Any, Any, Any], number: int) -> Case:
    """A dataset case as this program's: its id, prompt, expected value (as JSON) and metadata (a dict as it is,
    anything else under `metadata`)."""
    metadata = to_jsonable_python(case.metadata) if case.metadata is not None else {}
    if not isinstance(metadata, dict):
        metadata = {"metadata": metadata}
    return Case(
        id=case_id(case, number),
        prompt=render_inputs(case.inputs),
        expected=to_jsonable_python(case.expected_output),
        metadata=metadata,
    )
