"""The cases of stored runs side by side, queried with DuckDB over each run's `samples.jsonl` in place.

Each run's records file is read by DuckDB into an in-memory table the first time a run is asked for, and read
again when the file changes (its size or time), so a run in progress shows its records so far; nothing is copied
to disk but a migrated copy of records of an older schema (`case_tables`). A grid page is one query: the newest
record per case and repeat, reduced to one cell per case (the mean of its scored repeats: what a paired test
pairs), the runs joined on the case id, filtered, sorted and paged. Only the records of the page's cells are then
read as `SampleRecord`s (old formats migrated).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
from pydantic import ValidationError

from typed_eval.contracts import SampleRecord
from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.store.case_tables import RunTable, load_run_table, make_searchable
from typed_eval.store.case_views import (
    FILTERS,
    PER_RUN_SORTS,
    CaseCell,
    CaseDetail,
    CasePage,
    CaseRow,
    NotFoundError,
    RunEntry,
)
from typed_eval.store.read_write_lock import ReadWriteLock
from typed_eval.store.storage import RECORDS_FILE, SUMMARY_FILE, load_runs, parse_record

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

_RUN_ORDER = 1 << 40
"""Rows are in the first run's record order, then cases only later runs have, in theirs."""
_MAX_OFFSET = 1 << 62
"""Past any row (DuckDB's OFFSET is a 64-bit integer): a page number beyond it is a page past the last one."""


def _index(text: str, runs: int) -> int | None:
    """The run a `:N` names (from 0), or None for what is not one of the `runs` shown."""
    if not (text.isascii() and text.isdigit() and len(text) < 10):
        return None
    return int(text) if int(text) < runs else None


class CaseStore:
    """The stored runs under one results folder, their cases queried side by side. Safe to share between threads
    (each query has its own cursor; a run's tables are made once per change of its file, while no query reads any:
    the row ids a query finds must name the same lines when it reads the records, and a finished resume rewrites the
    records file in another order)."""

    def __init__(self, results_dir: Path) -> None:
        self.results_dir = results_dir
        self._db = duckdb.connect(":memory:")
        self._links = tempfile.TemporaryDirectory(prefix="typed-eval-view-")
        """A link to each run's records file under a plain name: DuckDB reads a path as a glob (`*`, `?`, `[`), and
        a run folder may hold those characters."""
        self._tables: dict[str, RunTable] = {}
        self._names: dict[str, str] = {}
        self._loading: dict[str, threading.Lock] = {}
        """Per run: held to look its tables up or make them (one maker at a time)."""
        self._lock = threading.Lock()
        """Held to name a run's tables and its lock."""
        self._queries = ReadWriteLock()
        """Read by each query, written by each load: no query sees a run's tables change under it."""

    def close(self) -> None:
        """Free the tables. A query still running (a request cut short by Ctrl-C while its run loads) keeps them
        until it ends: DuckDB refuses to close a connection in use, and the process is ending anyway."""
        with contextlib.suppress(duckdb.Error):
            self._db.close()
        self._links.cleanup()

    def runs(self) -> list[RunEntry]:
        """Every readable run, oldest first (a corrupt summary is left out, as the leaderboard leaves it)."""
        return self.runs_read()[0]

    def runs_read(self) -> tuple[list[RunEntry], list[str]]:
        """Every readable run, oldest first, and why each other run cannot be read (one line each, as
        `format_result.py` says it: a torn summary, a schema version newer than this program's)."""
        if not self.results_dir.is_dir():
            raise ResultFileError(f"no results folder {self.results_dir}: run `python main.py run` first")
        root = self.results_dir
        if (root / SUMMARY_FILE).is_file():  # a run folder itself: keyed as under its results folder
            root = root.parent.parent
        unreadable: list[str] = []
        runs = load_runs(self.results_dir, on_error=lambda exc: unreadable.append(str(exc)))
        return [RunEntry(run.path.relative_to(root).as_posix(), run) for run in runs], unreadable

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
            damaged = self._damaged(entries)
            records = [
                self._records(cursor, table, rids, entry, damaged[entry.key])
                for entry, table, rids in zip(entries, tables, wanted, strict=True)
            ]
        rows = []
        for row in found:
            cells = {}
            for index, entry in enumerate(entries):
                kept = [records[index][rid] for rid in row[3 + index] or () if rid in records[index]]
                if kept:
                    cells[entry.key] = CaseCell(kept)
            rows.append(CaseRow(row[0], row[1], cells))
        said = {key: lines for key, lines in damaged.items() if lines}
        return CasePage(total, page, per_page, rows, [group for (group,) in groups], entries, said)

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
        posed = False
        damaged = self._damaged(entries)
        with self._queries.reading(), contextlib.closing(self._db.cursor()) as cursor:
            for entry, table in zip(entries, tables, strict=True):
                found = cursor.execute(f"SELECT rids FROM {table}_cells WHERE case_id = ?", [case_id]).fetchone()
                rids = list(found[0]) if found else []
                posed = posed or bool(rids)
                by_rid = self._records(cursor, table, rids, entry, damaged[entry.key])
                runs[entry.key] = [by_rid[rid] for rid in rids if rid in by_rid]
        if not posed:
            raise NotFoundError(f"no case {case_id!r} in {', '.join(keys)}")
        first = next((records[0] for records in runs.values() if records), None)  # None: its records are damaged
        prompt = next((r.prompt for records in runs.values() for r in records if r.prompt is not None), None)
        said = {key: lines for key, lines in damaged.items() if lines}
        expected, group = (first.expected, first.group) if first is not None else (None, None)
        return CaseDetail(case_id, prompt, expected, group, runs, entries, said)

    def _damaged(self, entries: Sequence[RunEntry]) -> dict[str, list[str]]:
        """Per run, the lines its tables left out (each said once per page, as the loading found them); a record
        found damaged when read is added by `_records`."""
        return {entry.key: list(self._tables[entry.key].damaged) for entry in entries}

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
                alone = self._queries.writing() if table is not None else contextlib.nullcontext()
                table = load_run_table(self._db, path, stamp, name, Path(self._links.name), alone)
                self._tables[entry.key] = table
            if searchable and not table.searchable:  # no query reads it before it is made
                make_searchable(self._db, table)
            return table.name

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
        elif filter in ("wrong", "invalid", "error", "unsupported"):
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
        cursor: duckdb.DuckDBPyConnection, table: str, rids: Sequence[int], entry: RunEntry, damaged: list[str]
    ) -> dict[int, SampleRecord]:
        """The records of the rows `rids`; one that does not read as a record is left out and said in `damaged`."""
        if not rids:
            return {}
        found = cursor.execute(
            f"SELECT rowid, line, case_id FROM {table} WHERE rowid IN (SELECT unnest(?))", [list(rids)]
        )
        records = {}
        for rid, line, case_id in found.fetchall():
            try:
                records[rid] = parse_record(line)
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                damaged.append(f"corrupt record of case {case_id!r} in {entry.run.path / RECORDS_FILE}: {why}")
        return records
