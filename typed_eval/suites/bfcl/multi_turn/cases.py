"""BFCL's multi-turn cases, their possible answers and the function docs of the classes they involve.

Read from the installed `bfcl-eval` (found by its metadata, never imported), a folder laid out as its `data/`, or
the shipped sample. A case lists the user turns, the backend classes involved with their initial configuration,
and per turn the calls of the ground truth. Its functions are the docs of the involved classes as BFCL's loader
gathers them (`populate_test_cases_with_predefined_functions`): each class's doc file in order, minus the functions a
miss_func case holds out until a later turn. BFCL adds its language hint to the offered docs only: the held-out
docs come back at their turn without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typed_eval.core.errors import InputError
from typed_eval.core.files import read_regular
from typed_eval.suites.bfcl.data import (
    FILE_PREFIX,
    MAX_DATA_BYTES,
    SAMPLE_DIR,
    SUPPORTED_VERSION,
    installed_data_dir,
    is_function_doc,
    read_json_lines,
)
from typed_eval.suites.bfcl.multi_turn.decoded_calls import CALL_ID, ground_truth_problem

__all__ = [
    "CATEGORIES",
    "CATEGORY_SIZE",
    "FUNC_DOC_FILES",
    "MultiTurnCase",
    "MultiTurnData",
    "load_multi_turn",
    "parse_multi_turn_categories",
]

CATEGORIES: tuple[str, ...] = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
"""BFCL's multi-turn categories, in its order (constants/category_mapping.py)."""
CATEGORY_SIZE = 200
FUNC_DOC_DIR = "multi_turn_func_doc"
FUNC_DOC_FILES: dict[str, str] = {  # as BFCL's executable_backend_config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}


@dataclass(frozen=True)
class MultiTurnCase:
    """One multi-turn entry, as BFCL's loader prepares it."""

    id: str
    category: str
    turns: list[list[dict[str, Any]]]
    """Each turn's user messages (a miss_func hold-out turn has none: BFCL poses its own message there)."""
    involved_classes: list[str]
    initial_config: dict[str, Any]
    functions: list[dict[str, Any]]
    """The docs offered from the first turn (without BFCL's language hint, which the posing adds)."""
    held_out: dict[int, list[dict[str, Any]]]
    """miss_func: the docs added at a turn, in the order the case names them."""
    ground_truth: list[list[str]]
    """Per turn, the calls of the ground truth as BFCL writes them (`cd(folder='document')`); [] on a turn where
    the model should ask for what is missing (miss_param)."""

    @property
    def long_context(self) -> bool:
        """BFCL loads the backends with their long-context filler for these (`_load_scenario(long_context=True)`)."""
        return "long_context" in self.category

    def entry(self) -> dict[str, Any]:
        """What BFCL's multi-turn checker reads of the test entry."""
        return {"id": self.id, "initial_config": self.initial_config, "involved_classes": self.involved_classes}


@dataclass(frozen=True)
class MultiTurnData:
    version: str | None
    source: str
    dataset_hash: str
    """sha256 over each file read, in order (categories' questions and answers, then the doc files): name, NUL,
    bytes."""
    cases: tuple[MultiTurnCase, ...]


def parse_multi_turn_categories(names: Sequence[str]) -> tuple[str, ...]:
    """The multi-turn categories among `names`, in BFCL's order."""
    return tuple(category for category in CATEGORIES if category in names)


def load_multi_turn(categories: Sequence[str], data: str | None) -> MultiTurnData:
    """The categories' cases from the installed bfcl-eval (`data` None), the sample (`"sample"`) or a folder."""
    if data is None:
        version, folder = installed_data_dir()
        return read_multi_turn(folder, categories, version=version)
    if data == "sample":
        return read_multi_turn(SAMPLE_DIR, categories, version=f"{SUPPORTED_VERSION} (sample)")
    folder = Path(data)
    if not folder.is_dir():
        raise InputError(f"BFCL data folder {str(folder)!r} does not exist")
    _, installed = installed_data_dir()  # its backends' own docs name the functions BFCL's checker can run
    return read_multi_turn(folder, categories, version=None, methods_from=installed)


def read_multi_turn(
    folder: Path, categories: Sequence[str], *, version: str | None, methods_from: Path | None = None
) -> MultiTurnData:
    """The cases of `folder`; a ground-truth call must name a function of the docs of `methods_from` (BFCL's
    installed data, whose docs are its backends' methods), or of the folder's own docs when it is BFCL's."""
    unknown = [name for name in categories if name not in CATEGORIES]
    if unknown:
        raise InputError(f"unknown BFCL multi-turn category {unknown[0]!r}; they are {', '.join(CATEGORIES)}")
    digest = hashlib.sha256()
    raw: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
    for category in parse_multi_turn_categories(categories):
        path = folder / f"{FILE_PREFIX}{category}.json"
        entries = read_json_lines(path, digest)
        answers = read_json_lines(folder / "possible_answer" / f"{FILE_PREFIX}{category}.json", digest)
        if len(answers) != len(entries):
            raise InputError(f"{path}: {len(entries)} cases but {len(answers)} possible answers")
        for (line, entry), (_, answer) in zip(entries, answers, strict=True):
            raw.append((category, f"{path}:{line}", entry, answer))
    classes = sorted({name for _, where, entry, _ in raw for name in involved_classes(entry, where)})
    docs = {name: read_docs(folder / FUNC_DOC_DIR / FUNC_DOC_FILES[name], digest) for name in classes}
    if methods_from is not None:
        methods = {name: read_docs(methods_from / FUNC_DOC_DIR / FUNC_DOC_FILES[name], hashlib.sha256())
                   for name in classes}  # fmt: skip
    else:
        methods = docs
    names = {name: {str(doc["name"]) for doc in found} for name, found in methods.items()}
    cases = tuple(make_case(category, where, entry, answer, docs, names) for category, where, entry, answer in raw)
    return MultiTurnData(version=version, source=str(folder), dataset_hash=digest.hexdigest(), cases=cases)


def read_docs(path: Path, digest: Any) -> list[dict[str, Any]]:
    """A class's function docs (one JSON object a line); a bad one is a one-line error naming file and line."""
    try:
        content = read_regular(path, MAX_DATA_BYTES)
    except OSError as error:
        raise InputError(f"cannot read BFCL function docs {path}: {error.strerror or error}") from None
    digest.update(path.name.encode() + b"\0" + content)
    docs = []
    for number, line in enumerate(content.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise InputError(f"{path}:{number}: not a JSON object ({str(error).splitlines()[0]})") from None
        if not is_function_doc(doc):
            raise InputError(f"{path}:{number}: not a function doc with a name and parameters.properties")
        docs.append(doc)
    return docs


def involved_classes(entry: dict[str, Any], where: str) -> list[str]:
    names = entry.get("involved_classes")
    if not isinstance(names, list) or not names or not all(name in FUNC_DOC_FILES for name in names):
        raise InputError(f'{where}: "involved_classes" must list classes among {", ".join(FUNC_DOC_FILES)}')
    return names


def make_case(
    category: str,
    where: str,
    entry: dict[str, Any],
    answer: dict[str, Any],
    docs: dict[str, list[dict[str, Any]]],
    methods: dict[str, set[str]],
) -> MultiTurnCase:
    """A case as BFCL's loader makes it: the involved classes' docs gathered, the held-out ones taken out. Its
    ground truth must call `methods` of its classes (what BFCL's checker resolves; any other name it would `eval`)."""
    turns = entry.get("question")
    if not isinstance(turns, list) or not all(isinstance(turn, list) for turn in turns):
        raise InputError(f'{where}: "question" must be a list of turns, each a list of messages')
    for turn in turns:
        if not all(isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str) for m in turn):
            raise InputError(f"{where}: every message of a turn must be a user message with a content string")
    config = entry.get("initial_config", {})
    if not isinstance(config, dict):
        raise InputError(f'{where}: "initial_config" must be an object')
    if answer.get("id") != entry["id"]:
        raise InputError(f"{where}: its possible answer (at the same line) has the id {answer.get('id')!r}")
    truth = answer.get("ground_truth")
    if not (isinstance(truth, list) and len(truth) == len(turns) and all(is_call_list(turn) for turn in truth)):
        raise InputError(f"{where}: its possible answer must list, per turn, the calls as strings")
    functions = [dict(doc) for name in involved_classes(entry, where) for doc in docs[name]]
    if not (isinstance(entry["id"], str) and CALL_ID.fullmatch(entry["id"])):
        raise InputError(f"{where}: the id {str(entry['id'])[:80]!r} is refused: BFCL names objects after it and "
                         "runs them (letters, digits and _.:/- only)")  # fmt: skip
    known = {name for class_name in involved_classes(entry, where) for name in methods[class_name]}
    for call in (call for calls in truth for call in calls):
        problem = ground_truth_problem(call, known)
        if problem is not None:  # BFCL's checker would run it with `eval`: data is never run here
            raise InputError(f"{where}: the ground truth {call[:80]!r} is refused: {problem}")
    held_out: dict[int, list[dict[str, Any]]] = {}
    missed = entry.get("missed_function", {})
    if not isinstance(missed, dict):
        raise InputError(f'{where}: "missed_function" must map a turn to function names')
    for turn_index, names in missed.items():
        if not (str(turn_index).isdigit() and int(turn_index) < len(turns) and isinstance(names, list)):
            raise InputError(f'{where}: "missed_function" must map a turn of the case to a list of function names')
        if turns[int(turn_index)]:
            raise InputError(f"{where}: the hold-out turn {turn_index} must have no user message")
        held: list[dict[str, Any]] = []
        for name in names:
            found = next((i for i, doc in enumerate(functions) if doc.get("name") == name), None)
            if found is not None:  # as BFCL: a name no doc has is skipped
                held.append(functions.pop(found))
        held_out[int(turn_index)] = held
    return MultiTurnCase(
        id=entry["id"],
        category=category,
        turns=turns,
        involved_classes=list(entry["involved_classes"]),
        initial_config=config,
        functions=functions,
        held_out=held_out,
        ground_truth=truth,
    )


def is_call_list(turn: Any) -> bool:
    return isinstance(turn, list) and all(isinstance(call, str) for call in turn)
