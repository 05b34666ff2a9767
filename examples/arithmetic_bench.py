#!/usr/bin/env python3
"""A tiny arithmetic benchmark built on `evaluator`: an example of using it from another benchmark.

    python examples/arithmetic_bench.py --model test --mode tool
    python examples/arithmetic_bench.py --model openai:gpt-4o-mini --number 20

It makes its own multiple-choice items, hands them to `evaluate_quizzes` (`evaluator.evaluate` with the
multiple-choice task), and prints what comes back; nothing here knows about FaRel, result folders or the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import random
import sys

import evaluator
from typed_eval.contracts import Quiz
from typed_eval.suites.multiple_choice import evaluate_quizzes

OPERATIONS = {
    "addition": ("+", operator.add),
    "subtraction": ("-", operator.sub),
    "multiplication": ("*", operator.mul),
}


def arithmetic_quizzes(number: int, seed: int = 0) -> list[Quiz]:
    """`number` quizzes per operation, each with four numeric options of which one is the result."""
    rng = random.Random(seed)
    quizzes: list[Quiz] = []
    for name, (symbol, apply) in OPERATIONS.items():
        for _ in range(number):
            a, b = rng.randint(2, 99), rng.randint(2, 99)
            result = apply(a, b)
            wrong = rng.sample([d for d in range(-12, 13) if d != 0], 3)
            options = [result, *(result + d for d in wrong)]
            rng.shuffle(options)
            lines = "\n".join(f"{k}. {value}" for k, value in enumerate(options, 1))
            quizzes.append(
                Quiz(
                    id=f"{name}-{len(quizzes) + 1}",
                    class_name=name,
                    prompt=f"What is {a} {symbol} {b}?\n{lines}",
                    options=tuple(map(str, options)),
                    correct=options.index(result) + 1,
                )
            )
    return quizzes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="test")
    parser.add_argument("--mode", choices=["tool", "tag", "native", "prompted"], default="tool")
    parser.add_argument("--number", type=int, default=5)
    args = parser.parse_args()
    quizzes = arithmetic_quizzes(args.number)
    if args.mode == "tag":
        quizzes = [q.model_copy(update={"prompt": q.prompt + "\nAnswer with <ANSWER>n</ANSWER>."}) for q in quizzes]
    try:
        result = asyncio.run(evaluate_quizzes(quizzes, args.model, mode=args.mode))
    except evaluator.EvaluatorError as exc:
        print(f"arithmetic_bench: error: {exc}", file=sys.stderr)
        return 2
    for c in result.scores.groups:
        print(f"{c.group}: {c.score:.2f} (C: {c.correct}, I: {c.incorrect}, M: {c.missing})")
    compliance = result.scores.compliance
    print(
        f"macro accuracy: {result.scores.score:.2f}, valid first try: {compliance.valid_first_try:.1f}%, "
        f"corrective retries: {compliance.corrective_retries}, requests: {result.scores.totals.requests}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
