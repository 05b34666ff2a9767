"""BFCL's verdicts (its pipeline's result and score files) beside ours (a stored run), case for case, and what
each client sent the mock for the same case.

BFCL's `bfcl evaluate` writes, per category, `score/<model dir>/<group>/BFCL_v4_<category>_score.json`: a first
line `{"accuracy", "correct_count", "total_count"}`, then one line per FAILING entry (`id`, `error_type`,
`error`, `model_result`, `decoded_result`...; multi-turn ones have the error type in `error`). Every case it
generated is in `result/<model dir>/<group>/BFCL_v4_<category>_result.json` (`id`, `result`: the calls or text
it decoded), so a case in a result file and not in the score file passed.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PREFIX = "BFCL_v4_"


@dataclass(frozen=True)
class Verdict:
    valid: bool
    error_type: str | None


@dataclass
class Side:
    """One pipeline's verdicts per case id, and its accuracy per category as it reported it."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    accuracy: dict[str, tuple[int, int]] = field(default_factory=dict)
    """category -> (correct, total)."""
    outputs: dict[str, Any] = field(default_factory=dict)


def category_of(case_id: str) -> str:
    """BFCL's rule: everything before the last `_`."""
    return case_id.rsplit("_", 1)[0]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def read_bfcl(root: Path, model_dir: str) -> Side:
    """BFCL's verdicts from its project root (BFCL_PROJECT_ROOT) after `bfcl generate` + `bfcl evaluate`."""
    side = Side()
    for path in sorted((root / "result" / model_dir).glob(f"*/{PREFIX}*_result.json")):
        for entry in _lines(path):
            side.verdicts[entry["id"]] = Verdict(True, None)
            side.outputs[entry["id"]] = entry["result"]
    for path in sorted((root / "score" / model_dir).glob(f"*/{PREFIX}*_score.json")):
        category = path.name[len(PREFIX) : -len("_score.json")]
        entries = list(_lines(path))
        header = entries[0]
        side.accuracy[category] = (int(header["correct_count"]), int(header["total_count"]))
        for entry in entries[1:]:
            error = entry.get("error")  # multi-turn entries nest the error type there
            kind = entry.get("error_type") or (error.get("error_type") if isinstance(error, dict) else None)
            side.verdicts[entry["id"]] = Verdict(False, kind)
    return side


def read_ours(records: Iterable[Any]) -> Side:
    """Our verdicts from a stored run's records (`evaluator.read_records(run_dir)`): score 1.0 or 0.0."""
    side = Side()
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        details = record.score_details or {}
        valid = record.score == 1.0
        side.verdicts[record.case_id] = Verdict(valid, None if valid else details.get("error_type"))
        side.outputs[record.case_id] = record.output
        counts[record.group or category_of(record.case_id)][0] += int(valid)
        counts[record.group or category_of(record.case_id)][1] += 1
    side.accuracy = {category: (c, t) for category, (c, t) in counts.items()}
    return side


@dataclass
class Agreement:
    same: int = 0
    valid_both: int = 0
    differ: list[tuple[str, Verdict | None, Verdict | None]] = field(default_factory=list)
    excluded: int = 0


def agreement(bfcl: Side, ours: Side, exclude: Iterable[str] = ()) -> Agreement:
    """Cases whose verdict (valid and error type) is the same on both sides; categories in `exclude` not counted."""
    skip = set(exclude)
    result = Agreement()
    for case_id in sorted(set(bfcl.verdicts) | set(ours.verdicts)):
        if category_of(case_id) in skip:
            result.excluded += 1
            continue
        theirs, mine = bfcl.verdicts.get(case_id), ours.verdicts.get(case_id)
        if theirs is not None and theirs == mine:
            result.same += 1
            result.valid_both += int(theirs.valid)
        else:
            result.differ.append((case_id, theirs, mine))
    return result


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses-API body as the chat-completions body it stands for: `input` -> `messages`, `developer` ->
    `system`, `max_output_tokens` -> `max_tokens` (the differences the API imposes, counted apart)."""
    if "input" not in body:
        return body
    chat = {k: v for k, v in body.items() if k not in ("input", "max_output_tokens")}
    chat["messages"] = [
        {**m, "role": "system"} if isinstance(m, dict) and m.get("role") == "developer" else m for m in body["input"]
    ]
    if "max_output_tokens" in body:
        chat["max_tokens"] = body["max_output_tokens"]
    return chat


def body_differences(bfcl: dict[str, Any], ours: dict[str, Any]) -> list[tuple[str, str]]:
    """Every difference between two request bodies, as (kind, example): the kind is where it lies, with list
    indexes and property names generalised (`tools[].function.parameters.properties.<p>.properties`), and for
    scalar settings both values (`temperature: BFCL 0.001 / ours 0.01`); the example is the first one seen."""
    notes = []
    if "input" in bfcl:
        kind = "endpoint: BFCL /responses (input, role developer) / ours /chat/completions (messages, role system)"
        notes.append((kind, ""))
        bfcl = as_chat(bfcl)
    bodies = [{k: v for k, v in body.items() if k != "model"} for body in (bfcl, ours)]
    for path, general, theirs, mine in _leaves("", "", *bodies):
        values = f"BFCL {_shown(theirs)} / ours {_shown(mine)}"
        if "." in general or "[" in general:
            notes.append((f"{general}: {_presence(theirs, mine)}", f"{path}: {values}"))
        else:
            notes.append((f"{general}: {values}", ""))
    return notes


ABSENT = object()


def _leaves(path: str, general: str, a: Any, b: Any) -> Iterator[tuple[str, str, Any, Any]]:
    """Where two JSON values differ: (path, generalised path, BFCL's value, ours), ABSENT where a key is missing."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            generic = f"{general}.<p>" if general.endswith("properties") else (f"{general}.{key}" if general else key)
            yield from _leaves(sub, generic, a.get(key, ABSENT), b.get(key, ABSENT))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _leaves(f"{path}[{index}]", f"{general}[]", x, y)
    elif a is ABSENT or b is ABSENT or _canonical(a) != _canonical(b):
        yield path, general, a, b


def _shown(value: Any) -> str:
    return "absent" if value is ABSENT else _canonical(value)[:200]


def _presence(theirs: Any, mine: Any) -> str:
    if theirs is ABSENT:
        return "only in ours"
    return "only in BFCL's" if mine is ABSENT else "different values"


def request_differences(
    bfcl: Iterable[tuple[str, dict[str, Any]]], ours: Iterable[tuple[str, dict[str, Any]]]
) -> tuple[int, Counter[str], dict[str, str]]:
    """Pairs the bodies each client sent for the same case, and counts each kind of difference over the pairs;
    returns the number of pairs, on how many pairs each kind is seen, and one example per kind.

    Bodies are grouped by conversation key; the few cases that share a key (same last user message and function
    names, different docs) are paired each with the body of the other side that differs from it least."""
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = defaultdict(lambda: ([], []))
    for key, body in bfcl:
        groups[key][0].append(body)
    for key, body in ours:
        groups[key][1].append(body)
    kinds: Counter[str] = Counter()
    examples: dict[str, str] = {}
    paired = 0
    for theirs, mine in groups.values():
        left = list(mine)
        for body in theirs:
            if not left:
                break
            notes = [body_differences(body, other) for other in left]
            best = min(range(len(left)), key=lambda i: len(notes[i]))
            left.pop(best)
            paired += 1
            for kind, example in notes[best]:
                examples.setdefault(kind, example)
            kinds.update({kind for kind, _ in notes[best]})
    return paired, kinds, examples
