"""How a story's graph is scored: edges and members found, invalid and missed, against the expected graph (edges
80%, members 20%); how an answer is shown edge by edge; and the run's edge precision, recall and F1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from typed_eval.contracts import Case, SampleRecord
from typed_eval.core.suite import AnswerLine, AnswerMark, answer_lines
from typed_eval.core.tasks import Score
from typed_eval.suites.story_graph.graph import (
    Edge,
    ExpectedGraph,
    Member,
    Relation,
    StoryGraph,
    Title,
)

__all__ = ["EDGE_WEIGHT", "MEMBER_WEIGHT", "grade", "graph_metrics", "show_graph"]


EDGE_WEIGHT = 0.8
MEMBER_WEIGHT = 0.2

_EdgeKey = tuple[str, Relation, str]
_MemberKey = tuple[str, Title]


def _spaced(name: str) -> str:
    return " ".join(name.split())


def _key(name: str) -> str:
    """Names match whatever their case and their surrounding or repeated whitespace."""
    return _spaced(name).casefold()


def _edge_table(edges: Sequence[Edge]) -> dict[_EdgeKey, str]:
    """Distinct edges (notes ignored), in first-seen order, each with how it reads."""
    table: dict[_EdgeKey, str] = {}
    for edge in edges:
        key = (_key(edge.source), edge.relation, _key(edge.target))
        table.setdefault(key, f"{_spaced(edge.source)} -{edge.relation.value}-> {_spaced(edge.target)}")
    return table


def _member_table(members: Sequence[Member]) -> dict[_MemberKey, str]:
    table: dict[_MemberKey, str] = {}
    for member in members:
        table.setdefault((_key(member.name), member.title), f"{_spaced(member.name)} ({member.title.value})")
    return table


def _part(found: int, expected: int, invalid: int, given: int, weight: float) -> float:
    """found / expected x (1 - invalid / given) x weight; a factor whose denominator is 0 is 1."""
    recall = found / expected if expected else 1.0
    purity = 1 - invalid / given if given else 1.0
    return recall * purity * weight


def _expected_graph(case: Case) -> ExpectedGraph:
    """The case's expected graph (read back from JSON when the case was)."""
    if isinstance(case.expected, ExpectedGraph):
        return case.expected
    return ExpectedGraph.model_validate(case.expected)


@dataclass(frozen=True)
class _Compared:
    """An output graph against the expected one, each edge and member as it reads (`Anna -parent-> Mia`,
    `Anna (treasurer)`): what `grade` counts and the case viewer shows, so the two never disagree."""

    valid: list[str]
    optional: list[str]
    invalid: list[str]
    missing: list[str]
    output_edges: int
    expected_edges: int
    found: list[str]
    extra: list[str]
    absent: list[str]
    output_members: int
    expected_members: int


def _compared(expected: ExpectedGraph, output: StoryGraph) -> _Compared:
    """Output edges that are required are valid, those that are optional are allowed, the rest invalid; required
    edges not given are missing. Each list sorted, members likewise."""
    required = _edge_table(expected.edges)
    optional = {key: text for key, text in _edge_table(expected.optional_edges).items() if key not in required}
    given = _edge_table(output.edges)
    members = _member_table(expected.members)
    listed = _member_table(output.members)
    return _Compared(
        valid=sorted(text for key, text in given.items() if key in required),
        optional=sorted(text for key, text in given.items() if key not in required and key in optional),
        invalid=sorted(text for key, text in given.items() if key not in required and key not in optional),
        missing=sorted(text for key, text in required.items() if key not in given),
        output_edges=len(given),
        expected_edges=len(required),
        found=sorted(text for key, text in listed.items() if key in members),
        extra=sorted(text for key, text in listed.items() if key not in members),
        absent=sorted(text for key, text in members.items() if key not in listed),
        output_members=len(listed),
        expected_members=len(members),
    )


def grade(case: Case, output: StoryGraph) -> Score:
    """WeiXiaoTien's score of a story graph.

    The output is deduplicated first: edges that are the same (source, relation, target) after names are
    normalised (case, surrounding and repeated whitespace) count once, whatever their notes, and so do
    repeated (name, title) members. Output edges that are required are valid, those that are optional (a
    reading of an ambiguous relation) are neither rewarded nor penalised, the rest are invalid; the optional
    ones still count in the output edges:

        value = valid / expected x (1 - invalid / output_edges) x 0.8
              + found / expected_members x (1 - invalid_members / output_members) x 0.2
    """
    seen = _compared(_expected_graph(case), output)
    value = _part(len(seen.valid), seen.expected_edges, len(seen.invalid), seen.output_edges, EDGE_WEIGHT) + _part(
        len(seen.found), seen.expected_members, len(seen.extra), seen.output_members, MEMBER_WEIGHT
    )
    details: dict[str, Any] = {
        "expected_edges": seen.expected_edges,
        "valid_edges": len(seen.valid),
        "optional_edges": len(seen.optional),
        "invalid_edges": len(seen.invalid),
        "output_edges": seen.output_edges,
        "expected_members": seen.expected_members,
        "found_members": len(seen.found),
        "invalid_members": len(seen.extra),
        "output_members": seen.output_members,
        "invalid": seen.invalid,
        "missing": seen.missing,
        "missing_members": seen.absent,
        "invalid_members_list": seen.extra,
    }
    return Score(value, details)


def show_graph(record: SampleRecord) -> list[AnswerLine]:
    """The graph's edges valid, optional (unmarked), invalid, then missing, and its members likewise, so what cost
    the score stands out. Compared again as `grade` compares (its details count valid edges without naming them); a
    record that holds no graph is shown as the default view shows it."""
    try:
        seen = _compared(ExpectedGraph.model_validate(record.expected), StoryGraph.model_validate(record.output))
    except ValidationError:
        return answer_lines(None, record)
    marked: list[tuple[list[str], AnswerMark | None, str]] = [
        (seen.valid, "valid", ""),
        (seen.optional, None, " (optional)"),
        (seen.invalid, "invalid", ""),
        (seen.missing, "missing", ""),
        (seen.found, "valid", ""),
        (seen.extra, "invalid", ""),
        (seen.absent, "missing", ""),
    ]
    return [AnswerLine(text + suffix, mark) for texts, mark, suffix in marked for text in texts]


def graph_metrics(totals: Mapping[str, float]) -> dict[str, float]:
    """Edge precision, recall and F1 in percent over a run, from the summed counts of `grade`'s details.

    Precision leaves the optional edges out (valid / (output - optional)); F1 is their harmonic mean,
    computed as 2 valid / (judged output + expected) so that it is 0, not missing, when nothing is valid.
    A figure whose denominator is 0 is left out.
    """
    valid = totals.get("valid_edges", 0.0)
    judged = totals.get("output_edges", 0.0) - totals.get("optional_edges", 0.0)
    expected = totals.get("expected_edges", 0.0)
    metrics: dict[str, float] = {}
    if judged > 0:
        metrics["edge_precision"] = 100 * valid / judged
    if expected > 0:
        metrics["edge_recall"] = 100 * valid / expected
    if judged > 0 and expected > 0:
        metrics["edge_f1"] = 100 * 2 * valid / (judged + expected)
    return metrics
