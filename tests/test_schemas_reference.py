"""JSONSchemaBench's figures checked against a reference: a held-out sample of the shipped schemas (two of each set
with a known valid and a known invalid instance) posed by `main.py run --mode all` to the loopback mock of
benchmarks/schemas_mock.py, which answers each schema as its script says (valid, invalid then valid, invalid every
time, or in native mode refused with OpenAI's 400 `invalid_json_schema`). Declared coverage, empirical coverage and
compliance per set and mode, at the first attempt (`--retries 0`) and after one retry (`--retries 1`), must equal
what the script makes of them, counted here from the script alone."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.conftest import REPO
from typed_eval.contracts import RunSummary
from typed_eval.suites.schemas.metrics import coverage, schemas_report_lines

sys.path.insert(0, str(REPO / "benchmarks"))
from schemas_mock import MODES, REFUSAL, Entry, SchemaMock, held_out, plan

SAMPLE = REPO / "typed_eval" / "suites" / "schemas" / "sample"
HELD_OUT = held_out(SAMPLE, per_set=2)


Figures = dict[str, tuple[float | None, float | None, float | None]]


def expected(entries: list[Entry], mode: str, retries: int) -> tuple[dict[str, tuple[int, int, int]], Figures]:
    """What the script makes of a run: (posed, refused, valid) per set and overall, counted from each plan, and the
    three figures (declared coverage, empirical coverage, compliance) as the benchmark defines them."""
    counts: dict[str, tuple[int, int, int]] = {}
    for entry in entries:
        chosen = plan(entry.text, mode)
        posed, refused, valid = counts.get(entry.group, (0, 0, 0))
        counts[entry.group] = (
            posed + 1,
            refused + (chosen == "refused"),
            valid + (chosen == "valid" or (chosen == "fixed" and retries == 1)),
        )
    counts["overall"] = (
        sum(c[0] for c in counts.values()),
        sum(c[1] for c in counts.values()),
        sum(c[2] for c in counts.values()),
    )
    figures: Figures = {
        name: (
            (posed - refused) / posed,
            valid / posed,
            valid / (posed - refused) if posed > refused else None,
        )
        for name, (posed, refused, valid) in counts.items()
    }
    return counts, figures


@pytest.fixture(scope="module")
def mock() -> Iterator[SchemaMock]:
    yield SchemaMock([entry for _, entry in HELD_OUT])


def test_the_held_out_sample_spans_every_set_and_every_plan() -> None:
    entries = [entry for _, entry in HELD_OUT]
    assert len(HELD_OUT) == 20 and len({entry.group for entry in entries}) == 10
    plans = {mode: sorted({plan(entry.text, mode) for entry in entries}) for mode in MODES}
    assert plans == {
        "tool": ["fixed", "invalid", "valid"],
        "native": ["fixed", "invalid", "refused", "valid"],
        "prompted": ["fixed", "invalid", "valid"],
        "text": ["fixed", "invalid", "valid"],
    }
    assert sum(not entry.object_root for entry in entries) == 3  # wrapped in the structured modes
    assert REFUSAL["error"]["code"] == "invalid_json_schema"


@pytest.mark.parametrize("retries", [0, 1])
def test_coverage_and_compliance_per_set_and_mode_equal_the_reference(
    tmp_path: Path, mock: SchemaMock, retries: int
) -> None:
    data = tmp_path / "data"
    for case_id, _ in HELD_OUT:
        (data / case_id).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / f"{case_id}.json", data / f"{case_id}.json")
    done = run_cli(
        "main.py", "run", "--suite", "schemas", "-S", f"path={data}", "--mode", "all", "--model", "mock",
        "--base-url", mock.url, "--api-key", "sk-test", "--results-dir", str(tmp_path / "runs"),
        "--retries", str(retries), text=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    entries = [entry for _, entry in HELD_OUT]
    summaries = [RunSummary.model_validate_json(p.read_text()) for p in (tmp_path / "runs").glob("*/*/summary.json")]
    by_mode: dict[str, RunSummary] = {summary.mode: summary for summary in summaries}
    assert sorted(by_mode) == sorted(MODES)
    for mode in MODES:
        per_set, total = coverage(by_mode[mode].scores.groups)
        ours = {**per_set, "overall": total}
        counts, figures = expected(entries, mode, retries)
        assert {name: (c.posed, c.refused, c.valid) for name, c in ours.items()} == counts, mode
        assert {name: (c.declared, c.empirical, c.compliance) for name, c in ours.items()} == figures, mode
        (overall,) = [
            line.split() for line in schemas_report_lines(by_mode[mode]) if "JSONSchemaBench: overall" in line
        ]
        posed, refused, valid = counts["overall"]
        shown = ["n/a" if value is None else f"{100 * value:.2f}" for value in figures["overall"]]
        assert overall == ["JSONSchemaBench:", "overall", *shown, f"({posed},", f"{refused},", f"{valid})"], mode
    (native,) = (tmp_path / "runs").glob("*/*-native-*/samples.jsonl")
    records = [json.loads(line) for line in native.read_text().splitlines()]
    refused = {r["case_id"] for r in records if r["status"] == "unsupported"}
    assert refused == {case_id for case_id, entry in HELD_OUT if plan(entry.text, "native") == "refused"}
    asked = [(mode, attempt) for mode, text, attempt in mock.requests if plan(text, mode) == "refused"]
    assert all(attempt == 0 for _, attempt in asked)  # a refused schema is never asked again
