"""The counted score is one rule: Python's `counted_score` and the DuckDB expression made from it agree on every
status, flag and score; and the case store reads records of schema version 1 through the one migration."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import get_args

from typed_eval.contracts import Cost, SampleRecord, SampleStatus, TokenUsage
from typed_eval.core.counted_score import counted_score, counted_score_sql
from typed_eval.store.storage import current_records_file, read_records

V1_RUN = Path(__file__).parent.parent / "result" / "Phi-4-Q8_0"


def record(status: str, excluded: bool, score: float | None) -> SampleRecord:
    return SampleRecord(
        case_id="c", mode="tool", status=status, excluded=excluded, score=score, attempts=[],  # type: ignore[arg-type]
        corrective_retries=0, usage=TokenUsage(), cost=Cost(usd=None, source="unknown"), latency_s=None,
    )  # fmt: skip


def test_python_and_duckdb_count_every_combination_alike() -> None:
    import duckdb  # imported by the tests that use it (see test_html_report)

    combinations = list(itertools.product(get_args(SampleStatus), (False, True, None), (None, 0.0, 0.25, 1.0)))
    rows = [(status, excluded, score) for status, excluded, score in combinations]
    expression = counted_score_sql("status", "score", {"excluded": "excluded"})
    with duckdb.connect(":memory:") as db:
        db.execute("CREATE TABLE r (status VARCHAR, excluded BOOLEAN, score DOUBLE)")
        db.executemany("INSERT INTO r VALUES (?, ?, ?)", rows)
        counted = db.execute(f"SELECT status, excluded, score, {expression} FROM r").fetchall()
    assert len(counted) == 6 * 3 * 4
    for status, excluded, score, in_sql in counted:
        assert in_sql == counted_score(record(status, bool(excluded), score)), (status, excluded, score)
    assert {(s, e, sc): v for s, e, sc, v in counted if s == "missing" and not e}[("missing", False, None)] == 0.0
    assert all(v is None for s, e, _, v in counted if s in ("error", "unsupported") or e)


def test_the_rule_is_stated_once_and_read_by_both() -> None:
    assert counted_score(record("missing", False, None)) == 0.0
    assert counted_score(record("partial", False, 0.25)) == 0.25
    assert counted_score(record("correct", True, 1.0)) is None
    assert counted_score(record("incorrect", False, None)) is None
    assert counted_score(record("unsupported", False, None)) is None  # a refused schema, as a failed call
    assert counted_score_sql("s", "x", {"excluded": "e"}) == (
        "CASE WHEN s IN ('error', 'unsupported') OR coalesce(e, false) THEN NULL WHEN x IS NOT NULL THEN x "
        "WHEN s = 'missing' THEN 0.0 END"
    )


def test_the_case_store_reads_version_1_records_as_the_migration_makes_them(tmp_path: Path) -> None:
    from typed_eval.store.case_store import CaseStore

    root = tmp_path / "result"
    shutil.copytree(V1_RUN, root / V1_RUN.name)
    [run] = (root / V1_RUN.name).iterdir()
    records = run / "samples.jsonl"
    assert records.read_text(encoding="utf-8").startswith('{"quiz_id":')
    copy = current_records_file(records, tmp_path / "current.jsonl")
    assert [SampleRecord.model_validate_json(line) for line in copy.read_text(encoding="utf-8").splitlines()] == list(
        read_records(run)
    )
    store = CaseStore(root)
    try:
        [entry] = store.runs()
        page = store.cases([entry.key], per_page=1000)
        migrated = list(read_records(run))
        assert page.total == len({r.case_id for r in migrated}) == 450
        by_case = {r.case_id: counted_score(r) for r in migrated}
        assert {row.case_id: row.cells[entry.key].score for row in page.rows} == by_case
        wrong = sorted(case for case, score in by_case.items() if score is not None and score < 1)
        assert sorted(store.case_ids([entry.key], filter="wrong")) == wrong
        assert [row.group for row in page.rows] == [r.group for r in migrated]
    finally:
        store.close()


def test_a_current_file_is_read_in_place(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(record("correct", False, 1.0).model_dump(mode="json")) + "\n", encoding="utf-8")
    assert current_records_file(path, tmp_path / "copy.jsonl") == path
    assert not (tmp_path / "copy.jsonl").exists()
