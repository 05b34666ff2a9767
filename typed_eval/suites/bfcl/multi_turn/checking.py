"""BFCL's multi-turn checker run on a case's decoded calls, and where a failed case went wrong.

The checker replays the model's calls and the ground truth's, turn by turn, on fresh instances of BFCL's backends
and compares their states and results (`multi_turn_checker`, called as BFCL's evaluator calls it). It keeps the
instances in its module's globals under a name made of the model name and the case id, and never removes them: each
check here uses a name of its own and removes what it left. Runs inside a backend worker process.

The checker runs every text it is given with `eval`, and names its instances after the case id: what it is given is
checked here first, as the model's calls are checked before they run (`decoded_calls`), whatever checked it before
(the data folder when read, the trajectory when played): a ground-truth call that is not a plain call of a method
of the case's classes with literal arguments, or an id that is not a name, is refused; a model's call that is not a
plain call of such a method with literal keyword arguments is given as `NOT_RUN`.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import re
from collections import Counter
from typing import Any

from typed_eval.suites.bfcl.multi_turn.backend import CHECKER, UTILS, bfcl_module, signatures
from typed_eval.suites.bfcl.multi_turn.decoded_calls import (
    CALL_ID,
    NOT_RUN,
    NotLiteral,
    ground_truth_problem,
    literal_call,
    read_literal,
)

__all__ = ["DETAILS_LIMIT", "RefusedCase", "check_case", "checked_calls"]

DETAILS_LIMIT = 4_000
"""Characters of the checker's details kept (a long-context file system's state runs to megabytes)."""
_checks = itertools.count()


def check_case(
    entry: dict[str, Any], category: str, decoded: list[list[list[str]]], ground_truth: list[list[str]]
) -> dict[str, Any]:
    """BFCL's verdict (`valid`, `error_type`, `error_message`, details cut to `DETAILS_LIMIT`), the first turn that
    failed and our reading of why (`cause`)."""
    decoded = checked_calls(entry, decoded, ground_truth)
    checker, utils = bfcl_module(CHECKER), bfcl_module(UTILS)
    model_name = f"typed_eval_check_{os.getpid()}_{next(_checks)}"
    try:
        verdict = checker.multi_turn_checker(decoded, ground_truth, entry, category, model_name)
    finally:
        namespace = vars(utils)
        for key in [key for key in namespace if key.startswith(model_name)]:
            del namespace[key]
    if verdict.get("valid"):
        return {"valid": True}
    turn = failed_turn(verdict)
    details = {key: value for key, value in verdict.items() if key not in ("valid", "error_type", "error_message")}
    text = json.dumps(details, default=repr, ensure_ascii=False)
    return {
        "valid": False,
        "error_type": str(verdict.get("error_type")),
        "error_message": str(verdict.get("error_message")),
        "details": text if len(text) <= DETAILS_LIMIT else text[:DETAILS_LIMIT] + "...",
        "failed_turn": turn,
        "cause": cause(entry, decoded, ground_truth, turn, str(verdict.get("error_type"))),
    }


class RefusedCase(Exception):
    """A case whose ground truth or id BFCL's checker would run as code."""


def checked_calls(
    entry: dict[str, Any], decoded: list[list[list[str]]], ground_truth: list[list[str]]
) -> list[list[list[str]]]:
    """The decoded calls with each that is not a plain call of a method of the case's classes (literal keyword
    arguments) as `NOT_RUN`; `RefusedCase` when the id or a ground-truth call would run anything else."""
    case_id = entry.get("id")
    if not (isinstance(case_id, str) and CALL_ID.fullmatch(case_id)):
        raise RefusedCase(f"the id {str(case_id)[:80]!r} is refused: BFCL names objects after it and runs them")
    methods = set(signatures(entry["involved_classes"]))
    for call in (call for calls in ground_truth for call in calls):
        problem = ground_truth_problem(call, methods) if isinstance(call, str) else "not a string"
        if problem is not None:
            raise RefusedCase(f"the ground truth {str(call)[:80]!r} is refused: {problem}")
    return [
        [[call if isinstance(call, str) and isinstance(literal_call(call, methods), tuple) else NOT_RUN
          for call in step] for step in turn]
        for turn in decoded
    ]  # fmt: skip


def failed_turn(verdict: dict[str, Any]) -> int | None:
    """The turn the checker stopped at: named in its message, or the last of the turns it executed."""
    found = re.search(r"for turn (\d+)", str(verdict.get("error_message", "")))
    if found:
        return int(found.group(1))
    executed = verdict.get("execution_result")
    return len(executed) - 1 if isinstance(executed, list) and executed else None


def cause(
    entry: dict[str, Any], decoded: list[list[list[str]]], ground_truth: list[list[str]], turn: int | None, kind: str
) -> str:
    """Why the case failed, at its first failed turn: the model acted on an earlier turn where it should have asked
    (miss_param), left out a call, called a wrong function, a right one with a wrong argument, or made every call of
    the ground truth and still left another state (extra or repeated calls, an earlier turn's effects)."""
    if turn is None or turn >= len(ground_truth):
        return "unknown"
    if any(not ground_truth[t] and any(decoded[t]) for t in range(turn)):
        return "acted_on_miss_param"
    if kind == "multi_turn:empty_turn_model_response":
        return "missing_call"
    methods = signatures(entry["involved_classes"])
    model = [arguments(call, methods) for step in decoded[turn] for call in step]
    truth = [arguments(call, methods) for call in ground_truth[turn]]
    model_names, truth_names = Counter(name for name, _ in model), Counter(name for name, _ in truth)
    if model_names - truth_names and truth_names - model_names:
        return "wrong_function"
    if truth_names - model_names:
        return "missing_call"
    unmatched = list(model)
    for call in truth:
        if call not in unmatched:
            return "wrong_argument"
        unmatched.remove(call)
    return "state_drift"


def arguments(source: str, methods: dict[str, inspect.Signature]) -> tuple[str, str]:
    """A call as (name, its arguments bound to the method's parameters, as comparable text)."""
    try:
        node = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return source, ""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return source, ""
    name = node.func.id
    try:
        args = [read_literal(arg) for arg in node.args]
        kwargs = {str(k.arg): read_literal(k.value) for k in node.keywords}
    except (NotLiteral, NameError, RecursionError):
        return name, source
    signature = methods.get(name)
    bound: dict[str, Any] = kwargs
    if signature is not None:
        try:
            bound = dict(signature.bind(*args, **kwargs).arguments)
        except TypeError:
            bound = {**{str(i): a for i, a in enumerate(args)}, **kwargs}
    return name, repr(sorted(bound.items(), key=lambda item: item[0]))
