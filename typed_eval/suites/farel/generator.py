"""FaRel quiz generator and reader, byte-identical with the original farel-bench generator: `generate()` yields
typed quizzes, `read_csv()` parses a FaRel CSV, `csv_line()` writes one. The command `farel_bench.py` writes its CSV
with the original's flags."""

from __future__ import annotations

import ast
import codecs
import random
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from typed_eval.suites.farel.quiz import FarelQuiz as Quiz

__all__ = [
    "DEFAULT_TEMPLATE",
    "TAG_INSTRUCTION",
    "FarelFormatError",
    "FarelLengthError",
    "csv_line",
    "family_tree",
    "generate",
    "iter_csv",
    "permutation",
    "read_csv",
    "relation_name",
    "string_literal_end",
]

TAG_INSTRUCTION = "Enclose the selected answer number in the <ANSWER> tag, for example: <ANSWER>1</ANSWER>."
"""The default template's last line: how farel-bench asks for the answer (left out in the structured modes)."""

DEFAULT_TEMPLATE = (
    "Given the family relationships:\n$QUIZ_RELATIONS\n$QUIZ_QUESTION\nSelect the correct answer:\n"
    "$QUIZ_ANSWERS\n" + TAG_INSTRUCTION
)

MALE_NAMES = tuple(
    "James Robert John Michael David William Richard Joseph Thomas Christopher Charles Daniel Matthew "
    "Anthony Mark Donald Steven Andrew Paul Joshua Kenneth Kevin Brian George Timothy Ronald Jason Edward "
    "Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott Brandon Benjamin Samuel "
    "Gregory Alexander Patrick Frank Raymond Jack Dennis Jerry Tyler Aaron Jose Adam Nathan Henry Zachary "
    "Douglas Peter Kyle Noah Ethan Jeremy Walter Christian Keith Roger Terry Austin Sean Gerald Carl "
    "Harold Dylan Arthur Lawrence Jordan Jesse Bryan Billy Bruce Gabriel Joe Logan Alan Juan Albert "
    "Willie Elijah Wayne Randy Vincent Mason Roy Ralph Bobby Russell Bradley Philip Eugene".split()
)

FEMALE_NAMES = tuple(
    "Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy Betty Sandra "
    "Margaret Ashley Kimberly Emily Donna Michelle Carol Amanda Melissa Deborah Stephanie Dorothy Rebecca "
    "Sharon Laura Cynthia Amy Kathleen Angela Shirley Brenda Emma Anna Pamela Nicole Samantha Katherine "
    "Christine Helen Debra Rachel Carolyn Janet Maria Catherine Heather Diane Olivia Julie Joyce Victoria "
    "Ruth Virginia Lauren Kelly Christina Joan Evelyn Judith Andrea Hannah Megan Cheryl Jacqueline Martha "
    "Madison Teresa Gloria Sara Janice Ann Kathryn Abigail Sophia Frances Jean Alice Judy Isabella Julia "
    "Grace Amber Denise Danielle Marilyn Beverly Charlotte Natalie Theresa Diana Brittany Doris Kayla "
    "Alexis Lori Marie".split()
)

_HYPHENATED = frozenset({"niece", "nephew", "aunt", "uncle"})


class FarelFormatError(ValueError):
    """A FaRel CSV or template that cannot be used; the message names the line and the problem."""


class FarelLengthError(ValueError):
    """A length whose family needs more people of one gender than there are names (100 each): degree 13 and
    above may draw that many, depending on the seed, and 19 always does."""


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _grand(k: int, rel: str) -> str:
    """`rel` pushed `k` generations further out: grandchild, great grandchild, 3rd great grandchild..."""
    if k == 0:
        return rel
    sep = "-" if rel in _HYPHENATED else ""
    if k <= 3:
        return "great " * (k - 1) + "grand" + sep + rel
    return f"{_ordinal(k - 1)} great grand{sep}{rel}"


def relation_name(up: int, down: int, *, unambiguous: bool = False) -> str:
    """Name of the person reached `up` generations above person 0, then `down` below.

    From degree 5 on, two classes share a "cousin Nx removed" name (one up, one down the tree);
    `unambiguous` tells them apart by generation, for evaluations outside parity mode.
    """
    if up == 0:
        return _grand(down - 1, "child")
    if down == 0:
        return _grand(up - 1, "parent")
    if up == 1 and down == 1:
        return "sibling"
    if up == 1:
        return f"{_grand(down - 2, 'niece')} or {_grand(down - 2, 'nephew')}"
    if down == 1:
        return f"{_grand(up - 2, 'aunt')} or {_grand(up - 2, 'uncle')}"
    name = f"{_ordinal(min(up, down) - 1)} cousin"
    if up == down:
        return name
    name += f" {abs(up - down)}x removed"
    if unambiguous:
        name += " (older generation)" if up > down else " (younger generation)"
    return name


@dataclass(frozen=True)
class FamilyTree:
    """The family of one degree: parent edges `(a, b)` ("a is b's parent") and the class persons."""

    degree: int
    edges: tuple[tuple[int, int], ...]
    class_persons: tuple[int, ...]
    """Person of each class, ordered by generations up from person 0 (u = 0..degree)."""

    def class_names(self, *, unambiguous: bool = False) -> list[str]:
        return [relation_name(u, self.degree - u, unambiguous=unambiguous) for u in range(self.degree + 1)]


def family_tree(degree: int) -> FamilyTree:
    """Grow the degree-1 tree `degree - 1` times, appending edges exactly as the original does."""
    if degree < 1:
        raise ValueError(f"degree must be at least 1, got {degree}")
    edges = [(0, 1), (2, 0)]
    persons = [1, 2]
    next_person = 3
    for _ in range(degree - 1):
        topmost = persons[-1]
        for i, person in enumerate(persons):
            edges.append((person, next_person))
            persons[i] = next_person
            next_person += 1
        edges.append((next_person, topmost))
        persons.append(next_person)
        next_person += 1
    return FamilyTree(degree, tuple(edges), tuple(persons))


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _render(
    template: str,
    tree: FamilyTree,
    edges: Sequence[tuple[int, int]],
    person: int,
    options: Sequence[str],
    names: Sequence[str],
) -> str:
    relations = "\n".join(f"* {names[a]} is {_possessive(names[b])} parent." for a, b in edges)
    subject, anchor = names[person], names[0]
    question = f"What is {_possessive(subject)} relationship to {anchor}?"
    answers = "\n".join(f"{k}. {subject} is {_possessive(anchor)} {option}." for k, option in enumerate(options, 1))
    return (
        template.replace("$QUIZ_RELATIONS", relations)
        .replace("$QUIZ_GENDERS", "")  # generated trees state no genders, as in the original
        .replace("$QUIZ_QUESTION", question)
        .replace("$QUIZ_ANSWERS", answers)
    )


def generate(
    length: int,
    number: int = 10,
    seed: int | None = None,
    *,
    shuffle: bool = False,
    template: str = DEFAULT_TEMPLATE,
    unambiguous: bool = False,
) -> Iterator[Quiz]:
    """Yield the quizzes of degrees 1..`length`, `number` per class, in the original's order of draws."""
    rng = random.Random(seed)
    index = 0
    for degree in range(1, length + 1):
        tree = family_tree(degree)
        class_names = tree.class_names(unambiguous=unambiguous)
        people = len({p for edge in tree.edges for p in edge})
        for class_name, person in zip(class_names, tree.class_persons, strict=True):
            for _ in range(number):
                options = rng.sample(class_names, len(class_names)) if shuffle else list(class_names)
                edges = list(tree.edges)
                if shuffle:
                    rng.shuffle(edges)
                genders = [rng.choice(["male", "female"]) for _ in range(people)]
                pools = {
                    "male": iter(permutation(rng, MALE_NAMES)),
                    "female": iter(permutation(rng, FEMALE_NAMES)),
                }
                names = _names(degree, genders, pools)
                index += 1
                yield Quiz(
                    id=f"q{index:05d}",
                    class_name=class_name,
                    prompt=_render(template, tree, edges, person, options, names),
                    options=tuple(_option_text(names, person, option) for option in options),
                    correct=options.index(class_name) + 1,
                    degree=degree,
                )


def permutation(rng: random.Random, population: Sequence[str]) -> list[str]:
    """`rng.sample(population, len(population))`, each draw made as `random` makes it (so the generator's state goes
    on alike), in a third of the time: a run's start generates its whole dataset to digest it, and these draws were
    most of that."""
    getrandbits = rng.getrandbits
    pool = list(population)
    drawn = []
    for remaining in range(len(pool), 0, -1):
        bits = remaining.bit_length()
        index = getrandbits(bits)
        while index >= remaining:
            index = getrandbits(bits)
        drawn.append(pool[index])
        pool[index] = pool[remaining - 1]
    return drawn


def _names(degree: int, genders: Sequence[str], pools: dict[str, Iterator[str]]) -> list[str]:
    """A name for each person; running out is the length's fault, said as such (a bare `next()` in a generator
    ends it with "generator raised StopIteration")."""
    names = [next(pools[gender], None) for gender in genders]
    if None in names:
        gender = genders[names.index(None)]
        drawn = genders.count(gender)
        raise FarelLengthError(
            f"degree {degree} drew {drawn} {gender} people of {len(genders)}, more than the "
            f"{len(MALE_NAMES if gender == 'male' else FEMALE_NAMES)} {gender} names: use a length of at most 12"
        )
    return [name for name in names if name is not None]


def _option_text(names: Sequence[str], person: int, relation: str) -> str:
    return f"{names[person]} is {_possessive(names[0])} {relation}."


def csv_line(quiz: Quiz) -> str:
    """The quiz as one farel-bench CSV line (the prompt written as Python's repr, as the original)."""
    return f"{quiz.degree},{quiz.class_name},{quiz.correct},{quiz.prompt!r}"


_OPTION_LINE = re.compile(r"^(\d+)\. (.*)$", re.MULTILINE)


def _options_from_prompt(prompt: str) -> tuple[str, ...]:
    """The numbered option lines 1..K of a quiz text (the last run that starts at 1)."""
    runs: list[list[str]] = []
    for match in _OPTION_LINE.finditer(prompt):
        number, text = int(match.group(1)), match.group(2)
        if number == 1:
            runs.append([text])
        elif runs and number == len(runs[-1]) + 1:
            runs[-1].append(text)
    if not runs or len(runs[-1]) < 2:
        raise FarelFormatError("no numbered answer options (1., 2., ...) in the quiz text")
    return tuple(runs[-1])


_CSV_LINE = re.compile(r"^(?P<degree>\d+),(?P<relation>.*?),(?P<correct>\d+),(?P<quiz>['\"].*)$")
"""`degree,relation,answer,repr(quiz)`. The relation may be quoted and hold commas (farel-bench's Polish
dataset writes `3,'siostrzenicą, bratanicą, ...',2,'...'`), so lines are split by shape, not by the csv
module; on the English files both readings agree."""


def read_csv(lines: Iterable[str], *, source: str = "quizzes") -> list[Quiz]:
    """Parse farel-bench CSV (degree, relation, correct number, repr of the quiz) into quizzes."""
    quizzes = list(iter_csv(lines, source=source))
    if not quizzes:
        raise FarelFormatError(f"{source}: no quizzes found")
    return quizzes


def iter_csv(lines: Iterable[str], *, source: str = "quizzes") -> Iterator[Quiz]:
    """`read_csv`, one quiz at a time; raises `FarelFormatError` naming the line on bad input."""
    count = 0
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source} line {line_no}"
        match = _CSV_LINE.match(line.rstrip("\r\n"))
        if match is None:
            raise FarelFormatError(f"{where}: expected degree,relation,answer,quiz with the quiz as a quoted string")
        try:
            prompt = _literal(match["quiz"], "the quiz")
            relation = match["relation"]
            class_name = _literal(relation, "the relation") if relation[:1] in "'\"" and len(relation) > 1 else relation
            quiz = Quiz(
                id=f"q{count + 1:05d}",
                class_name=class_name,
                prompt=prompt,
                options=_options_from_prompt(prompt),
                correct=_number(match["correct"], "the answer"),
                degree=_number(match["degree"], "the degree"),
            )
        except ValidationError as exc:
            raise FarelFormatError(f"{where}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        except FarelFormatError as exc:
            raise FarelFormatError(f"{where}: {exc}") from None
        count += 1
        yield quiz


_MAX_DIGITS = 9


def _number(field: str, what: str) -> int:
    """A small whole number: a field of thousands of digits is refused, not handed to `int()`."""
    if len(field) > _MAX_DIGITS:
        raise FarelFormatError(f"{what} {field[:12]}... has {len(field)} digits")
    return int(field)


def string_literal_end(text: str, start: int) -> int | None:
    """Just past the quote closing the string literal that opens at `start` (the first quote not escaped by a
    backslash), or None when it is not closed. Found with `str.find`, in time and memory linear in its length."""
    quote, at = text[start], start + 1
    while (end := text.find(quote, at)) >= 0:
        before = end - 1
        while text[before] == "\\":
            before -= 1
        if (end - 1 - before) % 2 == 0:
            return end + 1
        at = end + 1
    return None


def _literal(field: str, what: str) -> str:
    """Undo the original's repr() of a field: one quoted string, nothing else. Anything more is refused before
    Python's parser sees it, as a deep expression (`'x'` then a million unary minus signs) exhausts its memory."""
    field = field.rstrip(" \t")
    if field[:1] not in ("'", '"') or string_literal_end(field, 0) != len(field):
        raise FarelFormatError(f"{what} is not a Python string literal (one quoted string)")
    try:
        decoded = ast.literal_eval(field)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise FarelFormatError(f"{what} is not a Python string literal ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(decoded, str):
        raise FarelFormatError(f"{what} is not a string")
    return decoded


def decode_template(template: str) -> str:
    """Decode backslash escapes of a command-line template (`\\n` becomes a newline), as the original."""
    try:
        decoded: bytes = codecs.escape_decode(template.encode("utf-8"))[0]
        return decoded.decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise FarelFormatError(f"bad prompt template: {exc}") from None
