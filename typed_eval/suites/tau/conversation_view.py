"""A τ-bench conversation as the case viewer and the HTML report show it: each message in order with the calls and
their results inline, how it ended, each check of the reward, and where the database differs from the expected one."""

from __future__ import annotations

import json
from typing import Any

from typed_eval.contracts import SampleRecord
from typed_eval.core.suite import AnswerLine, AnswerMark

__all__ = ["conversation_lines"]

SHOWN = 400
"""Characters of a message or a result shown (a database listing runs to pages)."""
SPEAKERS = {"assistant": "agent", "user": "user"}


def conversation_lines(record: SampleRecord) -> list[AnswerLine]:
    output = record.output if isinstance(record.output, dict) else {}
    lines: list[AnswerLine] = []
    for message in _list(output.get("messages")):
        if isinstance(message, dict):
            lines += _message_lines(message)
    details = record.score_details or {}
    ended = output.get("termination_reason")
    lines.append(AnswerLine(f"ended: {ended} after {output.get('steps')} steps, {output.get('errors')} failed calls"))
    if output.get("failure") or details.get("failure"):
        lines.append(AnswerLine(f"failed: {_cut(str(output.get('failure') or details.get('failure')))}", "invalid"))
    breakdown = details.get("reward_breakdown")
    if record.score is not None:
        parts = ", ".join(f"{k} {v}" for k, v in breakdown.items()) if isinstance(breakdown, dict) else ""
        mark: AnswerMark = "right" if record.score == 1.0 else "wrong"
        lines.append(AnswerLine(f"reward {record.score}" + (f" ({parts})" if parts else ""), mark))
    if details.get("note"):
        lines.append(AnswerLine(f"note: {details['note']}"))
    lines += _checks(details)
    difference = _list(details.get("database_difference"))
    if difference:
        lines.append(AnswerLine("database differs from the expected one:", "wrong"))
        lines += [AnswerLine(f"  {_cut(str(line))}", "wrong") for line in difference]
    elif details.get("db_match") == "yes":
        lines.append(AnswerLine("database as expected", "pass"))
    spent = output.get("user_cost")
    usd = spent.get("usd") if isinstance(spent, dict) else None
    lines.append(AnswerLine(f"simulated user: {output.get('user_model')}, cost {usd} USD"))
    return lines


def _message_lines(message: dict[str, Any]) -> list[AnswerLine]:
    role = message.get("role")
    if role == "tool":
        who = SPEAKERS.get(str(message.get("requestor")), "?")
        error = bool(message.get("error"))
        return [AnswerLine(f"  <- to {who}: {_cut(str(message.get('content')))}", "invalid" if error else None)]
    speaker = SPEAKERS.get(str(role), str(role))
    lines = []
    if message.get("content"):
        lines.append(AnswerLine(f"{speaker}: {_cut(str(message['content']))}"))
    for call in _list(message.get("tool_calls")):
        if isinstance(call, dict):
            arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
            lines.append(AnswerLine(f"{speaker} -> {call.get('name')}({_cut(arguments)})"))
    return lines


def _checks(details: dict[str, Any]) -> list[AnswerLine]:
    lines = []
    for check in _list(details.get("action_checks")):
        arguments = json.dumps(check.get("arguments"), ensure_ascii=False)
        lines.append(AnswerLine(f"action {check.get('name')}({_cut(arguments)})", _met(check)))
    for check in _list(details.get("communicate_checks")):
        lines.append(AnswerLine(f"communicated {check.get('info')!r}", _met(check)))
    for check in _list(details.get("env_assertions")):
        arguments = json.dumps(check.get("arguments"), ensure_ascii=False)
        lines.append(AnswerLine(f"assertion {check.get('function')}({_cut(arguments)})", _met(check)))
    for check in _list(details.get("nl_assertions")):
        lines.append(AnswerLine(f"judged: {check.get('assertion')} ({_cut(str(check.get('justification')))})",
                                _met(check)))  # fmt: skip
    return lines


def _met(check: Any) -> AnswerMark:
    return "pass" if isinstance(check, dict) and check.get("met") is True else "fail"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."
