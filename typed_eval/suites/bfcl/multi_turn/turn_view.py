"""A multi-turn case as the viewer shows it: turn by turn, the user's request, each call with its result beside
the ground truth's calls, the first turn that failed and why; and the failures by cause as run-wide metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typed_eval.contracts import SampleRecord
from typed_eval.core.suite import AnswerLine, AnswerMark
from typed_eval.suites.bfcl.multi_turn.task import CAUSES

__all__ = ["cause_metrics", "trajectory_lines"]

SHOWN = 300
"""Characters of a user request, a reply or a result shown (a long-context listing runs to pages)."""


def trajectory_lines(record: SampleRecord) -> list[AnswerLine]:
    """The trajectory stored in a multi-turn case's record, as answer lines."""
    turns = _list(_dict(record.output).get("turns"))
    details = record.score_details or {}
    failed = details.get("failed_turn")
    expected = _list(record.expected)
    requests = _list(record.metadata.get("turns"))
    held_out = _dict(record.metadata.get("held_out"))
    lines: list[AnswerLine] = []
    for index, turn in enumerate(turns):
        mark: AnswerMark | None = (
            "right" if record.score == 1.0 or (isinstance(failed, int) and index < failed) else None
        )
        if index == failed:
            mark = "wrong"
        lines.append(AnswerLine(f"turn {index}: {_request(requests, held_out, index)}", mark))
        for step in _list(_dict(turn).get("steps")):
            lines += _step_lines(step)
        truth = _list(expected[index]) if index < len(expected) else []
        lines.append(AnswerLine(f"  ground truth: {', '.join(map(str, truth)) or '(no call: the model should ask)'}"))
        if isinstance(turn, dict) and turn.get("ended") == "force_terminated":
            lines.append(AnswerLine("  force-terminated: more than 20 steps with calls in this turn", "wrong"))
    if details.get("error_type"):
        lines.append(AnswerLine(f"checker: {details['error_type']}: {details.get('error_message', '')}"))
        lines.append(AnswerLine(f"first failed turn: {failed}; cause: {details.get('cause')}"))
    return lines


def _request(requests: list[Any], held_out: Mapping[str, Any], index: int) -> str:
    if str(index) in held_out:
        return f"(functions added: {', '.join(map(str, _list(held_out[str(index)])))})"
    messages = _list(requests[index]) if index < len(requests) else []
    text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return _cut(text)


def _step_lines(step: Any) -> list[AnswerLine]:
    if not isinstance(step, dict):
        return []
    executed = step.get("executed")
    if isinstance(executed, list) and executed:
        return [
            AnswerLine(f"  {_cut(str(call.get('call')))} -> {_cut(str(call.get('result')))}")
            for call in executed
            if isinstance(call, dict)
        ]
    if step.get("decode_error"):
        return [AnswerLine(f"  undecodable: {_cut(str(step.get('reply') or step.get('calls')))}", "invalid")]
    return [AnswerLine(f"  text: {_cut(str(step.get('reply', '')))}" if step.get("reply") else "  (empty reply)")]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def cause_metrics(sums: Mapping[str, float]) -> dict[str, float]:
    """The run's failed multi-turn cases by cause (from the summed `cause_<cause>` score details)."""
    return {f"bfcl-mt-{cause}": float(sums.get(f"cause_{cause}", 0)) for cause in CAUSES}
