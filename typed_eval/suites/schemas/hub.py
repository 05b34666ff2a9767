"""JSONSchemaBench itself, downloaded once from its Hugging Face dataset (`epfl-dlab/JSONSchemaBench`) at a pinned
commit, and read from huggingface_hub's cache ever after (HF_HOME, HF_HUB_CACHE and HF_ENDPOINT honoured, offline
too once cached).

A Hub (or an `HF_ENDPOINT` mirror) cannot steer the download: huggingface_hub names the blob it writes after the
ETag the server sends, so every answer's ETag and commit are checked to be hashes before anything is written (else
one line, exit 2); the download has an overall deadline, a read timeout and a bound on the bytes it takes, and a
download cut short leaves nothing partial in the cache.

The dataset holds each set as a folder of Parquet files, one per split (`<set>/{train,val,test}-*.parquet`, each row
a `unique_id` and the schema's text as `json_schema`): every split of the sets asked for is read, with DuckDB (a
dependency already), and a case is `<set>/<unique_id>` grouped by its set, its split in the metadata. A run records
the commit and a hash of the bytes read, so two runs can tell whether they posed the same schemas.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typed_eval.contracts import Case
from typed_eval.core.errors import InputError
from typed_eval.core.files import open_regular
from typed_eval.suites.schemas.data import MAX_BYTES, text_case
from typed_eval.suites.schemas.sampling import SETS

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "DOWNLOAD_BYTES",
    "DOWNLOAD_S",
    "INSTALL_HINT",
    "REPO_ID",
    "REVISION",
    "SPLITS",
    "HubSchemas",
    "download",
    "load_hub",
    "read_snapshot",
]

REPO_ID = "epfl-dlab/JSONSchemaBench"
REVISION = "f50f4d3930f14af6db70d669828881e98c295f5c"
"""The dataset's commit read unless the run names another: one with the per-set folders of train/val/test splits."""
SPLITS = ("train", "val", "test")
INSTALL_HINT = "pip install -e '.[schemas]'"
DOWNLOAD_S = 900.0
"""The longest a download of the sets may take, however the server paces it."""
DOWNLOAD_BYTES = 512 * 2**20
"""The most a download of the sets may take in: the whole benchmark is 110 MB of JSON, far less as Parquet."""
READ_TIMEOUT_S = 60.0
"""The longest the server may stay silent while it is read."""
_HASHED = re.compile(r'(W/)?"?[0-9A-Za-z_-]{1,128}"?')
"""An ETag as the Hub sends them (a file's SHA-1 or SHA-256): no `/` nor `.` a path could be made of."""
_COMMIT = re.compile(r"[0-9a-f]{40}")


class HubRefused(Exception):
    """What the Hub sent is refused: a header that would steer where the download is written, more bytes than the
    dataset holds, or too long a download."""


class _Guard:
    """The download's checks, on huggingface_hub's own HTTP client for as long as it lasts."""

    def __init__(self, deadline_s: float, most: int, stream_type: type) -> None:
        self.deadline_s, self.most = deadline_s, most
        self.bounded = _bounded(stream_type)
        self.ends = time.monotonic() + deadline_s
        self.read = 0

    def taken(self, size: int) -> None:
        self.read += size
        if self.read > self.most:
            raise HubRefused(f"the server sent more than {self.most:,} bytes, more than the sets hold")
        if time.monotonic() > self.ends:
            raise HubRefused(f"the download took more than {self.deadline_s:g} s")

    def request(self, request: Any) -> None:
        if time.monotonic() > self.ends:
            raise HubRefused(f"the download took more than {self.deadline_s:g} s")

    def response(self, response: Any) -> None:
        for name in ("etag", "x-linked-etag"):
            value = response.headers.get(name)
            if value is not None and not _HASHED.fullmatch(value):
                raise HubRefused(f"the server's {name} {value[:60]!r} is not a hash: it would name the file written")
        commit = response.headers.get("x-repo-commit")
        if commit is not None and not _COMMIT.fullmatch(commit):
            raise HubRefused(f"the server's commit {commit[:60]!r} is not a commit hash")
        response.stream = self.bounded(response.stream, self)


def _bounded(base: type) -> type:
    """A body read through the guard, of the byte stream type of the client's own httpx (or its fork `httpx2`,
    huggingface_hub 2.x's), which it checks streams against."""

    class Bounded(base):  # type: ignore[misc]  # the HTTP library's, known once the client is
        def __init__(self, stream: Any, guard: _Guard) -> None:
            self._stream, self._guard = stream, guard

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._stream:
                self._guard.taken(len(chunk))
                yield chunk

        def close(self) -> None:
            self._stream.close()

    return Bounded


@contextmanager
def _guarded(deadline_s: float, most: int) -> Iterator[None]:
    """huggingface_hub's shared client checked by a `_Guard` (its event hooks, a read timeout) while the download
    runs, as it was after."""
    from huggingface_hub import get_session

    client = get_session()
    library = sys.modules[type(client).__module__.partition(".")[0]]
    guard = _Guard(deadline_s, most, library.SyncByteStream)
    from huggingface_hub.utils.tqdm import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    hooks, timeout, quiet = client.event_hooks, client.timeout, are_progress_bars_disabled()
    disable_progress_bars()  # its bars on stderr: a download says nothing, a failure one line
    client.event_hooks = {
        "request": [*hooks["request"], guard.request],
        "response": [*hooks["response"], guard.response],
    }
    client.timeout = READ_TIMEOUT_S
    try:
        yield
    finally:
        client.event_hooks, client.timeout = hooks, timeout
        if not quiet:
            enable_progress_bars()


def _partial_left(cache_dir: Path | None) -> None:
    """The files a download cut short left in the dataset's cache folder (`*.incomplete`), removed."""
    from huggingface_hub import constants

    folder = Path(cache_dir or constants.HF_HUB_CACHE) / f"datasets--{REPO_ID.replace('/', '--')}"
    for partial in folder.glob("blobs/*.incomplete"):
        partial.unlink(missing_ok=True)


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
    sets: Sequence[str],
    revision: str = REVISION,
    *,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    deadline_s: float = DOWNLOAD_S,
    most: int = DOWNLOAD_BYTES,
) -> Path:
    """The snapshot folder holding the sets' Parquet files: fetched the first time, from the cache afterwards (a
    commit is immutable, so a cached one is read without asking the Hub). `endpoint` and `cache_dir` default to
    huggingface_hub's own (HF_ENDPOINT, HF_HOME); the download is guarded as the module says."""
    try:
        from huggingface_hub import constants, snapshot_download
    except ImportError:
        raise InputError(
            f"source=jsonschemabench downloads with huggingface_hub, not installed: {INSTALL_HINT}"
        ) from None
    where = endpoint or constants.ENDPOINT  # HF_ENDPOINT, else the Hub
    try:
        with _quiet("huggingface_hub"), _guarded(deadline_s, most):
            folder = snapshot_download(
                REPO_ID,
                repo_type="dataset",
                revision=revision,
                allow_patterns=[f"{name}/*.parquet" for name in sets],
                endpoint=endpoint,
                cache_dir=cache_dir,
            )
    except Exception as exc:  # huggingface_hub's and its HTTP client's many errors: the user's network, said in a line
        _partial_left(cache_dir)
        refused = next((e for e in (exc, exc.__cause__, exc.__context__) if isinstance(e, HubRefused)), None)
        if refused is not None:
            raise InputError(f"JSONSchemaBench from {where} is refused: {refused}") from None
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
        with open_regular(file) as stream:  # hashed a megabyte at a time, never held whole
            digest.update(f"{name}/{file.name}".encode() + b"\0")
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
        rows = connection.execute("SELECT unique_id, json_schema FROM read_parquet(?)", [str(file)]).fetchall()
    except OSError as exc:
        raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
    except duckdb.Error as exc:  # not Parquet, or without the two columns
        raise InputError(f"{file}: not JSONSchemaBench's Parquet ({str(exc).splitlines()[0]})") from None
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
