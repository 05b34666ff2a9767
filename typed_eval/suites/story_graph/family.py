"""A story's family: people born, married, adopted and fostered across generations, and the words that name them
in a sentence (he or she, his or her, son or daughter)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from typed_eval.suites.story_graph.wording import (
    AGE,
    COUNT,
    DEED,
    DEED_PAST,
    FEMALE,
    GROUP_DEED,
    MALE,
    PLACE,
    SKILL,
    WHEN,
    YEARS,
)

__all__ = ["Family", "build_family", "carer_words", "listing", "number_word", "spoken", "words_for"]


@dataclass(frozen=True)
class _Person:
    name: str
    female: bool
    generation: int


_Carers = tuple[int, ...]
"""One person, or a couple, who adopt or foster a child together."""


@dataclass
class Family:
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
        self._female = rng.sample(FEMALE, len(FEMALE))
        self._male = rng.sample(MALE, len(MALE))

    def take(self, female: bool) -> str:
        return self._female.pop() if female else self._male.pop()


def _add(family: Family, names: _Names, female: bool, generation: int) -> int:
    family.people.append(_Person(names.take(female), female, generation))
    return len(family.people) - 1


def _marry(family: Family, a: int, b: int) -> None:
    family.spouse[a], family.spouse[b] = b, a
    family.couples.append((a, b))
    family.children[(a, b)] = []
    family.relate(a, b)


def _bear(family: Family, names: _Names, rng: random.Random, couple: tuple[int, int]) -> int:
    child = _add(family, names, rng.random() < 0.5, family.gen(couple[0]) + 1)
    family.children[couple].append(child)
    family.parents[child] = couple
    for parent in couple:
        family.relate(parent, child)
    for sibling in family.children[couple][:-1]:
        family.relate(sibling, child)
    return child


def _carers(family: Family, below: int, exclude: Sequence[int] = ()) -> list[_Carers]:
    """Who may adopt or foster a child of generation `below`: couples, and unmarried adults, of an older
    generation and other than `exclude` (the child's own parents)."""
    options: list[_Carers] = [c for c in family.couples if family.gen(c[0]) < below and c[0] not in exclude]
    options += [
        (i,)
        for i in range(len(family.people))
        if i not in family.spouse and 1 <= family.gen(i) < below and i not in exclude
    ]
    return options


def build_family(rng: random.Random, people: int) -> Family:
    """`people` named characters: a founding couple, their children, in-laws and grandchildren, and children
    from outside the family who are adopted, fostered, or fostered and then adopted."""
    family, names = Family(), _Names(rng)
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

    kinds = (
        ["both"]
        if outsiders == 1
        else ["adopt", "foster"] + [rng.choice(("adopt", "foster", "both")) for _ in range(outsiders - 2)]
    )
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


def _take_in(family: Family, kind: str, carers: _Carers, child: int) -> None:
    if kind == "adopt":
        family.adoptions.append((carers, child))
    elif kind == "foster":
        family.fosterings.append((carers, child))
    else:
        family.fostered_then_adopted.append((carers, child))
    for carer in carers:
        family.relate(carer, child)


def words_for(role: str, person: _Person) -> dict[str, str]:
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


def carer_words(family: Family, carers: _Carers) -> dict[str, str]:
    if len(carers) == 1:
        forms = words_for("carer", family.people[carers[0]])
        return {"carer": forms["carer"], "carer_them": forms["carer_him"], "carer_mother": forms["carer_mother"]}
    names = " and ".join(family.people[i].name for i in carers)
    return {"carer": names, "carer_them": "them", "carer_mother": "parents"}


def _fillers(rng: random.Random) -> dict[str, str]:
    return {
        "when": rng.choice(WHEN),
        "place": rng.choice(PLACE),
        "skill": rng.choice(SKILL),
        "deed": rng.choice(DEED),
        "deed_past": rng.choice(DEED_PAST),
        "group_deed": rng.choice(GROUP_DEED),
        "years": rng.choice(YEARS),
        "age": rng.choice(AGE),
    }


def spoken(rng: random.Random, templates: Sequence[str], **words: str) -> str:
    text = rng.choice(templates).format(**_fillers(rng), **words)
    return text[0].upper() + text[1:]


def number_word(n: int) -> str:
    return COUNT[n] if n < len(COUNT) else str(n)


def listing(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1]
