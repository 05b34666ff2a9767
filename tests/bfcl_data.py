"""The shipped BFCL sample as a `-S data=` folder a test edits (hostile ground truth, ids, docs)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

BFCL_SAMPLE = Path(__file__).parents[1] / "typed_eval" / "suites" / "bfcl" / "sample"


def multi_turn_folder(tmp_path: Path, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> Path:
    """The sample's BFCL data, its first multi_turn_base case (question and possible answer) changed by `change`."""
    folder = tmp_path / "bfcl"
    shutil.copytree(BFCL_SAMPLE, folder)
    question_file = folder / "BFCL_v4_multi_turn_base.json"
    answer_file = folder / "possible_answer" / "BFCL_v4_multi_turn_base.json"
    questions, answers = question_file.read_text().splitlines(), answer_file.read_text().splitlines()
    question, answer = json.loads(questions[0]), json.loads(answers[0])
    change(question, answer)
    questions[0], answers[0] = json.dumps(question), json.dumps(answer)
    question_file.write_text("\n".join(questions) + "\n")
    answer_file.write_text("\n".join(answers) + "\n")
    return folder
