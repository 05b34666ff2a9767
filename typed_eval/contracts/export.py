"""Write the JSON Schema documents of the stored formats to `schemas/`, for tools that read our results.

python -m typed_eval.contracts.export [DIR]     # default: schemas/ of the repository
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from typed_eval.contracts import LeaderboardRow, ModeComparison, RunSummary, SampleRecord

__all__ = ["DOCUMENTS", "render", "write"]

DOCUMENTS: dict[str, type[BaseModel]] = {
    "summary.schema.json": RunSummary,
    "record.schema.json": SampleRecord,
    "leaderboard-row.schema.json": LeaderboardRow,
    "mode-comparison.schema.json": ModeComparison,
}
"""File name -> the model it describes: `summary.json`, a `samples.jsonl` line, a `--format json` row, an entry of
`--modes --format json`."""


def render(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(mode="serialization"), indent=2, ensure_ascii=False) + "\n"


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, model in DOCUMENTS.items():
        (folder / name).write_text(render(model), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "schemas")
