"""The HTML report: invalid examples picked exactly, hostile text escaped, and the page checked in a real
headless chromium (offline, sortable, plots present; the case grids filtered by their own script)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel
from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import evaluator
import format_result
from typed_eval.contracts import Attempt, Cost, LeaderboardRow, SampleRecord, TokenUsage
from typed_eval.core.errors import InputError, ResultFileError
from typed_eval.core.suite import AnswerLine, FileParams, Suite
from typed_eval.reports.case_grid import GRID_FILTERS, CaseGrid, case_grids
from typed_eval.reports.html_report import render_html
from typed_eval.reports.invalid_examples import InvalidExample, invalid_examples
from typed_eval.reports.leaderboard import build_board
from typed_eval.store.storage import load_runs

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = "evil</svg><script>alert(1)</script>"


def record(case_id: str, attempts: list[Attempt], repeat: int = 0) -> SampleRecord:
    return SampleRecord(
        case_id=case_id,
        repeat=repeat,
        mode="tool",
        status="correct" if attempts[-1].valid else "missing",
        attempts=attempts,
        corrective_retries=len(attempts) - 1,
        usage=TokenUsage(requests=len(attempts)),
        cost=Cost(usd=None, source="unknown"),
        latency_s=None,
    )


def bad(kind: str, raw: str, feedback: str | None = "try again") -> Attempt:
    return Attempt(valid=False, invalid_kind=kind, raw=raw, feedback=feedback)


GOOD = Attempt(valid=True, raw='{"answer": 1}')


@dataclass
class Watched:
    """A headless chromium page and what it did: every request, console or page error, and dialog (closed)."""

    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@contextlib.contextmanager
def watched_page(url: str) -> Iterator[Watched]:
    """`url` open in Debian's chromium, watched from before it loads."""
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium, as .ci/run)"
    from playwright.sync_api import Dialog, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            watched = Watched(browser.new_page(viewport={"width": 1280, "height": 900}))
            watched.page.on("request", lambda request: watched.requests.append(request.url))
            watched.page.on(
                "console", lambda message: watched.errors.append(message.text) if message.type == "error" else None
            )
            watched.page.on("pageerror", lambda error: watched.errors.append(str(error)))

            def dialog(shown: Dialog) -> None:  # an alert() that ran: counted, then closed
                watched.dialogs.append(shown.message)
                shown.dismiss()

            watched.page.on("dialog", dialog)
            watched.page.goto(url, wait_until="load")
            yield watched
        finally:
            browser.close()


def row(model: str, score: float | None, **fields: Any) -> LeaderboardRow:
    """A leaderboard row built by hand: 40 FaRel cases, $0.004 total, everything valid unless told."""
    base: dict[str, Any] = {
        "rank": None,
        "suite": "farel",
        "task": "farel",
        "model": model,
        "mode": "tool",
        "run_id": f"run-{len(model)}",
        "status": "finished",
        "imported": False,
        "score": score,
        "classes": {} if score is None else {"child": score, "grandparent": score / 2},
        "metrics": {},
        "samples": 40,
        "correct": 0,
        "partial": 0,
        "incorrect": 0,
        "missing": 0,
        "errors": 0,
        "ambiguous": 0,
        "valid_first_try": 100.0,
        "valid_after_retries": 100.0,
        "corrective_retries": 0,
        "invalid_outputs": 0,
        "requests": 40,
        "input_tokens": 4000,
        "output_tokens": 400,
        "cost_usd": 0.004,
        "cost_complete": True,
        "cost_sources": ["provider"],
        "wall_s": 10.0,
        "dataset_md5": "0" * 32,
        "path": f"result/{model}/run",
        "cases": 40,
        "cost_per_case_usd": 0.0001,
        "pareto": False,
    }
    return LeaderboardRow(**(base | fields))


ROWS = [
    row("alpha", 81.5, rank=1, rank_group=1, score_ci95=[74.0, 88.0], pareto=True, cost_per_case_usd=0.00012),
    row("gamma", 72.25, rank=2, status="partial", complete=False, samples=20, pareto=None, cost_per_case_usd=0.0004),
    row(
        "beta",
        64.0,
        rank=3,
        valid_first_try=70.0,
        valid_after_retries=95.0,
        invalid_outputs=14,
        invalid_by_kind={"out_of_range": 12, "no_tool_call": 2},
        pareto=True,
        cost_per_case_usd=0.00003,
    ),
    row("delta", 55.0, rank=4, cost_usd=None, cost_per_case_usd=None, pareto=None, cost_sources=["unknown"]),
    row(
        "omega",
        None,
        status="dnf",
        reason="Connection refused",
        samples=0,
        valid_first_try=None,
        valid_after_retries=None,
        cost_usd=None,
        cost_per_case_usd=None,
    ),
]
EXAMPLES = {
    "result/beta/run": [InvalidExample("q7", 0, "out_of_range", '{"answer": 0}', "answer must be 1..3")],
}


def test_invalid_examples_are_the_first_invalid_attempts_in_record_order() -> None:
    records = [
        record("q1", [GOOD]),
        record("q2", [bad("out_of_range", '{"answer": 0}', "pick 1..3"), GOOD]),
        record("q3", [bad("no_tool_call", "I think 2"), bad("malformed_json", "{", None), GOOD], repeat=1),
        record("q4", [bad("empty", "")]),
    ]
    q2 = InvalidExample("q2", 0, "out_of_range", '{"answer": 0}', "pick 1..3")
    q3 = InvalidExample("q3", 1, "no_tool_call", "I think 2", "try again")
    assert invalid_examples(records) == [q2, q3, InvalidExample("q3", 1, "malformed_json", "{", None)]
    assert invalid_examples(records, limit=2) == [q2, q3]
    assert invalid_examples(records, limit=0) == []
    assert invalid_examples(records, limit=10)[-1] == InvalidExample("q4", 0, "empty", "", "try again")


def test_a_very_long_raw_output_is_cut_with_a_visible_marker() -> None:
    [example] = invalid_examples([record("q1", [bad("other", "x" * 2500)])])
    assert example.raw == "x" * 2000 + "\n[… truncated: 500 more characters]"


def test_hostile_model_names_and_outputs_are_escaped() -> None:
    rows = [row(HOSTILE, 70.0, rank=1, pareto=True), row("plain", 60.0, rank=2)]
    examples = {rows[0].path: [InvalidExample(HOSTILE, 0, "other", HOSTILE, HOSTILE)]}
    page = render_html(rows, examples, title=HOSTILE)
    assert "<script>alert" not in page
    assert page.count("<script") == 1  # the page's own sorting script
    assert page.count("</svg>") == page.count("<svg ") == 1
    assert page.count("evil&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;") >= 8


def test_unknown_cost_is_listed_apart_not_drawn_as_free_and_a_partial_run_is_flagged() -> None:
    page = render_html(ROWS, EXAMPLES)
    svg = page[page.index("<svg ") : page.index("</svg>")]
    assert ">alpha (tool)<" in svg
    assert ">gamma (tool) *<" in svg  # partial runs are starred (and drawn hollow) on the plot
    assert "delta" not in svg
    assert '<p class="note unknown-cost">Not plotted, cost unknown: delta (tool).</p>' in page
    assert '<p class="note no-score">Not plotted, no score: omega (tool).</p>' in page
    [partial] = re.findall(r'<tr class="partial">.*?</tr>', page)
    assert '<span class="model">gamma</span> <span class="mode">tool</span><span class="badge warn"' in partial
    assert "partial or limited run: 20 samples of 40 cases" in partial
    assert '<td class="num" data-v=""><span class="muted">unknown</span></td>' in page


def test_the_page_is_deterministic_and_fetches_nothing() -> None:
    page = render_html(ROWS, EXAMPLES)
    assert page == render_html(ROWS, EXAMPLES)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "@import" not in page
    assert set(re.findall(r"url\((.)", page)) == {"#"}  # only the SVG's own clip paths


def test_without_matplotlib_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what `import matplotlib` meets when it is absent
    with pytest.raises(InputError, match=r"^the HTML report needs matplotlib: pip install 'typed-eval\[report\]'$"):
        render_html(ROWS, {})


def test_the_page_in_headless_chromium(tmp_path: Path) -> None:
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(ROWS, EXAMPLES, title="FaRel leaderboard"), encoding="utf-8")
    url = page_file.as_uri()
    with watched_page(url) as watched:
        page = watched.page

        def models() -> list[str]:
            return page.locator("table.leaderboard tbody tr .model").all_inner_texts()

        assert models() == ["alpha", "gamma", "beta", "delta", "omega"]
        assert page.locator("table.leaderboard tbody tr").count() == len(ROWS)
        assert page.locator("figure svg").count() == 1
        assert page.locator(".plot svg text", has_text="alpha (tool)").count() == 1
        assert page.locator("table.heatmap tbody tr").count() == len(ROWS)
        assert page.locator(".bars li").count() == len(ROWS)
        score = page.get_by_role("columnheader", name="Score", exact=True)
        score.locator("button").click()
        assert score.get_attribute("aria-sort") == "ascending"
        assert models() == ["delta", "beta", "gamma", "alpha", "omega"]  # no score: last either way
        score.locator("button").click()
        assert score.get_attribute("aria-sort") == "descending"
        assert models() == ["alpha", "gamma", "beta", "delta", "omega"]
        page.locator("details.run", has_text="beta").locator("summary").click()
        assert page.locator("details.run pre", has_text='{"answer": 0}').is_visible()
        page.screenshot(path=tmp_path / "report.png", full_page=True)
    assert watched.errors == []
    assert watched.requests == [url]


# The case grids: two real runs (pydantic-ai's agent loop, a FunctionModel answering) of six cases ----------------


class Reply(BaseModel):
    text: str


def grade(case: evaluator.Case, output: Reply) -> float:
    return 1.0 if output.text == case.expected else 0.0


ECHO = evaluator.Task(name="echo", output_type=Reply, score=grade)
ALPHA = {
    "c1": ["1"], "c2": ["2"], "c3": ["<img src=x onerror=alert(1)>"], "c4": ["4"],
    "c5": ["TEXT:maybe five", "5"],  # a reply with no tool call, then the right one: one corrective retry
    "c6": ["6"],
}  # fmt: skip
BETA = {
    "c1": ["1"], "c2": ["<script>alert(2)</script>"], "c3": ["three"],
    "c4": ["TEXT:</td><b>4</b>"],  # never a tool call: missing after its retry
    "c5": ["five"],
    "c6": [],  # the call fails: an error, scored in neither run's pairing
}  # fmt: skip
DISAGREE = ["c2", "c4", "c5"]
"""Scored in both runs with different scores; c6 (an error in beta) is not scored in every run."""


def echo_model(name: str, replies: dict[str, list[str]]) -> FunctionModel:
    """Answers case `cN` with its replies in turn (a corrective retry gets the next); `TEXT:` is a reply that calls
    no tool, and no reply at all is a failed call."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        case = "c" + str(messages[0].parts[-1].content).split()[-1]  # type: ignore[union-attr]
        said = replies[case]
        if not said:
            raise RuntimeError("boom")
        reply = said[min(len(messages) // 2, len(said) - 1)]
        if reply.startswith("TEXT:"):
            return ModelResponse(parts=[TextPart(reply.removeprefix("TEXT:"))])
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps({"text": reply}))])

    return FunctionModel(respond, model_name=name)


def store_runs(root: Path, task: evaluator.Task[Any], cases: int, models: dict[str, dict[str, list[str]]]) -> None:
    posed = [evaluator.Case(id=f"c{i}", prompt=f"say {i}", expected=str(i), group="odd" if i % 2 else "even")
             for i in range(1, cases + 1)]  # fmt: skip
    for name, replies in models.items():
        model = echo_model(name, replies)
        asyncio.run(evaluator.run(task, posed, model, results_dir=root, mode="tool", retries=1, concurrency=1,
                                  price_in=1.0, price_out=2.0))  # fmt: skip


@pytest.fixture(scope="module")
def echo_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha and beta on the six `echo` cases, and a one-run suite `echo-two` of two cases."""
    root = tmp_path_factory.mktemp("cases") / "result"
    store_runs(root, ECHO, 6, {"alpha": ALPHA, "beta": BETA})
    store_runs(
        root, evaluator.Task(name="echo-two", output_type=Reply, score=grade), 2, {"gamma": {"c1": ["1"], "c2": ["2"]}}
    )
    return root


def board_rows(root: Path) -> list[LeaderboardRow]:
    return build_board(load_runs(root)).rows


def grid_rows(page: Any, section: str) -> list[list[str]]:
    """The visible rows of a section's grid: case id, group, then each cell's status line."""
    rows = page.locator(f"{section} table.cases tbody tr:visible")
    return [[*row.locator("th, td.group").all_inner_texts(), *row.locator("td.cell .status").all_inner_texts()]
            for row in rows.all()]  # fmt: skip


def test_each_row_names_the_filters_that_keep_it_as_case_store_does(echo_results: Path) -> None:
    # case_store (duckdb) is imported in the tests, not at collection: the CLI's gc.freeze(), which test_cli runs in
    # this process, would freeze duckdb's objects too, and nanobind would call them leaked at the exit
    from typed_eval.store.case_store import FILTERS, CaseStore

    rows = board_rows(echo_results)
    grids = case_grids(echo_results, rows, suites={})
    assert sorted(grids) == ["echo", "echo-two"]
    assert ("all", *GRID_FILTERS) == FILTERS
    grid = grids["echo"]
    assert [Path(path).parent.name for path in grid.runs] == ["function_alpha", "function_beta"]  # rank order
    assert [row.case_id for row in grid.rows] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert {name: sorted(ids) for name, ids in grid.filters.items()} == {
        "disagree": DISAGREE,
        "wrong": ["c2", "c3", "c4", "c5"],
        "invalid": ["c4", "c5"],
        "error": ["c6"],
        "unsupported": [],
    }
    store = CaseStore(echo_results)
    keys = [entry.key for entry in store.runs() if entry.summary.suite == "echo"]
    assert sorted(store.case_ids(keys, filter="disagree")) == DISAGREE
    assert store.case_ids(keys, filter="all", query="FIVE") == ["c5"]  # alpha's first reply, beta's answer
    assert store.case_ids(keys, group="even") == ["c2", "c4", "c6"]
    with pytest.raises(InputError, match=r"^filter: disagree compares runs: name two runs or more$"):
        store.case_ids(keys[:1], filter="disagree")
    store.close()
    assert grids["echo-two"].filters.keys() == {"wrong", "invalid", "error", "unsupported"}  # one run: no disagree
    page = render_html(rows, {}, cases=grids)
    marks = re.findall(r'<tr data-f="([^"]*)"><th scope="row">(\w+)</th>', page)
    assert marks == [("", "c1"), ("disagree wrong", "c2"), ("wrong", "c3"), ("disagree wrong invalid", "c4"),
                     ("disagree wrong invalid", "c5"), ("error", "c6"), ("", "c1"), ("", "c2")]  # fmt: skip


def test_a_suite_over_the_limits_gets_one_line_saying_so(echo_results: Path) -> None:
    rows = board_rows(echo_results)
    view = f"run `python main.py view {echo_results}` to browse them."
    grids = case_grids(echo_results, rows, max_cases=5, suites={})
    assert grids["echo"].notice == f"The cases of this suite are not inlined: 6 cases is more than 5; {view}"
    assert grids["echo"].rows == () and grids["echo-two"].notice is None
    grids = case_grids(echo_results, rows, max_cells=13, suites={})  # echo's 12 cells fit, echo-two's 2 more do not
    assert grids["echo"].notice is None and len(grids["echo"].rows) == 6
    assert grids["echo-two"].notice == (
        f"The cases of this suite are not inlined: 2 cases x 1 run would take the page to 14 cells, more than 13; "
        f"{view}"
    )
    page = render_html(rows, {}, cases=case_grids(echo_results, rows, max_cases=5, suites={}))
    [notice] = re.findall(r'<p class="note case-notice">(.*?)</p>', page)
    assert notice == f"The cases of this suite are not inlined: 6 cases is more than 5; {view}"
    assert '<table class="cases">' in page  # echo-two's grid is there still


def test_a_run_without_records_has_no_column_and_an_unreadable_suite_says_why(
    echo_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typed_eval.store.case_store import CaseStore

    root = tmp_path / "result"
    shutil.copytree(echo_results, root)
    [beta] = root.glob("function_beta/*")
    (beta / "samples.jsonl").unlink()
    rows = board_rows(root)
    grids = case_grids(root, rows, suites={})
    assert [Path(path).parent.name for path in grids["echo"].runs] == ["function_alpha"]
    assert grids["echo"].no_records == (str(beta),)
    assert grids["echo"].filters.keys() == {"wrong", "invalid", "error", "unsupported"}
    page = render_html(rows, {}, cases=grids)
    assert '<p class="note">No column for function:beta (tool): it stored no record.</p>' in page

    def unreadable(*_: object, **__: object) -> None:
        raise ResultFileError("cannot read samples.jsonl: <b>corrupt</b>")

    monkeypatch.setattr(CaseStore, "cases", unreadable)
    grids = case_grids(root, rows, suites={})
    assert grids["echo"].notice == "The cases of this suite are not inlined: cannot read samples.jsonl: <b>corrupt</b>."
    page = render_html(rows, {}, cases=grids)
    assert "inlined: cannot read samples.jsonl: &lt;b&gt;corrupt&lt;/b&gt;.</p>" in page


def test_a_suites_answer_view_marks_lines_and_an_unknown_mark_is_no_class(echo_results: Path) -> None:
    def show(record: SampleRecord) -> list[AnswerLine]:
        right = record.status == "correct"
        return [AnswerLine(str(record.output), "right" if right else "wrong"), AnswerLine("<i>", '"><b>')]  # type: ignore[arg-type]

    echo = Suite(name="echo", params=FileParams, build=lambda _: (ECHO, []), show_answer=show)
    rows = [r for r in board_rows(echo_results) if r.suite == "echo"]
    page = render_html(rows, {}, cases=case_grids(echo_results, rows, suites={"echo": echo}))
    right = '<div class="answer mark-right"><span class="tag">right</span> {&#39;text&#39;: &#39;1&#39;}</div>'
    assert page.count(right) == 2  # c1, right in both runs
    assert (
        page.count('<div class="answer mark-wrong"><span class="tag">wrong</span>') == 4
    )  # alpha's c3, beta's c2, c3 and c5
    assert page.count('<div class="answer">&lt;i&gt;</div>') == 10  # each answered cell's second line, as text
    assert "<b>" not in page and "<i>" not in page


def test_a_cell_of_differing_repeats_is_mixed_and_its_answer_text_is_cut() -> None:
    from typed_eval.store.case_store import CaseCell, CaseRow

    first = record("q1", [GOOD]).model_copy(update={"output": "y" * 250, "score": 1.0})
    second = record("q1", [bad("no_tool_call", "<b>no</b>")], repeat=1)
    path = ROWS[0].path
    grid = CaseGrid((path,), (CaseRow("q1", "child", {path: CaseCell([first, second])}),), {"wrong": frozenset({"q1"})})
    page = render_html(ROWS[:1], {}, cases={"farel": grid})
    [cell] = re.findall(r'<td class="cell st-mixed">.*?</td>', page)
    assert cell == (
        '<td class="cell st-mixed"><div class="status">mixed 50 · 2 repeats</div><div class="answer">'
        + "y" * 200
        + '… [50 more characters]</div><div class="more">… 1 more line</div><div class="facts">invalid: no_tool_call'
        "</div></td>"
    )
    assert '<tr data-f="wrong"><th scope="row">q1</th><td class="group">child</td>' in page


def test_the_case_grid_in_headless_chromium(echo_results: Path, tmp_path: Path) -> None:
    """The report `format_result.py --format html` writes: the grid's rows and cells, its filters and search run by
    the page's own script, and hostile answers shown as text (no dialog, no console error, no request)."""
    page_file = tmp_path / "report.html"
    assert format_result.main([str(echo_results), "--format", "html", "-o", str(page_file)]) == 0
    url = page_file.as_uri()
    with watched_page(url) as watched:
        page = watched.page
        echo = "section#suite-0"
        heads = page.locator(f"{echo} table.cases thead th").all_inner_texts()
        assert [h.split("\n")[0] for h in heads] == ["Case", "Group", "function:alpha tool", "function:beta tool"]
        everything = [
            ["c1", "odd", "correct", "correct"],
            ["c2", "even", "correct", "incorrect"],
            ["c3", "odd", "incorrect", "incorrect"],
            ["c4", "even", "correct", "missing"],
            ["c5", "odd", "correct", "incorrect"],
            ["c6", "even", "correct", "error"],
        ]
        assert grid_rows(page, echo) == everything
        cells = page.locator(f"{echo} table.cases tbody td.cell")
        assert cells.nth(4).inner_text() == 'incorrect\n{"text": "<img src=x onerror=alert(1)>"}\n$0.0000660'
        assert cells.nth(3).inner_text() == 'incorrect\n{"text": "<script>alert(2)</script>"}\n$0.0000620'
        assert cells.nth(7).inner_text() == (
            "missing\nINVALID </td><b>4</b>\ninvalid: no_tool_call · 1 corrective retry · $0.000119"
        )
        assert (
            cells.nth(8).inner_text()
            == 'correct\n{"text": "5"}\ninvalid: no_tool_call · 1 corrective retry · $0.000131'
        )
        assert cells.nth(11).inner_text() == "error\nRuntimeError: boom\n$0"
        assert page.locator("table.cases img, table.cases b, table.cases script").count() == 0
        assert page.locator("script").count() == 1
        colours = {status: cells.nth(n).evaluate("(td) => getComputedStyle(td).backgroundColor")
                   for status, n in (("correct", 0), ("incorrect", 3), ("missing", 7), ("error", 11))}  # fmt: skip
        assert colours == {"correct": "rgb(235, 251, 238)", "incorrect": "rgb(255, 245, 245)",
                           "missing": "rgb(255, 245, 245)", "error": "rgb(241, 243, 245)"}  # fmt: skip
        counts = page.locator(f"{echo} .case-controls label").all_inner_texts()
        assert counts == ["all 6", "disagree 3", "wrong 4", "invalid 2", "error 1", "unsupported 0"]

        def show(name: str) -> list[str]:
            page.locator(f"{echo} input[value={name}]").check()
            return [row[0] for row in grid_rows(page, echo)]

        assert show("disagree") == DISAGREE
        assert page.locator(f"{echo} .case-count").inner_text() == "3 of 6 cases"
        assert show("wrong") == ["c2", "c3", "c4", "c5"]
        assert show("invalid") == ["c4", "c5"]
        assert show("error") == ["c6"]
        assert show("all") == ["c1", "c2", "c3", "c4", "c5", "c6"]
        page.locator(f"{echo} input.case-search").fill("ONERROR")
        assert [row[0] for row in grid_rows(page, echo)] == ["c3"]
        assert show("disagree") == []  # the search and the filter together
        assert page.locator(f"{echo} .case-count").inner_text() == "0 of 6 cases"
        page.locator(f"{echo} input.case-search").fill("")
        assert show("all") == ["c1", "c2", "c3", "c4", "c5", "c6"]
        assert grid_rows(page, echo) == everything
        two = "section#suite-1"
        assert grid_rows(page, two) == [["c1", "odd", "correct"], ["c2", "even", "correct"]]
        assert page.locator(f"{two} input[value=disagree]").is_disabled()  # one run: nothing to disagree with
        page.locator(f"{echo} table.cases").screenshot(path=tmp_path / "cases.png")
    assert (watched.errors, watched.dialogs) == ([], [])
    assert watched.requests == [url]


def test_the_report_of_one_runs_summary_file_has_its_grid(echo_results: Path, tmp_path: Path) -> None:
    """`format_result.py SUMMARY.json --format html`: the run's cases, as for its folder."""
    (summary, *_) = sorted(echo_results.rglob("summary.json"))
    page_file = tmp_path / "one.html"
    assert format_result.main([str(summary), "--format", "html", "-o", str(page_file)]) == 0
    assert '<h3>Cases <span class="muted">6 cases x 1 run</span></h3>' in page_file.read_text()


def test_a_suite_whose_summaries_say_it_is_too_big_reads_no_record(
    echo_results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six cases against a bound of five: known from the summaries, so no run is loaded into DuckDB."""

    from typed_eval.store.case_store import CaseStore  # duckdb imported only by the tests that use it (see above)

    def unread(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a run was read")

    monkeypatch.setattr(CaseStore, "_table", unread)
    rows = [r for r in board_rows(echo_results) if r.suite == "echo"]
    grid = case_grids(echo_results, rows, max_cases=5)["echo"]
    assert (grid.rows, grid.runs) == ((), tuple(r.path for r in rows))
    assert grid.notice is not None and grid.notice.startswith("The cases of this suite are not inlined: 6 cases is")


def test_a_damaged_records_line_is_left_out_of_the_grid_and_said(echo_results: Path, tmp_path: Path) -> None:
    root = tmp_path / "result"
    shutil.copytree(echo_results, root)
    [beta] = root.glob("function_beta/*")
    lines = (beta / "samples.jsonl").read_text().splitlines(keepends=True)
    lines[1] = lines[1][:30] + "\n"  # a line cut in the middle of the file, not its last
    (beta / "samples.jsonl").write_text("".join(lines))
    said: list[str] = []
    rows = build_board(load_runs(root), on_error=lambda exc: said.append(str(exc))).rows
    grid = case_grids(root, rows, suites={})["echo"]
    (line,) = grid.damaged
    assert line.startswith(f"corrupt record at {beta / 'samples.jsonl'}:2: ") and said == [line]  # as the board says
    assert grid.notice is None and len(grid.rows) == 6  # the case is still there: alpha's record of it
    page = render_html(rows, {}, cases={"echo": grid})
    assert f"<p>Left out of the grid, not read as records:</p><ul><li>{line}</li></ul>" in page
