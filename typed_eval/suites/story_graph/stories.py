"""A story stated fact by fact from its family, with the edges each fact makes (ambiguous wordings, godparents,
unnamed people and groups included), and the cases the generator makes of them."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from typed_eval.contracts import Case
from typed_eval.suites.story_graph.family import (
    Family,
    build_family,
    carer_words,
    listing,
    number_word,
    spoken,
    words_for,
)
from typed_eval.suites.story_graph.graph import (
    KINSHIP_TITLES,
    REVERSE,
    Edge,
    ExpectedGraph,
    Member,
    Relation,
    Title,
)
from typed_eval.suites.story_graph.wording import (
    ADOPT_CARER_SIDE,
    ADOPT_CHILD_SIDE,
    AMBIGUOUS,
    BORN_TO_BOTH,
    CHILD_SIDE,
    FOSTER_CARER_SIDE,
    FOSTER_CHILD_SIDE,
    FOSTER_THEN_ADOPT,
    GODPARENT,
    GROUPS,
    INTRO,
    MAX_PEOPLE,
    MEMBER,
    MIN_PEOPLE,
    OTHER_GROUP,
    PARENT_SIDE,
    SIBLING_GROUP,
    SIBLING_PAIR,
    SPOUSE_SENTENCES,
    TITLE_TEXT,
    TOWNS,
    UNNAMED,
)

__all__ = ["generate_cases", "iter_cases"]


@dataclass
class _Story:
    """What a story states, built up fact by fact: its sentences and the edges each fact makes."""

    family: Family
    rng: random.Random
    sentences: list[str] = field(default_factory=list)
    edges: list[tuple[int, Relation, int]] = field(default_factory=list)
    optional: list[tuple[int, Relation, int]] = field(default_factory=list)

    def both_ways(self, a: int, relation: Relation, b: int, *, optional: bool = False) -> None:
        (self.optional if optional else self.edges).extend([(a, relation, b), (b, REVERSE[relation], a)])

    def person(self, role: str, index: int) -> dict[str, str]:
        return words_for(role, self.family.people[index])

    def say(self, templates: Sequence[str], **words: str) -> None:
        self.sentences.append(spoken(self.rng, templates, **words))


def _state_family(story: _Story) -> None:
    """One sentence per couple, per parent and child (or child and both parents), per group of siblings, per
    adoption and fostering; relations stated from either side as the rng picks."""
    family, rng = story.family, story.rng
    for a, b in family.couples:
        first, second = (a, b) if rng.random() < 0.5 else (b, a)
        story.say(SPOUSE_SENTENCES, **story.person("a", first), **story.person("b", second))
        story.both_ways(a, Relation.SPOUSE, b)
    for couple, children in family.children.items():
        for child in children:
            for parent in couple:
                story.both_ways(parent, Relation.PARENT, child)
            if rng.random() < 0.3:
                story.say(
                    BORN_TO_BOTH,
                    **story.person("p", couple[0]),
                    **story.person("q", couple[1]),
                    **story.person("c", child),
                )
                continue
            for parent in couple:
                side = PARENT_SIDE if rng.random() < 0.5 else CHILD_SIDE
                story.say(side, **story.person("p", parent), **story.person("c", child))
        for i, older in enumerate(children):
            for younger in children[i + 1 :]:
                story.both_ways(older, Relation.SIBLING, younger)
        if len(children) == 2:
            a, b = rng.sample(children, 2)
            pair = {(True, True): "sisters", (False, False): "brothers", (True, False): "sister and brother"}.get(
                (family.people[a].female, family.people[b].female), "brother and sister"
            )
            story.say(SIBLING_PAIR, pair=pair, **story.person("a", a), **story.person("b", b))
        elif len(children) > 2:
            order = [family.people[i].name for i in rng.sample(children, len(children))]
            story.say(
                SIBLING_GROUP,
                names=listing(order),
                first=order[0],
                count=number_word(len(order) - 1),
                rest=listing(order[1:]),
            )
    for carers, child in family.adoptions:
        side = ADOPT_CARER_SIDE if rng.random() < 0.5 else ADOPT_CHILD_SIDE
        story.say(side, **carer_words(family, carers), **story.person("c", child))
        for carer in carers:
            story.both_ways(carer, Relation.ADOPTIVE_PARENT, child)
    for carers, child in family.fosterings:
        side = FOSTER_CARER_SIDE if rng.random() < 0.5 else FOSTER_CHILD_SIDE
        story.say(side, **carer_words(family, carers), **story.person("c", child))
        for carer in carers:
            story.both_ways(carer, Relation.FOSTER_PARENT, child)
    for carers, child in family.fostered_then_adopted:
        words = {**carer_words(family, carers), **story.person("c", child)}
        if rng.random() < 0.5:
            story.say(FOSTER_THEN_ADOPT, **words)
        else:
            story.say(FOSTER_CARER_SIDE if rng.random() < 0.5 else FOSTER_CHILD_SIDE, **words)
            story.say(ADOPT_CARER_SIDE if rng.random() < 0.5 else ADOPT_CHILD_SIDE, **words)
        for carer in carers:
            story.both_ways(carer, Relation.FOSTER_PARENT, child)
            story.both_ways(carer, Relation.ADOPTIVE_PARENT, child)


def _ambiguous_pairs(family: Family) -> dict[str, list[tuple[int, int]]]:
    """Pairs of unrelated characters each ambiguous wording fits, by wording, in a fixed order."""
    pairs: dict[str, list[tuple[int, int]]] = {kind: [] for kind in AMBIGUOUS}
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
    kinds = [kind for kind in AMBIGUOUS if pairs[kind]]
    if not kinds:  # pragma: no cover - every family has an adoptee or fosterling unrelated to someone
        raise RuntimeError("no pair of unrelated characters for the ambiguous relation")
    kind = rng.choice(kinds)
    x, y = rng.choice(pairs[kind])
    story.say(AMBIGUOUS[kind], **story.person("x", x), **story.person("y", y))
    for relation in _READINGS[kind]:
        story.both_ways(x, relation, y, optional=True)
    family.relate(x, y)


def _state_godparent(story: _Story) -> None:
    """A godparent: a relation the enum has no word for, so `other`, both ways."""
    family = story.family
    pairs = [
        (x, y)
        for x in range(len(family.people))
        for y in range(len(family.people))
        if family.unrelated(x, y) and family.gen(x) < family.gen(y)
    ]
    if pairs:
        x, y = story.rng.choice(pairs)
        story.say(GODPARENT, **story.person("x", x), **story.person("y", y))
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
        story.say(UNNAMED, kin=kin, **story.person("x", index))
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
    group, short = rng.choice(GROUPS)
    other, other_short = rng.choice([g for g in GROUPS if g[1] != short])
    town = rng.choice(TOWNS)
    story.sentences.insert(0, spoken(rng, INTRO, town=town, group=group))
    members = _appoint(story, rng.randint(2, min(5, max(2, people // 2))), kinship=True)
    for member, title in members:
        story.say(MEMBER, group=group, short=short, title=TITLE_TEXT[title], **story.person("x", member))
    story.say(OTHER_GROUP, other=other, town=town)
    for member, title in _appoint(story, 1 if people < 8 else 2, kinship=rng.random() < 0.5):
        story.say(MEMBER, group=other, short=other_short, title=TITLE_TEXT[title], **story.person("x", member))
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
    family = build_family(rng, people)
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
    return list(iter_cases(people, count, seed))


def iter_cases(people: int, count: int, seed: int) -> Iterator[Case]:
    """`generate_cases`, a story at a time (a run of 100,000 stories holds only those in flight); the arguments are
    checked at once, before the first story is asked for."""
    if people < MIN_PEOPLE:
        raise ValueError(f"story-graph needs at least {MIN_PEOPLE} named people per story, got {people}")
    if people > MAX_PEOPLE:
        raise ValueError(f"story-graph has names for at most {MAX_PEOPLE} people per story, got {people}")
    if count < 1:
        raise ValueError(f"story-graph needs at least 1 story, got {count}")
    rng = random.Random(seed)
    return (_story_case(rng, people, seed, number) for number in range(1, count + 1))
