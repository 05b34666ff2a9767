"""The `evals` extra resolves to the newest pydantic-evals with the pydantic-ai it was made for: pydantic-evals pins
pydantic-ai-slim exactly, and a project pin above that pin makes pip fall back quietly to pydantic-evals 0.0.51.
Checked on what is installed (CI installs the extra), and on the pins pyproject declares."""

from __future__ import annotations

import os
import tomllib
from importlib.metadata import PackageNotFoundError, requires, version

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO

EVALS = "2.62.0"
"""The newest pydantic-evals in the index (Nov 2026): it requires pydantic-ai-slim==2.62.0."""


def _extras() -> dict[str, list[Requirement]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = {name: [Requirement(line) for line in lines] for name, lines in project["optional-dependencies"].items()}
    return {**extras, "": [Requirement(line) for line in project["dependencies"]]}


def test_the_extra_pins_pydantic_evals_and_the_pydantic_ai_it_requires() -> None:
    extras = _extras()
    pins = {req.name: req.specifier for req in extras["evals"]}
    assert {name: str(spec) for name, spec in pins.items()} == {
        "pydantic-evals": f"=={EVALS}",
        "pydantic-ai-slim": f"=={EVALS}",
        "opentelemetry-sdk": ">=1.45",  # the span-based evaluators' spans
    }
    (slim,) = [req for req in extras[""] if req.name == "pydantic-ai-slim"]
    assert slim.specifier.contains(EVALS), f"the project's own pin {slim} excludes the pydantic-ai pydantic-evals needs"


def test_the_installed_pydantic_evals_is_the_pinned_one_with_its_pydantic_ai() -> None:
    try:
        evals = version("pydantic-evals")
    except PackageNotFoundError:
        if os.environ.get("CI"):
            pytest.fail("pydantic-evals is not installed: .ci/run installs the evals extra")
        pytest.skip("pydantic-evals is not installed (pip install -e '.[evals]')")
    assert Version(evals) >= Version("1"), f"pip fell back to pydantic-evals {evals}"
    assert evals == EVALS
    wanted = [Requirement(line) for line in requires("pydantic-evals") or []]
    (slim,) = [req for req in wanted if req.name == "pydantic-ai-slim" and req.marker is None]
    assert str(slim.specifier) == f"=={EVALS}"
    assert version("pydantic-ai-slim") == EVALS
    assert version("pydantic-graph") == EVALS
