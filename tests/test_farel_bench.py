"""Generator parity with farel-bench: byte-identical CSV, the spec's family trees and names, the reader."""

from __future__ import annotations

import hashlib
import random
import subprocess

import pytest

import farel_bench
from farel_bench import FarelFormatError, family_tree, generate, read_csv, relation_name
from tests.cli_run import run_cli
from tests.conftest import PUBLISHED_CSV, PUBLISHED_MD5


def run_generator(*args: str) -> subprocess.CompletedProcess[bytes]:
    return run_cli("farel_bench.py", *args, text=False)


def test_published_dataset_is_reproduced_byte_for_byte() -> None:
    result = run_generator("-l", "3", "-n", "50", "-r", "42", "-s")
    assert result.returncode == 0
    assert result.stdout == PUBLISHED_CSV.read_bytes()
    assert hashlib.md5(result.stdout).hexdigest() == PUBLISHED_MD5
    assert result.stderr.decode().splitlines() == [
        "Relations of length: 1 (['child', 'parent'])",
        "Relations of length: 2 (['grandchild', 'sibling', 'grandparent'])",
        "Relations of length: 3 (['great grandchild', 'niece or nephew', 'aunt or uncle', 'great grandparent'])",
    ]


# MD5s of what the original farel-bench generator (v0.16.0-alpha, run out of tree) printed for these arguments.
ORIGINAL_OUTPUT_MD5 = [
    (["-l", "1", "-n", "5", "-r", "1"], "12d947caa472c5dcdd134abfcdc880f1"),
    (["-l", "2", "-n", "7", "-r", "3", "-s"], "a76d1dfc36c2d979e937d60b65ed57ad"),
    (["-l", "4", "-n", "3", "-r", "0", "-s"], "bdfb572d6654f6a0f06199364b82c25d"),
    (["-l", "5", "-n", "4", "-r", "9", "-s"], "7717c0f298fea5a2f94ff0ad2c7d5ffb"),
    (["-l", "6", "-n", "2", "-r", "11"], "6d30fd309953e6b4d42b880f3f4c0294"),
    (["-l", "7", "-n", "2", "-r", "5", "-s"], "40b08420596f6d9258fe76db90669810"),
    (["-l", "8", "-n", "1", "-r", "2", "-s"], "374a6fefa6cd8316336e80d9aad507f7"),
    (["-l", "9", "-n", "1", "-r", "13"], "0cac793dbd523fa3fa2030a0d27a9f59"),
    (["-l", "10", "-n", "2", "-r", "42", "-s"], "f93b91250841a2075cb96fdd0eae08c4"),
    (["-l", "3", "-n", "50", "-r", "42"], "f52b3a8063ec1ea5a0f2b8b02f16d781"),
    (
        [
            "-l",
            "3",
            "-n",
            "10",
            "-r",
            "7",
            "-s",
            "-p",
            "Q:$QUIZ_QUESTION\\n$QUIZ_RELATIONS\\n$QUIZ_GENDERS\\nOpts:\\n$QUIZ_ANSWERS\\tZażółć",
        ],
        "c3399ae13b2fa90fc934fe30ceb2ac01",
    ),
    (["-l", "4", "-n", "2", "-r", "5", "-s", "-p", "\\x41\\\\n$QUIZ_ANSWERS"], "c0d54079dae2407a537668665fd682f9"),
]


@pytest.mark.parametrize(("args", "md5"), ORIGINAL_OUTPUT_MD5, ids=[" ".join(a[:7]) for a, _ in ORIGINAL_OUTPUT_MD5])
def test_other_arguments_match_the_original_generator(args: list[str], md5: str) -> None:
    result = run_generator(*args)
    assert result.returncode == 0, result.stderr
    assert hashlib.md5(result.stdout).hexdigest() == md5


def test_a_permutation_is_drawn_as_random_sample_draws_it() -> None:
    """The generator's own draw of a whole name list: the same list and the same generator state after it as
    `Random.sample` (a Python whose `sample` draws otherwise fails here, not only in the published dataset's MD5)."""
    from typed_eval.suites.farel.generator import FEMALE_NAMES, MALE_NAMES, permutation

    for seed in range(50):
        for names in (MALE_NAMES, FEMALE_NAMES, ("a",), ()):
            ours, stdlib = random.Random(seed), random.Random(seed)
            assert permutation(ours, names) == stdlib.sample(names, len(names))
            assert ours.getstate() == stdlib.getstate()


def test_family_trees_grow_as_the_spec_lists() -> None:
    assert family_tree(1).edges == ((0, 1), (2, 0))
    assert family_tree(3).edges[5:] == ((3, 6), (4, 7), (5, 8), (9, 5))
    assert family_tree(6).edges[-7:] == ((15, 21), (16, 22), (17, 23), (18, 24), (19, 25), (20, 26), (27, 20))
    assert family_tree(6).class_persons == (21, 22, 23, 24, 25, 26, 27)
    assert family_tree(4).class_names() == [
        "great great grandchild",
        "grand-niece or grand-nephew",
        "1st cousin",
        "grand-aunt or grand-uncle",
        "great great grandparent",
    ]
    assert family_tree(6).class_names() == [
        "4th great grandchild",
        "great great grand-niece or great great grand-nephew",
        "1st cousin 2x removed",
        "2nd cousin",
        "1st cousin 2x removed",
        "great great grand-aunt or great great grand-uncle",
        "4th great grandparent",
    ]


def test_relation_names_follow_the_originals_quirks() -> None:
    assert relation_name(0, 23) == "21th great grandchild"
    assert relation_name(5, 0) == "3rd great grandparent"
    assert relation_name(3, 2) == relation_name(2, 3) == "1st cousin 1x removed"
    assert relation_name(3, 2, unambiguous=True) == "1st cousin 1x removed (older generation)"
    assert relation_name(2, 3, unambiguous=True) == "1st cousin 1x removed (younger generation)"


def test_generated_quizzes_are_typed() -> None:
    first = next(generate(3, 50, 42, shuffle=True))
    assert first.model_dump() == {
        "id": "q00001",
        "class_name": "child",
        "degree": 1,
        "correct": 1,
        "options": ("Anthony is Ralph's child.", "Anthony is Ralph's parent."),
        "prompt": "Given the family relationships:\n* Ralph is Anthony's parent.\n* Albert is Ralph's parent.\n"
        "What is Anthony's relationship to Ralph?\nSelect the correct answer:\n"
        "1. Anthony is Ralph's child.\n2. Anthony is Ralph's parent.\n"
        "Enclose the selected answer number in the <ANSWER> tag, for example: <ANSWER>1</ANSWER>.",
    }
    assert first.ambiguous is False


def test_ambiguous_quizzes_are_flagged_and_unambiguous_names_clear_them() -> None:
    quizzes = [q for q in generate(5, 2, 1, shuffle=True) if q.degree == 5]
    flagged = {q.class_name for q in quizzes if q.ambiguous}
    assert flagged == {"1st cousin 1x removed"}
    assert sum(q.ambiguous for q in quizzes) == 4  # both classes of that name, 2 quizzes each
    assert not any(q.ambiguous for q in generate(5, 2, 1, shuffle=True, unambiguous=True))


def test_reader_parses_the_published_csv_back_into_the_same_lines() -> None:
    lines = PUBLISHED_CSV.read_text(encoding="utf-8").splitlines()
    quizzes = read_csv(lines)
    assert len(quizzes) == 450
    assert [farel_bench.csv_line(q) for q in quizzes] == lines
    assert quizzes == list(generate(3, 50, 42, shuffle=True))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1,child,1", "line 1: expected degree,relation,answer,quiz with the quiz as a quoted string"),
        ('x,child,1,"a"', "line 1: expected degree,relation,answer,quiz"),
        ('1,child,1,"no options here"', "line 1: no numbered answer options"),
        ('1,child,3,"Q\\n1. a\\n2. b"', "line 1: correct answer 3 is not an option number 1..2"),
        ('1,child,1,"unterminated \\', "line 1:"),
    ],
)
def test_reader_rejects_malformed_lines_with_the_line_number(line: str, message: str) -> None:
    with pytest.raises(FarelFormatError, match=message):
        read_csv([line], source="quizzes")


def test_reader_takes_quoted_relations_with_commas_as_in_the_polish_dataset() -> None:
    line = (
        "3,'siostrzenicą, bratanicą',1,"
        "'Relacje:\\nKim jest Ola dla Ewy?\\n1. Ola jest siostrzenicą Ewy.\\n2. Ola jest ciotką Ewy.'"
    )
    (quiz,) = read_csv([line])
    assert (quiz.class_name, quiz.degree, quiz.correct) == ("siostrzenicą, bratanicą", 3, 1)
    assert quiz.options == ("Ola jest siostrzenicą Ewy.", "Ola jest ciotką Ewy.")
    assert quiz.prompt.splitlines()[1] == "Kim jest Ola dla Ewy?"


def test_bad_template_is_a_one_line_error() -> None:
    result = run_generator("-l", "1", "-p", "bad \\x escape")
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode().strip().splitlines() == [
        "farel_bench.py: error: bad prompt template: invalid \\x escape at position 4"
    ]
