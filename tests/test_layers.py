"""Imports point one way, with no exception: schemas <- core <- suites <- reports <- CLI. Every import of every module
(those inside functions too) is read from its source, so a shortcut taken "just here" fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LAYERS = ("schemas", "core", "suites", "reports", "cli")
REPORTS = {"farel_eval.leaderboard", "farel_eval.tables", "farel_eval.html_report", "farel_eval.mode_matrix",
           "farel_eval.case_store"}  # fmt: skip


def layer(module: str) -> int | None:
    """A module's layer; None for what is not ours (the standard library, pydantic-ai...)."""
    if module == "farel_bench" or module.startswith("farel_eval.suites"):
        return LAYERS.index("suites")  # the FaRel generator is FaRel's, as lineage's generator is lineage's
    if not module.startswith("farel_eval"):
        return None
    if module.startswith("farel_eval.schemas"):
        return LAYERS.index("schemas")
    if module.startswith("farel_eval.cli"):
        return LAYERS.index("cli")
    if module in REPORTS or module.startswith("farel_eval.viewer"):
        return LAYERS.index("reports")
    return LAYERS.index("core")


def imported(path: Path, module: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module if node.level == 0 else module.rsplit(".", node.level)[0] + "." + node.module
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}".startswith("farel_eval")}
    return found


def modules() -> list[tuple[str, Path]]:
    found = [("farel_bench", REPO / "farel_bench.py")]
    for path in sorted((REPO / "farel_eval").rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        found.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return found


def is_module(name: str) -> bool:
    path = REPO / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward: list[str] = []
    for module, path in modules():
        mine = layer(module)
        assert mine is not None
        for name in imported(path, module):
            theirs = layer(name)
            if theirs is not None and theirs > mine and is_module(name):
                upward.append(f"{module} ({LAYERS[mine]}) imports {name} ({LAYERS[theirs]})")
    assert upward == []


def test_the_layers_are_told_apart() -> None:
    names = ("farel_eval.schemas.run", "farel_eval.engine", "farel_eval.suites.farel", "farel_eval.tables",
             "farel_eval.viewer.pages", "farel_eval.cli.run", "pydantic")  # fmt: skip
    assert [layer(name) for name in names] == [0, 1, 2, 3, 3, 4, None]
