"""The case viewer in a real headless chromium (Debian's, driven by Playwright), served by `main.py view` over runs
whose every answer is known (see `tests/viewer_runs.py`): the leaderboard and its links, the grid, its filter
select, sorting, a case's attempts, hostile answers shown as text; no console error, no request to another origin.
Under CI a missing chromium fails; elsewhere it skips."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

import pytest

from tests.viewer_runs import (
    FEEDBACK,
    GAMMA,
    IDS,
    ODD_ID,
    XSS,
    XSS_PROMPT,
    Runs,
    Viewer,
    make_runs,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page

CHROMIUM = Path("/usr/bin/chromium")
DISAGREE_AB = ["c02", "c04", "c05", "c07", "c08", "c10"]
BETA_RIGHT = ["c00", "c01", "c03", "c06", "c08", "c10"]
BETA_WRONG = ["c02", "c04", "c05", "c07", ODD_ID]


def needs_chromium() -> None:
    missing = [
        why
        for why, gone in [
            (f"{CHROMIUM} (apt-get install chromium, as .ci/run)", not CHROMIUM.exists()),
            ("playwright (pip install -e '.[dev]')", importlib.util.find_spec("playwright") is None),
        ]
        if gone
    ]
    if missing and os.environ.get("CI"):
        pytest.fail(f"the viewer's browser tests need {' and '.join(missing)}: CI must run them", pytrace=False)
    if missing:
        pytest.skip(f"needs {' and '.join(missing)}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    needs_chromium()
    return make_runs(tmp_path_factory.mktemp("viewer") / "result")


@pytest.fixture(scope="module")
def viewer(runs: Runs) -> Iterator[Viewer]:
    server = Viewer(runs.results)
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser(runs: Runs) -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page, with what it said on its console, the dialogs it opened and every request it made."""

    page: Page
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def watched(browser: Browser, viewer: Viewer) -> Iterator[Watched]:
    """A fresh page; once the test is done, it must have logged no error, opened no dialog and asked nothing of
    another origin."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    seen = Watched(page)
    page.on("console", lambda message: seen.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: seen.errors.append(str(error)))
    page.on("request", lambda request: seen.requests.append(request.url))

    def dialog(opened: Dialog) -> None:
        seen.dialogs.append(opened.message)
        opened.dismiss()

    page.on("dialog", dialog)
    yield seen
    context.close()
    assert seen.errors == []
    assert seen.dialogs == []
    assert seen.requests, "the test made no request"
    assert [url for url in seen.requests if not url.startswith(viewer.url)] == []


def grid(viewer: Viewer, runs: list[str], **params: str) -> str:
    return viewer.url + "cases?" + urlencode({"runs": ",".join(runs)} | params)


def shown_ids(page: Page) -> list[str]:
    return page.locator("table.grid tbody td.case a").all_inner_texts()


def test_the_leaderboard_lists_the_runs_and_links_to_their_cases(watched: Watched, viewer: Viewer, runs: Runs) -> None:
    page = watched.page
    page.goto(viewer.url)
    board = page.locator("table.board").first
    assert board.locator("tbody tr td:nth-child(3)").all_inner_texts() == [
        f"function:{GAMMA}", "function:alpha", "function:beta",
    ]  # fmt: skip
    assert board.locator("tbody tr td.key").all_inner_texts() == [runs.g, runs.a, runs.b]
    assert page.locator("b").count() == 0  # gamma's name is text
    board.get_by_role("link", name="function:alpha", exact=True).click()
    page.wait_for_url(viewer.url + "cases?runs=" + quote(runs.a, safe=""))
    assert shown_ids(page) == IDS
    assert page.locator("table.grid thead .key").all_inner_texts() == [runs.a]

    # tick two runs and compare them
    page.go_back()
    page.get_by_label("select function:alpha").check()
    page.get_by_label("select function:beta").check()
    page.get_by_role("button", name="Compare the ticked runs' cases").click()
    page.wait_for_url("**/cases?run=*")
    assert page.locator("table.grid thead .key").all_inner_texts() == [runs.a, runs.b]
    assert shown_ids(page) == IDS

    # paired with the best (gamma): gamma alone right on four, alpha alone on c00; each count links to its cases
    page.go_back()
    paired = page.locator("table.board").nth(1).locator("tr", has_text="function:alpha")
    assert paired.locator("td").all_inner_texts()[1:4] == ["12", "4", "1"]
    paired.get_by_role("link", name="4", exact=True).click()
    page.wait_for_url("**filter=better%3A0")
    assert page.locator("table.grid thead .key").all_inner_texts() == [runs.g, runs.a]
    assert shown_ids(page) == ["c08", "c09", "c10", ODD_ID]
    page.go_back()
    paired.get_by_role("link", name="1", exact=True).click()
    page.wait_for_url("**filter=better%3A1")
    assert shown_ids(page) == ["c00"]


def test_the_grid_and_its_filter_select(watched: Watched, viewer: Viewer, runs: Runs) -> None:
    page = watched.page
    page.goto(grid(viewer, [runs.a, runs.b]))
    assert shown_ids(page) == IDS
    rows = page.locator("table.grid tbody tr")
    statuses = [row.locator("td.cell").evaluate_all("cells => cells.map(c => c.dataset.status)") for row in rows.all()]
    assert dict(zip(IDS, statuses, strict=True)) == {
        "c00": ["correct", "correct"], "c01": ["correct", "correct"], "c02": ["correct", "incorrect"],
        "c03": ["correct", "correct"], "c04": ["correct", "incorrect"], "c05": ["correct", "incorrect"],
        "c06": ["correct", "correct"], "c07": ["correct", "incorrect"], "c08": ["missing", "correct"],
        "c09": ["incorrect", "error"], "c10": ["incorrect", "correct"], ODD_ID: ["incorrect", "incorrect"],
    }  # fmt: skip
    assert "retries 1 · wrong_type" in rows.nth(3).locator("td.cell").nth(1).inner_text()
    assert page.locator("p.pager").first.inner_text() == "12 cases · page 1 of 1"

    with page.expect_navigation():  # the page's script submits the form on a change
        page.locator("select[name=filter]").select_option("disagree")
    assert "filter=disagree" in page.url
    assert shown_ids(page) == DISAGREE_AB
    assert page.locator("select[name=filter]").input_value() == "disagree"
    assert page.locator("p.pager").first.inner_text() == "6 cases · page 1 of 1"
    with page.expect_navigation():
        page.locator("select[name=group]").select_option("even")
    assert shown_ids(page) == ["c02", "c04", "c08", "c10"]
    page.locator("input[name=q]").fill("zebra")
    with page.expect_navigation():
        page.locator("select[name=group]").select_option("")
    assert shown_ids(page) == ["c07"]
    with page.expect_navigation():
        page.locator("select[name=filter]").select_option("invalid")
    assert shown_ids(page) == []
    assert page.locator("p.pager").first.inner_text() == "0 cases · page 1 of 1"


def test_sorting_by_a_runs_score(watched: Watched, viewer: Viewer, runs: Runs) -> None:
    page = watched.page
    page.goto(grid(viewer, [runs.a, runs.b], per_page="5"))
    beta = page.locator("table.grid thead th").nth(3)
    assert beta.locator(".key").inner_text() == runs.b
    beta.get_by_role("link", name="score", exact=True).click()
    page.wait_for_url("**sort=score%3A1&dir=asc**")
    assert shown_ids(page) == BETA_WRONG  # page 1 of 3, five a page
    page.get_by_role("link", name="next →").first.click()
    page.wait_for_url("**page=2")
    assert shown_ids(page) == BETA_RIGHT[:5]
    page.locator("table.grid thead th").nth(3).get_by_role("link", name="score", exact=True).click()
    page.wait_for_url("**sort=score%3A1&dir=desc**")
    assert shown_ids(page) == BETA_RIGHT[:5]  # a new sort starts at page 1
    page.get_by_role("link", name="next →").first.click()
    page.get_by_role("link", name="next →").first.click()
    page.wait_for_url("**page=3")
    assert shown_ids(page) == [*BETA_WRONG[-1:], "c09"]  # no score: last either way


def test_a_case_page_shows_the_attempts_in_order(watched: Watched, viewer: Viewer, runs: Runs) -> None:
    page = watched.page
    page.goto(grid(viewer, [runs.a, runs.b]))
    page.get_by_role("link", name="c03", exact=True).click()
    page.wait_for_url("**/case/c03?runs=*")
    assert page.locator("h1").inner_text() == "Case c03 odd"
    assert page.locator("h2 + pre").first.inner_text() == "case 3"
    beta = page.locator("section.run", has_text=runs.b)
    attempts = beta.locator("li.attempt")
    assert attempts.count() == 2
    assert attempts.nth(0).locator(".label").all_inner_texts() == [
        "Attempt 1: invalid: wrong_type · $0.000120", "Feedback given to the model",
    ]  # fmt: skip
    assert attempts.nth(0).locator("pre").all_inner_texts() == ['{"value": "not a number"}', FEEDBACK]
    assert attempts.nth(1).locator(".label").all_inner_texts() == ["Attempt 2: valid (the fix) · $0.000220"]
    assert attempts.nth(1).locator("pre").all_inner_texts() == ['{"value": 3}']
    assert beta.locator(".record .status").inner_text() == "correct"
    alpha = page.locator("section.run", has_text=runs.a)
    assert alpha.locator("li.attempt .label").all_inner_texts() == ["Attempt 1: valid · $0.000120"]

    # alpha never fixed c08: both attempts invalid, the last feedback not sent
    page.goto(viewer.url + f"case/c08?runs={runs.a}")
    labels = page.locator("li.attempt .label").all_inner_texts()
    assert labels == [
        "Attempt 1: invalid: wrong_type · $0.000120", "Feedback given to the model",
        "Attempt 2: invalid: wrong_type · $0.000220", "Feedback (the last try: not sent)",
    ]  # fmt: skip

    # a case id with a slash, markup and URL characters: its link opens it
    page.goto(grid(viewer, [runs.a, runs.b], q="case 11"))
    page.get_by_role("link", name=ODD_ID, exact=True).click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == f"Case {ODD_ID} odd"
    assert page.locator("h2 + pre").first.inner_text() == "case 11"


def test_hostile_answers_and_names_are_shown_as_text(watched: Watched, viewer: Viewer, runs: Runs) -> None:
    page = watched.page
    page.goto(grid(viewer, [runs.a, runs.b, runs.g], q="onerror"))
    assert shown_ids(page) == ["c05"]
    shown = page.locator("table.grid td.cell").first.inner_text()
    assert '<script>window.__xss=1</script><img src=x onerror=\\"window.__xss=2\\">' in shown  # the output's JSON
    assert page.locator("table.grid thead .model").all_inner_texts()[2] == f"function:{GAMMA}"
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.evaluate("document.scripts.length") == 1  # the viewer's own
    assert page.locator("img, b, i").count() == 0

    page.get_by_role("link", name="c05", exact=True).click()
    page.wait_for_url("**/case/c05?runs=*")
    assert page.locator("h2 + pre").first.inner_text() == f"case 5 {XSS_PROMPT}"
    alpha = page.locator("section.run", has_text=runs.a)
    assert alpha.locator(".answer-block").inner_text() == '{"value": 5, "note": "' + XSS.replace('"', '\\"') + '"}'
    assert XSS.replace('"', '\\"') in alpha.locator("li.attempt pre").inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.evaluate("document.scripts.length") == 1
    assert page.locator("img, b, i").count() == 0

    page.goto(grid(viewer, [runs.a], q="case 11"))
    assert shown_ids(page) == [ODD_ID]
    assert page.locator("img, b, i").count() == 0


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_server_stops_at_once_while_the_browser_keeps_its_connection(
    browser: Browser, runs: Runs, signum: int, code: int
) -> None:
    server = Viewer(runs.results)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(grid(server, [runs.a, runs.b]))
        assert shown_ids(page) == IDS  # the page, its style sheet and its script: over one kept connection
        exit_code, seconds, stderr = server.stop(signum)
        assert (exit_code, stderr) == (code, "")
        assert seconds < 5
    finally:
        context.close()
        server.close()
