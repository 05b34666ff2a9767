"""The HTML report: invalid examples picked exactly, hostile text escaped, and the page checked in a real
headless chromium (offline, sortable, plots present)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from farel_eval.errors import InputError
from farel_eval.html_report import InvalidExample, invalid_examples, render_html
from farel_eval.schemas import Attempt, Cost, LeaderboardRow, SampleRecord, TokenUsage

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
    with pytest.raises(InputError, match=r"^the HTML report needs matplotlib: pip install 'farel-eval\[report\]'$"):
        render_html(ROWS, {})


def test_the_page_in_headless_chromium(tmp_path: Path) -> None:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium, as .ci/run)"
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(ROWS, EXAMPLES, title="FaRel leaderboard"), encoding="utf-8")
    url = page_file.as_uri()
    requests: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(url, wait_until="load")

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
        finally:
            browser.close()
    assert errors == []
    assert requests == [url]
