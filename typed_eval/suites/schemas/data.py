"""Where the schemas come from, each made a case: a folder laid out as JSONSchemaBench's `data/`
(`DIR/<set>/<file>.json`, the set being the case's group), the user's own schema file or folder, a pydantic model
named `module:Class`, or the sample shipped with the suite.

A case's prompt is the schema as JSONSchemaBench sends it (`json.dumps(schema)`, the last user message). A file that
is not JSON, or larger than the bound, is still a case: it carries the reason it cannot be posed, so it is that case's
error and never the run's. A folder or file that cannot be read is the user's error (one line, exit 2).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NoReturn

from pydantic import TypeAdapter

from typed_eval.core.errors import InputError
from typed_eval.core.named import import_named
from typed_eval.schemas import Case

__all__ = [
    "MAX_BYTES",
    "MODEL",
    "OWN",
    "PROBLEM",
    "SAMPLE_DIR",
    "file_case",
    "json_files",
    "load_model",
    "load_path",
    "load_sample",
    "text_case",
]

SAMPLE_DIR = Path(__file__).parent / "sample"
OWN = "own"
"""The group of a schema file that is in no set's folder (the user's own)."""
MODEL = "model"
"""The group of a schema made from a pydantic model."""
PROBLEM = "problem"
"""Metadata key of why a case cannot be posed."""
MAX_BYTES = 4_000_000
"""Default bound on a schema file's size (the benchmark's largest is 1.3 MB)."""


def text_case(case_id: str, group: str, text: str, metadata: dict[str, Any], max_bytes: int = MAX_BYTES) -> Case:
    """A case from a schema's text, wherever it was read: too large or not JSON, it carries the reason (PROBLEM)."""
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        return Case(id=case_id, prompt="", group=group, metadata={**metadata, PROBLEM: f"the schema has {size:,} "
                    f"bytes, more than max_bytes={max_bytes:,}"})  # fmt: skip
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
        return Case(id=case_id, prompt=text, group=group, metadata={**metadata, PROBLEM: f"not JSON: {exc}"})
    return Case(id=case_id, prompt=json.dumps(schema), group=group, metadata=metadata)


def file_case(case_id: str, group: str, path: Path, max_bytes: int = MAX_BYTES) -> Case:
    """A case from a schema file; a file that cannot be read (gone, a dangling link, no permission) is the user's
    error."""
    metadata: dict[str, Any] = {"file": path.name}
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return Case(id=case_id, prompt="", group=group, metadata={**metadata, PROBLEM: f"the schema file has "
                        f"{size:,} bytes, more than max_bytes={max_bytes:,}"})  # fmt: skip
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read schema file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        return Case(id=case_id, prompt="", group=group, metadata={**metadata, PROBLEM: f"not UTF-8 text ({exc.reason} "
                    f"at byte {exc.start})"})  # fmt: skip
    return text_case(case_id, group, text, metadata, max_bytes)


def json_files(folder: Path) -> list[Path]:
    """Every `*.json` below the folder, sorted, linked folders followed once each; a folder below it that cannot be
    listed is the user's error, not a set silently left out."""

    def fail(error: OSError) -> NoReturn:
        raise InputError(f"cannot read schema folder {error.filename or folder}: {error.strerror or error}")

    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for root, folders, names in os.walk(folder, onerror=fail, followlinks=True):
        try:
            status = os.stat(root)
        except OSError as error:
            fail(error)
        if (status.st_dev, status.st_ino) in seen:  # a link back up the tree
            folders.clear()
            continue
        seen.add((status.st_dev, status.st_ino))
        found += [Path(root) / name for name in names if name.endswith(".json")]
    return sorted(found)


def load_path(path: Path, max_bytes: int = MAX_BYTES) -> list[Case]:
    """A schema file (group `own`), or every `*.json` under a folder, grouped by the folder they are in below it
    (`DIR/<set>/<file>.json`: the set; a file directly in DIR: `own`). Ids are the paths below DIR, without `.json`."""
    if not path.exists():
        raise InputError(f"schema path {str(path)!r} does not exist")
    if path.is_file():
        return [file_case(path.stem, OWN, path, max_bytes)]
    files = json_files(path)
    if not files:
        raise InputError(f"schema folder {str(path)!r} holds no .json file")
    cases = []
    for file in files:
        relative = file.relative_to(path)
        group = relative.parts[0] if len(relative.parts) > 1 else OWN
        cases.append(file_case(relative.with_suffix("").as_posix(), group, file, max_bytes))
    return cases


def load_sample() -> list[Case]:
    """The shipped sample: 30 schemas of each of JSONSchemaBench's ten sets (see sample/README.md)."""
    return load_path(SAMPLE_DIR)


def load_model(spec: str) -> Case:
    """The JSON Schema of a pydantic model (or any type pydantic validates) named `module:Class`, importable as the
    program runs (PYTHONPATH)."""
    target = import_named(spec, f"model={spec!r}", "name a pydantic model as module:Class")
    try:
        schema = TypeAdapter(target).json_schema()
    except Exception as exc:  # not a type pydantic can make a JSON Schema of
        raise InputError(f"model={spec!r}: no JSON Schema: {str(exc).splitlines()[0]}") from None
    return Case(id=spec, prompt=json.dumps(schema), group=MODEL, metadata={"model": spec})
