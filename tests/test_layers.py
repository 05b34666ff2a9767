"""Imports point one way, with no exception: each folder of the package imports only the folders below it.

    contracts <- core <- providers <- store <- engine <- suites <- reports <- cli

Every import of every module (those inside functions too) is read from its source, so a shortcut taken "just here"
fails this test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LAYERS = ("contracts", "core", "providers", "store", "engine", "suites", "reports", "cli")
PACKAGE = "typed_eval"


def layer(module: str) -> int | None:
    """A module's layer; None for what is not ours (the standard library, pydantic-ai...)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    if len(parts) == 1:
        return 0  # the package's own __init__, which imports nothing
    return LAYERS.index(parts[1])


def imported(path: Path, module: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            base = node.module if node.level == 0 else module.rsplit(".", node.level)[0] + "." + node.module
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}".startswith(PACKAGE)}
    return found


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        found.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return found


def is_module(name: str) -> bool:
    path = REPO / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_module_lives_in_a_layer_folder() -> None:
    stray = [module for module, _ in modules() if module.count(".") == 1 and module.split(".")[1] not in LAYERS]
    assert stray == []


def test_the_package_imports_no_top_level_script() -> None:
    scripts = {path.stem for path in REPO.glob("*.py")}  # evaluator, main, format_result, farel_bench
    found = [f"{module} imports {name}" for module, path in modules() for name in imported(path, module)
             if name.split(".")[0] in scripts]  # fmt: skip
    assert scripts >= {"evaluator", "main", "format_result", "farel_bench"}
    assert found == []


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
    names = (
        "typed_eval.contracts.summary",
        "typed_eval.core.tasks",
        "typed_eval.providers.flow",
        "typed_eval.store.storage",
        "typed_eval.engine.runs",
        "typed_eval.suites.farel.suite",
        "typed_eval.reports.tables",
        "typed_eval.reports.viewer.pages",
        "typed_eval.cli.run",
        "pydantic",
    )
    assert [layer(name) for name in names] == [0, 1, 2, 3, 4, 5, 6, 6, 7, None]


def test_no_module_is_over_500_lines() -> None:
    sizes = {str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines()) for _, path in modules()}
    assert "typed_eval/engine/evaluation.py" in sizes
    assert {name: size for name, size in sizes.items() if size > 500} == {}
