"""The story-graph suite: short stories whose relationship graph the model must extract through a typed tool call.

Why: a nested output (a list of typed edges whose relation comes from an enum, plus a list of typed members)
is where tool-calling models fail most, and a family story is where they are most tempted to answer from
habit instead of from the text. Each story is generated from a seeded random family, so it cannot have been
memorised, and carries the traps of WeiXiaoTien's story: guild titles that sound like kinship ("the guild's
fourteenth lady", "Mother of the Hall") held by characters who are nobody's mother, adoptive and foster
relations next to biological ones, characters referred to but never named ("Mara's mother, whose name nobody
remembers"), relations stated from either side ("Anna raised her son Tomas", "Tomas is Anna's boy"), a second
group whose members are not asked for, and one relation the story leaves ambiguous on purpose (either reading
is an optional edge: neither rewarded nor penalised).

The expected graph lists every stated relation in both directions (the prompt says so); the score is
WeiXiaoTien's: valid edges / expected edges x (1 - invalid edges / output edges) x 0.8, plus members found /
expected members x (1 - invalid members / output members) x 0.2. `graph_metrics` turns the edge counts summed
over a run into edge precision, recall and F1.

The same `generate_cases(people, count, seed)` gives byte-identical cases in any process: one
`random.Random(seed)` drives everything, in a fixed order, and nothing depends on set order or `hash()`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from typed_eval.core.datasets import Dataset, dataset_from_cases
from typed_eval.core.errors import InputError
from typed_eval.core.suite import AnswerLine, AnswerMark, Suite, SuiteFlag, answer_lines
from typed_eval.core.tasks import Score, Task
from typed_eval.schemas import AnswerMode, Case, SampleRecord
from typed_eval.suites.flags import positive

__all__ = [
    "KINSHIP_TITLES",
    "MAX_PEOPLE",
    "MIN_PEOPLE",
    "TASK",
    "Edge",
    "ExpectedGraph",
    "Member",
    "Relation",
    "StoryGraph",
    "Title",
    "generate_cases",
    "grade",
    "graph_metrics",
    "show_graph",
]

# --- output types (they become the tool's JSON schema) --------------------------------------------------------


class Relation(StrEnum):
    """What the source of an edge is to its target: "source is the RELATION of target"."""

    PARENT = "parent"
    CHILD = "child"
    SIBLING = "sibling"
    SPOUSE = "spouse"
    ADOPTIVE_PARENT = "adoptive_parent"
    ADOPTED_CHILD = "adopted_child"
    FOSTER_PARENT = "foster_parent"
    FOSTER_CHILD = "foster_child"
    OTHER = "other"


REVERSE: dict[Relation, Relation] = {
    Relation.PARENT: Relation.CHILD,
    Relation.CHILD: Relation.PARENT,
    Relation.SIBLING: Relation.SIBLING,
    Relation.SPOUSE: Relation.SPOUSE,
    Relation.ADOPTIVE_PARENT: Relation.ADOPTED_CHILD,
    Relation.ADOPTED_CHILD: Relation.ADOPTIVE_PARENT,
    Relation.FOSTER_PARENT: Relation.FOSTER_CHILD,
    Relation.FOSTER_CHILD: Relation.FOSTER_PARENT,
    Relation.OTHER: Relation.OTHER,
}
"""The same fact read from the target's side."""


class Edge(BaseModel):
    """One directed relation between two characters the story names: "source is the RELATION of target"."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Name of a character the story names, spelled as in the story.")
    relation: Relation = Field(
        description="What the source is to the target: parent / child (biological), sibling, spouse, "
        "adoptive_parent (source adopted target) / adopted_child, foster_parent (source took target in as a "
        "foster child) / foster_child, or other (any other stated relation, described in note)."
    )
    target: str = Field(description="Name of a character the story names, spelled as in the story.")
    note: str | None = Field(default=None, description="For relation `other`: what the relation is (free text).")


class Title(StrEnum):
    """The titles the groups of the stories give their members (ranks, whatever they sound like)."""

    LEADER = "leader"
    TREASURER = "treasurer"
    SCRIBE = "scribe"
    KEEPER_OF_THE_KEYS = "keeper of the keys"
    STEWARD = "steward"
    FOURTEENTH_LADY = "fourteenth lady"
    MOTHER_OF_THE_HALL = "mother of the hall"
    ELDER_BROTHER = "elder brother"


KINSHIP_TITLES: tuple[Title, ...] = (Title.FOURTEENTH_LADY, Title.MOTHER_OF_THE_HALL, Title.ELDER_BROTHER)
"""Titles that sound like kinship: the stories give them only to characters who lack that kinship."""


class Member(BaseModel):
    """A member of the group the question names, with the title the member holds in it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The member's name, spelled as in the story.")
    title: Title = Field(description="The title the member holds in the group the question names.")


class StoryGraph(BaseModel):
    """The relationship graph of a story and the members of the group the question names."""

    model_config = ConfigDict(extra="forbid")

    edges: list[Edge] = Field(
        description="Every relation the story states between two named characters, each in both directions "
        "(A parent B and B child A, A sibling B and B sibling A, ...)."
    )
    members: list[Member] = Field(description="Every member of the group the question names, with their title.")


class ExpectedGraph(BaseModel):
    """What a right output looks like (a case's `expected`): required and optional edges, the group's members."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(description="The name of the group whose members are asked for.")
    edges: list[Edge] = Field(description="Every stated relation, in both directions: each one is required.")
    optional_edges: list[Edge] = Field(
        default_factory=list,
        description="Both readings of the relations the story leaves ambiguous: neither rewarded nor penalised.",
    )
    members: list[Member] = Field(description="The group's members with their titles.")


# --- scoring --------------------------------------------------------------------------------------------------

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


# --- the generator --------------------------------------------------------------------------------------------

MIN_PEOPLE = 4
MAX_PEOPLE = 40

_FEMALE = (
    "Anna", "Mara", "Lena", "Pia", "Ilse", "Nora", "Vera", "Greta", "Hedda", "Marta", "Sofia", "Tilde", "Agnes",
    "Edith", "Freya", "Ida", "Jolanda", "Katla", "Linnea", "Maud", "Nadia", "Olga", "Petra", "Quilla", "Runa",
    "Selma", "Thora", "Ulla", "Wanda", "Yara", "Zelda", "Astrid", "Brigid", "Dagny", "Elsa", "Fenna", "Gudrun",
    "Hilde", "Inga", "Jorun", "Kirsi", "Ragna", "Mette", "Nell", "Orla", "Rika", "Sigrid", "Tove", "Ebba",
    "Vibeke",
)  # fmt: skip
_MALE = (
    "Tomas", "Bertil", "Leo", "Anders", "Bruno", "Caspar", "Dario", "Emil", "Felix", "Gunnar", "Hakon", "Ivar",
    "Jonas", "Karel", "Lars", "Magnus", "Nils", "Otto", "Pavel", "Rasmus", "Stellan", "Tobias", "Ulf", "Viggo",
    "Wilhelm", "Yannick", "Aksel", "Bjorn", "Conrad", "Dmitri", "Erik", "Finn", "Gustav", "Halvard", "Ingvar",
    "Jorgen", "Knut", "Lukas", "Matteo", "Niklas", "Oskar", "Pontus", "Ruben", "Sander", "Teodor", "Valter",
    "Arvid", "Birger", "Cosmo", "Edvin",
)  # fmt: skip
"""No name is a part of another, so a name found in a story is that character."""

_GROUPS = (
    ("Guild of Lantern-Makers", "guild"),
    ("Order of the Silver Loom", "order"),
    ("Company of the Tide", "company"),
    ("Brotherhood of the Bell", "brotherhood"),
    ("Sisterhood of the Salt Road", "sisterhood"),
    ("Guild of Glassblowers", "guild"),
    ("Order of the Quiet Lamp", "order"),
    ("Company of Ropewalkers", "company"),
)
"""A group's name and what the story calls it for short ("the guild's fourteenth lady")."""

_TOWNS = ("Varn", "Holmsby", "Eskerfield", "Saltmere", "Dunwick", "Brackhaven", "Ostervik", "Kelmouth")

_TITLE_TEXT: dict[Title, str] = {
    Title.LEADER: "leader",
    Title.TREASURER: "treasurer",
    Title.SCRIBE: "scribe",
    Title.KEEPER_OF_THE_KEYS: "keeper of the keys",
    Title.STEWARD: "steward",
    Title.FOURTEENTH_LADY: "fourteenth lady",
    Title.MOTHER_OF_THE_HALL: "Mother of the Hall",
    Title.ELDER_BROTHER: "Elder Brother",
}

_WHEN = (
    "in the year of the great flood",
    "the winter the river froze",
    "just before the harvest fair",
    "during the long drought",
    "in the spring of the comet",
    "the autumn the old mill burned",
    "when the salt fleet came home",
)
_PLACE = (
    "in the lane behind the tannery",
    "above the bakery on the square",
    "in a cottage by the harbour",
    "at the edge of the marsh",
    "in the tall house by the bridge",
)
_SKILL = ("to mend nets", "to read the stars", "to keep bees", "to carve spoons", "to sail by night", "to bake rye")
_DEED = (
    "keeps the ledgers at the mill",
    "sails the ferry across the bay",
    "sells honey at the market",
    "repairs the bells of the chapel",
    "breeds the best goats in the valley",
)
_DEED_PAST = (
    "left a silver ring at the chapel door",
    "sailed away with the salt fleet",
    "sang at every harvest fair",
    "was the best net-mender on the coast",
    "planted the pear tree behind the house",
)
_GROUP_DEED = ("share a house by the mill", "run the ferry together", "keep the old orchard")
_YEARS = ("two", "three", "five", "seven", "twelve", "twenty")
_AGE = ("a baby", "two", "five", "seven", "barely walking")
_COUNT = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")

# Sentence templates: {x}, {x_he}, {x_his}, {x_son}... name a character and the words that fit them (see
# `_words`); {carer} names one or two people, with {carer_his}, {carer_them}, {carer_mother}.
_SPOUSE: tuple[str, ...] = (
    "{a} married {b} {when}.",
    "{a} and {b} have been married for {years} years.",
    "{a} is {b}'s {a_husband}.",
    "{a} lives with {a_his} {b_husband} {b} {place}.",
    "{b} took {a} as {b_his} {a_husband} {when}.",
)
_PARENT_SIDE: tuple[str, ...] = (
    "{p} raised {p_his} {c_son} {c} {place}.",
    "{p} is the {p_mother} of {c}.",
    "{p} taught {p_his} {c_son} {c} {skill}.",
    "{p} still worries about {p_his} {c_son} {c}.",
)
_CHILD_SIDE: tuple[str, ...] = (
    "{c} is {p}'s {c_boy}.",
    "{c}, {p}'s {c_son}, {deed}.",
    "{c} learned {skill} from {c_his} {p_mother} {p}.",
    "{c} still visits {c_his} {p_mother}, {p}, every market day.",
)
_BORN_TO_BOTH: tuple[str, ...] = (
    "{c} was born to {p} and {q} {when}.",
    "{p} and {q} have a {c_son}, {c}.",
    "{c} is the {c_son} of {p} and {q}.",
)
_SIBLING_PAIR: tuple[str, ...] = (
    "{a} and {b} are {pair}.",
    "{a} often quarrels with {a_his} {b_brother} {b}.",
    "{a}'s {b_brother}, {b}, {deed}.",
)
_SIBLING_GROUP: tuple[str, ...] = (
    "{names} are siblings.",
    "{first} has {count} siblings: {rest}.",
    "The siblings {names} {group_deed}.",
)
_ADOPT_CARER_SIDE: tuple[str, ...] = (
    "{carer} adopted {c} {when}.",
    "{carer} adopted {c} when {c_he} was {age}.",
    "{carer} adopted a {c_boy} named {c}.",
)
_ADOPT_CHILD_SIDE: tuple[str, ...] = (
    "{c} was adopted by {carer} {when}.",
    "{c} is the adopted {c_son} of {carer}.",
    "{c} grew up as the adopted {c_son} of {carer}.",
)
_FOSTER_CARER_SIDE: tuple[str, ...] = (
    "{carer} took in {c} as a foster child {when}.",
    "{carer} fostered {c} for {years} years.",
    "{carer} became {c}'s foster {carer_mother} {when}.",
)
_FOSTER_CHILD_SIDE: tuple[str, ...] = (
    "{c} is the foster {c_son} of {carer}.",
    "{c} was taken in as a foster child by {carer} {when}.",
    "{c} lived with {carer} as a foster child for {years} years.",
)
_FOSTER_THEN_ADOPT: tuple[str, ...] = (
    "{carer} took in {c} as a foster child, and {years} years later adopted {c_him}.",
    "{c} came to {carer} as a foster child and was adopted by {carer_them} {when}.",
)
_GODPARENT: tuple[str, ...] = (
    "{x} stood as {x_godmother} to {y}.",
    "{y}'s {x_godmother} is {x}.",
)
_UNNAMED: tuple[str, ...] = (
    "{x}'s {kin}, whose name nobody remembers, {deed_past}.",
    "Nobody remembers the name of {x}'s {kin}, who {deed_past}.",
    "{x} never learned the name of {x_his} {kin}, who {deed_past}.",
)
_AMBIGUOUS: dict[str, tuple[str, ...]] = {
    "aunt_or_cousin": (
        "{x}, whom some call {y}'s {x_aunt} and others {y_his} cousin, {deed}.",
        "Some say {x} is {y}'s {x_aunt}, others that {x_he} is only {y_his} cousin.",
    ),
    "sibling_or_cousin": (
        "{x}, whom some call {y}'s {x_brother} and others {y_his} cousin, {deed}.",
        "Half the town says {x} is {y}'s {x_brother}; the other half says {x_he} is {y_his} cousin.",
    ),
    "parent_or_aunt": (
        "{y} calls {x} {x_mother}, though others say {x} is only {y_his} {x_aunt}.",
        "Some say {x} is {y}'s {x_mother}, others that {x_he} is only {y_his} {x_aunt}.",
    ),
    "adopted_or_fostered": (
        "Some say {x} adopted {y}; others insist {x_he} only took {y_him} in as a foster child.",
        "Whether {x} adopted {y} or only fostered {y_him}, nobody in town agrees.",
    ),
}
_MEMBER: tuple[str, ...] = (
    "{x} serves the {group} as its {title}.",
    "The {group} made {x} its {title} {when}.",
    "In the {group}, {x} holds the rank of {title}.",
    "{x}, the {short}'s {title}, {deed}.",
)
_INTRO: tuple[str, ...] = (
    "In the harbour town of {town}, the {group} keeps its hall above the fish market.",
    "The {group} has met in the old granary of {town} for as long as anyone can tell.",
    "Everyone in {town} knows the {group} and its hall by the bridge.",
)
_OTHER_GROUP: tuple[str, ...] = (
    "Across the river stands the hall of the {other}.",
    "The {other} has its own hall in {town}, on the far side of the square.",
)


@dataclass(frozen=True)
class _Person:
    name: str
    female: bool
    generation: int


_Carers = tuple[int, ...]
"""One person, or a couple, who adopt or foster a child together."""


@dataclass
class _Family:
    """A family tree: people by index, couples, biological children of couples, adoptions and fosterings."""

    people: list[_Person] = field(default_factory=list)
    spouse: dict[int, int] = field(default_factory=dict)
    couples: list[tuple[int, int]] = field(default_factory=list)
    children: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    """Biological children of each couple, in birth order."""
    parents: dict[int, tuple[int, int]] = field(default_factory=dict)
    adoptions: list[tuple[_Carers, int]] = field(default_factory=list)
    fosterings: list[tuple[_Carers, int]] = field(default_factory=list)
    fostered_then_adopted: list[tuple[_Carers, int]] = field(default_factory=list)
    related: set[tuple[int, int]] = field(default_factory=set)
    """Pairs (lower index first) the story states a relation between. Only looked up, never iterated."""

    def relate(self, a: int, b: int) -> None:
        self.related.add((min(a, b), max(a, b)))

    def unrelated(self, a: int, b: int) -> bool:
        return a != b and (min(a, b), max(a, b)) not in self.related

    def gen(self, index: int) -> int:
        return self.people[index].generation


class _Names:
    """Each story's names: drawn without replacement from the fixed lists, in the rng's order."""

    def __init__(self, rng: random.Random) -> None:
        self._female = rng.sample(_FEMALE, len(_FEMALE))
        self._male = rng.sample(_MALE, len(_MALE))

    def take(self, female: bool) -> str:
        return self._female.pop() if female else self._male.pop()


def _add(family: _Family, names: _Names, female: bool, generation: int) -> int:
    family.people.append(_Person(names.take(female), female, generation))
    return len(family.people) - 1


def _marry(family: _Family, a: int, b: int) -> None:
    family.spouse[a], family.spouse[b] = b, a
    family.couples.append((a, b))
    family.children[(a, b)] = []
    family.relate(a, b)


def _bear(family: _Family, names: _Names, rng: random.Random, couple: tuple[int, int]) -> int:
    child = _add(family, names, rng.random() < 0.5, family.gen(couple[0]) + 1)
    family.children[couple].append(child)
    family.parents[child] = couple
    for parent in couple:
        family.relate(parent, child)
    for sibling in family.children[couple][:-1]:
        family.relate(sibling, child)
    return child


def _carers(family: _Family, below: int, exclude: Sequence[int] = ()) -> list[_Carers]:
    """Who may adopt or foster a child of generation `below`: couples, and unmarried adults, of an older
    generation and other than `exclude` (the child's own parents)."""
    options: list[_Carers] = [c for c in family.couples if family.gen(c[0]) < below and c[0] not in exclude]
    options += [
        (i,) for i in range(len(family.people))
        if i not in family.spouse and 1 <= family.gen(i) < below and i not in exclude
    ]  # fmt: skip
    return options


def _build_family(rng: random.Random, people: int) -> _Family:
    """`people` named characters: a founding couple, their children, in-laws and grandchildren, and children
    from outside the family who are adopted, fostered, or fostered and then adopted."""
    family, names = _Family(), _Names(rng)
    outsiders = 1 if people <= 5 else rng.randint(2, min(4, people // 4 + 1))
    born = people - outsiders
    founders = (_add(family, names, True, 0), _add(family, names, False, 0))
    _marry(family, *founders)
    for _ in range(min(2, born - 2)):
        _bear(family, names, rng, founders)
    while len(family.people) < born:
        singles = [i for i in range(len(family.people)) if i not in family.spouse and family.gen(i) >= 1]
        if singles and rng.random() < 0.35:
            single = rng.choice(singles)
            in_law = _add(family, names, not family.people[single].female, family.gen(single))
            _marry(family, single, in_law)
        else:
            _bear(family, names, rng, rng.choice([c for c in family.couples if family.gen(c[0]) <= 1]))

    kinds = ["both"] if outsiders == 1 else ["adopt", "foster"] + [
        rng.choice(("adopt", "foster", "both")) for _ in range(outsiders - 2)
    ]  # fmt: skip
    for kind in kinds:
        carers = rng.choice(_carers(family, 2))
        child = _add(family, names, rng.random() < 0.5, family.gen(carers[0]) + 1)
        _take_in(family, kind, carers, child)

    if people >= 8 and rng.random() < 0.6:  # a grandchild adopted or fostered next to their own parents
        grandchildren = [i for i in family.parents if family.gen(i) >= 2]
        if grandchildren:
            child = rng.choice(grandchildren)
            options = _carers(family, family.gen(child), exclude=family.parents[child])
            if options:
                _take_in(family, rng.choice(("adopt", "foster")), rng.choice(options), child)
    return family


def _take_in(family: _Family, kind: str, carers: _Carers, child: int) -> None:
    if kind == "adopt":
        family.adoptions.append((carers, child))
    elif kind == "foster":
        family.fosterings.append((carers, child))
    else:
        family.fostered_then_adopted.append((carers, child))
    for carer in carers:
        family.relate(carer, child)


def _words(role: str, person: _Person) -> dict[str, str]:
    """A character's name under `role`, and the words that fit them under `role_...`."""
    words = {
        "he": ("she", "he"),
        "him": ("her", "him"),
        "his": ("her", "his"),
        "son": ("daughter", "son"),
        "boy": ("girl", "boy"),
        "mother": ("mother", "father"),
        "brother": ("sister", "brother"),
        "husband": ("wife", "husband"),
        "aunt": ("aunt", "uncle"),
        "godmother": ("godmother", "godfather"),
    }
    forms = {f"{role}_{key}": pair[0] if person.female else pair[1] for key, pair in words.items()}
    forms[role] = person.name
    return forms


def _carer_words(family: _Family, carers: _Carers) -> dict[str, str]:
    if len(carers) == 1:
        forms = _words("carer", family.people[carers[0]])
        return {"carer": forms["carer"], "carer_them": forms["carer_him"], "carer_mother": forms["carer_mother"]}
    names = " and ".join(family.people[i].name for i in carers)
    return {"carer": names, "carer_them": "them", "carer_mother": "parents"}


def _fillers(rng: random.Random) -> dict[str, str]:
    return {
        "when": rng.choice(_WHEN),
        "place": rng.choice(_PLACE),
        "skill": rng.choice(_SKILL),
        "deed": rng.choice(_DEED),
        "deed_past": rng.choice(_DEED_PAST),
        "group_deed": rng.choice(_GROUP_DEED),
        "years": rng.choice(_YEARS),
        "age": rng.choice(_AGE),
    }


def _say(rng: random.Random, templates: Sequence[str], **words: str) -> str:
    text = rng.choice(templates).format(**_fillers(rng), **words)
    return text[0].upper() + text[1:]


def _number(n: int) -> str:
    return _COUNT[n] if n < len(_COUNT) else str(n)


def _listing(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1]


@dataclass
class _Story:
    """What a story states, built up fact by fact: its sentences and the edges each fact makes."""

    family: _Family
    rng: random.Random
    sentences: list[str] = field(default_factory=list)
    edges: list[tuple[int, Relation, int]] = field(default_factory=list)
    optional: list[tuple[int, Relation, int]] = field(default_factory=list)

    def both_ways(self, a: int, relation: Relation, b: int, *, optional: bool = False) -> None:
        (self.optional if optional else self.edges).extend([(a, relation, b), (b, REVERSE[relation], a)])

    def person(self, role: str, index: int) -> dict[str, str]:
        return _words(role, self.family.people[index])

    def say(self, templates: Sequence[str], **words: str) -> None:
        self.sentences.append(_say(self.rng, templates, **words))


def _state_family(story: _Story) -> None:
    """One sentence per couple, per parent and child (or child and both parents), per group of siblings, per
    adoption and fostering; relations stated from either side as the rng picks."""
    family, rng = story.family, story.rng
    for a, b in family.couples:
        first, second = (a, b) if rng.random() < 0.5 else (b, a)
        story.say(_SPOUSE, **story.person("a", first), **story.person("b", second))
        story.both_ways(a, Relation.SPOUSE, b)
    for couple, children in family.children.items():
        for child in children:
            for parent in couple:
                story.both_ways(parent, Relation.PARENT, child)
            if rng.random() < 0.3:
                story.say(_BORN_TO_BOTH, **story.person("p", couple[0]), **story.person("q", couple[1]),
                          **story.person("c", child))  # fmt: skip
                continue
            for parent in couple:
                side = _PARENT_SIDE if rng.random() < 0.5 else _CHILD_SIDE
                story.say(side, **story.person("p", parent), **story.person("c", child))
        for i, older in enumerate(children):
            for younger in children[i + 1 :]:
                story.both_ways(older, Relation.SIBLING, younger)
        if len(children) == 2:
            a, b = rng.sample(children, 2)
            pair = {(True, True): "sisters", (False, False): "brothers", (True, False): "sister and brother"}.get(
                (family.people[a].female, family.people[b].female), "brother and sister"
            )
            story.say(_SIBLING_PAIR, pair=pair, **story.person("a", a), **story.person("b", b))
        elif len(children) > 2:
            order = [family.people[i].name for i in rng.sample(children, len(children))]
            story.say(_SIBLING_GROUP, names=_listing(order), first=order[0], count=_number(len(order) - 1),
                      rest=_listing(order[1:]))  # fmt: skip
    for carers, child in family.adoptions:
        side = _ADOPT_CARER_SIDE if rng.random() < 0.5 else _ADOPT_CHILD_SIDE
        story.say(side, **_carer_words(family, carers), **story.person("c", child))
        for carer in carers:
            story.both_ways(carer, Relation.ADOPTIVE_PARENT, child)
    for carers, child in family.fosterings:
        side = _FOSTER_CARER_SIDE if rng.random() < 0.5 else _FOSTER_CHILD_SIDE
        story.say(side, **_carer_words(family, carers), **story.person("c", child))
        for carer in carers:
            story.both_ways(carer, Relation.FOSTER_PARENT, child)
    for carers, child in family.fostered_then_adopted:
        words = {**_carer_words(family, carers), **story.person("c", child)}
        if rng.random() < 0.5:
            story.say(_FOSTER_THEN_ADOPT, **words)
        else:
            story.say(_FOSTER_CARER_SIDE if rng.random() < 0.5 else _FOSTER_CHILD_SIDE, **words)
            story.say(_ADOPT_CARER_SIDE if rng.random() < 0.5 else _ADOPT_CHILD_SIDE, **words)
        for carer in carers:
            story.both_ways(carer, Relation.FOSTER_PARENT, child)
            story.both_ways(carer, Relation.ADOPTIVE_PARENT, child)


def _ambiguous_pairs(family: _Family) -> dict[str, list[tuple[int, int]]]:
    """Pairs of unrelated characters each ambiguous wording fits, by wording, in a fixed order."""
    pairs: dict[str, list[tuple[int, int]]] = {kind: [] for kind in _AMBIGUOUS}
    for x in range(len(family.people)):
        for y in range(len(family.people)):
            if not family.unrelated(x, y):
                continue
            gap = family.gen(y) - family.gen(x)
            if abs(gap) <= 1:
                pairs["aunt_or_cousin"].append((x, y))
            if gap == 0:
                pairs["sibling_or_cousin"].append((x, y))
            if gap == 1 and y not in family.parents:
                pairs["parent_or_aunt"].append((x, y))
            if gap >= 1:
                pairs["adopted_or_fostered"].append((x, y))
    return pairs


_READINGS: dict[str, tuple[Relation, ...]] = {
    "aunt_or_cousin": (Relation.OTHER,),
    "sibling_or_cousin": (Relation.SIBLING, Relation.OTHER),
    "parent_or_aunt": (Relation.PARENT, Relation.OTHER),
    "adopted_or_fostered": (Relation.ADOPTIVE_PARENT, Relation.FOSTER_PARENT),
}
"""Each ambiguous wording's readings as relations of x to y (aunt and cousin are `other`)."""


def _state_ambiguity(story: _Story) -> None:
    """One relation the story leaves open: every reading of it, both ways, is an optional edge."""
    family, rng = story.family, story.rng
    pairs = _ambiguous_pairs(family)
    kinds = [kind for kind in _AMBIGUOUS if pairs[kind]]
    if not kinds:  # pragma: no cover - every family has an adoptee or fosterling unrelated to someone
        raise RuntimeError("no pair of unrelated characters for the ambiguous relation")
    kind = rng.choice(kinds)
    x, y = rng.choice(pairs[kind])
    story.say(_AMBIGUOUS[kind], **story.person("x", x), **story.person("y", y))
    for relation in _READINGS[kind]:
        story.both_ways(x, relation, y, optional=True)
    family.relate(x, y)


def _state_godparent(story: _Story) -> None:
    """A godparent: a relation the enum has no word for, so `other`, both ways."""
    family = story.family
    pairs = [
        (x, y) for x in range(len(family.people)) for y in range(len(family.people))
        if family.unrelated(x, y) and family.gen(x) < family.gen(y)
    ]  # fmt: skip
    if pairs:
        x, y = story.rng.choice(pairs)
        story.say(_GODPARENT, **story.person("x", x), **story.person("y", y))
        story.both_ways(x, Relation.OTHER, y)
        family.relate(x, y)


def _state_unnamed(story: _Story, count: int) -> list[str]:
    """Characters referred to but never named: a parent of someone whose parents the family tree lacks."""
    family, rng = story.family, story.rng
    orphans = [i for i in range(len(family.people)) if i not in family.parents]
    taken_in = [child for _, child in family.adoptions + family.fosterings + family.fostered_then_adopted]
    phrases: list[str] = []
    for index in rng.sample(orphans, count):
        kin = "mother" if rng.random() < 0.5 else "father"
        if index in taken_in:
            kin = f"birth {kin}"
        story.say(_UNNAMED, kin=kin, **story.person("x", index))
        phrases.append(f"{family.people[index].name}'s {kin}")
    return phrases


def _allowed(story: _Story, index: int, title: Title) -> bool:
    """A kinship-sounding title goes only to a character who lacks that kinship in every reading."""
    relations = [r for a, r, _ in story.edges + story.optional if a == index]
    if title in (Title.FOURTEENTH_LADY, Title.MOTHER_OF_THE_HALL):
        parent = any(r in (Relation.PARENT, Relation.ADOPTIVE_PARENT, Relation.FOSTER_PARENT) for r in relations)
        return not parent and (title != Title.FOURTEENTH_LADY or story.family.people[index].female)
    if title == Title.ELDER_BROTHER:
        return Relation.SIBLING not in relations
    return True


def _appoint(story: _Story, size: int, *, kinship: bool) -> list[tuple[int, Title]]:
    """`size` members with distinct titles; with `kinship`, the first holds a kinship-sounding title."""
    rng, everyone = story.rng, list(range(len(story.family.people)))
    chosen: list[tuple[int, Title]] = []
    if kinship:
        options = [(t, [i for i in everyone if _allowed(story, i, t)]) for t in KINSHIP_TITLES]
        title, holders = rng.choice([(t, holders) for t, holders in options if holders])
        chosen.append((rng.choice(holders), title))
    others = [i for i in everyone if i not in [member for member, _ in chosen]]
    for member in rng.sample(others, size - len(chosen)):
        used = [title for _, title in chosen]
        chosen.append((member, rng.choice([t for t in Title if t not in used and _allowed(story, member, t)])))
    return chosen


def _state_groups(story: _Story, people: int) -> tuple[str, list[tuple[int, Title]]]:
    """The group asked about, with members holding titles (one kinship-sounding at least), and a second
    group whose members are not asked for."""
    rng = story.rng
    group, short = rng.choice(_GROUPS)
    other, other_short = rng.choice([g for g in _GROUPS if g[1] != short])
    town = rng.choice(_TOWNS)
    story.sentences.insert(0, _say(rng, _INTRO, town=town, group=group))
    members = _appoint(story, rng.randint(2, min(5, max(2, people // 2))), kinship=True)
    for member, title in members:
        story.say(_MEMBER, group=group, short=short, title=_TITLE_TEXT[title], **story.person("x", member))
    story.say(_OTHER_GROUP, other=other, town=town)
    for member, title in _appoint(story, 1 if people < 8 else 2, kinship=rng.random() < 0.5):
        story.say(_MEMBER, group=other, short=other_short, title=_TITLE_TEXT[title], **story.person("x", member))
    return group, members


_QUESTION = """\
Extract the relationship graph of this story, and the members of the {group} with their titles.

1. Give every relation the story states between two characters it names as a directed edge "source is the \
RELATION of target", with these relations:
   - parent: source is a biological parent of target; child: source is a biological child of target;
   - sibling: source and target are brothers or sisters; spouse: source and target are married;
   - adoptive_parent: source adopted target; adopted_child: source was adopted by target;
   - foster_parent: source took target in as a foster child; foster_child: source is a foster child of target;
   - other: any other relation the story states between them (say which in the note).
2. Give every relation in both directions: A parent B together with B child A, A sibling B with B sibling A, \
A spouse B with B spouse A, A adoptive_parent B with B adopted_child A, A foster_parent B with B foster_child A, \
A other B with B other A.
3. Use the names as the story spells them. Leave out characters the story does not name, and relations it does \
not state (do not work out grandparents, in-laws, or siblings by adoption or fostering).
4. List every member of the {group} with the title they hold in it, and no one else."""


def _story_case(rng: random.Random, people: int, seed: int, number: int) -> Case:
    family = _build_family(rng, people)
    story = _Story(family, rng)
    _state_family(story)
    _state_ambiguity(story)
    if people >= 6 and rng.random() < 0.5:
        _state_godparent(story)
    unnamed = _state_unnamed(story, 1 if people < 10 else 2)
    group, members = _state_groups(story, people)
    body = story.sentences[1:]
    rng.shuffle(body)
    text = " ".join([story.sentences[0], *body])

    def edges(found: list[tuple[int, Relation, int]]) -> list[Edge]:
        names = [person.name for person in family.people]
        return [Edge(source=names[a], relation=relation, target=names[b]) for a, relation, b in found]

    expected = ExpectedGraph(
        group=group,
        edges=edges(story.edges),
        optional_edges=edges(story.optional),
        members=[Member(name=family.people[i].name, title=title) for i, title in members],
    )
    return Case(
        id=f"story-{seed}-{number}",
        prompt=f"Story:\n{text}\n\n{_QUESTION.format(group=group)}",
        expected=expected,
        group=f"{people} people",
        metadata={
            "people": people,
            "seed": seed,
            "edges": len(expected.edges),
            "optional_edges": len(expected.optional_edges),
            "members": len(expected.members),
            "names": [person.name for person in family.people],
            "unnamed": unnamed,
        },
    )


def generate_cases(people: int, count: int, seed: int) -> list[Case]:
    """`count` stories of `people` named characters each, ids `story-{seed}-{i}` from 1; the same arguments
    give byte-identical cases in any process."""
    if people < MIN_PEOPLE:
        raise ValueError(f"story-graph needs at least {MIN_PEOPLE} named people per story, got {people}")
    if people > MAX_PEOPLE:
        raise ValueError(f"story-graph has names for at most {MAX_PEOPLE} people per story, got {people}")
    if count < 1:
        raise ValueError(f"story-graph needs at least 1 story, got {count}")
    rng = random.Random(seed)
    return [_story_case(rng, people, seed, number) for number in range(1, count + 1)]


# --- the task -------------------------------------------------------------------------------------------------

TOOL_NAME = "submit_graph"


def _instructions(mode: AnswerMode) -> str:
    task = "You read short stories and record who is related to whom, exactly as the story states it."
    if mode == "tool":
        return f"{task} Answer by calling the {TOOL_NAME} tool once, with every edge and every member."
    relations = ", ".join(r.value for r in Relation)
    titles = ", ".join(t.value for t in Title)
    shape = (
        '{"edges": [{"source": "...", "relation": "...", "target": "...", "note": null}], '
        '"members": [{"name": "...", "title": "..."}]}'
    )
    return (
        f"{task} Answer with only a JSON object of this shape: {shape}. The relation is one of: {relations}. "
        f"The title is one of: {titles}."
    )


TASK: Task[StoryGraph] = Task(
    name="story-graph",
    output_type=StoryGraph,
    score=grade,
    instructions=_instructions,
    tool_name=TOOL_NAME,
    tool_description="Submit the story's relationship graph: every relation stated between named characters as "
    "directed edges, in both directions, and the members of the group the question names with their titles.",
    aggregate="mean",
    metrics=graph_metrics,
)
"""The built-in `story-graph` task: a `StoryGraph` through the `submit_graph` tool, scored by `grade`."""


class StoryGraphParams(BaseModel):
    """How many stories, of how many people, from which seed."""

    model_config = ConfigDict(extra="forbid")

    people: int = Field(
        8, ge=MIN_PEOPLE, le=MAX_PEOPLE, description=f"named people per story, {MIN_PEOPLE} to {MAX_PEOPLE}"
    )
    count: int = Field(20, ge=1, description="number of stories")
    seed: int = Field(42, description="generator seed")


def _build(params: StoryGraphParams) -> tuple[Task[StoryGraph], Dataset]:
    people, count, seed = params.people, params.count, params.seed
    try:
        generate_cases(people, 1, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    dataset = dataset_from_cases(
        lambda: generate_cases(people, count, seed), suite="story-graph", source="generated",
        params={"people": people, "count": count, "seed": seed},
    )  # fmt: skip
    return TASK, dataset


STORY_GRAPH = Suite(
    name="story-graph",
    params=StoryGraphParams,
    build=_build,
    description="stories to relationship graphs: typed edges and members through one tool call (WeiXiaoTien's score)",
    show_answer=show_graph,
    flags=(
        SuiteFlag("--people", "people", type=positive),
        SuiteFlag("--count", "count", type=positive),
        SuiteFlag("--seed", "seed", type=int),
    ),
)
