"""Stored runs: `result/<model-slug>/<run-id>/` holds `samples.jsonl` (one record a line) and `summary.json`."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import ValidationError

from typed_eval.contracts import SCHEMA_VERSION, RunSummary, SampleRecord
from typed_eval.core.errors import ResultFileError
from typed_eval.core.suite import StoredFormat
from typed_eval.store.migrations import UnknownFormat, migrate_summary, migrated_record, stored_formats

__all__ = [
    "RECORDS_FILE",
    "RUNNING",
    "SUMMARY_FILE",
    "RunWriter",
    "StoredRun",
    "current_records_file",
    "drop_torn_line",
    "imported_run_dir",
    "latest_records",
    "load_runs",
    "model_slug",
    "new_run_id",
    "parse_record",
    "read_records",
    "rewrite_records",
]

RECORDS_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
LOCK_FILE = ".lock"


def model_slug(model: str) -> str:
    """A folder name for a model: `openai:gpt-4o` -> `openai_gpt-4o`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_.") or "model"


def imported_run_dir(results_dir: Path, model: str, run_id: str) -> tuple[Path, bool]:
    """Where an imported run of `model` goes, and whether it is stored there already (the same content: its run id
    is made from the source's bytes, and the stored run is of the same model). Its folder is the model's slug,
    unless that run id is taken there by another model whose name slugs alike (`vendor/model-a`,
    `vendor_model-a`): then the slug and a short hash of the name, which no other name shares."""
    hashed = f"{model_slug(model)}-{hashlib.sha256(model.encode('utf-8')).hexdigest()[:8]}"
    for folder in (model_slug(model), hashed):
        run_dir = results_dir / folder / run_id
        if not run_dir.exists():
            return run_dir, False
        stored, reason = _stored_model(run_dir / SUMMARY_FILE)
        if stored == model and reason is not None and reason.startswith(_UNFINISHED):
            shutil.rmtree(run_dir)  # an import stopped midway (Ctrl-C, a full disk): made again from its source
            return run_dir, False
        if stored == model:
            return run_dir, True
    raise ResultFileError(
        f"{results_dir / hashed / run_id} holds a run of another model: move it, or import into another folder"
    )


RUNNING = "running: not finished (resume it to carry on)"
"""The reason a run's summary gives while the run is being made."""

_UNFINISHED = ("running:", "interrupted", "terminated", "stopped by an error")
"""How the summary of a run stopped midway begins its reason (`runs.RUNNING`, `runs.INTERRUPTED`...)."""


def _stored_model(summary: Path) -> tuple[str | None, str | None]:
    """The model a stored summary names, and why it is unfinished; None for what there is none to read."""
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None, None
    model = data.get("model") if isinstance(data, dict) else None
    reason = data.get("reason") if isinstance(data, dict) else None
    return (model if isinstance(model, str) else None), (reason if isinstance(reason, str) else None)


def new_run_id(mode: str, now: datetime) -> str:
    """Sortable by time, unique even for runs started in the same second."""
    return f"{now:%Y%m%dT%H%M%SZ}-{mode}-{secrets.token_hex(2)}"


def _lock(run_dir: Path) -> IO[str]:
    """Hold the run folder for this process: a second writer (a resume started twice) is refused in one line.

    An OS lock (flock) is released when its process dies, however it dies, so no stale lock outlives a crash.
    """
    handle = (run_dir / LOCK_FILE).open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ResultFileError(
            f"the run {run_dir} is being written by {holder}: wait for it to end or stop it"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()} on {socket.gethostname()}")
    handle.flush()
    return handle


class RunWriter:
    """Appends each record as one flushed JSON line, so a stopped run keeps every finished sample; holds the
    run folder's lock while it is open."""

    def __init__(self, run_dir: Path, *, resume: bool = False) -> None:
        self.run_dir = run_dir
        try:
            run_dir.mkdir(parents=True, exist_ok=resume)
            self._lock = _lock(run_dir)
            self._records: IO[str] = (run_dir / RECORDS_FILE).open("a", encoding="utf-8")
        except OSError as exc:
            raise ResultFileError(f"cannot create the run folder {run_dir}: {exc.strerror or exc}") from None

    def append(self, record: SampleRecord) -> None:
        try:
            self._records.write(record.model_dump_json() + "\n")
            self._records.flush()
        except OSError as exc:  # a full disk: what is on disk stays there, and a resume carries on
            raise ResultFileError(
                f"cannot write to {self.run_dir / RECORDS_FILE}: {exc.strerror or exc}; the "
                "records written so far are kept"
            ) from None

    def write_summary(self, summary: RunSummary) -> Path:
        path = self.run_dir / SUMMARY_FILE
        partial = path.with_suffix(".json.tmp")
        try:
            partial.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
            partial.replace(path)
        except OSError as exc:
            raise ResultFileError(f"cannot write {path}: {exc.strerror or exc}") from None
        return path

    def close(self) -> None:
        with contextlib.suppress(OSError):  # the flush of a write that already failed (a full disk) fails again
            self._records.close()
        self._lock.close()

    def discard(self) -> None:
        """Remove a run that stored nothing (it stopped on an error before its first record)."""
        self.close()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


@dataclass(frozen=True)
class StoredRun:
    path: Path
    summary: RunSummary


def _load_summary(path: Path) -> RunSummary:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultFileError(f"corrupt result file {path}: {exc}") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int):
        raise ResultFileError(f"corrupt result file {path}: no schema_version")
    if version > SCHEMA_VERSION:
        raise ResultFileError(
            f"{path} has schema version {version}, newer than this program's {SCHEMA_VERSION}: upgrade"
        )
    try:
        migrated = migrate_summary(data, version)
    except UnknownFormat as exc:
        raise ResultFileError(f"{path}: {exc}") from None
    except KeyError as exc:
        raise ResultFileError(f"corrupt result file {path}: a version {version} summary without {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ResultFileError(f"corrupt result file {path}: a version {version} summary that does not migrate: "
                              f"{type(exc).__name__}: {exc}") from None  # fmt: skip
    try:
        return RunSummary.model_validate(migrated)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise ResultFileError(f"corrupt result file {path}: {where}: {first['msg']}") from None


def load_runs(directory: Path | str, on_error: Callable[[ResultFileError], None] | None = None) -> list[StoredRun]:
    """Every run summary below `directory`, oldest first. A corrupt file raises `ResultFileError`, or with
    `on_error` is handed to it and left out, so one bad run hides none of the others."""
    directory = Path(directory)
    if not directory.exists():
        raise ResultFileError(f"no results folder {directory}: run `python main.py run` first or name another folder")
    paths = [directory] if directory.is_file() else sorted(directory.rglob(SUMMARY_FILE))
    runs: list[StoredRun] = []
    for path in paths:
        try:
            runs.append(StoredRun(path.parent, _load_summary(path)))
        except ResultFileError as exc:
            if on_error is None:
                raise
            on_error(exc)
    return sorted(runs, key=lambda r: (r.summary.started_at, r.summary.run_id))


def drop_torn_line(run_dir: Path) -> bool:
    """Cut a last line that a killed run left half-written (no newline), so it is posed again; True if cut."""
    path = run_dir / RECORDS_FILE
    try:
        with path.open("rb+") as data:
            size = data.seek(0, 2)
            if size == 0:
                return False
            data.seek(max(size - 1, 0))
            if data.read(1) == b"\n":
                return False
            data.seek(0)
            keep = data.read().rfind(b"\n") + 1
            data.truncate(keep)
            return True
    except OSError as exc:
        raise ResultFileError(f"cannot repair {path}: {exc.strerror or exc}") from None


def rewrite_records(run_dir: Path, records: Iterable[SampleRecord]) -> None:
    """Replace the records file in one step (a rename), e.g. to keep one record per sample."""
    path = run_dir / RECORDS_FILE
    partial = path.with_suffix(".jsonl.tmp")
    with partial.open("w", encoding="utf-8") as out:
        out.writelines(record.model_dump_json() + "\n" for record in records)
        out.flush()
        os.fsync(out.fileno())  # on disk before the rename: a crash leaves the old file or the new, whole
    partial.replace(path)


_RECORD = '{"case_id":'
"""How every record line this version writes starts; another is read through the earlier formats the suites
declare (a resumed run may hold lines of both)."""


def parse_record(line: str, formats: Sequence[StoredFormat] | None = None) -> SampleRecord:
    """One line of a records file as a record of the current schema (raises pydantic's `ValidationError` or
    `ValueError` when it is not one); `formats`: the earlier formats, when the caller has found them already."""
    if not line.startswith(_RECORD):
        migrated = migrated_record(line, stored_formats() if formats is None else formats)
        if migrated is not None:
            return SampleRecord.model_validate(migrated)
    return SampleRecord.model_validate_json(line)


def current_records_file(path: Path, scratch: Path) -> Path:
    """A records file whose lines are all of the current schema, for readers of the JSON itself (DuckDB): `path`
    when its lines are, else a copy at `scratch` with each older line migrated (a line that does not parse, cut
    short or corrupt, is copied as it is, for the reader to leave out or report)."""
    formats = stored_formats()
    starts = tuple(stored.record_start.encode() for stored in formats)
    with path.open("rb") as head:
        if not starts or not head.read(max(map(len, starts))).startswith(starts):  # older lines come first
            return path
    with path.open("rb") as lines, scratch.open("wb") as out:
        for line in lines:
            if not line.startswith(_RECORD.encode()):
                with contextlib.suppress(ValueError, KeyError, TypeError):  # not UTF-8 or not a record: as it is
                    migrated = migrated_record(line.decode("utf-8"), formats)
                    if migrated is not None:
                        end = b"\n" if line.endswith(b"\n") else b""
                        line = json.dumps(migrated, ensure_ascii=False).encode("utf-8") + end
            out.write(line)
    return scratch


def read_records(
    run_dir: Path | str, on_damaged: Callable[[ResultFileError], None] | None = None
) -> Iterator[SampleRecord]:
    """The records of a run in the order written, migrated to the current schema. A last line cut short (no
    newline: a run killed mid-write, which a resume cuts away) is not a record yet and is skipped; any other
    corrupt line (not UTF-8, not JSON, not a record) raises `ResultFileError` naming the file and the line, or
    with `on_damaged` is handed to it and skipped (the rest of the run is read)."""
    path = Path(run_dir) / RECORDS_FILE
    formats: list[StoredFormat] | None = None  # found once, at the first line of an earlier format
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, 1):
                if not raw.strip():
                    continue
                try:
                    line = raw.decode("utf-8")
                    if formats is None and not line.startswith(_RECORD):
                        formats = stored_formats()
                    record = parse_record(line, formats)
                except (ValidationError, ValueError, KeyError, TypeError) as exc:
                    if not raw.endswith(b"\n"):
                        return  # the last line, cut short: not a record yet
                    damaged = ResultFileError(f"corrupt record at {path}:{number}: {_why(exc)}")
                    if on_damaged is None:
                        raise damaged from None
                    on_damaged(damaged)
                    continue
                yield record
    except OSError as exc:
        raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None


def _why(exc: Exception) -> str:
    """What is wrong with a records line, in one line."""
    if isinstance(exc, ValidationError):
        return exc.errors()[0]["msg"]
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.object[exc.start]:#04x} at byte {exc.start + 1} of the line)"
    return str(exc)


def latest_records(
    run_dir: Path, on_damaged: Callable[[ResultFileError], None] | None = None
) -> Iterator[SampleRecord]:
    """One record per case and repeat, the newest winning: what a run's scores count, however often a case was
    written (a retry of errors or a resume cut short by a kill). Two passes, so memory holds only the keys.
    `on_damaged`: as `read_records`'s (each damaged line handed over once)."""
    last: dict[tuple[str, int], int] = {}
    for number, record in enumerate(read_records(run_dir, on_damaged)):
        last[record.case_id, record.repeat] = number
    for number, record in enumerate(read_records(run_dir, (lambda _: None) if on_damaged else None)):
        if last.get((record.case_id, record.repeat)) == number:
            yield record
