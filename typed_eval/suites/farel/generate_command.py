"""`farel_bench.py` (and `main.py generate --suite farel`): farel-bench CSV on stdout, progress on stderr, with the
original generator's flags."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence

from typed_eval.core.errors import OneLineArgumentParser
from typed_eval.suites.farel.generator import (
    DEFAULT_TEMPLATE,
    FarelFormatError,
    FarelLengthError,
    csv_line,
    decode_template,
    family_tree,
    generate,
)

__all__ = ["main"]


def _argument_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(description="Generate FaRel family relationship quizzes as CSV on stdout.")
    parser.add_argument("-l", "--length", type=int, required=True, help="Maximum length of family relationship paths.")
    parser.add_argument(
        "-p",
        "--prompt",
        default=DEFAULT_TEMPLATE,
        help=f"Prompt template of the quiz. The default prompt template is: {DEFAULT_TEMPLATE!r}",
    )
    parser.add_argument(
        "-s",
        "--shuffle",
        action="store_true",
        help="Shuffle the order of parental relations and answer options in the quiz.",
    )
    parser.add_argument(
        "-n", "--number", type=int, default=10, help="Number of quizzes generated for each family relationship."
    )
    parser.add_argument("-r", "--seed", type=int, default=None, help="Random seed value")
    parser.add_argument(
        "--unambiguous",
        action="store_true",
        help="Name the two 'cousin Nx removed' classes of degree >= 5 apart (breaks parity).",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _argument_parser().parse_args(argv)
    if args.length < 1 or args.number < 0:
        print("farel_bench.py: error: --length must be at least 1 and --number at least 0", file=sys.stderr)
        return 2
    try:
        template = decode_template(args.prompt)
    except FarelFormatError as exc:
        print(f"farel_bench.py: error: {exc}", file=sys.stderr)
        return 2
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n", write_through=False)
    degree = 0
    try:
        for quiz in generate(
            args.length, args.number, args.seed, shuffle=args.shuffle, template=template, unambiguous=args.unambiguous
        ):
            if quiz.degree != degree:
                degree = quiz.degree or 0
                names = family_tree(degree).class_names(unambiguous=args.unambiguous)
                print(f"Relations of length: {degree} ({names})", file=sys.stderr)
            out.write(csv_line(quiz) + "\n")
    except FarelLengthError as exc:
        print(f"farel_bench.py: error: {exc}", file=sys.stderr)
        return 2
    finally:
        out.flush()
        out.detach()
    return 0
