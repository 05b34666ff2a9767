"""A run's records as DuckDB tables: each record's line and what the grid filters and sorts on, one cell per case,
and (once a run is searched) the text a search reads. The counted score is the one rule of `counted_score`, as
SQL; records of an older schema are read through the one migration (`current_records_file`)."""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from typed_eval.core.counted_score import counted_score_sql
from typed_eval.core.errors import ResultFileError
from typed_eval.store.storage import current_records_file, read_records

__all__ = ["RunTable", "load_run_table", "make_searchable"]

_FIELDS = (
    '{"case_id": "VARCHAR", "repeat": "BIGINT", "group": "VARCHAR", "status": "VARCHAR", "score": "DOUBLE", '
    '"excluded": "BOOLEAN", "corrective_retries": "BIGINT", "cost": {"usd": "DOUBLE"}, "latency_s": "DOUBLE", '
    '"attempts": [{"valid": "BOOLEAN"}]}'
)
"""What the grid filters and sorts on, read from each line in one parse (a value of another type reads as NULL)."""

_TEXT_FIELDS = '{"prompt": "VARCHAR", "output": "JSON", "attempts": [{"raw": "VARCHAR"}]}'
_TEXT = """
CREATE OR REPLACE TABLE {records}_text AS
SELECT case_id, concat_ws(chr(10), t.prompt, t.output::VARCHAR,
    array_to_string(list_transform(t.attempts, lambda a: a.raw), chr(10))) AS text
FROM (SELECT case_id, from_json(line, '{fields}') AS t FROM {records}
    WHERE rowid IN (SELECT unnest(rids) FROM {records}_cells))
"""
"""What a search reads, of the records that count: made the first time a run is searched, so a run only browsed
never pays for it."""

_SCORE = counted_score_sql("r.status", "r.score", {"excluded": "r.excluded"})
_LOAD = f"""
CREATE OR REPLACE TABLE {{records}} AS
SELECT line, r.case_id AS case_id, coalesce(r.repeat, 0) AS rep, r."group" AS grp, r.status AS status,
    {_SCORE} AS score,
    list_contains(list_transform(r.attempts, lambda a: a.valid), false) AS invalid,
    coalesce(r.corrective_retries, 0) AS retries, r.cost.usd AS cost, r.latency_s AS latency
FROM (SELECT json::VARCHAR AS line, from_json(json, '{{fields}}') AS r FROM {{source}})
WHERE r.case_id IS NOT NULL;
CREATE OR REPLACE TABLE {{cells}} AS
SELECT case_id, min(rid) AS first, any_value(grp) AS grp, avg(score) AS score, count(score) AS scored,
    bool_or(score < 1) AS wrong, bool_or(invalid) AS invalid, bool_or(status = 'error') AS error,
    bool_or(status = 'unsupported') AS unsupported,
    sum(retries) AS retries, sum(cost) AS cost, avg(latency) AS latency, list(rid ORDER BY rep) AS rids
FROM (
    SELECT rowid AS rid, case_id, rep, grp, status, score, invalid, retries, cost, latency FROM {{records}}
    WHERE rowid IN (SELECT max(rowid) FROM {{records}} GROUP BY case_id, rep)
)
GROUP BY case_id;
"""
_RECORDS = "read_json_objects(?, format = 'newline_delimited', ignore_errors = true, maximum_object_size = 268435456)"
"""A line cut short (a run writing it, or killed while it did) is not a record yet, and is left out. A record may hold
answers of up to 64 MB each (`transport`'s bound), beyond DuckDB's default 16 MB object."""
_NO_RECORDS = "(SELECT NULL::JSON AS json LIMIT 0)"
"""A run stored without records (a hand-made summary) has no cells."""


@dataclass
class RunTable:
    """A run's tables: `<name>` for records, `<name>_cells` for cells, `<name>_text` once searchable."""

    name: str
    stamp: tuple[int, int]
    """The records file's size and time when the tables were made ((0, 0): no records file)."""
    searchable: bool = False
    """Its `_text` table is made (for this stamp)."""
    damaged: tuple[str, ...] = ()
    """Why each line that is not a record was left out (one line each, naming the file and the line)."""


def _lines(path: Path, *, blank: bool = False) -> int:
    """Lines of the file that end in a newline (with `blank`, only those not empty): each must be a record. Empty lines
    are counted only when the records are fewer than the lines, which is rare, so the file is usually read once."""
    count = empty = 0
    previous = b"\n"
    with path.open("rb") as data:
        while chunk := data.read(1 << 24):
            count += chunk.count(b"\n")
            if blank:
                empty += chunk.count(b"\n\n") + (previous == b"\n" and chunk[:1] == b"\n")
                previous = chunk[-1:]
    return count - empty


def _damaged_lines(path: Path, left_out: int) -> tuple[str, ...]:
    """Why the lines of the records file `path` that are not records were left out, as `format_result.py` says it:
    read again as records only once a file is known to hold such a line (`left_out` of them)."""
    found: list[str] = []
    with contextlib.suppress(ResultFileError):
        for _ in read_records(path.parent, lambda damaged: found.append(str(damaged))):
            pass
    return tuple(found) or (f"corrupt records file {path}: {left_out} of its lines are not records",)


def load_run_table(
    db: duckdb.DuckDBPyConnection,
    path: Path,
    stamp: tuple[int, int],
    name: str,
    scratch: Path,
    alone: AbstractContextManager[object],
) -> RunTable:
    """The run's tables made from its records file `path` (`stamp`: its size and time); `scratch` is a folder of
    the store's own for links and migrated copies; the tables are replaced inside `alone` (while no query runs). A
    line that is not a record is left out and said in `RunTable.damaged`: the rest of the run is shown."""
    source = _NO_RECORDS if stamp == (0, 0) else _RECORDS
    load = _LOAD.format(records=name, cells=f"{name}_cells", source=source, fields=_FIELDS)
    link = scratch / f"{name}.jsonl"
    try:
        current = path if stamp == (0, 0) else current_records_file(path, scratch / f"{name}.current.jsonl")
        link.unlink(missing_ok=True)
        link.symlink_to(current.absolute())
        with alone, contextlib.closing(db.cursor()) as cursor:
            for statement in load.split(";"):
                if statement.strip():
                    cursor.execute(statement, [str(link)] if "?" in statement else [])
            found = cursor.execute(f"SELECT count(*) FROM {name}").fetchone()
        records = found[0] if found else 0
        damaged: tuple[str, ...] = ()
        if stamp != (0, 0) and records < _lines(current):
            lines = _lines(current, blank=True)
            if records < lines:  # only a last line still being written may be left out unsaid
                damaged = _damaged_lines(path, lines - records)
    except duckdb.Error as exc:
        raise ResultFileError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
    except OSError as exc:
        raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return RunTable(name, stamp, damaged=damaged)


def make_searchable(db: duckdb.DuckDBPyConnection, table: RunTable) -> None:
    """The run's `_text` table, made (no query reads it before it is)."""
    with contextlib.closing(db.cursor()) as cursor:
        cursor.execute(_TEXT.format(records=table.name, fields=_TEXT_FIELDS))
    table.searchable = True
