"""The cases of stored runs side by side, queried with DuckDB over each run's `samples.jsonl` in place.

Each run's records file is read by DuckDB into an in-memory table the first time a run is asked for, and read
again when the file changes (its size or time), so a run in progress shows its records so far; nothing is copied
to disk. A grid page is one query: the newest record per case and repeat, reduced to one cell per case (the mean
of its scored repeats: what a paired test pairs), the runs joined on the case id, filtered, sorted and paged. Only
the records of the page's cells are then read as `SampleRecord`s (old formats migrated).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import JsonValue, ValidationError

from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.core.scoring import counted_score
from typed_eval.schemas import RunSummary, SampleRecord
from typed_eval.store.storage import RECORDS_FILE, RUNNING, SUMMARY_FILE, StoredRun, load_runs, parse_record

__all__ = [
    "FILTERS",
    "PER_RUN_SORTS",
    "CaseCell",
    "CaseDetail",
    "CasePage",
    "CaseRow",
    "CaseStore",
    "NotFoundError",
    "RunEntry",
]

Filter = Literal["all", "disagree", "wrong", "invalid", "error"]
FILTERS: tuple[Filter, ...] = ("all", "disagree", "wrong", "invalid", "error")
"""`disagree`: scored in every run shown, with scores not all equal (the cases behind a paired test); `wrong`: scored
below 1 in some run; `invalid`: an invalid output in some run; `error`: a failed call in some run. Besides these,
`better:N`: scored in every run shown, run N (from 0) above each other (a paired comparison's "only A right")."""

PER_RUN_SORTS = ("score", "cost", "latency", "retries")
"""Sorts by one run's cells (`score:1`: by the second run shown); `case` and `group` sort the rows."""
_RUN_ORDER = 1 << 40
"""Rows are in the first run's record order, then cases only later runs have, in theirs."""
_MAX_OFFSET = 1 << 62
"""Past any row (DuckDB's OFFSET is a 64-bit integer): a page number beyond it is a page past the last one."""


class NotFoundError(InputError):
    """A run key or case id that is not stored (the viewer answers 404)."""


@dataclass(frozen=True)
class RunEntry:
    """A stored run under its key: its folder relative to the results folder (`<model-folder>/<run-folder>`)."""

    key: str
    run: StoredRun

    @property
    def summary(self) -> RunSummary:
        return self.run.summary

    @property
    def status(self) -> str:
        """The summary's status, or `running` for a run whose summary says it has not finished."""
        reason = self.summary.reason or ""
        return "running" if reason == RUNNING else self.summary.status


@dataclass(frozen=True)
class CaseCell:
    """One run's answer to one case: its records (one per repeat) reduced to what the grid shows."""

    records: list[SampleRecord]

    @property
    def status(self) -> str:
        """The records' status, or `mixed` when the repeats differ."""
        statuses = {record.status for record in self.records}
        return statuses.pop() if len(statuses) == 1 else "mixed"

    @property
    def score(self) -> float | None:
        """The mean score of the scored repeats, in [0, 1] (a missing output scores 0)."""
        scores = [counted_score(record) for record in self.records]
        known = [score for score in scores if score is not None]
        return sum(known) / len(known) if known else None

    @property
    def output(self) -> JsonValue:
        """The output; with repeats, each repeat's in order."""
        if len(self.records) == 1:
            return self.records[0].output
        return [record.output for record in self.records]

    @property
    def invalid_kinds(self) -> list[str]:
        kinds = (a.invalid_kind for r in self.records for a in r.attempts if not a.valid and a.invalid_kind)
        return list(dict.fromkeys(kinds))

    @property
    def cost_usd(self) -> float | None:
        known = [record.cost.usd for record in self.records if record.cost.usd is not None]
        return sum(known) if known else None

    @property
    def latency_s(self) -> float | None:
        known = [record.latency_s for record in self.records if record.latency_s is not None]
        return sum(known) / len(known) if known else None

    @property
    def corrective_retries(self) -> int:
        return sum(record.corrective_retries for record in self.records)

    @property
    def input_tokens(self) -> int | None:
        """Summed over the repeats; None when a repeat's count is not known."""
        counts = [record.usage.input_tokens for record in self.records]
        return None if None in counts else sum(count or 0 for count in counts)

    @property
    def output_tokens(self) -> int | None:
        counts = [record.usage.output_tokens for record in self.records]
        return None if None in counts else sum(count or 0 for count in counts)

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "score": self.score,
            "output": self.output,
            "corrective_retries": self.corrective_retries,
            "invalid_kinds": self.invalid_kinds,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "repeats": len(self.records),
            "statuses": [record.status for record in self.records],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True)
class CaseRow:
    case_id: str
    group: str | None
    cells: dict[str, CaseCell]
    """By run key; a run that has no record of the case has no cell."""


@dataclass(frozen=True)
class CasePage:
    total: int
    """Rows the filter keeps, over all pages."""
    page: int
    per_page: int
    rows: list[CaseRow]
    groups: list[str] = field(default_factory=list)
    """Every group of the shown runs' cases (for the group filter)."""
    entries: list[RunEntry] = field(default_factory=list)
    """The runs shown, in their columns' order."""


@dataclass(frozen=True)
class CaseDetail:
    case_id: str
    prompt: str | None
    expected: JsonValue
    group: str | None
    runs: dict[str, list[SampleRecord]]
    """By run key: the run's records of the case, one per repeat (none when the run did not pose it)."""
    entries: list[RunEntry] = field(default_factory=list)
    """The runs shown, in the order named."""


@dataclass
class _Table:
    name: str
    stamp: tuple[int, int]
    searchable: bool = False
    """Its `_text` table is made (for this stamp)."""


_FIELDS = (
    '{"case_id": "VARCHAR", "quiz_id": "VARCHAR", "repeat": "BIGINT", "group": "VARCHAR", "class_name": "VARCHAR", '
    '"status": "VARCHAR", "score": "DOUBLE", "excluded": "BOOLEAN", "ambiguous": "BOOLEAN", "corrective_retries": '
    '"BIGINT", "cost": {"usd": "DOUBLE"}, "latency_s": "DOUBLE", "attempts": [{"valid": "BOOLEAN"}]}'
)
"""What the grid filters and sorts on, read from each line in one parse (a value of another type reads as NULL).
`quiz_id`, `class_name` and `ambiguous` are schema version 1's names."""

_TEXT_FIELDS = '{"prompt": "VARCHAR", "output": "JSON", "answer": "VARCHAR", "attempts": [{"raw": "VARCHAR"}]}'
_TEXT = """
CREATE OR REPLACE TABLE {records}_text AS
SELECT case_id, concat_ws(chr(10), t.prompt, t.output::VARCHAR, t.answer,
    array_to_string(list_transform(t.attempts, lambda a: a.raw), chr(10))) AS text
FROM (SELECT case_id, from_json(line, '{fields}') AS t FROM {records}
    WHERE rowid IN (SELECT unnest(rids) FROM {records}_cells))
"""
"""What a search reads, of the records that count (`answer` is schema version 1's output): made the first time a run
is searched, so a run only browsed never pays for it."""

_LOAD = """
CREATE OR REPLACE TABLE {records} AS
SELECT line, coalesce(r.case_id, r.quiz_id) AS case_id, coalesce(r.repeat, 0) AS rep,
    coalesce(r."group", r.class_name) AS grp, r.status AS status,
    CASE
        WHEN r.status = 'error' OR coalesce(r.excluded, false) OR coalesce(r.ambiguous, false) THEN NULL
        WHEN r.quiz_id IS NOT NULL THEN CASE r.status WHEN 'correct' THEN 1.0 WHEN 'incorrect' THEN 0.0
            WHEN 'missing' THEN 0.0 END
        WHEN r.status = 'missing' THEN coalesce(r.score, 0.0)
        ELSE r.score
    END AS score,
    list_contains(list_transform(r.attempts, lambda a: a.valid), false) AS invalid,
    coalesce(r.corrective_retries, 0) AS retries, r.cost.usd AS cost, r.latency_s AS latency
FROM (SELECT json::VARCHAR AS line, from_json(json, '{fields}') AS r FROM {source})
WHERE coalesce(r.case_id, r.quiz_id) IS NOT NULL;
CREATE OR REPLACE TABLE {cells} AS
SELECT case_id, min(rid) AS first, any_value(grp) AS grp, avg(score) AS score, count(score) AS scored,
    bool_or(score < 1) AS wrong, bool_or(invalid) AS invalid, bool_or(status = 'error') AS error,
    sum(retries) AS retries, sum(cost) AS cost, avg(latency) AS latency, list(rid ORDER BY rep) AS rids
FROM (
    SELECT rowid AS rid, case_id, rep, grp, status, score, invalid, retries, cost, latency FROM {records}
    WHERE rowid IN (SELECT max(rowid) FROM {records} GROUP BY case_id, rep)
)
GROUP BY case_id;
"""
_RECORDS = "read_json_objects(?, format = 'newline_delimited', ignore_errors = true, maximum_object_size = 268435456)"
"""A line cut short (a run writing it, or killed while it did) is not a record yet, and is left out. A record may hold
answers of up to 64 MB each (`transport`'s bound), beyond DuckDB's default 16 MB object."""
_NO_RECORDS = "(SELECT NULL::JSON AS json LIMIT 0)"
"""A run stored without records (a hand-made summary) has no cells."""


def _index(text: str, runs: int) -> int | None:
    """The run a `:N` names (from 0), or None for what is not one of the `runs` shown."""
    if not (text.isascii() and text.isdigit() and len(text) < 10):
        return None
    return int(text) if int(text) < runs else None


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


class _ReadWriteLock:
    """Many readers at once, or one writer alone; a waiting writer goes before new readers."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writers = 0  # waiting or writing

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writers)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        with self._changed:
            self._writers += 1
            self._changed.wait_for(lambda: not self._readers)
        try:
            yield
        finally:
            with self._changed:
                self._writers -= 1
                self._changed.notify_all()


class CaseStore:
    """The stored runs under one results folder, their cases queried side by side. Safe to share between threads
    (each query has its own cursor; a run's tables are made once per change of its file, while no query reads any:
    the row ids a query finds must name the same lines when it reads the records, and a finished resume rewrites the
    records file in another order)."""

    def __init__(self, results_dir: Path) -> None:
        self.results_dir = results_dir
        self._db = duckdb.connect(":memory:")
        self._links = tempfile.TemporaryDirectory(prefix="farel-view-")
        """A link to each run's records file under a plain name: DuckDB reads a path as a glob (`*`, `?`, `[`), and
        a run folder may hold those characters."""
        self._tables: dict[str, _Table] = {}
        self._names: dict[str, str] = {}
        self._loading: dict[str, threading.Lock] = {}
        """Per run: held to look its tables up or make them (one maker at a time)."""
        self._lock = threading.Lock()
        """Held to name a run's tables and its lock."""
        self._queries = _ReadWriteLock()
        """Read by each query, written by each load: no query sees a run's tables change under it."""

    def close(self) -> None:
        """Free the tables. A query still running (a request cut short by Ctrl-C while its run loads) keeps them
        until it ends: DuckDB refuses to close a connection in use, and the process is ending anyway."""
        with contextlib.suppress(duckdb.Error):
            self._db.close()
        self._links.cleanup()

    def runs(self) -> list[RunEntry]:
        """Every readable run, oldest first (a corrupt summary is left out, as the leaderboard leaves it)."""
        if not self.results_dir.is_dir():
            raise ResultFileError(f"no results folder {self.results_dir}: run `python main.py run` first")
        root = self.results_dir
        if (root / SUMMARY_FILE).is_file():  # a run folder itself: keyed as under its results folder
            root = root.parent.parent
        return [
            RunEntry(run.path.relative_to(root).as_posix(), run)
            for run in load_runs(self.results_dir, on_error=lambda _: None)
        ]

    def entries(self, keys: Sequence[str]) -> list[RunEntry]:
        """The runs named by their keys, in that order; an unknown key raises `NotFoundError`."""
        if not keys:
            raise InputError("runs: name one run or more (`runs=<model-folder>/<run-folder>,...`)")
        known = {entry.key: entry for entry in self.runs()}
        missing = [key for key in keys if key not in known]
        if missing:
            raise NotFoundError(f"no stored run {missing[0]!r} under {self.results_dir}")
        if len(set(keys)) != len(keys):
            raise InputError("runs: a run is named twice")
        return [known[key] for key in keys]

    def cases(
        self,
        keys: Sequence[str],
        *,
        filter: str = "all",
        group: str | None = None,
        query: str | None = None,
        sort: str = "case",
        descending: bool = False,
        page: int = 1,
        per_page: int = 50,
    ) -> CasePage:
        """One page of the grid: a row per case of the runs named, a cell per run."""
        entries = self.entries(keys)
        self._check_filter(filter, len(entries))
        if page < 1 or not 1 <= per_page <= 1000:
            raise InputError("page: pages start at 1, and per_page is 1 to 1000")
        tables = self._tables_of(entries, searchable=bool(query))
        order = self._order(sort, descending, len(entries))
        ids, joins = self._joined(tables)
        where, params = self._where(filter, group, query, tables)
        rids = ", ".join(f"c{index}.rids" for index in range(len(entries)))
        sql = (
            f"WITH ids AS (SELECT case_id, any_value(grp) AS grp, min(ord) AS ord FROM ({ids}) GROUP BY case_id) "
            f"SELECT ids.case_id, ids.grp, count(*) OVER () AS total, {rids} FROM ids{joins} "
            f"WHERE {where} ORDER BY {order}, ids.ord LIMIT ? OFFSET ?"
        )
        with self._queries.reading(), contextlib.closing(self._db.cursor()) as cursor:
            found = cursor.execute(sql, [*params, per_page, min((page - 1) * per_page, _MAX_OFFSET)]).fetchall()
            groups = cursor.execute(f"SELECT DISTINCT grp FROM ({ids}) WHERE grp IS NOT NULL ORDER BY grp").fetchall()
            total = found[0][2] if found else self._count(cursor, ids, joins, where, params)
            wanted = [[rid for row in found for rid in (row[3 + index] or [])] for index in range(len(entries))]
            records = [
                self._records(cursor, table, rids, entry)
                for entry, table, rids in zip(entries, tables, wanted, strict=True)
            ]
        rows = []
        for row in found:
            cells = {
                entry.key: CaseCell([records[index][rid] for rid in row[3 + index]])
                for index, entry in enumerate(entries)
                if row[3 + index]
            }
            rows.append(CaseRow(row[0], row[1], cells))
        return CasePage(total, page, per_page, rows, [group for (group,) in groups], entries)

    def case_ids(
        self, keys: Sequence[str], *, filter: str = "all", group: str | None = None, query: str | None = None
    ) -> list[str]:
        """Every case id the filter keeps, in the grid's order (`sort="case"`), with no record read: which rows of a
        whole grid each filter keeps (the HTML report marks its rows with them)."""
        entries = self.entries(keys)
        self._check_filter(filter, len(entries))
        tables = self._tables_of(entries, searchable=bool(query))
        ids, joins = self._joined(tables)
        where, params = self._where(filter, group, query, tables)
        sql = (
            f"WITH ids AS (SELECT case_id, any_value(grp) AS grp, min(ord) AS ord FROM ({ids}) GROUP BY case_id) "
            f"SELECT ids.case_id FROM ids{joins} WHERE {where} ORDER BY ids.ord"
        )
        with self._queries.reading(), contextlib.closing(self._db.cursor()) as cursor:
            return [case_id for (case_id,) in cursor.execute(sql, params).fetchall()]

    def case(self, case_id: str, keys: Sequence[str]) -> CaseDetail:
        """One case in the runs named: every repeat's record, attempts in order. A case none of them posed raises
        `NotFoundError`."""
        entries = self.entries(keys)
        tables = self._tables_of(entries)
        runs: dict[str, list[SampleRecord]] = {}
        with self._queries.reading(), contextlib.closing(self._db.cursor()) as cursor:
            for entry, table in zip(entries, tables, strict=True):
                found = cursor.execute(f"SELECT rids FROM {table}_cells WHERE case_id = ?", [case_id]).fetchone()
                rids = list(found[0]) if found else []
                by_rid = self._records(cursor, table, rids, entry)
                runs[entry.key] = [by_rid[rid] for rid in rids]
        first = next((records[0] for records in runs.values() if records), None)
        if first is None:
            raise NotFoundError(f"no case {case_id!r} in {', '.join(keys)}")
        prompt = next((r.prompt for records in runs.values() for r in records if r.prompt is not None), None)
        return CaseDetail(case_id, prompt, first.expected, first.group, runs, entries)

    def _tables_of(self, entries: Sequence[RunEntry], *, searchable: bool = False) -> list[str]:
        """The runs' table names, those not loaded yet (or changed) loaded side by side: DuckDB's reading of one file
        leaves a core idle, and a grid of two cold runs comes in the time of one."""
        if len(entries) == 1:
            return [self._table(entries[0], searchable=searchable)]
        with ThreadPoolExecutor(len(entries)) as pool:
            return list(pool.map(lambda entry: self._table(entry, searchable=searchable), entries))

    def _table(self, entry: RunEntry, *, searchable: bool = False) -> str:
        """The name of the run's tables (`<name>` for records, `<name>_cells` for cells, `<name>_text` once
        `searchable`), made or made again when its records file has changed since."""
        path = entry.run.path / RECORDS_FILE
        try:
            stat = path.stat()
            stamp = (stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:
            stamp = (0, 0)
        with self._lock:
            name = self._names.setdefault(entry.key, f"run_{len(self._names)}")
            loading = self._loading.setdefault(entry.key, threading.Lock())
        with loading:
            table = self._tables.get(entry.key)
            if table is None or table.stamp != stamp:
                table = self._load(path, stamp, name, replacing=table is not None)
                self._tables[entry.key] = table
            if searchable and not table.searchable:  # no query reads it before it is made
                with contextlib.closing(self._db.cursor()) as cursor:
                    cursor.execute(_TEXT.format(records=table.name, fields=_TEXT_FIELDS))
                table.searchable = True
            return table.name

    def _load(self, path: Path, stamp: tuple[int, int], name: str, *, replacing: bool) -> _Table:
        """The run's tables made from its records file; while no query runs when they replace older ones."""
        source = _NO_RECORDS if stamp == (0, 0) else _RECORDS
        load = _LOAD.format(records=name, cells=f"{name}_cells", source=source, fields=_FIELDS)
        link = Path(self._links.name) / f"{name}.jsonl"
        try:
            link.unlink(missing_ok=True)
            link.symlink_to(path.absolute())
            alone = self._queries.writing() if replacing else contextlib.nullcontext()
            with alone, contextlib.closing(self._db.cursor()) as cursor:
                for statement in load.split(";"):
                    if statement.strip():
                        cursor.execute(statement, [str(link)] if "?" in statement else [])
                found = cursor.execute(f"SELECT count(*) FROM {name}").fetchone()
            records = found[0] if found else 0
            if stamp != (0, 0) and records < _lines(path):
                lines = _lines(path, blank=True)
                if records < lines:  # only a last line still being written may be left out
                    raise ResultFileError(
                        f"corrupt records file {path}: {lines - records} of its lines are not records"
                    )
        except duckdb.Error as exc:
            raise ResultFileError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None
        except OSError as exc:
            raise ResultFileError(f"cannot read {path}: {exc.strerror or exc}") from None
        return _Table(name, stamp)

    @staticmethod
    def _check_filter(filter: str, runs: int) -> None:
        name, _, index = filter.partition(":")
        if filter not in FILTERS and not (name == "better" and _index(index, runs) is not None):
            raise InputError(f"filter: {filter!r} is not one of {', '.join(FILTERS)}, or better:N (run N, from 0)")
        if name in ("disagree", "better") and runs < 2:
            raise InputError(f"filter: {name} compares runs: name two runs or more")

    @staticmethod
    def _joined(tables: Sequence[str]) -> tuple[str, str]:
        """The union of the runs' case ids (`ids`: each case's first place, by run then record order) and the joins
        of each run's cells to it (`c0`, `c1`...)."""
        ids = " UNION ALL ".join(
            f"SELECT case_id, grp, first + {index * _RUN_ORDER} AS ord FROM {table}_cells"
            for index, table in enumerate(tables)
        )
        joins = "".join(
            f" LEFT JOIN {table}_cells c{index} ON c{index}.case_id = ids.case_id" for index, table in enumerate(tables)
        )
        return ids, joins

    @staticmethod
    def _order(sort: str, descending: bool, runs: int) -> str:
        name, _, index_text = sort.partition(":")
        direction = "DESC" if descending else "ASC"
        if name == "case" and not index_text:
            return f"ids.ord {direction}" if descending else "ids.ord"
        if name == "group" and not index_text:
            return f"ids.grp {direction} NULLS LAST"
        if name in PER_RUN_SORTS:
            index = _index(index_text or "0", runs)
            if index is not None:
                return f"c{index}.{name} {direction} NULLS LAST"
        raise InputError(
            f"sort: {sort!r} is not case, group, or score, cost, latency or retries with :N (run N, from 0)"
        )

    @staticmethod
    def _where(filter: str, group: str | None, query: str | None, tables: Sequence[str]) -> tuple[str, list[object]]:
        cells = [f"c{index}" for index in range(len(tables))]
        conditions = ["true"]
        params: list[object] = []
        if filter == "disagree":
            conditions += [f"{c}.scored > 0" for c in cells]
            conditions.append(
                f"greatest({', '.join(f'{c}.score' for c in cells)}) <> least({', '.join(f'{c}.score' for c in cells)})"
            )
        elif filter.startswith("better:"):
            best = f"c{_index(filter.partition(':')[2], len(cells))}"
            conditions += [f"{c}.scored > 0" for c in cells]
            conditions += [f"{best}.score > {c}.score" for c in cells if c != best]
        elif filter in ("wrong", "invalid", "error"):
            conditions.append("(" + " OR ".join(f"coalesce({c}.{filter}, false)" for c in cells) + ")")
        if group:
            conditions.append("ids.grp = ?")
            params.append(group)
        if query:  # in the records that count (the newest per case and repeat)
            found = (f"SELECT case_id FROM {table}_text WHERE contains(lower(text), lower(?))" for table in tables)
            conditions.append("ids.case_id IN (" + " UNION ALL ".join(found) + ")")
            params += [query] * len(tables)
        return " AND ".join(conditions), params

    @staticmethod
    def _count(cursor: duckdb.DuckDBPyConnection, ids: str, joins: str, where: str, params: Sequence[object]) -> int:
        """Rows the filter keeps, for a page past the last one (which has no row to carry the count)."""
        sql = (
            f"WITH ids AS (SELECT case_id, any_value(grp) AS grp, min(ord) AS ord FROM ({ids}) GROUP BY case_id) "
            f"SELECT count(*) FROM ids{joins} WHERE {where}"
        )
        found = cursor.execute(sql, list(params)).fetchone()
        return int(found[0]) if found else 0

    @staticmethod
    def _records(
        cursor: duckdb.DuckDBPyConnection, table: str, rids: Sequence[int], entry: RunEntry
    ) -> dict[int, SampleRecord]:
        if not rids:
            return {}
        found = cursor.execute(f"SELECT rowid, line FROM {table} WHERE rowid IN (SELECT unnest(?))", [list(rids)])
        records = {}
        for rid, line in found.fetchall():
            try:
                records[rid] = parse_record(line)
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                raise ResultFileError(f"a corrupt record in {entry.run.path / RECORDS_FILE}: {why}") from None
        return records
