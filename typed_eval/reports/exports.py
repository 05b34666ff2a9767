"""Leaderboard rows as CSV and JSON, and a paired comparison of two runs as text or JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict

from typed_eval.contracts import LeaderboardRow
from typed_eval.core.terminal import json_printable, printable
from typed_eval.reports.analysis import ALPHA, Comparison
from typed_eval.reports.formatting import number, p_value, signed
from typed_eval.reports.pass_k import comparison_lines, csv_fields, csv_values
from typed_eval.reports.tables import metric_columns, pass_k_columns, row_label

__all__ = ["comparison_json", "csv_value", "render_comparison", "render_csv", "render_json"]


CSV_FIELDS = (
    "samples", "correct", "incorrect", "missing", "errors", "valid_first_try", "corrective_retries", "invalid_outputs",
    "requests", "input_tokens", "output_tokens", "cost_usd", "wall_s", "complete", "cases", "repeats",
    "score_ci95_low", "score_ci95_high", "rank_group", "chance", "favourite_position", "favourite_position_score",
    "cost_per_case_usd", "cost_per_correct_usd", "score_per_usd", "pareto", "latency_median_s", "latency_p95_s",
    "valid_after_retries", "consistency", "rate_limited", "wait_s",
)  # fmt: skip


def csv_value(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.6f}".rstrip("0")
    return value


def render_csv(rows: Sequence[LeaderboardRow]) -> str:
    """A line per run: the groups' scores, `CSV_FIELDS`, the relaxed score when a suite shows it, then each metric
    a suite shows as a column, and each again as it was with no corrective retry (`NAME_no_retry`) when a run used
    some."""
    classes = list(dict.fromkeys(name for row in rows for name in row.classes))
    metrics = [name for name in metric_columns(rows) if name not in (*CSV_FIELDS, "score_relaxed")]
    no_retry = [name for name in metrics if any(name in r.metrics_no_retry for r in rows)]
    passes = [name for column in pass_k_columns(rows) for name in csv_fields(column.header)]
    fields = (
        CSV_FIELDS
        + (("score_relaxed",) if any(r.relaxed_column for r in rows) else ())
        + tuple(metrics)
        + tuple(f"{name}_no_retry" for name in no_retry)
        + tuple(passes)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        ["rank", "suite", "model", "mode", "run_id", "status", "imported", "score", *map(printable, classes), *fields]
    )
    for r in rows:
        values = r.model_dump()
        low, high = r.score_ci95 or (None, None)
        values |= {"score_ci95_low": low, "score_ci95_high": high}
        values |= {name: r.metrics.get(name) for name in metrics}
        values |= {f"{name}_no_retry": r.metrics_no_retry.get(name, r.metrics.get(name)) for name in no_retry}
        values |= dict.fromkeys(passes) | csv_values(r.pass_k)
        writer.writerow(
            [r.rank, *map(printable, (r.suite, r.model)), r.mode, printable(r.run_id), r.status, r.imported]
            + [number(r.score)]
            + [number(r.classes.get(c)) for c in classes]
            + [csv_value(values[field]) for field in fields]
        )
    return out.getvalue()


def render_json(rows: Sequence[LeaderboardRow]) -> str:
    return json_printable(json.dumps([r.model_dump(mode="json") for r in rows], indent=2, ensure_ascii=False)) + "\n"


def comparison_json(comparison: Comparison, a: LeaderboardRow, b: LeaderboardRow) -> str:
    data = asdict(comparison) | {"a": _identity(a), "b": _identity(b)}
    data["difference_ci95"] = list(comparison.difference_ci95)
    return json_printable(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def _identity(row: LeaderboardRow) -> dict[str, object]:
    found: dict[str, object] = {"model": row.model, "mode": row.mode, "run_id": row.run_id, "path": row.path}
    passes = {"pass_k": [f.model_dump(mode="json") for f in row.pass_k]} if row.pass_k else {}
    return found | {"score": row.score} | passes


def render_comparison(comparison: Comparison, a: LeaderboardRow, b: LeaderboardRow) -> str:
    """The paired comparison in a few lines: counts, the test, and the difference with its interval."""
    c = comparison
    test = "McNemar exact" if c.test == "mcnemar" else "sign test"
    verdict = "a difference" if c.p_value < ALPHA else "no difference shown"
    lines = [
        f"A: {row_label(a)}  {number(a.score)}  [{a.run_id}]",
        f"B: {row_label(b)}  {number(b.score)}  [{b.run_id}]",
        f"paired cases {c.paired}: both right {c.both_correct}, only A {c.only_a}, only B {c.only_b}, "
        f"neither {c.neither}",
    ]
    if c.test == "sign":
        lines.append(f"A scored higher on {c.a_better} cases, B on {c.b_better}")
    lines += [
        f"{test}: p = {p_value(c.p_value)} ({verdict} at {ALPHA})",
        f"difference A - B: {signed(c.difference)} points, 95% CI {signed(c.difference_ci95[0])} to "
        f"{signed(c.difference_ci95[1])} (paired bootstrap)",
        *comparison_lines(a.pass_k, b.pass_k),
    ]
    return printable("\n".join(lines)) + "\n"
