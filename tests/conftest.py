"""Shared paths: fixtures are read from ../shared beside the repository, as in CI."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
FAREL_FIXTURES = SHARED / "fixtures" / "farel-bench"
PUBLISHED_CSV = FAREL_FIXTURES / "farel-bench.csv"
PUBLISHED_MD5 = "0b08876d7a221c9b9812ea85d746449a"
PYTHON = sys.executable
