"""Each figure once, under a name that says what it is: two schemas-suite runs on the same ten sets (the test model in
tool mode; a loopback server in native mode that refuses a schema of each Github set, so each set's compliance and
empirical coverage differ) shown by `format_result.py` at 100 columns: the headline holds no per-set figure, the suite's
own figures are a compact table headed by their names with a legend, and each set's compliance and empirical coverage
are two named lines of one table by group; markdown, JSON, CSV and the viewer name them alike."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from tests.cli_run import run_cli
from tests.fake_openai import FakeOpenAI, completion, text
from tests.test_schemas_suite import REFUSAL
from typed_eval.contracts import LeaderboardRow
from typed_eval.reports.tables import render_rich, stacked
from typed_eval.reports.viewer.app import create_app
from typed_eval.suites.schemas.sampling import SETS

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
AGE = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}, "required": ["age"]}
PATTERN = {"type": "object", "patternProperties": {"^x": {"type": "string"}}}
LEGEND = (
    "Declared coverage: schemas the provider did not refuse, over all posed. Empirical coverage: valid instances over "
    "all schemas posed (a refused schema counts as not valid). Compliance (the score): valid instances over the "
    "schemas not refused."
)


def _schemas(folder: Path) -> Path:
    """Each of the benchmark's ten sets with a schema the server answers validly (`ok`) and one it answers invalidly
    (`bad`); the Github sets also with one it refuses (`refused`). Each names itself in its title."""
    for group in SETS:
        cases = {"ok": NAME, "bad": AGE} | ({"refused": PATTERN} if group.startswith("Github") else {})
        for case, schema in cases.items():
            path = folder / group / f"{case}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"title": f"{group}/{case}", **schema}), encoding="utf-8")
    return folder


def _reply(request: dict[str, Any]) -> Any:
    case = json.loads(request["messages"][-1]["content"])["title"].split("/")[1]
    if case == "refused":
        return 400, REFUSAL
    return completion(text(json.dumps({"name": "Ann"} if case == "ok" else {"age": -1})))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("figures")
    data, results = _schemas(root / "data"), root / "runs"
    with FakeOpenAI(_reply) as server:
        native = run_cli(
            "main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--mode", "native", "--model", "fake-model",
            "--base-url", server.url, "--api-key", "sk-test", "--retries", "0", "--results-dir", str(results),
        )  # fmt: skip
    assert native.returncode == 0, native.stderr
    tool = run_cli("main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--model", "test",
                   "--results-dir", str(results))  # fmt: skip
    assert tool.returncode == 0, tool.stderr
    return results


def _board(runs: Path, *args: str) -> str:
    done = run_cli("format_result.py", str(runs), *args, env={**os.environ, "COLUMNS": "100"})
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def _table(lines: list[str], title: str) -> list[str]:
    """The lines of the table under `title`, up to the blank line that ends it."""
    start = lines.index(title)
    return lines[start : lines.index("", start)]


def test_the_terminal_shows_each_figure_once_under_its_name_in_100_columns(runs: Path) -> None:
    out = _board(runs, "--format", "rich")
    lines = [line.rstrip() for line in out.splitlines()]
    assert max(map(len, lines)) <= 100
    assert [line for line in lines if line.startswith("Compliance")] == [
        "Compliance",
        "Compliance: the suite's own figures",
        "Compliance by group",
        "Compliance by group (continued)",
        "Compliance: format compliance and cost",
        "Compliance: format compliance and cost (continued)",
    ]
    headline = _table(lines, "Compliance")
    assert headline[2].split() == [
        "Nr", "Grp", "Model", "/", "run", "Cases", "Compliance", "95%", "CI", "1st", "$/correct", "s",
    ]  # fmt: skip
    assert _table(lines, "Compliance: the suite's own figures") == [
        "Compliance: the suite's own figures",
        "                       Declared Empirical",
        "Nr Model               coverage  coverage",
        "─" * 41,
        " 1 test (tool)           100.00    100.00",
        " 2 fake-model (native)    80.00     40.00",
        "Declared coverage: schemas the provider did not refuse, over all posed. Empirical coverage: valid",
        "instances over all schemas posed (a refused schema counts as not valid). Compliance (the score):",
        "valid instances over the schemas not refused.",
    ]
    assert _table(lines, "Compliance by group") == [
        "Compliance by group",
        "                                          Github_ Github_ Github_ Github_ Github_",
        "Nr Model               Figure                easy    hard  medium trivial   ultra Glaiveai2K",
        "─" * 92,
        " 1 test (tool)         Compliance          100.00  100.00  100.00  100.00  100.00     100.00",
        "                       Empirical coverage  100.00  100.00  100.00  100.00  100.00     100.00",
        " 2 fake-model (native) Compliance           50.00   50.00   50.00   50.00   50.00      50.00",
        "                       Empirical coverage   33.33   33.33   33.33   33.33   33.33      50.00",
        "Compliance by group (continued)",
        "Nr Model               Figure             JsonSchemaStore Kubernetes Snowplow WashingtonPost",
        "─" * 92,
        " 1 test (tool)         Compliance                  100.00     100.00   100.00         100.00",
        "                       Empirical coverage          100.00     100.00   100.00         100.00",
        " 2 fake-model (native) Compliance                   50.00      50.00    50.00          50.00",
        "                       Empirical coverage           50.00      50.00    50.00          50.00",
    ]
    assert "schemas-" not in out  # every figure under its name, none under its key
    assert [line for line in lines if "Github_" in line or "JsonSchemaStore" in line] == [
        "                                          Github_ Github_ Github_ Github_ Github_",
        "Nr Model               Figure             JsonSchemaStore Kubernetes Snowplow WashingtonPost",
    ]  # each set's column once: both of its figures are lines of it
    assert sum(line.endswith(" 40.00") for line in lines) == 1  # the run's empirical coverage, once
    assert out.count("Compliance (the score)") == 1


def test_markdown_heads_each_column_with_what_it_holds_and_keeps_the_legend(runs: Path) -> None:
    lines = _board(runs, "--format", "markdown").splitlines()
    heads = [cell.strip() for cell in lines[0].split("|")[1:-1]]
    sets = [f"{name} Compliance" for name in sorted(SETS)] + [f"{name} Empirical coverage" for name in sorted(SETS)]
    assert heads[:26] == ["Nr", "Model", "Compliance", *sets[:10], "Declared coverage", "Empirical coverage",
                          *sets[10:], "95% CI"]  # fmt: skip
    cells = [cell.strip() for cell in lines[3].split("|")[1:26]]
    assert cells == ["2", "fake-model (native)", "50.00", *["50.00"] * 10, "80.00", "40.00",
                     *["33.33"] * 5, *["50.00"] * 5]  # fmt: skip
    assert lines[4:] == ["", LEGEND]
    assert not [head for head in heads if "schemas-" in head]


def test_json_and_csv_keep_every_figure_under_its_key_and_json_says_what_each_is(runs: Path) -> None:
    rows = json.loads(_board(runs, "--format", "json"))
    native = next(row for row in rows if row["mode"] == "native")
    assert native["metrics"] == {
        "schemas-declared_coverage": 80.0, "schemas-empirical_coverage": 40.0, "schemas-compliance": 50.0,
        **{f"schemas-{name}": 33.33 if name.startswith("Github") else 50.0 for name in SETS},
    }  # fmt: skip
    assert native["classes"] == dict.fromkeys(sorted(SETS), 50.0)
    figures = native["figures"]
    assert figures["schemas-compliance"] == {
        "header": "Compliance", "about": "valid instances over the schemas not refused", "score": True,
    }  # fmt: skip
    assert figures["schemas-Kubernetes"] == {
        "header": "Empirical coverage",
        "about": "valid instances over all schemas posed (a refused schema counts as not valid)",
        "group": "Kubernetes",
    }
    assert set(figures) == set(native["metrics"])
    (line,) = [
        line for line in csv.DictReader(io.StringIO(_board(runs, "--format", "csv"))) if line["mode"] == "native"
    ]
    assert (line["schemas-compliance"], line["schemas-Github_easy"], line["Github_easy"]) == ("50.0", "33.33", "50.00")


def test_the_viewer_heads_the_suite_s_figures_by_name_and_says_what_each_is(runs: Path) -> None:
    with TestClient(create_app(runs, hosts=("testserver",))) as viewer:
        board = viewer.get("/").text
    assert '<th title="schemas the provider did not refuse, over all posed">Declared coverage</th>' in board
    assert ">Kubernetes Empirical coverage</th>" in board
    assert "schemas-" not in board
    assert f'<p class="note">{LEGEND}</p>' in board


def test_the_html_report_names_each_figure_and_draws_each_figure_per_group(runs: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert _board(runs, "--format", "html", "-o", str(page)) == ""
    html = page.read_text(encoding="utf-8")
    heads = re.findall(r'<th scope="col" title="([^"]*)"><button type="button">([^<]*)</button>', html)
    assert [head for head in heads if "coverage" in head[1]] == [
        ("Declared coverage: schemas the provider did not refuse, over all posed", "Declared coverage"),
        (
            "Empirical coverage: valid instances over all schemas posed (a refused schema counts as not valid)",
            "Empirical coverage",
        ),
    ]
    assert not [head for head in heads if "schemas-" in head[1]]
    assert re.findall(r"<figcaption>([^<]*) per group</figcaption>", html) == ["Compliance", "Empirical coverage"]
    assert f'<p class="note">{LEGEND}</p>' in html


def _row(columns: list[str], metrics: dict[str, float | None]) -> LeaderboardRow:
    return LeaderboardRow(
        rank=1, suite="acme", task="acme", model="m", mode="tool", run_id="run-1", status="finished",
        imported=False, score=50.0, classes={}, metrics=metrics, columns=columns, group_columns=False, samples=2,
        correct=1, partial=0, incorrect=1, missing=0, errors=0, ambiguous=0, valid_first_try=100.0,
        corrective_retries=0, invalid_outputs=0, requests=2, input_tokens=20, output_tokens=4, cost_usd=0.0,
        cost_complete=True, cost_sources=["local"], wall_s=1.0, dataset_md5="0" * 32, path="r/1", cases=2,
    )  # fmt: skip


def test_a_suite_that_says_nothing_of_its_figures_shows_them_under_their_names_in_their_own_table() -> None:
    console = Console(width=100, record=True, color_system=None)
    render_rich([_row(["hits", "cost-usd"], {"hits": 3.0, "cost-usd": 0.5})], console, suites={})
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert _table(lines, "acme: the suite's own figures") == [
        "acme: the suite's own figures",
        "                  cost-",
        "Nr Model    hits    usd",
        "─" * 23,
        " 1 m (tool) 3.00 $0.500",
    ]
    assert "hits" not in "".join(_table(lines, "acme"))  # not in the headline


@pytest.mark.parametrize(
    ("header", "width", "lines"),
    [
        ("Github_easy", 6, ["Github_", "easy"]),
        ("great grand-child", 5, ["great", "grand-", "child"]),
        ("p50 / p95 s", 9, ["p50 / p95", "s"]),
        ("Score, no retry", 5, ["Score,", "no", "retry"]),
        ("JsonSchemaStore", 6, ["JsonSchemaStore"]),
        ("Declared coverage", 6, ["Declared", "coverage"]),
        ("Empirical coverage", 20, ["Empirical coverage"]),
    ],
)
def test_a_header_stacks_at_spaces_and_after_hyphens_and_underscores(header: str, width: int, lines: list[str]) -> None:
    assert stacked(header, width).splitlines() == lines
