"""lineage-bench's generator: the same quizzes and the same CSV bytes as `lineage_bench.py` with the same arguments
(its `\\r\\n` line ends), a dataset's MD5 being that of those bytes; and its command line (`generate lineage`)."""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import random
import re
import sys
from collections.abc import Iterable, Iterator, Sequence

from typed_eval.contracts import Case, DatasetInfo, GroupScore, Quiz
from typed_eval.core.datasets import Dataset, bounded_size, survey
from typed_eval.core.errors import InputError, OneLineArgumentParser
from typed_eval.suites.farel import generator as farel
from typed_eval.suites.lineage.names import (
    ALL_NAMES,
    FEW_NAMES,
    FEW_NAMES_UP_TO,
)

__all__ = [
    "DEFAULT_LENGTHS",
    "DEFAULT_PROMPT",
    "MAX_LENGTH",
    "MIN_LENGTH",
    "NONE_CORRECT",
    "RELATIONS",
    "SUITE",
    "csv_line",
    "generate",
    "generated_dataset",
    "group_name",
    "main",
    "numbered",
    "quiz_case",
    "size_of_group",
    "size_scores",
]


SUITE = "lineage"
MIN_LENGTH, MAX_LENGTH = 4, 2048
DEFAULT_LENGTHS = (8, 16, 32, 64)
"""The sizes lineage-bench's author runs (`-s -n 50 -r 42` each): 800 quizzes."""

DEFAULT_PROMPT = (
    "Given the following lineage relationships:\n{quiz_relations}\n{quiz_question}\nSelect the correct answer:\n"
    "{quiz_answers}\n" + farel.TAG_INSTRUCTION
)

RELATIONS = ("ANCESTOR", "DESCENDANT", "COMMON_ANCESTOR", "COMMON_DESCENDANT")
"""The four quiz classes, in the order lineage-bench generates them and lists their options."""

_OPTIONS = {
    "ANCESTOR": "{a} is {b}'s ancestor.",
    "DESCENDANT": "{a} is {b}'s descendant.",
    "COMMON_ANCESTOR": "{a} and {b} share a common ancestor.",
    "COMMON_DESCENDANT": "{a} and {b} share a common descendant.",
}
NONE_CORRECT = "None of the above is correct."
"""Always the last option, and never the correct one."""


def group_name(size: int, relation: str) -> str:
    """A case's group: its problem size and class, so the macro mean over groups is lineage-bench's score."""
    return f"lineage-{size} {relation}"


_GROUP = re.compile(r"^lineage-(\d+) ")


def size_of_group(group: str) -> int | None:
    match = _GROUP.match(group)
    return int(match.group(1)) if match else None


def size_scores(groups: Iterable[GroupScore]) -> dict[str, float | None]:
    """`lineage-N` -> the mean of that size's class accuracies (0-100), as `compute_metrics.py` prints each size."""
    by_size: dict[int, list[float]] = {}  # a size none of whose groups was scored has no figure
    for group in groups:
        size = size_of_group(group.group)
        if size is not None and group.score is not None:
            by_size.setdefault(size, []).append(group.score)
    return {f"lineage-{size}": sum(values) / len(values) for size, values in by_size.items()}


def _check_length(length: int) -> None:
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise InputError(f"a lineage quiz connects {MIN_LENGTH} to {MAX_LENGTH} people, not {length}")


def _check_template(template: str) -> None:
    """A template str.format cannot fill is refused before any quiz is written."""
    try:
        template.format(quiz_relations="x", quiz_question="x", quiz_answers="x")
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise InputError(f"bad prompt template: {type(exc).__name__}: {exc}") from None


def _edges(rng: random.Random, length: int, relation: str) -> list[tuple[int, int]]:
    """`(a, b)`: a is b's ancestor. The chain runs from person 0 to person length-1; a common ancestor or
    descendant sits at a drawn position inside it."""
    if relation == "ANCESTOR":
        return [(i, i + 1) for i in range(length - 1)]
    if relation == "DESCENDANT":
        return [(i + 1, i) for i in range(length - 1)]
    common = rng.randint(1, length - 2)
    up_to_common = relation == "COMMON_ANCESTOR"
    return [(i + 1, i) if (i + 1 <= common) == up_to_common else (i, i + 1) for i in range(length - 1)]


def _statement(ancestor: str, descendant: str, *, ancestor_first: bool) -> str:
    """One relation, stated from either side (lineage-bench draws which)."""
    if ancestor_first:
        return f"* {ancestor} is {descendant}'s ancestor."
    return f"* {descendant} is {ancestor}'s descendant."


def _quiz(
    rng: random.Random, pool: Sequence[str], length: int, relation: str, *, shuffle: bool, template: str
) -> tuple[str, tuple[str, ...], int]:
    """One quiz's text, options and correct option number, drawing from `rng` in lineage-bench's order."""
    names = rng.sample(pool, length)
    edges = _edges(rng, length, relation)
    if shuffle:
        rng.shuffle(edges)
    statements = [_statement(names[a], names[b], ancestor_first=rng.choice((True, False))) for a, b in edges]
    first, last = names[0], names[-1]
    order = list(RELATIONS)
    if shuffle:
        rng.shuffle(order)
    options = (*(_OPTIONS[r].format(a=first, b=last) for r in order), NONE_CORRECT)
    prompt = template.format(
        quiz_relations="\n".join(statements),
        quiz_question=f"Determine the lineage relationship between {first} and {last}.",
        quiz_answers="\n".join(f"{number}. {option}" for number, option in enumerate(options, 1)),
    )
    return prompt, options, order.index(relation) + 1


def quiz_case(size: int, relation: str, correct: int, prompt: str, options: Sequence[str]) -> Case:
    """A quiz as a multiple-choice case. Its id is the size and the MD5 of its text (as lineage-bench names its
    cached answers), so an imported result and a run here on the same quiz pair up."""
    quiz = Quiz(
        id=f"{size}-{hashlib.md5(prompt.encode('utf-8')).hexdigest()[:12]}",
        class_name=group_name(size, relation),
        prompt=prompt,
        options=tuple(options),
        correct=correct,
    )
    case = quiz.to_case()
    return case.model_copy(update={"metadata": {**case.metadata, "problem_size": size, "relation": relation}})


def numbered(cases: Iterable[Case]) -> Iterator[Case]:
    """Case ids made unique: a quiz that comes again is `ID-2`, `ID-3`..."""
    seen: dict[str, int] = {}
    for case in cases:
        seen[case.id] = seen.get(case.id, 0) + 1
        yield case if seen[case.id] == 1 else case.model_copy(update={"id": f"{case.id}-{seen[case.id]}"})


def generate(
    length: int, number: int = 10, seed: int | None = None, *, shuffle: bool = False, template: str = DEFAULT_PROMPT
) -> Iterator[Case]:
    """The quizzes `lineage_bench.py -l length -n number -r seed [-s]` writes, in its order, as cases."""
    _check_length(length)
    _check_template(template)
    return numbered(_generate(length, number, seed, shuffle=shuffle, template=template))


def _generate(length: int, number: int, seed: int | None, *, shuffle: bool, template: str) -> Iterator[Case]:
    rng = random.Random(seed)
    pool = FEW_NAMES if length <= FEW_NAMES_UP_TO else ALL_NAMES
    for _ in range(number):
        for relation in RELATIONS:
            prompt, options, correct = _quiz(rng, pool, length, relation, shuffle=shuffle, template=template)
            yield quiz_case(length, relation, correct, prompt, options)


def csv_line(case: Case) -> str:
    """A case as the CSV row lineage-bench writes (size, class, correct number, quiz; `\\r\\n` line end)."""
    out = io.StringIO()
    csv.writer(out).writerow([case.metadata["problem_size"], case.metadata["relation"], case.expected, case.prompt])
    return out.getvalue()


def _csv_bytes(case: Case) -> bytes:
    return csv_line(case).encode("utf-8")


def generated_dataset(lengths: Sequence[int], number: int, seed: int | None, *, shuffle: bool) -> Dataset:
    """The quizzes of `lineage_bench.py -l L -n number -r seed [-s]` for each size L in turn, and the MD5 of
    those outputs one after another."""
    sizes = list(lengths)
    if not sizes:
        raise InputError("name at least one lineage problem size")
    for length in sizes:
        _check_length(length)
    if len(set(sizes)) < len(sizes):
        raise InputError(f"a lineage problem size is named twice: {','.join(map(str, sizes))}")
    if number < 1:
        raise InputError(f"must be at least 1, got {number}", parameter="number")
    total = bounded_size(number, "number", per=len(sizes) * len(RELATIONS))

    def source() -> Iterator[Case]:
        return (case for length in sizes for case in generate(length, number, seed, shuffle=shuffle))

    groups, md5, source = survey(source, _csv_bytes, total=total)
    params = {"problem_sizes": sizes, "number": number, "seed": seed, "shuffle": shuffle}
    info = DatasetInfo(suite=SUITE, source="generated", md5=md5, cases=sum(groups.values()), params=params)
    return Dataset(info, groups, source)


def _length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not MIN_LENGTH <= value <= MAX_LENGTH:
        raise argparse.ArgumentTypeError(f"must be {MIN_LENGTH} to {MAX_LENGTH}, got {value}")
    return value


def _argument_parser(prog: str) -> OneLineArgumentParser:
    parser = OneLineArgumentParser(prog=prog, description="Generate lineage-bench quizzes as CSV on stdout.")
    parser.add_argument(
        "-l",
        "--length",
        type=_length,
        required=True,
        metavar=f"[{MIN_LENGTH}-{MAX_LENGTH}]",
        help="Number of people connected with lineage relationships in the quiz.",
    )
    parser.add_argument(
        "-p",
        "--prompt",
        default=DEFAULT_PROMPT,
        help=f"Prompt template of the quiz. The default prompt template is: {DEFAULT_PROMPT!r}",
    )
    parser.add_argument(
        "-s", "--shuffle", action="store_true", help="Shuffle the order of lineage relations in the quiz."
    )
    parser.add_argument(
        "-n", "--number", type=int, default=10, help="Number of quizzes generated for each valid answer option."
    )
    parser.add_argument("-r", "--seed", type=int, default=None, help="Random seed value")
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "lineage") -> int:
    """`lineage_bench.py`'s command line: the same flags, the same bytes on stdout."""
    args = _argument_parser(prog).parse_args(argv)
    if args.number < 0:
        print(f"{prog}: error: argument -n/--number: must be 0 or more, got {args.number}", file=sys.stderr)
        return 2
    try:
        template = farel.decode_template(args.prompt)
        _check_template(template)
    except (farel.FarelFormatError, InputError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="", write_through=False)
    for case in generate(args.length, args.number, args.seed, shuffle=args.shuffle, template=template):
        out.write(csv_line(case))
    out.flush()
    out.detach()
    return 0
