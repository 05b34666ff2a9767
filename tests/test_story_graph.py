"""The story-graph suite: byte-identical generation in any process, the traps every story carries, WeiXiaoTien's
score on hand-made outputs, the run-wide metrics, and a perfect answer through pydantic-ai's real agent loop."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from fractions import Fraction
from typing import Any

import pytest
from pydantic_ai import Agent, ModelMessage, ModelResponse, ToolCallPart, ToolOutput
from pydantic_ai.models.function import AgentInfo, FunctionModel

from typed_eval.contracts import Case
from typed_eval.suites.story_graph.suite import (
    KINSHIP_TITLES,
    TASK,
    Edge,
    ExpectedGraph,
    Member,
    Relation,
    StoryGraph,
    Title,
    generate_cases,
    grade,
    graph_metrics,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MD5_6_3_7 = "b6744040a65c5174724f04f29364bee7"
"""MD5 of `generate_cases(6, 3, 7)` as JSON lines: changes only when the generator does."""

SIZES = (4, 6, 10, 20)
SEEDS = (1, 2, 3, 42)

PARENTAL = (Relation.PARENT, Relation.ADOPTIVE_PARENT, Relation.FOSTER_PARENT)


def jsonl(cases: list[Case]) -> bytes:
    return "".join(c.model_dump_json() + "\n" for c in cases).encode("utf-8")


def expected_of(case: Case) -> ExpectedGraph:
    assert isinstance(case.expected, ExpectedGraph)
    return case.expected


def story_of(case: Case) -> str:
    assert case.prompt.startswith("Story:\n")
    return case.prompt.split("\n\n")[0]


# --- determinism ----------------------------------------------------------------------------------------------


def test_same_arguments_give_the_same_bytes() -> None:
    first, second = jsonl(generate_cases(6, 3, 7)), jsonl(generate_cases(6, 3, 7))
    assert first == second
    assert hashlib.md5(first).hexdigest() == MD5_6_3_7


def test_same_bytes_in_a_fresh_process_with_another_hash_seed() -> None:
    code = (
        "import hashlib\n"
        "from typed_eval.suites.story_graph.suite import generate_cases\n"
        "data = ''.join(c.model_dump_json() + '\\n' for c in generate_cases(6, 3, 7)).encode('utf-8')\n"
        "print(hashlib.md5(data).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "123"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == MD5_6_3_7


def test_different_seeds_and_sizes_differ() -> None:
    seven = jsonl(generate_cases(6, 3, 7))
    assert jsonl(generate_cases(6, 3, 8)) != seven
    assert jsonl(generate_cases(7, 3, 7)) != seven
    prompts = [c.prompt for c in generate_cases(6, 3, 7)]
    assert len(set(prompts)) == 3


def test_ids_groups_and_metadata() -> None:
    cases = generate_cases(6, 3, 7)
    assert [c.id for c in cases] == ["story-7-1", "story-7-2", "story-7-3"]
    assert {c.group for c in cases} == {"6 people"}
    for case in cases:
        expected = expected_of(case)
        assert case.metadata["people"] == 6
        assert case.metadata["seed"] == 7
        assert case.metadata["edges"] == len(expected.edges)
        assert case.metadata["optional_edges"] == len(expected.optional_edges)
        assert case.metadata["members"] == len(expected.members)
        assert len(case.metadata["names"]) == 6
        assert not case.excluded


@pytest.mark.parametrize("people", [3, 0, -1])
def test_fewer_than_four_people_is_an_error(people: int) -> None:
    with pytest.raises(ValueError, match=f"^story-graph needs at least 4 named people per story, got {people}$"):
        generate_cases(people, 1, 1)


def test_too_many_people_or_no_stories_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"^story-graph has names for at most 40 people per story, got 41$"):
        generate_cases(41, 1, 1)
    with pytest.raises(ValueError, match="at least 1 story, got 0"):
        generate_cases(6, 0, 1)


# --- what every story carries ---------------------------------------------------------------------------------


def all_cases() -> list[Case]:
    return [case for people in SIZES for seed in SEEDS for case in generate_cases(people, 3, seed)]


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return all_cases()


def test_named_people_of_every_edge_are_in_the_story(cases: list[Case]) -> None:
    for case in cases:
        expected, story = expected_of(case), story_of(case)
        names = case.metadata["names"]
        assert len(names) == len(set(names)) == case.metadata["people"]
        for edge in expected.edges + expected.optional_edges:
            assert edge.source in names and edge.target in names
            assert edge.source in story and edge.target in story
            assert edge.source != edge.target
        for name in names:  # every named character is in the family graph
            assert any(name in (e.source, e.target) for e in expected.edges)


def test_unnamed_characters_are_in_the_story_but_in_no_edge(cases: list[Case]) -> None:
    for case in cases:
        expected, story = expected_of(case), story_of(case)
        unnamed = case.metadata["unnamed"]
        assert len(unnamed) == (1 if case.metadata["people"] < 10 else 2)
        for phrase in unnamed:
            name, kin = phrase.split("'s ")
            assert f"{name}'s {kin}" in story or f"{name} never learned the name of" in story
            assert "whose name" in story or "name of" in story
            ends = [name for e in expected.edges + expected.optional_edges for name in (e.source, e.target)]
            assert phrase not in ends
            assert all("'s" not in name and " " not in name for name in ends)
            assert kin in ("mother", "father", "birth mother", "birth father")
            assert name in case.metadata["names"]


def test_every_edge_has_its_reverse(cases: list[Case]) -> None:
    reverse = {
        Relation.PARENT: Relation.CHILD,
        Relation.CHILD: Relation.PARENT,
        Relation.ADOPTIVE_PARENT: Relation.ADOPTED_CHILD,
        Relation.ADOPTED_CHILD: Relation.ADOPTIVE_PARENT,
        Relation.FOSTER_PARENT: Relation.FOSTER_CHILD,
        Relation.FOSTER_CHILD: Relation.FOSTER_PARENT,
        Relation.SIBLING: Relation.SIBLING,
        Relation.SPOUSE: Relation.SPOUSE,
        Relation.OTHER: Relation.OTHER,
    }
    for case in cases:
        expected = expected_of(case)
        for edges in (expected.edges, expected.optional_edges):
            keys = [(e.source, e.relation, e.target) for e in edges]
            assert len(keys) == len(set(keys))
            for source, relation, target in keys:
                assert (target, reverse[relation], source) in keys
        required = {(e.source, e.relation, e.target) for e in expected.edges}
        assert not required & {(e.source, e.relation, e.target) for e in expected.optional_edges}


def test_every_story_has_adoption_fostering_a_spouse_and_an_ambiguous_relation(cases: list[Case]) -> None:
    for case in cases:
        expected, story = expected_of(case), story_of(case)
        relations = {e.relation for e in expected.edges}
        assert {Relation.SPOUSE, Relation.PARENT, Relation.ADOPTIVE_PARENT, Relation.FOSTER_PARENT} <= relations
        if case.metadata["people"] >= 6:
            assert Relation.SIBLING in relations
        assert "adopt" in story and "foster" in story
        assert len(expected.optional_edges) in (2, 4)
        markers = ("whom some call", "some say", "half the town says", "nobody in town agrees", "though others say")
        assert sum(story.lower().count(marker) for marker in markers) == 1


def test_kinship_sounding_titles_are_in_the_story_held_by_those_who_lack_that_kinship(cases: list[Case]) -> None:
    for case in cases:
        expected, story = expected_of(case), story_of(case)
        assert expected.group in story and expected.group in case.prompt.split("\n\n", 1)[1]
        assert 2 <= len(expected.members) <= 5
        assert (
            len({m.name for m in expected.members}) == len({m.title for m in expected.members}) == len(expected.members)
        )
        kinship = [m for m in expected.members if m.title in KINSHIP_TITLES]
        assert kinship
        for member in expected.members:
            assert member.name in story
            assert member.title.value in story.lower()
        for member in kinship:
            edges = [e for e in expected.edges + expected.optional_edges if e.source == member.name]
            if member.title == Title.ELDER_BROTHER:
                assert all(e.relation != Relation.SIBLING for e in edges)
            else:
                assert all(e.relation not in PARENTAL for e in edges)


def test_the_prompt_asks_for_both_directions_and_the_group() -> None:
    case = generate_cases(8, 1, 5)[0]
    question = case.prompt.split("\n\n", 1)[1]
    assert "both directions" in question
    assert "A parent B together with B child A" in question
    assert "A foster_parent B with B foster_child A" in question
    assert f"members of the {expected_of(case).group} with their titles" in question
    for relation in Relation:
        assert f"{relation.value}:" in question


def test_a_perfect_output_scores_one_on_generated_cases(cases: list[Case]) -> None:
    for case in cases:
        expected = expected_of(case)
        score = grade(case, StoryGraph(edges=expected.edges, members=expected.members))
        assert score.value == 1.0
        assert score.details["invalid"] == score.details["missing"] == []
        with_optional = StoryGraph(edges=expected.edges + expected.optional_edges, members=expected.members)
        assert grade(case, with_optional).value == 1.0


# --- WeiXiaoTien's score on hand-made outputs -----------------------------------------------------------------


def edge(source: str, relation: str, target: str, note: str | None = None) -> Edge:
    return Edge(source=source, relation=Relation(relation), target=target, note=note)


REQUIRED = [
    edge("Anna", "spouse", "Bertil"),
    edge("Bertil", "spouse", "Anna"),
    edge("Anna", "parent", "Mia"),
    edge("Mia", "child", "Anna"),
    edge("Bertil", "foster_parent", "Leo"),
    edge("Leo", "foster_child", "Bertil"),
]
OPTIONAL = [
    edge("Mia", "sibling", "Leo"),
    edge("Leo", "sibling", "Mia"),
    edge("Mia", "other", "Leo"),
    edge("Leo", "other", "Mia"),
]
MEMBERS = [Member(name="Anna", title=Title.TREASURER), Member(name="Leo", title=Title.MOTHER_OF_THE_HALL)]
TINY = Case(
    id="tiny",
    prompt="(hand-made)",
    expected=ExpectedGraph(group="Order of Tests", edges=REQUIRED, optional_edges=OPTIONAL, members=MEMBERS),
)


def test_perfect_output() -> None:
    score = grade(TINY, StoryGraph(edges=REQUIRED, members=MEMBERS))
    assert score.value == 1.0
    assert score.details == {
        "expected_edges": 6,
        "valid_edges": 6,
        "optional_edges": 0,
        "invalid_edges": 0,
        "output_edges": 6,
        "expected_members": 2,
        "found_members": 2,
        "invalid_members": 0,
        "output_members": 2,
        "invalid": [],
        "missing": [],
        "missing_members": [],
        "invalid_members_list": [],
    }


def test_worked_example_optional_edges_count_in_the_output_only() -> None:
    """9 output edges: 4 valid, 3 optional, 2 invalid: 4/6 x (1 - 2/9) x 0.8, plus all members (0.2)."""
    edges = [
        *REQUIRED[:4],
        *OPTIONAL[:3],
        edge("Mia", "parent", "Anna"),
        edge("Anna", "parent", "Leo", note="Mother of the Hall?"),
    ]
    score = grade(TINY, StoryGraph(edges=edges, members=MEMBERS))
    exact = Fraction(4, 6) * (1 - Fraction(2, 9)) * Fraction(8, 10) + Fraction(2, 10)
    assert score.value == pytest.approx(float(exact), rel=1e-12)
    assert score.value == pytest.approx(0.6148148148148148, rel=1e-12)
    details = score.details
    assert (details["expected_edges"], details["valid_edges"], details["optional_edges"]) == (6, 4, 3)
    assert (details["invalid_edges"], details["output_edges"]) == (2, 9)
    assert details["invalid"] == ["Anna -parent-> Leo", "Mia -parent-> Anna"]
    assert details["missing"] == ["Bertil -foster_parent-> Leo", "Leo -foster_child-> Bertil"]


def test_a_missing_member_and_an_extra_member() -> None:
    members = [Member(name="Anna", title=Title.TREASURER), Member(name="Pia", title=Title.STEWARD)]
    score = grade(TINY, StoryGraph(edges=REQUIRED, members=members))
    assert score.value == pytest.approx(float(Fraction(8, 10) + Fraction(1, 2) * Fraction(1, 2) * Fraction(2, 10)))
    assert score.value == pytest.approx(0.85, rel=1e-12)
    assert score.details["found_members"] == 1
    assert score.details["invalid_members"] == 1
    assert score.details["output_members"] == 2
    assert score.details["missing_members"] == ["Leo (mother of the hall)"]
    assert score.details["invalid_members_list"] == ["Pia (steward)"]


def test_a_member_with_the_wrong_title_is_both_missing_and_invalid() -> None:
    members = [MEMBERS[0], Member(name="Leo", title=Title.ELDER_BROTHER)]
    score = grade(TINY, StoryGraph(edges=REQUIRED, members=members))
    assert score.value == pytest.approx(0.8 + 0.5 * 0.5 * 0.2, rel=1e-12)
    assert score.details["missing_members"] == ["Leo (mother of the hall)"]
    assert score.details["invalid_members_list"] == ["Leo (elder brother)"]


def test_empty_output_scores_zero() -> None:
    score = grade(TINY, StoryGraph(edges=[], members=[]))
    assert score.value == 0.0
    assert score.details["output_edges"] == score.details["valid_edges"] == score.details["invalid_edges"] == 0
    assert score.details["output_members"] == score.details["found_members"] == 0
    assert len(score.details["missing"]) == 6
    assert score.details["missing_members"] == ["Anna (treasurer)", "Leo (mother of the hall)"]


def test_only_optional_edges_score_nothing_for_edges() -> None:
    score = grade(TINY, StoryGraph(edges=OPTIONAL, members=MEMBERS))
    assert score.value == pytest.approx(0.2, rel=1e-12)
    assert score.details["optional_edges"] == 4
    assert score.details["output_edges"] == 4


def test_duplicate_edges_and_members_count_once() -> None:
    edges = [*REQUIRED, *REQUIRED, edge("Anna", "spouse", "Bertil", note="married"), edge("mia", "child", "ANNA")]
    score = grade(TINY, StoryGraph(edges=edges, members=MEMBERS + MEMBERS))
    assert score.value == 1.0
    assert score.details["output_edges"] == 6
    assert score.details["valid_edges"] == 6
    assert score.details["output_members"] == 2

    invalid = [*REQUIRED, edge("Leo", "parent", "Mia"), edge(" leo ", "parent", "MIA")]
    score = grade(TINY, StoryGraph(edges=invalid, members=MEMBERS))
    assert score.details["output_edges"] == 7
    assert score.details["invalid"] == ["Leo -parent-> Mia"]
    assert score.value == pytest.approx(float(Fraction(6, 7) * Fraction(8, 10) + Fraction(2, 10)), rel=1e-12)


def test_names_match_whatever_their_case_and_whitespace() -> None:
    edges = [
        Edge(source=f"  {e.source.upper()} ", relation=e.relation, target=f"{e.target.lower()}\t") for e in REQUIRED
    ]
    members = [Member(name=" anna", title=Title.TREASURER), Member(name="LEO  ", title=Title.MOTHER_OF_THE_HALL)]
    assert grade(TINY, StoryGraph(edges=edges, members=members)).value == 1.0

    two_words = Case(
        id="two-words",
        prompt="(hand-made)",
        expected=ExpectedGraph(
            group="Order of Tests",
            edges=[edge("Anna Maria", "sibling", "Jon"), edge("Jon", "sibling", "Anna Maria")],
            members=[Member(name="Anna Maria", title=Title.LEADER)],
        ),
    )
    output = StoryGraph(
        edges=[edge(" anna   MARIA ", "sibling", "jon"), edge("JON", "sibling", "Anna\nMaria")],
        members=[Member(name="anna  maria", title=Title.LEADER)],
    )
    assert grade(two_words, output).value == 1.0
    assert grade(two_words, StoryGraph(edges=[edge("AnnaMaria", "sibling", "Jon")], members=[])).value == 0.0


def test_the_expected_graph_read_back_from_json_scores_the_same() -> None:
    case = generate_cases(6, 1, 11)[0]
    stored = Case.model_validate_json(case.model_dump_json())
    assert isinstance(stored.expected, dict)
    expected = expected_of(case)
    output = StoryGraph(edges=expected.edges[2:], members=expected.members[:1])
    assert grade(stored, output) == grade(case, output)
    assert TINY.model_dump_json()  # hand-made expected graphs are stored as JSON too


def test_scores_stay_in_range_and_are_task_valid() -> None:
    score = asyncio.run(TASK.grade(TINY, StoryGraph(edges=REQUIRED, members=MEMBERS)))
    assert score.value == 1.0
    assert TASK.name == "story-graph"
    assert TASK.tool_name == "submit_graph"


# --- run-wide metrics -----------------------------------------------------------------------------------------


def test_graph_metrics_exact_values() -> None:
    totals = {"valid_edges": 30.0, "output_edges": 45.0, "optional_edges": 5.0, "expected_edges": 50.0, "x": 1.0}
    metrics = graph_metrics(totals)
    assert metrics == {
        "edge_precision": 75.0,
        "edge_recall": 60.0,
        "edge_f1": pytest.approx(200 / 3, rel=1e-12),
    }
    assert metrics["edge_f1"] == pytest.approx(2 * 75.0 * 60.0 / (75.0 + 60.0), rel=1e-12)


def test_graph_metrics_skip_a_zero_denominator() -> None:
    assert graph_metrics({}) == {}
    only_optional = {"valid_edges": 0.0, "output_edges": 3.0, "optional_edges": 3.0, "expected_edges": 4.0}
    assert graph_metrics(only_optional) == {"edge_recall": 0.0}
    nothing_valid = {"valid_edges": 0.0, "output_edges": 2.0, "optional_edges": 0.0, "expected_edges": 4.0}
    assert graph_metrics(nothing_valid) == {"edge_precision": 0.0, "edge_recall": 0.0, "edge_f1": 0.0}


def test_graph_metrics_from_summed_score_details() -> None:
    outputs = [
        StoryGraph(edges=REQUIRED, members=MEMBERS),
        StoryGraph(edges=[*REQUIRED[:4], *OPTIONAL[:3], edge("Mia", "parent", "Anna")], members=MEMBERS),
    ]
    totals: dict[str, float] = {}
    for output in outputs:
        for key, value in grade(TINY, output).details.items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    assert totals["valid_edges"] == 10 and totals["output_edges"] == 14 and totals["optional_edges"] == 3
    metrics = graph_metrics(totals)
    assert metrics["edge_precision"] == pytest.approx(100 * 10 / 11, rel=1e-12)
    assert metrics["edge_recall"] == pytest.approx(100 * 10 / 12, rel=1e-12)
    assert metrics["edge_f1"] == pytest.approx(100 * 20 / 23, rel=1e-12)


# --- the real agent loop --------------------------------------------------------------------------------------


def test_a_perfect_tool_call_through_the_agent_loop_scores_one() -> None:
    case = generate_cases(6, 1, 7)[0]
    expected = expected_of(case)
    perfect: dict[str, Any] = StoryGraph(edges=expected.edges, members=expected.members).model_dump(mode="json")
    seen: list[AgentInfo] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[ToolCallPart("submit_graph", perfect)])

    agent = Agent(FunctionModel(answer), output_type=ToolOutput(StoryGraph, name="submit_graph"))
    result = asyncio.run(agent.run(case.prompt))
    assert isinstance(result.output, StoryGraph)
    assert grade(case, result.output).value == 1.0

    [tool] = seen[0].output_tools
    assert tool.name == "submit_graph"
    schema = tool.parameters_json_schema
    assert set(schema["properties"]) == {"edges", "members"}
    text = str(schema)
    assert all(relation.value in text for relation in Relation)
    assert all(title.value in text for title in Title)
