"""The case grids of the HTML report: each suite's cases x runs, read through `CaseStore` and bounded so the
page stays light (a suite beyond the bounds is left to the viewer)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typed_eval.contracts import LeaderboardRow
from typed_eval.core.errors import ResultFileError
from typed_eval.core.suite import Suite, find_suites
from typed_eval.reports.formatting import count

if TYPE_CHECKING:
    from typed_eval.store.case_store import CaseRow, CaseStore

__all__ = ["GRID_FILTERS", "GRID_LINES", "GRID_TEXT", "MAX_GRID_CASES", "MAX_GRID_CELLS", "CaseGrid", "case_grids"]

MAX_GRID_CASES = 2_000
MAX_GRID_CELLS = 10_000
"""The case grids inlined in the page: at most `MAX_GRID_CASES` cases in one suite's grid, and `MAX_GRID_CELLS` cells
(cases x runs) in all the page's grids, the suites taken in the page's order. A suite over either bound gets one
line saying so and how to browse its cases (`main.py view`), never a grid cut short. Why these, measured with Debian's
headless chromium on a 2-CPU machine: a cell weighs about 180 bytes with a short answer (an option number) and about
720 with `GRID_TEXT` characters of markup-heavy text (escaped); 10,000 cells (2,000 cases x 5 runs) make a 1.8 MB
page (7.2 MB with long answers) that loads and lays out in about 2 s, while 20,000 long ones make 14 MB and 7 to 10 s.
Beyond 2,000 rows one table is no longer read by scrolling: that is the viewer's job (it pages, sorts, and shows whole
answers)."""
GRID_LINES = 4
"""Answer lines shown in one cell at most (all repeats' lines, in order); the rest are counted."""
GRID_TEXT = 200
"""Characters of answer text shown in one cell, over its lines; the rest is cut with a visible marker (the viewer's
case page shows whole answers)."""
GRID_FILTERS = ("disagree", "wrong", "invalid", "error", "unsupported")
"""The filters a grid offers beside `all`, as `CaseStore` defines them; a row's `data-f` names those that keep it."""


@dataclass(frozen=True)
class CaseGrid:
    """One suite's cases as the page shows them: a row per case (in `CaseStore`'s order), a column per run (`runs`:
    each run's `LeaderboardRow.path`, in the board's order; the rows' cells are keyed by it), and per case the
    filters that keep it. A suite too big to inline has no rows and a `notice` saying so."""

    runs: tuple[str, ...]
    rows: tuple[CaseRow, ...] = ()
    filters: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """By filter (`GRID_FILTERS`): the case ids it keeps. `disagree` is absent with fewer than two runs."""
    suite: Suite[Any] | None = None
    """The suite whose `show_answer` shows the answers (None: not installed here; answers are shown as JSON)."""
    notice: str | None = None
    """Why the cases are not inlined (plain text)."""
    no_records: tuple[str, ...] = ()
    """Runs of the suite with no column: they stored no record."""
    damaged: tuple[str, ...] = ()
    """Lines of its runs' records files left out of the grid, each with why (as `format_result.py` says it)."""


def case_grids(
    results_dir: Path,
    rows: Sequence[LeaderboardRow],
    *,
    max_cases: int = MAX_GRID_CASES,
    max_cells: int = MAX_GRID_CELLS,
    suites: Mapping[str, Suite[Any]] | None = None,
) -> dict[str, CaseGrid]:
    """The case grid of each suite of the board's `rows` (stored under `results_dir`), by suite name, read through
    `CaseStore`; suites over `max_cases`, or whose cells would take the page past `max_cells`, get a notice instead
    (see `MAX_GRID_CELLS`), as does one whose records cannot be read. `suites` by name (default: those installed)
    show the answers."""
    from typed_eval.store.case_store import CaseStore

    if suites is None:
        suites = {found.suite.name: found.suite for found in find_suites(on_error=lambda _: None)}
    if results_dir.is_file():  # one run's summary, as `format_result.py` takes it: its run folder
        results_dir = results_dir.parent
    view = f"run `python main.py view {shlex.quote(str(results_dir))}` to browse them"
    store = CaseStore(results_dir)
    try:
        entries = store.runs()
        keys = {str(entry.run.path): entry.key for entry in entries}
        least = {
            str(entry.run.path): entry.summary.scores.samples // max(1, entry.summary.settings.repeats)
            for entry in entries
        }
        grids: dict[str, CaseGrid] = {}
        cells = 0
        for name in sorted({r.suite for r in rows}):
            paths = [r.path for r in rows if r.suite == name]
            suite = suites.get(name)
            try:
                located = [(path, keys.get(path)) for path in paths]
                at_least = max((least.get(path, 0) for path in paths), default=0)
                grid = _suite_grid(store, located, suite, max_cases, (cells, max_cells), view, at_least)
            except ResultFileError as exc:
                grid = CaseGrid(tuple(paths), suite=suite, notice=f"The cases of this suite are not inlined: {exc}.")
            cells += len(grid.rows) * len(grid.runs)
            grids[name] = grid
        return grids
    finally:
        store.close()


def _suite_grid(
    store: CaseStore,
    paths: Sequence[tuple[str, str | None]],
    suite: Suite[Any] | None,
    max_cases: int,
    cells: tuple[int, int],
    view: str,
    at_least: int = 0,
) -> CaseGrid:
    """One suite's grid: `paths` are its runs' (`LeaderboardRow.path`, `CaseStore` key or None when not stored);
    `cells` the cells the page holds already and the most it may; `view` says how to browse cases not inlined;
    `at_least` the cases its runs' summaries say one of them scored: over `max_cases`, no run is read (a run of
    100,000 records takes DuckDB seconds and a GB to load, for a grid not shown)."""
    if at_least > max_cases:
        runs = tuple(path for path, key in paths if key is not None)
        notice = (
            f"The cases of this suite are not inlined: {count(at_least, 'case')} is more than {max_cases:,}; {view}."
        )
        return CaseGrid(runs, suite=suite, notice=notice, no_records=tuple(p for p, key in paths if key is None))
    by_key = {key: path for path, key in paths if key is not None and store.case_ids([key])}
    runs = tuple(by_key.values())
    no_records = tuple(path for path, _ in paths if path not in runs)
    if not runs:
        return CaseGrid((), suite=suite, no_records=no_records)
    shown = list(by_key)
    total = len(store.case_ids(shown))
    held, most = cells
    if total > max_cases:
        notice = f"The cases of this suite are not inlined: {count(total, 'case')} is more than {max_cases:,}; {view}."
        return CaseGrid(runs, suite=suite, notice=notice, no_records=no_records)
    if held + total * len(runs) > most:
        notice = (
            f"The cases of this suite are not inlined: {count(total, 'case')} x {count(len(runs), 'run')} would take "
            f"the page to {held + total * len(runs):,} cells, more than {most:,}; {view}."
        )
        return CaseGrid(runs, suite=suite, notice=notice, no_records=no_records)
    found: list[CaseRow] = []
    damaged: dict[str, None] = {}
    page = 1
    while True:
        got = store.cases(shown, page=page, per_page=1000)
        found += [replace(row, cells={by_key[key]: cell for key, cell in row.cells.items()}) for row in got.rows]
        damaged.update(dict.fromkeys(line for lines in got.damaged.values() for line in lines))
        if page * got.per_page >= got.total:
            break
        page += 1
    filters = {f: frozenset(store.case_ids(shown, filter=f)) for f in GRID_FILTERS if f != "disagree" or len(shown) > 1}
    return CaseGrid(runs, tuple(found), filters, suite, None, no_records, tuple(damaged))
