"""The shipped sample, reproducible: a seeded, stratified draw of JSONSchemaBench's schemas from a copy of its `data/`
folder (`python -m typed_eval.suites.schemas.sampling DATA_DIR OUT_DIR`), and its few-shot examples read out of its
`core/messages.py` as data (`... sampling --shots MESSAGES_PY OUT_JSON`: the literal is evaluated, never run).

Why a size bound: the whole benchmark is 110 MB and its Github_ultra schemas average 75 KB; drawing among the schemas
of at most `MAX_BYTES` keeps the package small (under 3 MB) while every set is drawn alike. The files are copied
byte for byte, so a case of the sample is the benchmark's case.
"""

from __future__ import annotations

import ast
import json
import random
import sys
from pathlib import Path

__all__ = ["MAX_BYTES", "PER_SET", "SEED", "SETS", "draw", "few_shots", "main"]

SETS = (
    "Glaiveai2K",
    "Github_trivial",
    "Github_easy",
    "Snowplow",
    "Github_medium",
    "Kubernetes",
    "WashingtonPost",
    "Github_hard",
    "JsonSchemaStore",
    "Github_ultra",
)
"""JSONSchemaBench's ten sets, in the order its paper lists them (easiest first)."""
SEED = 33
PER_SET = 30
MAX_BYTES = 65_536


def draw(data: Path, *, seed: int = SEED, per_set: int = PER_SET, max_bytes: int = MAX_BYTES) -> list[Path]:
    """`per_set` files of each set among those of at most `max_bytes`, drawn with a generator seeded per set (so a
    set's draw does not depend on the others), in name order."""
    chosen: list[Path] = []
    for name in SETS:
        files = sorted(p for p in (data / name).glob("*.json") if p.stat().st_size <= max_bytes)
        picked = random.Random(f"{seed}:{name}").sample(files, min(per_set, len(files)))
        chosen += sorted(picked)
    return chosen


def few_shots(messages_py: str) -> dict[str, list[list[str]]]:
    """JSONSchemaBench's few-shot pairs per set, from the `EXAMPLES_FOR_TASK` literal of its `core/messages.py`."""
    for node in ast.parse(messages_py).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "EXAMPLES_FOR_TASK" for t in targets) and node.value:
                examples = ast.literal_eval(node.value)
                return {name: [list(pair) for pair in pairs] for names, pairs in examples.items() for name in names}
    raise ValueError("no EXAMPLES_FOR_TASK in that file")


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--shots":
        shots = few_shots(Path(argv[1]).read_text(encoding="utf-8"))
        Path(argv[2]).write_text(json.dumps(shots, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return 0
    if len(argv) != 2:
        print("usage: python -m typed_eval.suites.schemas.sampling DATA_DIR OUT_DIR | --shots MESSAGES_PY OUT_JSON",
              file=sys.stderr)  # fmt: skip
        return 2
    data, out = Path(argv[0]), Path(argv[1])
    for path in draw(data):
        target = out / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
