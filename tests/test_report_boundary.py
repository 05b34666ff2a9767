"""The reports and the case store know no suite: what a suite shows is what it declares (`Suite`), so nothing in
them names one, docstrings and templates included; and each of their modules keeps to one job (500 lines at most)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "typed_eval"
SUITE_NAMES = re.compile(r"farel|lineage|story|promptfoo|novelty", re.IGNORECASE)
CASE_STORE = ("case_store.py", "case_views.py", "case_tables.py", "read_write_lock.py")


def test_no_suite_is_named_in_the_reports_or_the_case_store() -> None:
    files = [path for path in (PACKAGE / "reports").rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    files += [PACKAGE / "store" / name for name in CASE_STORE]
    assert {path.suffix for path in files} >= {".py", ".html", ".css", ".js"}
    named = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SUITE_NAMES.search(line)
    ]
    assert named == []


def test_the_modules_of_reports_and_store_are_500_lines_at_most() -> None:
    modules = [*(PACKAGE / "reports").rglob("*.py"), *(PACKAGE / "store").rglob("*.py")]
    sizes = {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines()) for path in modules
    }
    assert "reports/html_report.py" in sizes and "store/case_store.py" in sizes
    assert {name: size for name, size in sizes.items() if size > 500} == {}
