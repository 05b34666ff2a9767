"""Suites stay behind their boundary: outside `typed_eval/suites/`, no module of the package names a suite, in its
code, its docstrings or its comments. The CLI, the store and the reports read what suites declare (`Suite`)."""

from __future__ import annotations

import re

from tests.conftest import REPO

PACKAGE = REPO / "typed_eval"
SUITE_NAMES = re.compile(
    r"farel|lineage|(?<![a-z])story|promptfoo|novelty|τ|(?<![a-z])tau(?![a-z2])|tau2|bfcl|gorilla|jsonschemabench"
    r"|case[ _-]?files?(?![a-z])|[\"'](schemas|pydantic-evals|evals)[\"']",
    re.I,
)
"""Every built-in suite: the issue's `grep -rniE "farel|lineage|story|promptfoo|novelty"` (except that "story" inside
another word, "history", names no suite), τ-bench (`tau`, `tau2`, `τ`), BFCL (and its gorilla repository),
JSONSchemaBench, the case files, and the names `schemas` and `pydantic-evals` as a suite's name is written (quoted):
"schemas" unquoted is the JSON folder, and pydantic_evals the library whose conventions the core follows (span
names, its report format)."""
ALLOWED = {
    "typed_eval/cli/leaderboard_command.py": '"pydantic-evals"',
    "typed_eval/contracts/export.py": '/ "schemas"',
}
"""A line of a module here may hold this: `--format pydantic-evals` is pydantic_evals' report format, not the suite;
the documents are written to the repository's JSON folder `schemas/`."""


def offenders() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*")):
        where = path.relative_to(PACKAGE).as_posix()
        if not path.is_file() or where.startswith("suites/"):
            continue
        if path.suffix not in (".py", ".html", ".css", ".js", ".txt", ".sql", ".j2", ".jinja"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            allowed = ALLOWED.get(f"typed_eval/{where}")
            if SUITE_NAMES.search(line) and (allowed is None or allowed not in line):
                found.append(f"typed_eval/{where}:{number}: {line.strip()}")
    return found


def test_no_module_outside_the_suites_names_a_suite() -> None:
    assert offenders() == []


def test_the_rule_finds_a_suite_named_outside_the_suites() -> None:
    assert SUITE_NAMES.search('suite: str = "farel"')
    assert SUITE_NAMES.search("the story-graph suite's edges")
    assert SUITE_NAMES.search("Lineage") and SUITE_NAMES.search("promptfoo's format")
    assert SUITE_NAMES.search("the NOVELTY score")
    assert SUITE_NAMES.search("τ-bench's orchestrator") and SUITE_NAMES.search("tau2 run") and SUITE_NAMES.search("tau")
    assert not SUITE_NAMES.search("the status is taught")
    assert not SUITE_NAMES.search("the batch keeps each sample's message history")
    assert SUITE_NAMES.search("as BFCL does") and SUITE_NAMES.search("JSONSchemaBench adds") and SUITE_NAMES.search(
        "(a case file: sum(R x D))"
    )  # fmt: skip
    assert SUITE_NAMES.search('suite == "schemas"') and SUITE_NAMES.search("name='pydantic-evals'")
    assert not SUITE_NAMES.search("the schemas/ folder") and not SUITE_NAMES.search("pydantic_evals' span names")
