"""Runs stored in schema version 1, when the program posed FaRel's quizzes only, read as the version-2 runs they
would have been: same counts, same scores, same ranks (`Suite.formats`).

Version 1: quizzes with `quiz_id`, `class_name`, `options`, `correct`, `answer`; scores per class. Version 2 (typed
tasks): cases with `case_id`, `group`, `expected`, `metadata`, `output`, `score`; scores per group.
"""

from __future__ import annotations

from typing import Any

from typed_eval.core.suite import StoredFormat

__all__ = ["STORED_V1", "record_1_to_2", "summary_1_to_2"]

JsonObject = dict[str, Any]


def record_1_to_2(old: JsonObject) -> JsonObject:
    status = old["status"]
    correct = old["correct"]
    metadata: JsonObject = {"options": old["options"]}
    if old.get("degree") is not None:
        metadata["degree"] = old["degree"]
    answer = old.get("answer")
    output: Any = None
    if answer is not None and old["mode"] == "tag":
        output = answer
    elif answer is not None:
        output = {"reasoning": old.get("reasoning"), "answer": int(answer)}
    relaxed = old.get("relaxed_answer")
    new: JsonObject = {
        "case_id": old["quiz_id"],
        "group": old["class_name"],
        "expected": correct,
        "metadata": metadata,
        "excluded": old.get("ambiguous", False),
        "mode": old["mode"],
        "status": status,
        "output": output,
        "score": {"correct": 1.0, "incorrect": 0.0}.get(status),
        "relaxed_output": relaxed,
        "relaxed_score": (1.0 if relaxed == str(correct) else 0.0) if relaxed is not None else None,
        "attempts": [{k: v for k, v in attempt.items() if k != "answer"} for attempt in old["attempts"]],
    }
    kept = ("corrective_retries", "usage", "cost", "latency_s", "transport_retries", "cache_hits", "error")
    new.update({key: old[key] for key in kept if key in old})
    return new


def _group_1_to_2(old: JsonObject) -> JsonObject:
    return {
        "group": old["class_name"],
        "correct": old.get("correct", 0),
        "incorrect": old.get("incorrect", 0),
        "missing": old.get("missing", 0),
        "errors": old.get("errors", 0),
        "excluded": old.get("ambiguous", 0),
        "score": old.get("accuracy"),
    }


def summary_1_to_2(old: JsonObject) -> JsonObject:
    new = dict(old)
    new["schema_version"] = 2
    new["suite"] = "farel"
    new["task"] = "farel"
    new["excluded_case_ids"] = new.pop("ambiguous_quiz_ids", [])
    dataset = dict(old["dataset"])
    params = {key: dataset.pop(key) for key in ("length", "number", "seed", "shuffle") if key in dataset}
    dataset["params"] = {key: value for key, value in params.items() if value is not None}
    dataset["cases"] = dataset.pop("quizzes")
    dataset["suite"] = "farel"
    new["dataset"] = dataset
    scores = dict(old["scores"])
    groups = [_group_1_to_2(c) for c in scores.pop("classes")]
    scored = sum(g["correct"] + g["incorrect"] + g["missing"] for g in groups)
    macro = scores.pop("macro_accuracy")
    scores.update(
        groups=groups,
        score=macro,
        aggregate="macro",
        macro_score=macro,
        mean_score=100 * sum(g["correct"] for g in groups) / scored if scored else None,
        excluded=scores.pop("ambiguous", 0),
    )
    new["scores"] = scores
    return new


STORED_V1 = StoredFormat(version=1, summary=summary_1_to_2, record=record_1_to_2, record_start='{"quiz_id":')
"""Every version-1 record line starts with its quiz's id (a run resumed after the upgrade holds v2 lines after them)."""
