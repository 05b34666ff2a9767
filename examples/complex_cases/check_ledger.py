"""The ledger test's python assertion (promptfoo's `get_assert`): half for the entries, half for the net amount."""

from __future__ import annotations

from typing import Any

EXPECTED_REFERENCES = {"NG-214-448", "NG-216-662", "NG-220-886", "NG-227-162"}
EXPECTED_NET_EUR = 2708.00


def get_assert(output: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    entries = output.get("entries") or []
    found = {entry.get("reference") for entry in entries if isinstance(entry, dict)}
    right = len(found & EXPECTED_REFERENCES)
    wrong = len(found - EXPECTED_REFERENCES)
    entries_score = max(right - wrong, 0) / len(EXPECTED_REFERENCES)
    net = output.get("net_eur")
    net_score = 1.0 if isinstance(net, int | float) and abs(net - EXPECTED_NET_EUR) < 0.005 else 0.0
    score = 0.5 * entries_score + 0.5 * net_score
    reason = f"{right} of {len(EXPECTED_REFERENCES)} entries, {wrong} wrong; net {net}, expected {EXPECTED_NET_EUR:.2f}"
    return {"pass": score == 1.0, "score": score, "reason": reason}
