"""The case viewer as a Starlette application: the pages and the JSON API behind them, over one results folder.

Every state is in the URL (`/cases?runs=A,B&filter=disagree&page=2`), so a link can be shared. The pages are made
on the server with every stored text escaped; the only script is the viewer's own file, and the
Content-Security-Policy forbids any other (and any request to another origin). When it serves on a loopback address
the Host header must name one too, so a web page elsewhere cannot reach it by DNS rebinding.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_core import to_json
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from typed_eval.core.errors import EvaluatorError, InputError, ResultFileError
from typed_eval.core.suite import Suite, find_suites
from typed_eval.reports.html import asset
from typed_eval.reports.leaderboard import Board, build_board
from typed_eval.reports.pass_k import PassHatK, TrialBook
from typed_eval.reports.viewer import pages
from typed_eval.store.case_store import CaseDetail, CasePage, CaseStore, NotFoundError, RunEntry
from typed_eval.store.storage import RECORDS_FILE, SUMMARY_FILE, latest_records

__all__ = ["LOOPBACK_HOSTS", "create_app"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATIC = {
    "viewer.css": ("style.css", "text/css; charset=utf-8"),
    "viewer.js": ("viewer.js", "text/javascript; charset=utf-8"),
}
"""What `/static/NAME` serves: the views' one stylesheet (the report inlines it) and the viewer's script."""


class _Boards:
    """The leaderboard of the stored runs, and why a run's records cannot be read, made again only when a run's
    files have changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: tuple[object, ...] | None = None
        self._board: tuple[Board, list[str]] | None = None

    def get(self, entries: Sequence[RunEntry]) -> tuple[Board, list[str]]:
        stamp = tuple(
            (entry.key, *_stamp(entry.run.path / SUMMARY_FILE), *_stamp(entry.run.path / RECORDS_FILE))
            for entry in entries
        )
        with self._lock:
            if self._board is None or stamp != self._stamp:
                unreadable: list[str] = []
                board = build_board([entry.run for entry in entries], on_error=lambda exc: unreadable.append(str(exc)))
                self._board, self._stamp = (board, unreadable), stamp
            return self._board


class _PassKs:
    """Each run's pass^k, for runs that pose their cases more than once (what `/api/runs` carries), made again only
    when the run's records file has changed: the list of runs reads no records of a run that does not repeat."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: dict[str, tuple[tuple[int, int], PassHatK | None]] = {}

    def get(self, entry: RunEntry) -> PassHatK | None:
        if entry.summary.settings.repeats <= 1:
            return None
        stamp = _stamp(entry.run.path / RECORDS_FILE)
        with self._lock:
            cached = self._found.get(entry.key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        found = None
        if stamp != (0, 0):  # a damaged line is left out, as the leaderboard leaves it; a file gone, the figures too
            with contextlib.suppress(ResultFileError):
                trials = TrialBook()
                for record in latest_records(entry.run.path, lambda _: None):
                    trials.add(record)
                found = trials.repeated()
        with self._lock:
            self._found[entry.key] = (stamp, found)
        return found


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError:
        return (0, 0)
    return (stat.st_size, stat.st_mtime_ns)


def create_app(results_dir: Path, *, hosts: Sequence[str] = LOOPBACK_HOSTS) -> Starlette:
    """The viewer of the runs under `results_dir`; `hosts` are the Host header values it answers (`*` for any)."""
    store = CaseStore(results_dir)
    boards = _Boards()
    passes = _PassKs()
    suites: dict[str, Suite[Any]] = {found.suite.name: found.suite for found in find_suites(on_error=lambda _: None)}

    def api_runs(request: Request) -> Response:
        return _json([_run_json(entry, passes.get(entry)) for entry in store.runs()])

    def api_cases(request: Request) -> Response:
        page = _cases(store, request)
        return _json(
            {
                "total": page.total,
                "page": page.page,
                "per_page": page.per_page,
                "groups": page.groups,
                "cases": [
                    {
                        "case_id": row.case_id,
                        "group": row.group,
                        "cells": {key: cell.as_json() for key, cell in row.cells.items()},
                    }
                    for row in page.rows
                ],
                "damaged": page.damaged,
            }
        )

    def api_case(request: Request) -> Response:
        detail = store.case(request.path_params["case_id"], _keys(request))
        return _json(_case_json(detail))

    def leaderboard_page(request: Request) -> Response:
        entries, unreadable = store.runs_read()
        board, unread_records = boards.get(entries)
        return _html(pages.leaderboard(entries, board, [*unreadable, *unread_records]))

    def cases_page(request: Request) -> Response:
        page = _cases(store, request)
        return _html(pages.cases(page.entries, page, _query(request), suites))

    def case_page(request: Request) -> Response:
        detail = store.case(request.path_params["case_id"], _keys(request))
        return _html(pages.case(detail.entries, detail, _query(request), suites))

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            raise NotFoundError(f"no file {name!r}")
        asset_name, media_type = STATIC[name]
        return Response(asset(asset_name), media_type=media_type, headers=HEADERS)

    routes = [
        Route("/", _guarded(leaderboard_page, page=True)),
        Route("/cases", _guarded(cases_page, page=True)),
        Route("/case/{case_id:path}", _guarded(case_page, page=True)),
        Route("/api/runs", _guarded(api_runs)),
        Route("/api/cases", _guarded(api_cases)),
        Route("/api/case/{case_id:path}", _guarded(api_case)),
        Route("/static/{name}", _guarded(static)),
        Route("/favicon.ico", lambda request: Response(status_code=204, headers=HEADERS)),
    ]
    middleware = [] if "*" in hosts else [Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        store.close()

    async def not_found(request: Request, exc: Exception) -> Response:
        """An address the viewer has no page for: 404 as its own are, JSON under /api/."""
        message = f"no page {request.url.path}"
        if request.url.path.startswith("/api/"):
            return _json({"error": message}, 404)
        return _html(pages.error(404, message), 404)

    return Starlette(
        routes=routes, middleware=middleware, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found}
    )


def _guarded(
    endpoint: Callable[[Request], Response], *, page: bool = False
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint run in a worker thread (DuckDB and the files are blocking), its errors answered in one line:
    404 for what is not stored, 400 for a bad parameter, 500 for a file that cannot be read."""

    async def handle(request: Request) -> Response:
        try:
            return await run_in_threadpool(endpoint, request)
        except EvaluatorError as exc:
            status = 404 if isinstance(exc, NotFoundError) else 400 if isinstance(exc, InputError) else 500
            if page:
                return _html(pages.error(status, str(exc)), status)
            return _json({"error": str(exc)}, status)

    return handle


def _keys(request: Request) -> list[str]:
    """The runs named: `runs=A,B` (and `run=A&run=B`, as a form of checkboxes sends them)."""
    keys = [key for value in request.query_params.getlist("runs") for key in value.split(",") if key]
    return keys + [key for key in request.query_params.getlist("run") if key]


def _query(request: Request) -> dict[str, str]:
    return {key: value for key, value in request.query_params.items() if key != "run"} | {
        "runs": ",".join(_keys(request))
    }


def _number(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    if not (text.isascii() and text.isdigit()):  # `²` and `٣` are digits to str.isdigit, not to int()
        raise InputError(f"{name}: {text!r} is not a whole number")
    if len(text) > 100:  # int() refuses more than 4,300 digits; any page past 10**100 is as far past the last
        text = "1" + "0" * 100
    return int(text)


def _cases(store: CaseStore, request: Request) -> CasePage:
    params = request.query_params
    direction = params.get("dir") or "asc"  # the grid's form sends `dir=` when no direction was chosen
    if direction not in ("asc", "desc"):
        raise InputError(f"dir: {direction!r} is not asc or desc")
    return store.cases(
        _keys(request),
        filter=params.get("filter") or "all",
        group=params.get("group") or None,
        query=params.get("q") or None,
        sort=params.get("sort") or "case",
        descending=direction == "desc",
        page=_number(request, "page", 1),
        per_page=_number(request, "per_page", 50),
    )


def _run_json(entry: RunEntry, passes: PassHatK | None) -> dict[str, Any]:
    """A run as `/api/runs` lists it; with repeats, its pass^1 .. pass^K overall and per group (0-100, each with its
    95% interval and the cases it averages), else empty."""
    summary = entry.summary
    groups = passes.groups if passes is not None else {}
    return {
        "run": entry.key,
        "model": summary.model,
        "mode": summary.mode,
        "suite": summary.suite,
        "samples": summary.scores.samples,
        "score": summary.scores.score,
        "status": entry.status,
        "started_at": summary.started_at.isoformat(),
        "repeats": summary.settings.repeats,
        "pass_k": [figure.model_dump(mode="json") for figure in passes.overall] if passes is not None else [],
        "pass_k_groups": {group: [figure.model_dump(mode="json") for figure in mine] for group, mine in groups.items()},
    }


def _case_json(detail: CaseDetail) -> dict[str, Any]:
    runs: dict[str, Any] = {}
    for key, records in detail.runs.items():
        if not records:
            runs[key] = None
            continue
        first = records[0].model_dump(mode="json")
        if len(records) > 1:
            first["repeats"] = [record.model_dump(mode="json") for record in records]
        runs[key] = first
    return {
        "case_id": detail.case_id,
        "prompt": detail.prompt,
        "expected": detail.expected,
        "group": detail.group,
        "runs": runs,
        "damaged": detail.damaged,
    }


def _json(data: object, status: int = 200) -> Response:
    """JSON as the API answers it: a float that is not finite reads as null, as JSON has no NaN."""
    body = to_json(data, inf_nan_mode="null")
    return Response(body, status_code=status, media_type="application/json", headers=HEADERS)


def _html(page: str, status: int = 200) -> Response:
    return HTMLResponse(page, status_code=status, headers=HEADERS)
