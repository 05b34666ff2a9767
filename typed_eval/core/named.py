"""Objects the user names as `module:Name` on the command line (an output type, an evaluator, a pydantic model)."""

from __future__ import annotations

import importlib
from typing import Any

from typed_eval.core.errors import InputError

__all__ = ["import_named"]


def import_named(spec: str, label: str, naming: str = "name it as module:Name") -> Any:
    """The object `module:Name` names (importable as the program runs: PYTHONPATH), or one line starting with
    `label` saying why not (`naming`: what to write instead of a spec with no colon)."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise InputError(f"{label}: {naming}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an ImportError, or the module's own failure on import
        raise InputError(f"{label}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in name.split("."):
        if not hasattr(target, part):
            raise InputError(f"{label}: {module_name!r} has no {name!r}")
        target = getattr(target, part)
    return target
