"""JSONSchemaBench itself, downloaded once from its Hugging Face dataset (`epfl-dlab/JSONSchemaBench`) at a pinned
commit, and read from huggingface_hub's cache ever after (HF_HOME, HF_HUB_CACHE and HF_ENDPOINT honoured, offline
too once cached).

The dataset holds each set as a folder of Parquet files, one per split (`<set>/{train,val,test}-*.parquet`, each row
a `unique_id` and the schema's text as `json_schema`): every split of the sets asked for is read, with DuckDB (a
dependency already), and a case is `<set>/<unique_id>` grouped by its set, its split in the metadata. A run records
the commit and a hash of the bytes read, so two runs can tell whether they posed the same schemas.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typed_eval.contracts import Case
from typed_eval.core.errors import InputError
from typed_eval.suites.schemas.data import MAX_BYTES, text_case
from typed_eval.suites.schemas.sampling import SETS

if TYPE_CHECKING:
    import duckdb

__all__ = ["INSTALL_HINT", "REPO_ID", "REVISION", "SPLITS", "HubSchemas", "download", "load_hub", "read_snapshot"]

REPO_ID = "epfl-dlab/JSONSchemaBench"
REVISION = "f50f4d3930f14af6db70d669828881e98c295f5c"
"""The dataset's commit read unless the run names another: one with the per-set folders of train/val/test splits."""
SPLITS = ("train", "val", "test")
INSTALL_HINT = "pip install -e '.[schemas]'"


@dataclass(frozen=True)
class HubSchemas:
    """The cases read, and what they were read from."""

    revision: str
    folder: Path
    """The cached snapshot the Parquet files were read from."""
    dataset_hash: str
    """sha256 over each file read, in the sets' and splits' order: its path in the dataset, a NUL, its bytes."""
    cases: list[Case]

    @property
    def source(self) -> str:
        return f"hf://datasets/{REPO_ID}@{self.revision}"


def download(
    sets: Sequence[str], revision: str = REVISION, *, endpoint: str | None = None, cache_dir: Path | None = None
) -> Path:
    """The snapshot folder holding the sets' Parquet files: fetched the first time, from the cache afterwards (a
    commit is immutable, so a cached one is read without asking the Hub). `endpoint` and `cache_dir` default to
    huggingface_hub's own (HF_ENDPOINT, HF_HOME)."""
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:
        raise InputError(
            f"source=jsonschemabench downloads with huggingface_hub, not installed: {INSTALL_HINT}"
        ) from None
    where = endpoint or constants.ENDPOINT  # HF_ENDPOINT, else the Hub
    try:
        with _quiet("huggingface_hub"):
            folder = snapshot_download(
                REPO_ID,
                repo_type="dataset",
                revision=revision,
                allow_patterns=[f"{name}/*.parquet" for name in sets],
                endpoint=endpoint,
                cache_dir=cache_dir,
            )
    except Exception as exc:  # huggingface_hub's and its HTTP client's many errors: the user's network, said in a line
        reason = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        reason = reason.removeprefix("Got: ")
        raise InputError(
            f"cannot get JSONSchemaBench ({REPO_ID} at {revision}) from {where}, and it is not cached: {reason}"
        ) from None
    return Path(folder)


@contextmanager
def _quiet(name: str) -> Iterator[None]:
    """The library's retry warnings kept off stderr while it downloads: a failure is said once, in our one line."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def read_snapshot(folder: Path, sets: Sequence[str], revision: str, max_bytes: int = MAX_BYTES) -> HubSchemas:
    """The sets' cases from a snapshot folder laid out as the dataset (`<set>/<split>-*.parquet`)."""
    import duckdb  # only when the source is read: the suite's other sources never need it

    digest = hashlib.sha256()
    cases: list[Case] = []
    seen: set[str] = set()
    connection = duckdb.connect(":memory:")
    try:
        for name in sets:
            files = sorted((folder / name).glob("*.parquet"), key=lambda file: (_split_rank(file), file.name))
            if not files:
                raise InputError(f"JSONSchemaBench at {revision} has no Parquet file for set {name!r} in {folder}")
            for file in files:
                for case in _read_parquet(connection, file, name, digest, max_bytes):
                    if case.id in seen:
                        raise InputError(f"{file}: the schema id {case.id!r} is there twice")
                    seen.add(case.id)
                    cases.append(case)
    finally:
        connection.close()
    return HubSchemas(revision=revision, folder=folder, dataset_hash=digest.hexdigest(), cases=cases)


def _split_rank(file: Path) -> int:
    split = file.name.split("-", 1)[0]
    return SPLITS.index(split) if split in SPLITS else len(SPLITS)


def _read_parquet(
    connection: duckdb.DuckDBPyConnection, file: Path, name: str, digest: Any, max_bytes: int
) -> list[Case]:
    import duckdb

    try:
        content = file.read_bytes()
        rows = connection.execute("SELECT unique_id, json_schema FROM read_parquet(?)", [str(file)]).fetchall()
    except OSError as exc:
        raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
    except duckdb.Error as exc:  # not Parquet, or without the two columns
        raise InputError(f"{file}: not JSONSchemaBench's Parquet ({str(exc).splitlines()[0]})") from None
    digest.update(f"{name}/{file.name}".encode() + b"\0" + content)
    split = file.name.split("-", 1)[0]
    cases = []
    for unique_id, text in rows:
        if not isinstance(unique_id, str) or not isinstance(text, str):
            raise InputError(f"{file}: a row without a unique_id and a json_schema string")
        metadata: dict[str, Any] = {"unique_id": unique_id, "split": split}
        cases.append(text_case(f"{name}/{unique_id}", name, text, metadata, max_bytes))
    return cases


def load_hub(
    sets: Sequence[str] = SETS,
    revision: str = REVISION,
    *,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    max_bytes: int = MAX_BYTES,
) -> HubSchemas:
    """The sets' cases (in the benchmark's order), downloaded once."""
    sets = [name for name in SETS if name in sets]
    folder = download(sets, revision, endpoint=endpoint, cache_dir=cache_dir)
    return read_snapshot(folder, sets, folder.name, max_bytes)  # the snapshot is named by its commit: a branch resolved
