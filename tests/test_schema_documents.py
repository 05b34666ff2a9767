"""The JSON Schema documents in schemas/ describe the stored formats as this program writes them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO
from typed_eval.contracts.export import DOCUMENTS, render


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_schema_documents_are_up_to_date(name: str) -> None:
    written = (REPO / "schemas" / name).read_text(encoding="utf-8")
    assert written == render(DOCUMENTS[name]), "run: python -m typed_eval.contracts.export"


def test_summary_document_is_schema_version_2() -> None:
    document = json.loads((REPO / "schemas" / "summary.schema.json").read_text(encoding="utf-8"))
    assert document["properties"]["schema_version"]["default"] == 2
    assert {"suite", "task", "scores", "dataset"} <= set(document["properties"])
