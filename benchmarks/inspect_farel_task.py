"""The FaRel quizzes as an inspect_ai task, for `benchmarks/flow_control.py` (run by inspect_ai, in its own venv).

    inspect eval benchmarks/inspect_farel_task.py -T dataset=quizzes.jsonl --model openai-api/loopback/m

`dataset` is a JSON-lines file written by the benchmark, one quiz a line: {"id", "prompt", "correct"} (the prompt
is farel-bench's text, ending with its `<ANSWER>` instruction). One generate per quiz, scored by the tag.
Nothing here imports typed-eval: inspect_ai's venv need not hold it.
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import pattern
from inspect_ai.solver import generate


@task
def farel(dataset: str) -> Task:
    quizzes = [json.loads(line) for line in Path(dataset).read_text().splitlines() if line.strip()]
    samples = [Sample(id=q["id"], input=q["prompt"], target=str(q["correct"])) for q in quizzes]
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=pattern(r"<ANSWER>\s*(\d+)\s*</ANSWER>"))
