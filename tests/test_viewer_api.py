"""The case viewer's JSON API, served by `main.py view` over runs the evaluator made, whose every answer is known
(see `tests/viewer_runs.py`): runs, filters (disagree is exactly what the paired test pairs), paging, sorting,
search, one case's attempts, errors, the Host check, a run still being written, the published v1 runs; and the
server's life: Ctrl-C, SIGTERM, a port in use."""

from __future__ import annotations

import asyncio
import html
import http.client
import json
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from pydantic_ai import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
from tests.conftest import PYTHON, REPO
from tests.viewer_runs import (
    CASES,
    EVEN,
    FEEDBACK,
    GAMMA,
    IDS,
    ODD,
    ODD_ID,
    PRICES,
    XSS,
    Runs,
    Viewer,
    answering,
    case_path,
    make_runs,
    task,
)
from typed_eval.contracts import SampleRecord
from typed_eval.reports.leaderboard import compare_runs
from typed_eval.store.storage import load_runs

DISAGREE_AB = ["c02", "c04", "c05", "c07", "c08", "c10"]
WRONG_AB = ["c02", "c04", "c05", "c07", "c08", "c09", "c10", ODD_ID]
INVALID_AB = ["c03", "c04", "c08"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return make_runs(tmp_path_factory.mktemp("viewer") / "result")


@pytest.fixture(scope="module")
def viewer(runs: Runs) -> Iterator[Viewer]:
    server = Viewer(runs.results)
    yield server
    server.close()


def cases(viewer: Viewer, runs: list[str], **params: str | int) -> dict[str, Any]:
    found: dict[str, Any] = viewer.api("/api/cases?" + urlencode({"runs": ",".join(runs)} | params))
    return found


def ids(viewer: Viewer, runs: list[str], **params: str | int) -> list[str]:
    return [row["case_id"] for row in cases(viewer, runs, **params)["cases"]]


def stored(runs: Runs, name: str, case_id: str) -> dict[str, Any]:
    """The record as the run stored it (read as a record, as the API answers it)."""
    path = runs.outcomes[name].run_dir / "samples.jsonl"
    for line in path.read_text().splitlines():
        record = SampleRecord.model_validate_json(line)
        if record.case_id == case_id:
            return record.model_dump(mode="json")
    raise AssertionError(f"no {case_id} in {path}")


# --- runs ----------------------------------------------------------------------------------------------------


def test_runs_lists_each_stored_run_oldest_first(viewer: Viewer, runs: Runs) -> None:
    found = viewer.api("/api/runs")
    started = [datetime.fromisoformat(row.pop("started_at")) for row in found]
    assert started == [runs.outcomes[name].summary.started_at for name in ("alpha", "beta", "gamma")]
    common = {"mode": "tool", "suite": "numbers", "samples": 12, "status": "finished", "repeats": 1, "pass_k": []}
    common |= {"pass_k_groups": {}}  # no repeats: no pass^k
    assert found == [
        {"run": runs.a, "model": "function:alpha", "score": 100 * 8 / 12} | common,
        {"run": runs.b, "model": "function:beta", "score": 100 * 6 / 11} | common,  # c09 failed: 11 scored
        {"run": runs.g, "model": f"function:{GAMMA}", "score": 100 * 11 / 12} | common,
    ]


# --- filters -------------------------------------------------------------------------------------------------


def test_each_filter_keeps_exactly_the_cases_known_by_construction(viewer: Viewer, runs: Runs) -> None:
    ab = [runs.a, runs.b]
    every = cases(viewer, ab)
    assert (every["total"], every["page"], every["per_page"], every["groups"]) == (12, 1, 50, ["even", "odd"])
    assert [row["case_id"] for row in every["cases"]] == IDS
    assert [row["group"] for row in every["cases"]] == ["even", "odd"] * 6
    for name, expected in [("all", IDS), ("disagree", DISAGREE_AB), ("wrong", WRONG_AB),
                           ("invalid", INVALID_AB), ("error", ["c09"])]:  # fmt: skip
        found = cases(viewer, ab, filter=name)
        assert (found["total"], [row["case_id"] for row in found["cases"]]) == (len(expected), expected), name
    # three runs: scored in all three (c09 is not), scores not all equal (gamma is wrong on c00 alone, right on ODD_ID)
    assert ids(viewer, [runs.a, runs.b, runs.g], filter="disagree") == [
        "c00", "c02", "c04", "c05", "c07", "c08", "c10", ODD_ID,
    ]  # fmt: skip
    assert ids(viewer, [runs.g], filter="wrong") == ["c00"]
    assert ids(viewer, [runs.g], filter="invalid") == []


@pytest.mark.parametrize(
    ("a", "b", "only_a", "only_b"), [("alpha", "beta", 4, 2), ("alpha", "gamma", 1, 4), ("beta", "gamma", 1, 5)]
)
def test_disagree_is_what_the_paired_comparison_counts(
    viewer: Viewer, runs: Runs, a: str, b: str, only_a: int, only_b: int
) -> None:
    stored_runs = {run.path: run for run in load_runs(runs.results)}
    comparison, _, _ = compare_runs(stored_runs[runs.outcomes[a].run_dir], stored_runs[runs.outcomes[b].run_dir])
    assert (comparison.only_a, comparison.only_b) == (only_a, only_b)
    found = cases(viewer, [runs.keys[a], runs.keys[b]], filter="disagree")
    assert found["total"] == comparison.only_a + comparison.only_b
    # and the other way round: the same cases
    assert cases(viewer, [runs.keys[b], runs.keys[a]], filter="disagree")["total"] == found["total"]
    # each count alone: the cases where one run scored above the other (the leaderboard's paired counts link there)
    assert cases(viewer, [runs.keys[a], runs.keys[b]], filter="better:0")["total"] == comparison.only_a
    assert cases(viewer, [runs.keys[a], runs.keys[b]], filter="better:1")["total"] == comparison.only_b


def test_a_cell_says_what_the_run_stored(viewer: Viewer, runs: Runs) -> None:
    rows = {row["case_id"]: row["cells"] for row in cases(viewer, [runs.a, runs.b])["cases"]}
    latencies = [cell.pop("latency_s") for cells in rows.values() for cell in cells.values()]
    assert all(isinstance(latency, float) and latency >= 0 for latency in latencies)
    one = {"corrective_retries": 0, "invalid_kinds": [], "cost_usd": 0.00012, "repeats": 1, "input_tokens": 100,
           "output_tokens": 10}  # fmt: skip
    fixed = {"corrective_retries": 1, "invalid_kinds": ["wrong_type"], "cost_usd": 0.00034, "repeats": 1,
             "input_tokens": 300, "output_tokens": 20}  # fmt: skip
    assert rows["c03"] == {
        runs.a: {"status": "correct", "statuses": ["correct"], "score": 1.0, "output": {"value": 3, "note": ""}} | one,
        runs.b: {"status": "correct", "statuses": ["correct"], "score": 1.0, "output": {"value": 3, "note": ""}}
        | fixed,
    }
    assert rows["c08"][runs.a] == {"status": "missing", "statuses": ["missing"], "score": 0.0, "output": None} | fixed
    assert rows["c09"][runs.b] == {
        "status": "error", "statuses": ["error"], "score": None, "output": None, "corrective_retries": 0,
        "invalid_kinds": [], "cost_usd": 0.0, "repeats": 1, "input_tokens": 0, "output_tokens": 0,
    }  # fmt: skip
    assert rows["c05"][runs.a]["output"] == {"value": 5, "note": XSS}


def first_pose_right() -> FunctionModel:
    """Right the first time a case is posed, wrong (the value + 100) every time after: with two repeats, each case
    is scored 1 then 0."""
    posed: dict[int, int] = {}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        k = int(next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart)).split()[1])
        posed[k] = posed.get(k, 0) + 1
        value = k if posed[k] == 1 else k + 100
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"value": value})])

    return FunctionModel(respond, model_name="repeater")


@dataclass
class Extra:
    server: Viewer
    part: str
    """alpha again, on the first three cases only."""
    repeated: str
    """The first three cases posed twice: right, then wrong."""
    corrupt: Path
    """beta's run copied, c01's status made `bogus`."""
    torn: Path
    """beta's run copied, its third line cut in the middle (not its last line: the file is corrupt)."""
    globbed: str
    """alpha's run copied into `globs/run[ab]*`, beside gamma's in `globs/runa`, which a glob of the first names."""


@pytest.fixture(scope="module")
def extra(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Extra]:
    results = tmp_path_factory.mktemp("extra") / "result"
    shutil.copytree(runs.results, results)
    part = asyncio.run(evaluator.run(task(), CASES[:3], answering("alpha"), results_dir=results, prices=PRICES))
    repeated = asyncio.run(
        evaluator.run(task(), CASES[:3], first_pose_right(), results_dir=results, repeats=2, concurrency=1)
    )
    corrupt = results / "corrupt" / runs.outcomes["beta"].run_dir.name
    shutil.copytree(runs.outcomes["beta"].run_dir, corrupt)
    lines = (corrupt / "samples.jsonl").read_text().splitlines(keepends=True)
    assert '"status":"correct"' in lines[1]
    lines[1] = lines[1].replace('"status":"correct"', '"status":"bogus"')
    (corrupt / "samples.jsonl").write_text("".join(lines))
    torn = results / "torn" / runs.outcomes["beta"].run_dir.name
    shutil.copytree(runs.outcomes["beta"].run_dir, torn)
    lines = (torn / "samples.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2][:40] + "\n"
    (torn / "samples.jsonl").write_text("".join(lines))
    shutil.copytree(runs.outcomes["alpha"].run_dir, results / "globs" / "run[ab]*")
    shutil.copytree(runs.outcomes["gamma"].run_dir, results / "globs" / "runa")
    server = Viewer(results)
    keys = [run.run_dir.relative_to(results).as_posix() for run in (part, repeated)]
    yield Extra(server, keys[0], keys[1], corrupt, torn, "globs/run[ab]*")
    server.close()


def test_a_run_that_did_not_pose_a_case_has_no_cell(extra: Extra, runs: Runs) -> None:
    server, key = extra.server, extra.part
    found = cases(server, [key, runs.b])
    assert found["total"] == 12
    assert [list(row["cells"]) for row in found["cases"]] == [[key, runs.b]] * 3 + [[runs.b]] * 9
    # the three cases it posed, beta scored all three: c02 the one they disagree on
    assert ids(server, [key, runs.b], filter="disagree") == ["c02"]
    assert ids(server, [runs.b, key], sort="score:1", dir="desc") == ["c00", "c01", "c02", *IDS[3:]]
    detail = server.api(f"/api/case/c05?runs={key},{runs.b}")
    assert detail["runs"][key] is None
    assert detail["runs"][runs.b] == stored(runs, "beta", "c05")


def test_repeats_of_a_case_are_one_cell_and_the_case_lists_each(extra: Extra, runs: Runs) -> None:
    server, key = extra.server, extra.repeated
    (row, _, _) = cases(server, [key])["cases"]
    cell = row["cells"][key]
    assert (cell["status"], cell["statuses"], cell["score"], cell["repeats"]) == (
        "mixed", ["correct", "incorrect"], 0.5, 2,
    )  # fmt: skip
    assert cell["output"] == [{"value": 0, "note": ""}, {"value": 100, "note": ""}]
    assert ids(server, [key], filter="wrong") == ["c00", "c01", "c02"]
    # the mean of the repeats is what the paired test pairs: 0.5 against alpha's 1
    assert ids(server, [key, runs.a], filter="disagree") == ["c00", "c01", "c02"]
    detail = server.api(f"/api/case/c01?runs={key}")["runs"][key]
    assert [(r["repeat"], r["status"], r["output"]) for r in detail["repeats"]] == [
        (0, "correct", {"value": 1, "note": ""}), (1, "incorrect", {"value": 101, "note": ""}),
    ]  # fmt: skip
    assert {k: v for k, v in detail.items() if k != "repeats"} == detail["repeats"][0]
    page = server.get(f"/case/c01?runs={key}")
    assert (page.status, page.text.count("Repeat 1: "), page.text.count("Repeat 2: ")) == (200, 1, 1)


def test_a_corrupt_record_is_left_out_and_said_and_the_rest_of_the_run_is_served(extra: Extra) -> None:
    server, key = extra.server, f"corrupt/{extra.corrupt.name}"
    said = {
        key: [
            f"corrupt record of case 'c01' in {extra.corrupt / 'samples.jsonl'}: Input should be 'correct', 'partial', "
            "'incorrect', 'missing', 'error' or 'unsupported'"
        ]
    }
    grid = server.api(f"/api/cases?runs={key}")
    assert (grid["total"], grid["damaged"]) == (12, said)
    assert [row["case_id"] for row in grid["cases"] if key not in row["cells"]] == ["c01"]  # its cell left out
    detail = server.api(f"/api/case/c01?runs={key}")
    assert (detail["runs"][key], detail["damaged"]) == (None, said)
    assert ids(server, [key], per_page=1) == ["c00"]  # a page without it says nothing
    assert server.api(f"/api/cases?runs={key}&per_page=1")["damaged"] == {}
    assert server.api(f"/api/case/c00?runs={key}")["runs"][key]["status"] == "correct"
    shown = server.get(f"/cases?runs={key}")
    assert shown.status == 200
    assert "<p>Left out of this page, not read as records:</p>" in shown.text
    assert f"corrupt record of case &#39;c01&#39; in {extra.corrupt / 'samples.jsonl'}: " in shown.text
    page = server.get("/")
    assert page.status == 200  # the run stays on the leaderboard, its damaged line listed with its reason
    assert "Not on the leaderboard" not in page.text
    assert f"<li>corrupt record at {extra.corrupt / 'samples.jsonl'}:2: " in page.text


def test_a_line_cut_in_the_middle_of_the_file_is_said_with_its_line_not_a_case_left_out_unsaid(extra: Extra) -> None:
    key = f"torn/{extra.torn.name}"
    grid = extra.server.api(f"/api/cases?runs={key}")
    assert grid["total"] == 11
    (line,) = grid["damaged"][key]
    assert line.startswith(f"corrupt record at {extra.torn / 'samples.jsonl'}:3: ")
    assert extra.server.api(f"/api/case/c00?runs={key}")["damaged"] == {key: [line]}


def test_a_run_folder_named_like_a_glob_reads_its_own_records_only(extra: Extra, runs: Runs) -> None:
    own = cases(extra.server, [extra.globbed])
    alpha = cases(extra.server, [runs.a])
    assert own["total"] == 12
    assert [row["cells"][extra.globbed] for row in own["cases"]] == [row["cells"][runs.a] for row in alpha["cases"]]


# --- paging, sorting, groups, search ------------------------------------------------------------------------


def test_pages_of_five_cover_each_case_exactly_once(viewer: Viewer, runs: Runs) -> None:
    ab = [runs.a, runs.b]
    pages = [cases(viewer, ab, per_page=5, page=page) for page in (1, 2, 3, 4)]
    assert [(p["total"], p["page"], p["per_page"], len(p["cases"])) for p in pages] == [
        (12, 1, 5, 5), (12, 2, 5, 5), (12, 3, 5, 2), (12, 4, 5, 0),
    ]  # fmt: skip
    assert [row["case_id"] for p in pages for row in p["cases"]] == IDS
    far = cases(viewer, ab, per_page=1000, page=10**20)  # past the last page, however far: no row, the count
    assert (far["total"], far["page"], far["cases"]) == (12, 10**20, [])
    assert viewer.get(f"/cases?runs={runs.a}&page={10**20}").status == 200
    assert cases(viewer, ab, page="9" * 5000)["cases"] == []  # more digits than int() reads
    disagree = [ids(viewer, ab, filter="disagree", per_page=4, page=page) for page in (1, 2, 3)]
    assert disagree == [DISAGREE_AB[:4], DISAGREE_AB[4:], []]
    assert cases(viewer, ab, filter="disagree", per_page=4, page=3)["total"] == 6


def test_sorting_by_a_runs_cells(viewer: Viewer, runs: Runs) -> None:
    beta_right = ["c00", "c01", "c03", "c06", "c08", "c10"]
    beta_wrong = ["c02", "c04", "c05", "c07", ODD_ID]
    ba = [runs.b, runs.a]
    # equal scores keep the record order; beta's failed c09 has no score: last either way
    assert ids(viewer, ba, sort="score:0", dir="desc") == beta_right + beta_wrong + ["c09"]
    assert ids(viewer, ba, sort="score:0", dir="asc") == beta_wrong + beta_right + ["c09"]
    assert ids(viewer, ba, sort="score:0") == beta_wrong + beta_right + ["c09"]
    assert ids(viewer, ba, sort="score:0", dir="") == beta_wrong + beta_right + ["c09"]  # what the grid's form sends
    alpha_right = IDS[:8]
    assert ids(viewer, ba, sort="score:1", dir="desc") == [*alpha_right, "c08", "c09", "c10", ODD_ID]
    # alpha's two cases with a retry cost $0.00034, the others $0.00012
    assert ids(viewer, ba, sort="cost:1", dir="desc") == ["c04", "c08"] + [i for i in IDS if i not in ("c04", "c08")]
    assert ids(viewer, ba, sort="retries:0", dir="desc") == ["c03"] + [i for i in IDS if i != "c03"]
    assert sorted(ids(viewer, ba, sort="latency:0")) == sorted(IDS)
    assert ids(viewer, ba, sort="case", dir="desc") == IDS[::-1]
    assert ids(viewer, ba, sort="group") == EVEN + ODD
    assert ids(viewer, ba, sort="group", dir="desc") == ODD + EVEN
    assert ids(viewer, ba, sort="score:0", dir="desc", filter="disagree") == ["c08", "c10", "c02", "c04", "c05", "c07"]


def test_group_and_search(viewer: Viewer, runs: Runs) -> None:
    ab = [runs.a, runs.b]
    assert ids(viewer, ab, group="odd") == ODD
    assert ids(viewer, ab, group="even", filter="disagree") == ["c02", "c04", "c08", "c10"]
    assert cases(viewer, ab, group="nothing")["total"] == 0
    assert ids(viewer, ab, q="ZEBRA") == ["c07"]  # the prompt, whatever the case
    assert ids(viewer, ab, q="onerror=") == ["c05"]  # alpha's output
    assert ids(viewer, [runs.b], q="onerror=") == []
    assert ids(viewer, ab, q="not a number") == INVALID_AB  # the invalid raw replies
    assert ids(viewer, ab, q="104") == ["c04"]  # beta's wrong value
    assert ids(viewer, ab, q="%") == []  # text, not a pattern
    assert ids(viewer, ab, q="_") == ["c05"]  # window.__xss: the one case with an underscore
    assert ids(viewer, ab, q="case 1") == ["c01", "c10", ODD_ID]
    assert ids(viewer, ab, q="case 1", group="odd", filter="wrong") == [ODD_ID]


# --- one case ------------------------------------------------------------------------------------------------


def test_a_retried_case_shows_its_attempts_in_order(viewer: Viewer, runs: Runs) -> None:
    detail = viewer.api(f"/api/case/c03?runs={runs.a},{runs.b}")
    assert (detail["case_id"], detail["prompt"], detail["expected"], detail["group"]) == ("c03", "case 3", 3, "odd")
    assert detail["runs"][runs.b]["attempts"] == [
        {"valid": False, "invalid_kind": "wrong_type", "raw": '{"value": "not a number"}', "feedback": FEEDBACK,
         "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.00012},
        {"valid": True, "invalid_kind": None, "raw": '{"value": 3}', "feedback": None, "input_tokens": 200,
         "output_tokens": 10, "cost_usd": 0.00022},
    ]  # fmt: skip
    assert detail["runs"] == {runs.a: stored(runs, "alpha", "c03"), runs.b: stored(runs, "beta", "c03")}
    missing = viewer.api(f"/api/case/c08?runs={runs.a}")["runs"][runs.a]
    assert [(a["valid"], a["invalid_kind"], a["feedback"]) for a in missing["attempts"]] == [
        (False, "wrong_type", FEEDBACK)
    ] * 2
    error = viewer.api(f"/api/case/c09?runs={runs.b}")["runs"][runs.b]
    assert (error["status"], error["error"], error["attempts"]) == ("error", "HTTP 503 from beta: overloaded", [])


def test_a_case_id_with_a_slash_spaces_and_url_characters(viewer: Viewer, runs: Runs) -> None:
    for path in (case_path(ODD_ID), "dir/case%20%3Ci%3Eeleven%3C%2Fi%3E%3F50%25%26x%3D1%23top"):
        detail = viewer.api(f"/api/case/{path}?runs={runs.a},{runs.g}")
        assert (detail["case_id"], detail["prompt"]) == (ODD_ID, "case 11")
        assert detail["runs"] == {runs.a: stored(runs, "alpha", ODD_ID), runs.g: stored(runs, "gamma", ODD_ID)}
    # the grid links to it, and the link opens it
    page = viewer.get("/cases?" + urlencode({"runs": f"{runs.a},{runs.g}", "q": "case 11"}))
    assert page.status == 200
    link = (
        f"/case/{case_path(ODD_ID)}?runs={runs.a.replace('/', '%2F')}%2C{runs.g.replace('/', '%2F')}&q=case+11&page=1"
    )
    assert f'<a href="{html.escape(link)}">dir/case &lt;i&gt;eleven&lt;/i&gt;?50%&amp;x=1#top</a>' in page.text
    opened = viewer.get(link)
    assert opened.status == 200
    assert "<h1>Case dir/case &lt;i&gt;eleven&lt;/i&gt;?50%&amp;x=1#top" in opened.text
    back = "/cases?" + urlencode({"runs": f"{runs.a},{runs.g}", "q": "case 11", "page": "1"})
    assert f'<a href="{html.escape(back)}">← the grid</a>' in opened.text  # the way back keeps the search and page


# --- errors --------------------------------------------------------------------------------------------------


def test_what_is_not_stored_is_404_and_a_bad_parameter_400_in_one_json_line(viewer: Viewer, runs: Runs) -> None:
    results = runs.results
    expected = [
        (f"/api/cases?runs={runs.a},nobody/run", 404, {"error": f"no stored run 'nobody/run' under {results}"}),
        (f"/api/case/c03?runs={runs.a},nobody/run", 404, {"error": f"no stored run 'nobody/run' under {results}"}),
        (f"/api/case/c99?runs={runs.a},{runs.b}", 404, {"error": f"no case 'c99' in {runs.a}, {runs.b}"}),
        (f"/api/cases?runs={runs.a},{runs.b}&filter=bogus", 400,
         {"error": "filter: 'bogus' is not one of all, disagree, wrong, invalid, error, "
                                     "unsupported, or better:N (run N, from 0)"}),
        (f"/api/cases?runs={runs.a}&filter=disagree", 400,
         {"error": "filter: disagree compares runs: name two runs or more"}),
        (f"/api/cases?runs={runs.a}&sort=score:1", 400,
         {"error": "sort: 'score:1' is not case, group, or score, cost, latency or retries with :N (run N, from 0)"}),
        (f"/api/cases?runs={runs.a}&dir=sideways", 400, {"error": "dir: 'sideways' is not asc or desc"}),
        (f"/api/cases?runs={runs.a}&page=0", 400, {"error": "page: pages start at 1, and per_page is 1 to 1000"}),
        (f"/api/cases?runs={runs.a}&page=-1", 400, {"error": "page: '-1' is not a whole number"}),
        (f"/api/cases?runs={runs.a}&page=%C2%B2", 400, {"error": "page: '²' is not a whole number"}),
        (f"/api/cases?runs={runs.a}&per_page=%D9%A3", 400, {"error": "per_page: '٣' is not a whole number"}),
        (f"/api/cases?runs={runs.a}&sort=score:%C2%B2", 400,
         {"error": "sort: 'score:²' is not case, group, or score, cost, latency or retries with :N (run N, from 0)"}),
        (f"/api/cases?runs={runs.a}&sort=score:{'9' * 5000}", 400,
         {"error": f"sort: 'score:{'9' * 5000}' is not case, group, or score, cost, latency or retries with :N (run N, "
                   "from 0)"}),
        (f"/api/cases?runs={runs.a},{runs.a}", 400, {"error": "runs: a run is named twice"}),
        ("/api/cases", 400, {"error": "runs: name one run or more (`runs=<model-folder>/<run-folder>,...`)"}),
    ]  # fmt: skip
    for path, status, body in expected:
        reply = viewer.get(path)
        assert (reply.status, reply.json()) == (status, body), path
    page = viewer.get(f"/case/c99?runs={runs.a}")
    assert (page.status, page.headers["content-type"]) == (404, "text/html; charset=utf-8")
    assert f"no case &#39;c99&#39; in {runs.a}" in page.text
    assert viewer.get("/static/other.js").status == 404
    assert viewer.get("/nowhere").status == 404


POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No script but the viewer's own file, no inline script or style, no request to another origin, no framing."""


def test_every_answer_carries_the_security_headers(viewer: Viewer, runs: Runs) -> None:
    for path in ("/", f"/cases?runs={runs.a}", f"/case/c03?runs={runs.a}", "/api/runs", "/static/viewer.js",
                 f"/api/cases?runs={runs.a}&filter=bogus", "/api/nothing", "/nothing"):  # fmt: skip
        reply = viewer.get(path)
        assert reply.headers["content-security-policy"] == POLICY, path
        assert (reply.headers["x-content-type-options"], reply.headers["cache-control"]) == ("nosniff", "no-store")


def test_an_address_with_no_page_is_a_404_json_under_the_api(viewer: Viewer) -> None:
    reply = viewer.get("/api/nothing")
    assert (reply.status, reply.json()) == (404, {"error": "no page /api/nothing"})
    reply = viewer.get("/nothing/<b>x</b>")
    assert reply.status == 404
    assert '<p class="error">no page /nothing/&lt;b&gt;x&lt;/b&gt;</p>' in reply.text


def listening_addresses(port: int) -> list[str]:
    """The local addresses the kernel has a listening TCP socket on for `port` (Linux's /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, port_hex = local.partition(":")
            if int(port_hex, 16) == port and state == "0A":
                found.append(address)
    return found


def test_it_listens_on_loopback_only_and_answers_only_a_loopback_host(viewer: Viewer) -> None:
    assert viewer.line == f"serving http://127.0.0.1:{viewer.port}/\n"
    if Path("/proc/net/tcp").exists():
        assert listening_addresses(viewer.port) == ["0100007F"]  # 127.0.0.1, and nothing else
    for host in ("evil.example", f"evil.example:{viewer.port}", "127.0.0.1.evil.example", "localhost.evil.example"):
        refused = viewer.get("/api/runs", {"Host": host})
        assert (refused.status, refused.body) == (400, b"Invalid host header"), host
        assert viewer.get("/", {"Host": host}).status == 400
    for host in (f"127.0.0.1:{viewer.port}", f"localhost:{viewer.port}", "LOCALHOST", f"[::1]:{viewer.port}"):
        assert viewer.get("/api/runs", {"Host": host}).status == 200, host


# --- a run being written -------------------------------------------------------------------------------------


def test_a_run_in_progress_shows_each_record_once_written(tmp_path: Path) -> None:
    results = tmp_path / "result"
    results.mkdir()
    server = Viewer(results)
    try:
        assert server.api("/api/runs") == []
        seen: list[tuple[str, int, list[str]]] = []
        keys: list[str] = []

        def started(to_pose: int, run_dir: Path) -> None:
            keys.append(run_dir.relative_to(results).as_posix())

        def written(record: SampleRecord) -> None:  # called once the record is in samples.jsonl
            (run,) = server.api("/api/runs")
            found = cases(server, keys)
            seen.append((run["status"], found["total"], [row["case_id"] for row in found["cases"]][-1:]))

        outcome = asyncio.run(
            evaluator.run(task(), CASES, answering("beta", fixed=frozenset({3})),
                          control=evaluator.RunControl(on_start=started, on_record=written), results_dir=results,
                          retries=1, concurrency=1)
        )  # fmt: skip
        assert seen == [("running", k + 1, [IDS[k]]) for k in range(12)]
        (key,) = keys
        (run,) = server.api("/api/runs")
        assert (run["status"], run["samples"]) == ("finished", 12)

        # a line still being written is not a record yet; whole, it is
        records = outcome.run_dir / "samples.jsonl"
        line = records.read_text().splitlines()[0].replace('"case_id":"c00"', '"case_id":"late"')
        assert '"case_id":"late"' in line
        with records.open("a") as out:
            out.write(line[:60])
            out.flush()
            assert cases(server, [key])["total"] == 12
            assert server.get(f"/api/case/late?runs={key}").status == 404
            out.write(line[60:] + "\n")
        assert ids(server, [key])[-1] == "late"
        assert server.api(f"/api/case/late?runs={key}")["runs"][key]["output"] == {"value": 0, "note": ""}
        # and the newest record of a case counts, as the scores count it
        with records.open("a") as out:
            out.write(line.replace('"value":0', '"value":7').replace('"score":1.0', '"score":0.0') + "\n")
        late = {row["case_id"]: row for row in cases(server, [key])["cases"]}["late"]["cells"][key]
        assert (late["score"], late["output"]) == (0.0, {"value": 7, "note": ""})
        assert cases(server, [key])["total"] == 13
    finally:
        server.close()


# --- the published v1 runs -----------------------------------------------------------------------------------

PUBLISHED = REPO / "result"


def test_the_published_v1_runs_pair_as_the_leaderboard_pairs_them() -> None:
    stored_runs = {run.path.parent.name: run for run in load_runs(PUBLISHED)}
    assert sorted(stored_runs) == ["Phi-4-Q8_0", "command-r7b-12-2024", "deepseek-r1", "deepseek-v3", "minimax-01"]
    server = Viewer(PUBLISHED)
    try:
        listed = server.api("/api/runs")
        assert sorted((r["model"], r["samples"], r["status"], r["mode"], r["suite"]) for r in listed) == [
            (model, 450, "finished", "tag", "farel") for model in sorted(stored_runs)
        ]
        key = {row["model"]: row["run"] for row in listed}
        for a, b in [("deepseek-r1", "deepseek-v3"), ("Phi-4-Q8_0", "command-r7b-12-2024")]:
            comparison, _, _ = compare_runs(stored_runs[a], stored_runs[b])
            found = cases(server, [key[a], key[b]], filter="disagree", per_page=1000)
            assert found["total"] == comparison.only_a + comparison.only_b > 0
            assert len(found["cases"]) == found["total"]
            right = {name: {r.case_id for r in evaluator.read_records(stored_runs[name].path) if r.status == "correct"}
                     for name in (a, b)}  # fmt: skip
            assert {row["case_id"] for row in found["cases"]} == right[a] ^ right[b]
        first = server.api(f"/api/case/q00001?runs={key['deepseek-r1']}")
        assert (first["case_id"], first["prompt"], first["group"]) == ("q00001", None, "child")
        page = server.get(f"/case/q00001?runs={key['deepseek-r1']}")
        assert page.status == 200 and "The prompt is not stored with these runs" in page.text
        assert server.get("/").status == 200
        r1, v3 = key["deepseek-r1"], key["deepseek-v3"]
        grid = server.get(f"/cases?runs={r1},{v3}&filter=disagree")
        disagree = cases(server, [r1, v3], filter="disagree")["total"]
        assert grid.status == 200 and f"{disagree} cases · page 1 of 1" in grid.text
        assert grid.text.count('<td class="case">') == disagree
    finally:
        server.close()


# --- the server's life ---------------------------------------------------------------------------------------


def keep_alive(server: Viewer) -> http.client.HTTPConnection:
    """A connection that has had its answer and stays open, as a browser keeps one."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
    connection.request("GET", "/api/runs")
    response = connection.getresponse()
    assert (response.status, response.getheader("connection")) == (200, None)  # HTTP/1.1: kept open
    response.read()
    return connection


@pytest.mark.parametrize(
    ("signum", "code", "ignored"),
    [(signal.SIGINT, 130, False), (signal.SIGTERM, 143, False), (signal.SIGINT, 130, True)],
    ids=["ctrl-c", "sigterm", "ctrl-c-inherited-ignored"],
)
def test_ctrl_c_and_sigterm_end_it_at_once_with_a_keep_alive_connection_open(
    runs: Runs, signum: int, code: int, ignored: bool
) -> None:
    server = Viewer(runs.results, sigint_ignored=ignored)
    try:
        connection = keep_alive(server)
        half = socket.create_connection((server.host, server.port))  # and a request not sent whole
        half.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert server.stop(signum)[::2] == (code, "")
        connection.close()
        half.close()
    finally:
        server.close()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_a_signal_right_after_the_serving_line_ends_it_as_cleanly(runs: Runs, signum: int, code: int) -> None:
    server = Viewer(runs.results)
    try:
        assert server.stop(signum)[::2] == (code, "")
    finally:
        server.close()


def test_another_loopback_address_is_served_under_its_own_name(runs: Runs) -> None:
    try:
        probe = socket.create_server(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 is not a local address here")
    probe.close()
    server = Viewer(runs.results, "--host", "127.0.0.2")
    try:
        assert server.line == f"serving http://127.0.0.2:{server.port}/\n"
        assert server.get("/api/runs").status == 200  # Host: 127.0.0.2:PORT
        assert server.get("/api/runs", {"Host": "evil.example"}).status == 400
        assert server.stop(signal.SIGTERM)[::2] == (143, "")
    finally:
        server.close()


def test_a_port_in_use_is_one_line_and_exit_2(runs: Runs) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = subprocess.run([PYTHON, "main.py", "view", str(runs.results), "--port", str(port)], cwd=REPO,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"main.py: error: --port: {port} is in use: choose another (0 picks a free one)\n",
    )  # fmt: skip
    assert json.dumps(done.stderr).count("\\n") == 1


def test_a_query_never_reads_a_run_reloaded_under_it(
    runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request reloads the run (its file rewritten in another order, as a finished resume rewrites it)
    between the query that found a page's rows and the reading of their records: those still are the page's."""
    from typed_eval.store.case_store import CaseStore

    results = tmp_path / "result"
    shutil.copytree(runs.results, results)
    key = runs.a
    path = results / key / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    store = CaseStore(results)
    assert store.cases([key]).total == 12
    read = CaseStore._records
    other: list[BaseException | int] = []

    def reload() -> None:
        try:
            other.append(store.cases([key]).total)
        except BaseException as exc:  # reported by the test
            other.append(exc)

    def records_after_a_reload(*args: Any) -> Any:
        if not other and not hasattr(records_after_a_reload, "thread"):
            path.write_text("".join(reversed(lines)))
            thread = threading.Thread(target=reload)
            records_after_a_reload.thread = thread  # type: ignore[attr-defined]
            thread.start()
            thread.join(1.0)  # the reload waits for this query to end: it cannot finish in the meantime
        return read(*args)

    monkeypatch.setattr(CaseStore, "_records", staticmethod(records_after_a_reload))
    try:
        page = store.cases([key])
        records_after_a_reload.thread.join(10)  # type: ignore[attr-defined]
        assert [row.case_id for row in page.rows] == IDS
        assert all(cell.records[0].case_id == row.case_id for row in page.rows for cell in row.cells.values())
        assert other == [12]
        assert [row.case_id for row in store.cases([key]).rows] == list(reversed(IDS))
    finally:
        store.close()


def test_the_grids_filter_form_keeps_its_page_size(viewer: Viewer, runs: Runs) -> None:
    page = viewer.get(f"/cases?runs={runs.a}&per_page=5")
    assert '<input type="hidden" name="per_page" value="5">' in page.text
