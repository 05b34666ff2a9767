"""A plug-in package as a user publishes one: its files built and installed by pip into a folder of its own, and the
project's commands run with that folder on the path."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.cli_run import run_cli
from tests.conftest import PYTHON, REPO


def install_package(root: Path, files: Mapping[str, str]) -> Path:
    """`files` (relative path -> text) written under `root/src` and pip-installed into `root/site`, returned."""
    for name, text in files.items():
        path = root / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(
        [PYTHON, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "--target",
         str(root / "site"), str(root / "src")],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return root / "site"


def run_with(site: Path | None, script: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`python script args...` of the project, with `site` (None: nothing) as the path of installed packages, run in
    this process as a new one would run it (`run_cli`: the plug-in's modules imported from `site`, forgotten after)."""
    return run_cli(script, *args, env={**os.environ, "PYTHONPATH": str(site) if site else ""}, cwd=cwd)
