"""BFCL's own backends and multi-turn checker, used as they are (imported from the installed `bfcl-eval`).

Only the light modules are imported: the backends (`func_source_code`), `executable_backend_config`,
`multi_turn_utils` and `multi_turn_checker` need nothing but `mpmath`; BFCL's loaders, handlers and AST checker
(vendor SDKs, tree-sitter) are never touched. This module runs inside a backend worker process (see `workers.py`).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from collections.abc import Callable, Collection
from types import ModuleType
from typing import Any

from typed_eval.core.errors import InputError
from typed_eval.suites.bfcl.data import installed_data_dir
from typed_eval.suites.bfcl.multi_turn.decoded_calls import ERROR_PREFIX, literal_call

__all__ = ["CaseBackends", "bfcl_module", "check_installed", "result_text", "signatures"]

CONFIG = "bfcl_eval.constants.executable_backend_config"
CHECKER = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker"
UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"


def check_installed() -> None:
    """bfcl-eval 2026.3.23 and mpmath are importable, or a one-line error saying how to install them."""
    installed_data_dir()  # raises when bfcl-eval is absent or another version
    try:
        importlib.import_module("mpmath")
    except ImportError:
        raise InputError("BFCL's math backend needs mpmath: pip install mpmath") from None


def bfcl_module(name: str) -> ModuleType:
    return importlib.import_module(name)


class CaseBackends:
    """One case's fresh backend instances, loaded with its initial configuration as BFCL loads them
    (`execute_multi_turn_func_call`: a deep copy of the class's config, `long_context` for that category)."""

    def __init__(self, involved_classes: list[str], initial_config: dict[str, Any], long_context: bool) -> None:
        config = bfcl_module(CONFIG)
        self.methods: dict[str, Callable[..., Any]] = {}
        for class_name in involved_classes:
            module = importlib.import_module(config.CLASS_FILE_PATH_MAPPING[class_name])
            instance = getattr(module, class_name)()
            if class_name not in config.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(initial_config.get(class_name, {})), long_context=long_context)
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def run(self, source: str, offered: Collection[str]) -> tuple[str, bool]:
        """A decoded call run as BFCL's executor runs it, among the functions offered at this turn: its result text
        (a string as it is, a dict as JSON, anything else `str`, an exception as "Error during execution: ...") and
        whether it was a call BFCL's checker may be given (a plain call of a function with literal arguments)."""
        parsed = literal_call(source, [name for name in offered if name in self.methods])
        if isinstance(parsed, str):
            return ERROR_PREFIX + parsed, False
        name, values = parsed
        try:
            result = self.methods[name](**values)
        except Exception as error:  # as BFCL: the model is shown the error and goes on
            return ERROR_PREFIX + str(error), True
        return result_text(result), True


def signatures(involved_classes: list[str]) -> dict[str, inspect.Signature]:
    """The public methods' signatures of the classes (bound: without `self`), from unloaded instances."""
    config = bfcl_module(CONFIG)
    found: dict[str, inspect.Signature] = {}
    for class_name in involved_classes:
        module = importlib.import_module(config.CLASS_FILE_PATH_MAPPING[class_name])
        for name, method in inspect.getmembers(getattr(module, class_name)(), predicate=inspect.ismethod):
            if not name.startswith("_"):
                found[name] = inspect.signature(method)
    return found


def result_text(result: Any) -> str:
    """An execution result as BFCL's executor gives it to the model."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # an object in it: BFCL falls back to str
            return str(result)
    return str(result)
