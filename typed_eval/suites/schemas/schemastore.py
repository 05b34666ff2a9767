"""The SchemaStore schemas shipped inside the installed `check-jsonschema` package (its `builtin_schemas/vendor/`
folder): real configuration-file schemas (GitHub workflows, GitLab CI, Renovate, ...), each under its own license
(SchemaStore's Apache-2.0 for most, the others' in the package's `vendor/licenses/`).

The package is found through its distribution's metadata and read as the JSON files they are, never imported. A case
is `schemastore/<name>` in the group `schemastore`; a run records the package's version and a hash of the bytes read.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from typed_eval.contracts import Case
from typed_eval.core.errors import InputError
from typed_eval.suites.schemas.data import MAX_BYTES, file_case
from typed_eval.suites.schemas.hub import INSTALL_HINT

__all__ = ["DISTRIBUTION", "GROUP", "StoreSchemas", "load_schemastore", "vendored_folder"]

DISTRIBUTION = "check-jsonschema"
GROUP = "schemastore"
VENDORED = ("check_jsonschema", "builtin_schemas", "vendor")


@dataclass(frozen=True)
class StoreSchemas:
    """The cases read, and what they were read from."""

    version: str
    """check-jsonschema's version."""
    folder: Path
    dataset_hash: str
    """sha256 over each schema file read, by name: its name, a NUL, its bytes."""
    cases: list[Case]


def vendored_folder() -> tuple[str, Path]:
    """The installed check-jsonschema's version and its folder of vendored schemas, found without importing it."""
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"source=schemastore reads {DISTRIBUTION}'s schemas, not installed: {INSTALL_HINT}") from None
    candidates = [Path(str(distribution.locate_file("/".join(VENDORED))))]
    spec = importlib.machinery.PathFinder.find_spec(VENDORED[0])  # found on the path, not executed or imported
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(location, *VENDORED[1:]) for location in spec.submodule_search_locations]
    for folder in candidates:
        if folder.is_dir() and any(folder.glob("*.json")):
            return distribution.version, folder
    raise InputError(f"{DISTRIBUTION} {distribution.version} is installed without its vendored schemas: reinstall it")


def load_schemastore(max_bytes: int = MAX_BYTES) -> StoreSchemas:
    """Every vendored schema, by name."""
    version, folder = vendored_folder()
    digest = hashlib.sha256()
    cases = []
    for file in sorted(folder.glob("*.json")):
        try:
            digest.update(file.name.encode() + b"\0" + file.read_bytes())
        except OSError as exc:
            raise InputError(f"cannot read schema file {file}: {exc.strerror or exc}") from None
        cases.append(file_case(f"{GROUP}/{file.stem}", GROUP, file, max_bytes))
    return StoreSchemas(version=version, folder=folder, dataset_hash=digest.hexdigest(), cases=cases)
