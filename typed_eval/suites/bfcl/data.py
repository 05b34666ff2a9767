"""BFCL's single-turn cases and possible answers, read from a `bfcl-eval` installed `--no-deps` or from a folder.

`bfcl-eval` with its dependencies is several GB (torch, vendor SDKs), so it is never imported: its data folder is
found through the installed distribution's metadata and read as the JSON-lines files they are. A run records the
version read and a hash of the bytes read, so two runs can tell whether they posed the same cases.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typed_eval.core.errors import InputError
from typed_eval.core.files import read_regular

__all__ = [
    "CATEGORY_SIZES",
    "DISTRIBUTION",
    "MAX_DATA_BYTES",
    "SAMPLE_DIR",
    "SINGLE_TURN_CATEGORIES",
    "SUPPORTED_VERSION",
    "BfclCase",
    "BfclData",
    "load_folder",
    "load_installed",
    "load_sample",
    "parse_categories",
]

DISTRIBUTION = "bfcl-eval"
SUPPORTED_VERSION = "2026.3.23"
FILE_PREFIX = "BFCL_v4_"
INSTALL_HINT = f"pip install --no-deps {DISTRIBUTION}=={SUPPORTED_VERSION}"
MAX_DATA_BYTES = 64 * 1024 * 1024
"""The most a BFCL data file is read of (the largest BFCL v4 file, live_multiple, holds 3.9 MB)."""

CATEGORY_SIZES: dict[str, int] = {  # in BFCL's order (constants/category_mapping.py), cases in 2026.3.23
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
}
SINGLE_TURN_CATEGORIES: tuple[str, ...] = tuple(CATEGORY_SIZES)
ROLES = ("system", "user", "assistant")
"""The roles of a single-turn case's messages."""
SAMPLE_DIR = Path(__file__).parent / "sample"
"""Five cases per category of bfcl-eval 2026.3.23, with BFCL's LICENSE and a NOTICE: for tests and offline tries."""


def has_possible_answers(category: str) -> bool:
    """Relevance and irrelevance cases are scored on whether a call was made, so BFCL ships no answers for them."""
    return "relevance" not in category


@dataclass(frozen=True)
class BfclCase:
    """One BFCL entry: the conversation posed, the function docs offered, and the calls that count as right."""

    id: str
    category: str
    question: list[dict[str, Any]]
    """The messages of the single turn, as BFCL poses them (a system message first when the case has one)."""
    functions: list[dict[str, Any]]
    """The function docs exactly as in the data file (BFCL's own types: dict, float, tuple, Java and JS types)."""
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None
    """Per expected call, `{name: {param: [allowed values]}}`; None for relevance and irrelevance categories."""


@dataclass(frozen=True)
class BfclData:
    """The cases read, and what they were read from."""

    version: str | None
    """bfcl-eval's version, or None for a folder of files."""
    source: str
    dataset_hash: str
    """sha256 over each file read, in BFCL's category order: its name, a NUL, its bytes."""
    cases: tuple[BfclCase, ...]

    def by_category(self, category: str) -> list[BfclCase]:
        return [case for case in self.cases if case.category == category]


def parse_categories(text: str | None) -> tuple[str, ...]:
    """`-S categories=a,b` as a tuple in BFCL's order; every single-turn category when not given."""
    if text is None or not text.strip():
        return SINGLE_TURN_CATEGORIES
    asked = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in asked if name not in CATEGORY_SIZES]
    if unknown:
        known = ", ".join(SINGLE_TURN_CATEGORIES)
        raise InputError(f"unknown BFCL category {unknown[0]!r}; the single-turn categories are {known}")
    return tuple(name for name in SINGLE_TURN_CATEGORIES if name in asked)


def installed_data_dir() -> tuple[str, Path]:
    """The installed bfcl-eval's version and data folder, found without importing the package."""
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"{DISTRIBUTION} is not installed; get BFCL's data with: {INSTALL_HINT}") from None
    version = distribution.version
    if version != SUPPORTED_VERSION:
        raise InputError(f"{DISTRIBUTION} {version} is installed, the suite reads {SUPPORTED_VERSION}: {INSTALL_HINT}")
    candidates = [Path(str(distribution.locate_file("bfcl_eval/data")))]
    spec = importlib.machinery.PathFinder.find_spec("bfcl_eval")  # found on the path, not executed or imported
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(location) / "data" for location in spec.submodule_search_locations]
    for folder in candidates:
        if (folder / f"{FILE_PREFIX}simple_python.json").is_file():
            return version, folder
    raise InputError(f"{DISTRIBUTION} {version} is installed but its data folder is missing; reinstall: {INSTALL_HINT}")


def load_installed(categories: Sequence[str] = SINGLE_TURN_CATEGORIES) -> BfclData:
    """The categories' cases from the installed bfcl-eval."""
    version, folder = installed_data_dir()
    return read_folder(folder, categories, version=version)


def load_folder(folder: Path, categories: Sequence[str] = SINGLE_TURN_CATEGORIES) -> BfclData:
    """The categories' cases from a folder laid out as bfcl-eval's `data/` (`-S data=FOLDER`)."""
    if not folder.is_dir():
        raise InputError(f"BFCL data folder {str(folder)!r} does not exist")
    return read_folder(folder, categories, version=None)


def load_sample(categories: Sequence[str] = SINGLE_TURN_CATEGORIES) -> BfclData:
    """The shipped sample: five cases per category of bfcl-eval 2026.3.23."""
    return read_folder(SAMPLE_DIR, categories, version=f"{SUPPORTED_VERSION} (sample)")


def read_folder(folder: Path, categories: Sequence[str], *, version: str | None) -> BfclData:
    for category in categories:
        if category not in CATEGORY_SIZES:
            parse_categories(category)  # raises the one-line error naming the category
    categories = [category for category in SINGLE_TURN_CATEGORIES if category in categories]  # BFCL's order
    digest = hashlib.sha256()
    cases: list[BfclCase] = []
    for category in categories:
        question_file = folder / f"{FILE_PREFIX}{category}.json"
        entries = read_json_lines(question_file, digest)
        answers: list[tuple[int, dict[str, Any]]] = []
        if has_possible_answers(category):
            answers = read_json_lines(folder / "possible_answer" / f"{FILE_PREFIX}{category}.json", digest)
            if len(answers) != len(entries):
                raise InputError(f"{question_file}: {len(entries)} cases but {len(answers)} possible answers")
        for index, (line, entry) in enumerate(entries):
            answer = answers[index][1] if answers else None
            cases.append(make_case(entry, answer, category, f"{question_file}:{line}"))
    return BfclData(version=version, source=str(folder), dataset_hash=digest.hexdigest(), cases=tuple(cases))


def read_json_lines(path: Path, digest: Any) -> list[tuple[int, dict[str, Any]]]:
    """A JSON-lines file's objects with their line numbers; a bad line is a one-line error naming file and line."""
    try:
        content = read_regular(path, MAX_DATA_BYTES)
    except OSError as error:
        raise InputError(f"cannot read BFCL data file {path}: {error.strerror or error}") from None
    digest.update(path.name.encode() + b"\0" + content)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    entries: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise InputError(f"{path}:{number}: not a JSON object ({str(error).splitlines()[0]})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise InputError(f'{path}:{number}: not a JSON object with an "id" string')
        entries.append((number, entry))
    return entries


def make_case(entry: dict[str, Any], answer: dict[str, Any] | None, category: str, where: str) -> BfclCase:
    """A case from its entry and its possible answer, checking the shape the checker relies on."""
    question = entry.get("question")
    if not (isinstance(question, list) and question and isinstance(question[0], list)):
        raise InputError(f'{where}: "question" must be a list holding the turn\'s list of messages')
    messages: list[dict[str, Any]] = question[0]
    if not all(isinstance(message, dict) and isinstance(message.get("content"), str) for message in messages):
        raise InputError(f'{where}: every message must be an object with a "content" string')
    functions = entry.get("function")
    if not isinstance(functions, list) or not all(is_function_doc(doc) for doc in functions):
        raise InputError(f'{where}: "function" must be a list of docs with a name and parameters.properties')
    if not messages or messages[-1].get("role") == "assistant" or any(m.get("role") not in ROLES for m in messages):
        raise InputError(f"{where}: the turn's messages must be {', '.join(ROLES)} ones, the last not the assistant's")
    ground_truth = None
    if answer is not None:
        if answer.get("id") != entry["id"]:
            raise InputError(f"{where}: its possible answer (at the same line) has the id {answer.get('id')!r}")
        ground_truth = answer.get("ground_truth")
        if not (isinstance(ground_truth, list) and all(is_expected_call(call) for call in ground_truth)):
            raise InputError(f"{where}: its possible answer must be a list of {{name: {{param: [values]}}}}")
    return BfclCase(
        id=entry["id"], category=category, question=messages, functions=functions, ground_truth=ground_truth
    )


def is_function_doc(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
        return False
    parameters = doc.get("parameters")
    return isinstance(parameters, dict) and isinstance(parameters.get("properties"), dict)


def is_expected_call(call: Any) -> bool:
    if not isinstance(call, dict) or len(call) != 1:
        return False
    params = next(iter(call.values()))
    return isinstance(params, dict) and all(isinstance(values, list) for values in params.values())
