"""Where the schemas come from, each made a case: a folder laid out as JSONSchemaBench's `data/`
(`DIR/<set>/<file>.json`, the set being the case's group), the user's own schema file or folder, a pydantic model
named `module:Class`, or the sample shipped with the suite.

A case's prompt is the schema as JSONSchemaBench sends it (`json.dumps(schema)`, the last user message). A file that
is not JSON, or larger than the bound, is still a case: it carries the reason it cannot be posed, so it is that case's
error and never the run's. A folder or file that cannot be read is the user's error (one line, exit 2).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import TypeAdapter

from typed_eval.contracts import Case
from typed_eval.core.errors import InputError
from typed_eval.core.files import FileTooLarge, open_regular, read_regular
from typed_eval.core.named import import_named

__all__ = [
    "MAX_BYTES",
    "MODEL",
    "OWN",
    "PROBLEM",
    "SAMPLE_DIR",
    "SchemaFile",
    "file_case",
    "files_digest",
    "json_files",
    "load_model",
    "load_path",
    "load_sample",
    "path_files",
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
        text = read_regular(path, max_bytes).decode("utf-8")
    except FileTooLarge:  # grown since it was listed
        return Case(id=case_id, prompt="", group=group, metadata={**metadata, PROBLEM: "the schema file holds more "
                    f"than max_bytes={max_bytes:,} bytes"})  # fmt: skip
    except OSError as exc:
        raise InputError(f"cannot read schema file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        return Case(id=case_id, prompt="", group=group, metadata={**metadata, PROBLEM: f"not UTF-8 text ({exc.reason} "
                    f"at byte {exc.start})"})  # fmt: skip
    return text_case(case_id, group, text, metadata, max_bytes)


def _json_names(folder: Path) -> list[str]:
    """Every `*.json` below the folder as a path string, in `Path` order (by parts), linked folders followed once
    each; strings, as 9,557 `Path`s cost half a second to make and sort; a folder below it that cannot be listed is
    the user's error, not a set silently left out."""

    def fail(error: OSError) -> NoReturn:
        raise InputError(f"cannot read schema folder {error.filename or folder}: {error.strerror or error}")

    found: list[str] = []
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
        found += [os.path.join(root, name) for name in names if name.endswith(".json")]
    return sorted(found, key=lambda name: name.split(os.sep))


def json_files(folder: Path) -> list[Path]:
    """Every `*.json` below the folder, sorted, linked folders followed once each."""
    return [Path(name) for name in _json_names(folder)]


@dataclass(frozen=True, slots=True)
class SchemaFile:
    """A schema file of a path, listed but not read: the case it becomes, its group and where it is (a run of the
    whole benchmark holds 9,557 of them: slots, and one string per group)."""

    case_id: str
    group: str
    file: str

    @property
    def path(self) -> Path:
        return Path(self.file)


def path_files(path: Path) -> list[SchemaFile]:
    """A schema file (group `own`), or every `*.json` under a folder, grouped by the folder they are in below it
    (`DIR/<set>/<file>.json`: the set; a file directly in DIR: `own`). Ids are the paths below DIR, without `.json`."""
    if not path.exists():
        raise InputError(f"schema path {str(path)!r} does not exist")
    if path.is_file():
        return [SchemaFile(path.stem, OWN, str(path))]
    if not path.is_dir():
        raise InputError(f"schema path {str(path)!r} is neither a file nor a folder")
    names = _json_names(path)
    if not names:
        raise InputError(f"schema folder {str(path)!r} holds no .json file")
    listed = []
    groups: dict[str, str] = {}
    start = len(os.path.join(os.fspath(path), ""))
    for name in names:
        parts = name[start:].split(os.sep)
        stem = parts[-1][: -len(".json")] if parts[-1] != ".json" else parts[-1]  # as `Path.with_suffix("")`
        group = groups.setdefault(parts[0], parts[0]) if len(parts) > 1 else OWN
        listed.append(SchemaFile("/".join([*parts[:-1], stem]), group, name))
    return listed


def files_digest(files: Iterable[SchemaFile], max_bytes: int = MAX_BYTES) -> str:
    """MD5 over each file's case id, group and bytes (its size alone when over `max_bytes`, as it is never read), so
    two runs with the same digest posed the same schemas; read without parsing (0.2 s for JSONSchemaBench's 110 MB,
    where parsing them takes seconds). A file that cannot be read is the user's error, found here before anything is
    posed."""
    md5 = hashlib.md5()
    buffer = bytearray(1 << 20)  # each file read into it, not into bytes of its own: no heap grown by the largest
    for file in files:
        try:
            size = os.stat(file.file).st_size
            md5.update(f"{file.case_id}\0{file.group}\0{size}\0".encode())
            if size <= max_bytes:
                with open_regular(file.file) as stream:  # a FIFO or a device named *.json: one line, never read
                    left = max_bytes + 1  # what a file grown since its `stat` may add is bounded too
                    while left and (read := stream.readinto(memoryview(buffer)[: min(len(buffer), left)])):
                        md5.update(memoryview(buffer)[:read])
                        left -= read
        except OSError as exc:
            raise InputError(f"cannot read schema file {file.file}: {exc.strerror or exc}") from None
    return md5.hexdigest()


def load_path(path: Path, max_bytes: int = MAX_BYTES) -> list[Case]:
    """The cases of `path_files(path)`, each file read."""
    return [file_case(file.case_id, file.group, file.path, max_bytes) for file in path_files(path)]


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
