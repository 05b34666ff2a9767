"""farel-bench log files: parse both runners' formats, match each reply to its quiz, and replay them.

API runners write, per quiz, one line with the Python repr of the message list, then the reply.
The llama.cpp runner writes the command line (the templated prompt is its last argument and spans
lines), then the reply. Both end with one summary line per class: `{class}: {acc} (C: c, I: i, M: m A: a)`.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic_ai import (
    ModelAPIError,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RequestUsage,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from farel_bench import TAG_INSTRUCTION
from farel_eval.errors import InputError
from farel_eval.providers import ResolvedModel
from farel_eval.schemas import Quiz

__all__ = [
    "ClassCounts",
    "FarelLog",
    "LogEntry",
    "log_files",
    "match_replies",
    "parse_log",
    "replay_model",
    "resolve_replay",
]

_SUMMARY_LINE = re.compile(
    r"^(?P<name>.+): (?P<accuracy>\d+\.\d{2}) \(C: (?P<c>\d+), I: (?P<i>\d+), M: (?P<m>\d+) A: (?P<a>\d+)\)$"
)
_API_RECORD = "[{'role': "
_END_OF_TEXT = " [end of text]"
"""What llama.cpp's CLI prints after the generated text."""


@dataclass(frozen=True)
class ClassCounts:
    correct: int
    incorrect: int
    missing: int
    total: int


@dataclass(frozen=True)
class LogEntry:
    line: int
    """1-based line where the record starts."""
    text: str
    """API logs: the user message (the quiz). llama.cpp logs: the whole record (templated prompt, then reply)."""
    reply: str | None
    """API logs: the reply. llama.cpp logs: None until the record is matched to its quiz."""
    system_prompt: str | None = None


@dataclass(frozen=True)
class FarelLog:
    path: Path
    kind: Literal["api", "llama.cpp"]
    entries: list[LogEntry]
    summary: dict[str, ClassCounts]
    """The log's own per-class counts: the published ground truth (empty if the log was cut short)."""
    notes: list[str] = field(default_factory=list)
    """Irregularities met while parsing (a truncated last record...)."""


def log_files(paths: Iterable[str]) -> list[Path]:
    """The `.log` files named, or found recursively in the folders named."""
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.log") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise InputError(f"no log file or folder {name}")
    if not found:
        raise InputError(f"no .log files in {', '.join(paths)}")
    return found


def _split_summary(lines: list[str]) -> tuple[list[str], dict[str, ClassCounts]]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    start = end
    while start and _SUMMARY_LINE.match(lines[start - 1]):
        start -= 1
    summary: dict[str, ClassCounts] = {}
    for line in lines[start:end]:
        m = _SUMMARY_LINE.match(line)
        assert m is not None
        summary[m["name"]] = ClassCounts(int(m["c"]), int(m["i"]), int(m["m"]), int(m["a"]))
    return lines[:start], summary


def _messages(line: str) -> list[dict[str, str]] | None:
    """The message list of an API record line, or None if the line is not one (or is cut short)."""
    if not line.startswith(_API_RECORD):
        return None
    try:
        value = ast.literal_eval(line)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        return value
    return None


def parse_log(path: Path) -> FarelLog:
    """Read a farel-bench log of either format; raises `InputError` naming the file when it is neither."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read log {path}: {exc}") from None
    lines, summary = _split_summary(text.split("\n"))
    notes: list[str] = []
    if not summary:
        notes.append("no summary lines: the log is cut short or not finished, counts cannot be checked")
    if lines and lines[0].startswith(_API_RECORD):
        return FarelLog(path, "api", _api_entries(lines, notes), summary, notes)
    if lines and " -p " in lines[0]:
        return FarelLog(path, "llama.cpp", _cli_entries(lines), summary, notes)
    raise InputError(f"{path} is not a farel-bench log: expected a message list or a llama.cpp command on line 1")


def _api_entries(lines: list[str], notes: list[str]) -> list[LogEntry]:
    entries: list[LogEntry] = []
    start: tuple[int, list[dict[str, str]]] | None = None
    reply: list[str] = []

    def close() -> None:
        if start is None:
            return
        number, messages = start
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        system = next((m["content"] for m in messages if m.get("role") == "system"), None)
        entries.append(LogEntry(number, user, "\n".join(reply), system))

    for number, line in enumerate(lines, 1):
        messages = _messages(line)
        if messages is None and line.startswith(_API_RECORD) and number == len(lines):
            notes.append(f"line {number}: a record cut short (its message list does not parse) was dropped")
            continue
        if messages is not None:
            close()
            start, reply = (number, messages), []
        else:
            reply.append(line)
    close()
    return entries


def _cli_entries(lines: list[str]) -> list[LogEntry]:
    command = lines[0][: lines[0].index(" -p ") + len(" -p ")]
    starts = [i for i, line in enumerate(lines) if line.startswith(command)] + [len(lines)]
    return [
        LogEntry(begin + 1, "\n".join(lines[begin:end])[len(command) :], None)
        for begin, end in itertools.pairwise(starts)
    ]


def _reply_after(prompt: str, record: str) -> str | None:
    """In a llama.cpp record, the text after the line on which the quiz prompt ends (its chat template)."""
    at = record.find(prompt)
    if at < 0:
        return None
    line_end = record.find("\n", at + len(prompt))
    reply = record[line_end + 1 :] if line_end >= 0 else ""
    reply = reply.rstrip("\n")
    return reply.removesuffix(_END_OF_TEXT)


def match_replies(log: FarelLog, quizzes: Sequence[Quiz]) -> list[tuple[Quiz, str]]:
    """Each log entry's quiz and reply, in log order; raises `InputError` if a reply's quiz is not known."""
    by_prompt: dict[str, list[int]] = defaultdict(list)
    for index, quiz in enumerate(quizzes):
        by_prompt[quiz.prompt].append(index)
    taken: set[int] = set()
    matched: list[tuple[Quiz, str]] = []
    for position, entry in enumerate(log.entries):
        found: tuple[int, str] | None = None
        if entry.reply is not None:
            free = [i for i in by_prompt.get(entry.text, []) if i not in taken]
            found = (free[0], entry.reply) if free else None
        else:
            guesses = [position] if position < len(quizzes) else []
            for index in guesses + list(range(len(quizzes))):
                if index in taken:
                    continue
                reply = _reply_after(quizzes[index].prompt, entry.text)
                if reply is not None:
                    found = (index, reply)
                    break
        if found is None:
            raise InputError(
                f"{log.path}: the quiz at line {entry.line} is not in the dataset; "
                "pass quizzes='FILE' naming the dataset this log was run on"
            )
        taken.add(found[0])
        matched.append((quizzes[found[0]], found[1]))
    return matched


def _question(prompt: str) -> str:
    """A quiz prompt without the `<ANSWER>` instruction line, as every answer mode but tag poses it."""
    return "\n".join(line for line in prompt.split("\n") if line.strip() != TAG_INSTRUCTION)


def replay_model(replies: Sequence[tuple[Quiz, str]], name: str) -> FunctionModel:
    """A model that answers each quiz with the reply recorded for it (in any mode: the text is sent as is)."""
    by_question = {_question(quiz.prompt): reply for quiz, reply in replies}
    return _answering(lambda prompt: by_question.get(_question(prompt)), name)


def _answering(reply_to: Callable[[str], str | None], name: str) -> FunctionModel:
    def respond(messages: list[ModelMessage], _: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        prompt = next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        reply = reply_to(prompt)
        if reply is None:
            raise ModelAPIError(name, "the log has no reply for this quiz")
        return ModelResponse(parts=[TextPart(reply)], usage=RequestUsage(unmeasured_requests=1), model_name=name)

    return FunctionModel(respond, model_name=name)


def _log_replies(log: FarelLog) -> Callable[[str], str | None]:
    """The reply a log holds for a prompt, found by the quiz's text (with or without its tag instruction)."""
    by_question = {_question(e.text): e.reply for e in log.entries if e.reply is not None}
    records = [e.text for e in log.entries if e.reply is None]

    def reply_to(prompt: str) -> str | None:
        question = _question(prompt)
        if question in by_question:
            return by_question[question]
        for full in (f"{question}\n{TAG_INSTRUCTION}", prompt):
            for record in records:
                reply = _reply_after(full, record)
                if reply is not None:
                    return reply
        return None

    return reply_to


def resolve_replay(log_path: str) -> ResolvedModel:
    """`replay:LOGFILE`: the log's replies as a model. Its cost is unknown, as that of the imported log."""
    log = parse_log(Path(log_path))
    name = f"replay:{log.path.stem}"
    return ResolvedModel(_answering(_log_replies(log), name), name, base_url=None, local=False)
