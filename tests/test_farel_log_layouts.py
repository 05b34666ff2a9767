"""The messier layouts of published farel-bench logs: one crafted log per layout, each imported by content."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import evaluator
import farel_bench
from tests.cli_run import run_cli
from typed_eval.contracts import RunSummary
from typed_eval.core.errors import InputError
from typed_eval.suites.farel.logs import match_replies, parse_log
from typed_eval.suites.farel.suite import FAREL_TASK

QUIZZES = list(farel_bench.generate(3, 50, 42, shuffle=True))
"""The published FaRel-3 quizzes; the first three are child quizzes whose correct answers are 1, 2, 2."""
ASKED = QUIZZES[:3]
ANSWERS = ["<ANSWER>1</ANSWER>", "<ANSWER>1</ANSWER>", "William is Raymond's child.\n<ANSWER>2</ANSWER>"]
"""Correct, incorrect, correct: farel-bench's summary line for them is SUMMARY."""
SUMMARY = "child: 66.67 (C: 2, I: 1, M: 0 A: 3)"
COMMAND = "/llama.cpp/llama-cli -s 42 --temp 0.01 -m /models/m.gguf -e --no-display-prompt -p "
REWORDED = "Make sure to enclose the selected answer number in the <ANSWER> tag, for example: <ANSWER>1</ANSWER>!"


def reworded(prompt: str) -> str:
    return prompt.replace(farel_bench.TAG_INSTRUCTION, REWORDED)


def reworded_instruction_log() -> str:
    """llama.cpp with a ChatML template, the instruction line reworded (Bielik-11B's run)."""
    records = [
        f"{COMMAND}<|im_start|>user\n{reworded(q.prompt)}<|im_end|>\n<|im_start|>assistant\n\n{a} [end of text]\n\n\n"
        for q, a in zip(ASKED, ANSWERS, strict=True)
    ]
    return "".join(records) + SUMMARY + "\n"


def prompt_response_log() -> str:
    """The Google runner: `System prompt:`, `User prompt:`, an error it retried, then `Response:`."""
    records = [
        f"System prompt: Think.\nUser prompt: {q.prompt}\n{'429 Resource exhausted' if i == 1 else ''}"
        f"{chr(10) if i == 1 else ''}Response: {a}\n\n"
        for i, (q, a) in enumerate(zip(ASKED, ANSWERS, strict=True))
    ]
    return "".join(records) + SUMMARY + "\n"


def transcript_log() -> str:
    """A bare chat-template transcript, with no command line (Sky-T1's run)."""
    records = [
        f"<|im_start|>user\n{q.prompt}<|im_end|>\n<|im_start|>assistant\n\n{a}<|endoftext|>\n"
        for q, a in zip(ASKED, ANSWERS, strict=True)
    ]
    return "".join(records) + SUMMARY + "\n"


def first_line_on_command_line_log() -> str:
    """A template that puts the prompt's first line on the command line: the next line starts mid-prompt."""
    records = [f"{COMMAND}<s>[INST] {q.prompt}[/INST]\n\n{a}\n" for q, a in zip(ASKED, ANSWERS, strict=True)]
    return "".join(records) + SUMMARY + "\n"


def restarted_run_log() -> str:
    """Restarts: a command line with no reply, then the same command again; a debugging reply, then again."""
    prompts = [f"{COMMAND}<|im_start|>user\n{q.prompt}<|im_end|>\n<|im_start|>assistant\n" for q in ASKED]
    records = [
        prompts[0],
        f"{prompts[0]}\n{ANSWERS[0]}\n",
        f"{prompts[1]}\n{ANSWERS[1]}\n",
        f"{prompts[2]}\nb'{ANSWERS[0]}'\n",
        f"{prompts[2]}\n{ANSWERS[2]}\n",
    ]
    return "".join(records) + SUMMARY + "\n"


LAYOUTS: dict[str, tuple[Callable[[], str], str, list[str]]] = {
    "reworded-instruction": (
        reworded_instruction_log,
        "command",
        [f"<|im_start|>assistant\n\n{a}" for a in ANSWERS],
    ),
    "prompt-response": (prompt_response_log, "prompt-response", [f"{a}\n" for a in ANSWERS]),
    "transcript": (transcript_log, "transcript", [f"<|im_start|>assistant\n\n{a}<|endoftext|>" for a in ANSWERS]),
    "first-line-on-command-line": (first_line_on_command_line_log, "command", [f"\n{a}" for a in ANSWERS]),
    "restarted-run": (restarted_run_log, "command", [f"<|im_start|>assistant\n\n{a}" for a in ANSWERS]),
}
"""Each layout's log, the layout it is parsed as, and the replies matched to the three quizzes."""


def cli(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(script, *args)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.log"
    path.write_text(text, encoding="utf-8")
    return path


def stored(results: Path) -> tuple[RunSummary, list[dict[str, object]]]:
    (summary,) = results.rglob("summary.json")
    samples = (summary.parent / "samples.jsonl").read_text().splitlines()
    return RunSummary.model_validate_json(summary.read_text()), [json.loads(line) for line in samples]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_matches_its_replies_to_the_quizzes_by_content(layout: str, tmp_path: Path) -> None:
    make, parsed_as, replies = LAYOUTS[layout]
    log = parse_log(write(tmp_path, layout, make()))
    assert log.layout == parsed_as
    matched = match_replies(log, QUIZZES)
    assert [(quiz.id, reply) for quiz, reply in matched.replies] == [
        (quiz.id, reply) for quiz, reply in zip(ASKED, replies, strict=True)
    ]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_layout_imports_to_its_own_summary_line(layout: str, tmp_path: Path) -> None:
    path = write(tmp_path, layout, LAYOUTS[layout][0]())
    done = cli("main.py", "import-farel", str(path), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"{path}: 3 replies, FaRel 66.67; re-scored counts match the log's summary lines")
    run, records = stored(tmp_path / "r")
    assert run.source_log is not None
    assert (run.source_log.replies, run.source_log.matches_log_summary) == (3, True)
    assert [(r["case_id"], r["output"], r["status"]) for r in records] == [
        ("q00001", "1", "correct"),
        ("q00002", "1", "incorrect"),
        ("q00003", "2", "correct"),
    ]


def test_the_kind_stored_is_the_runner_the_layout_comes_from(tmp_path: Path) -> None:
    kinds = {name: parse_log(write(tmp_path, name, make())).kind for name, (make, _, _) in LAYOUTS.items()}
    assert kinds == {
        "reworded-instruction": "llama.cpp",
        "prompt-response": "api",
        "transcript": "llama.cpp",
        "first-line-on-command-line": "llama.cpp",
        "restarted-run": "llama.cpp",
    }


def test_the_google_runners_system_prompt_and_retried_errors_are_kept_apart(tmp_path: Path) -> None:
    log = parse_log(write(tmp_path, "google", prompt_response_log()))
    assert [(e.line, e.system_prompt) for e in log.entries] == [(2, "Think."), (13, "Think."), (25, "Think.")]
    assert log.entries[1].text == f"{ASKED[1].prompt}\n429 Resource exhausted"


def test_a_restarted_run_counts_each_quiz_once_and_says_so(tmp_path: Path) -> None:
    path = write(tmp_path, "restarted", restarted_run_log())
    assert match_replies(parse_log(path), QUIZZES).notes == [
        "line 1: the same quiz is posed again at line 11 (a restarted run); only the later record counts",
        "line 35: the same quiz is posed again at line 47 (a restarted run); only the later record counts",
    ]
    done = cli("main.py", "import-farel", str(path), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    run, _ = stored(tmp_path / "r")
    assert run.source_log is not None
    assert run.source_log.notes == match_replies(parse_log(path), QUIZZES).notes


def test_replaying_a_restarted_run_answers_with_the_later_replies(tmp_path: Path) -> None:
    path = write(tmp_path, "restarted", restarted_run_log())
    cases = [quiz.to_case() for quiz in ASKED]
    tagged = asyncio.run(evaluator.evaluate(FAREL_TASK, cases, f"replay:{path}", mode="tag"))
    assert [(r.output, r.status) for r in tagged.records] == [("1", "correct"), ("1", "incorrect"), ("2", "correct")]
    structured = asyncio.run(evaluator.evaluate(FAREL_TASK, cases[:1], f"replay:{path}", retries=0))
    assert structured.records[0].attempts[0].invalid_kind == "no_tool_call"  # the reply is found, as plain text


def test_a_summary_from_another_reader_is_imported_and_reported_class_by_class(tmp_path: Path) -> None:
    """qvq-72b's run was asked "Answer with selected option number." and answered `\\boxed{n}`: its summary
    lines came from a reader of those, farel-bench's tag reader finds no answer, and nothing is patched."""
    asked = "Answer with selected option number."
    lines: list[str] = []
    for quiz in ASKED:
        prompt = quiz.prompt.replace(farel_bench.TAG_INSTRUCTION, asked)
        lines += [repr([{"role": "user", "content": prompt}]), f"**Final Answer**\n\n\\[ \\boxed{{{quiz.correct}}} \\]"]
    path = write(tmp_path, "qvq", "\n".join([*lines, "child: 100.00 (C: 3, I: 0, M: 0 A: 3)"]) + "\n")
    done = cli("main.py", "import-farel", str(path), "--results-dir", str(tmp_path / "r"))
    assert done.returncode == 1
    head, *mismatches = done.stdout.splitlines()
    assert head.startswith(f"{path}: 3 replies, FaRel 0.00; re-scored counts DIFFER from the log's summary lines")
    assert mismatches == ["  child: the log says C 3, I 0, M 0, A 3; re-scored C 0, I 0, M 3, A 3"]
    run, records = stored(tmp_path / "r")
    assert run.source_log is not None and run.source_log.matches_log_summary is False
    assert [(r["case_id"], r["status"], r["relaxed_output"]) for r in records] == [  # relaxed: never counted
        ("q00001", "missing", "1"),
        ("q00002", "missing", "2"),
        ("q00003", "missing", "2"),
    ]


def test_a_quiz_with_other_options_is_not_the_datasets(tmp_path: Path) -> None:
    """Matching by content covers the options: the same relations and question, options swapped, is another quiz."""
    lines = ASKED[0].prompt.split("\n")
    lines[5], lines[6] = "1. Anthony is Ralph's parent.", "2. Anthony is Ralph's child."
    path = write(tmp_path, "swapped", repr([{"role": "user", "content": "\n".join(lines)}]) + "\n<ANSWER>2</ANSWER>\n")
    with pytest.raises(InputError) as refused:
        match_replies(parse_log(path), QUIZZES)
    assert (refused.value.parameter, str(refused.value)) == (
        "quizzes",
        f"quizzes: {path}: the quiz at line 1 is not in the dataset; name the dataset this log was run on",
    )


def test_a_quiz_posed_again_later_is_refused(tmp_path: Path) -> None:
    """Only a quiz posed twice in a row is a restart; later, it would be counted twice."""
    lines: list[str] = []
    for quiz in [ASKED[0], ASKED[1], ASKED[0]]:
        lines += [repr([{"role": "user", "content": quiz.prompt}]), "<ANSWER>1</ANSWER>"]
    path = write(tmp_path, "again", "\n".join(lines) + "\n")
    with pytest.raises(InputError) as refused:
        match_replies(parse_log(path), QUIZZES)
    assert str(refused.value) == (
        f"{path}: the quiz at line 5 was answered already at line 1, and the dataset has it only once"
    )
