"""farel-bench log files: split them into records, match each reply to its quiz by content, and replay them.

The published logs come in four layouts. The API runners write, per quiz, the Python repr of the message list
on one line, then the reply; the Google runner writes `User prompt: ...` then `Response: ...`. The llama.cpp
runner writes the command line (the templated prompt is its last argument and spans lines), then the reply;
some local runs kept only the chat-template transcript (`<|im_start|>user ... <|im_end|>`), with no command
line. All end with one summary line per class: `{class}: {acc} (C: c, I: i, M: m A: a)`.

A record is matched to its quiz by the quiz's content (its relations, question and options, whitespace
normalised), not by the prompt's exact text: runs reworded the instruction line, and chat templates put the
prompt's first line on the command line.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from typed_eval.contracts import Quiz
from typed_eval.core.errors import InputError
from typed_eval.core.sources import files_named
from typed_eval.providers.replay import replay_model
from typed_eval.providers.resolve import ResolvedModel
from typed_eval.suites.farel.generator import TAG_INSTRUCTION
from typed_eval.suites.farel.log_literals import LiteralReader

__all__ = [
    "ClassCounts",
    "FarelLog",
    "Layout",
    "LogEntry",
    "MatchedReplies",
    "log_files",
    "match_replies",
    "parse_log",
    "replies_by_question",
    "resolve_replay",
]

Layout = Literal["messages", "prompt-response", "command", "transcript"]
"""How a log lays out its records: message lists, `User prompt:`/`Response:`, llama.cpp command lines, or
bare chat-template transcripts."""

_SUMMARY_LINE = re.compile(
    r"^(?P<name>.+): (?P<accuracy>\d+\.\d{2}) \(C: (?P<c>\d+), I: (?P<i>\d+), M: (?P<m>\d+) A: (?P<a>\d+)\)$"
)
_API_RECORD = "[{'role': "
_USER_PROMPT = "User prompt: "
_SYSTEM_PROMPT = "System prompt: "
_RESPONSE = "Response: "
_COMMAND_PROMPT = " -p "
_CHAT_TURN = re.compile(r"^<[^\s<>]+>")
"""A special token opening a chat-template turn: `<|im_start|>`, `<start_of_turn>`, `<s>`, `<|user|>`..."""
_OPTION_LINE = re.compile(r"^\d+\. ")
_END_OF_TEXT = " [end of text]"
"""What llama.cpp's CLI prints after the generated text."""
_NO_REPLY = "the log has no reply for this quiz"


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
    """API logs: the user prompt (the quiz). llama.cpp logs: the whole record (templated prompt, then reply)."""
    reply: str | None
    """API logs: the reply. llama.cpp logs: None, the reply is the text after the quiz's instruction line."""
    system_prompt: str | None = None


@dataclass(frozen=True)
class FarelLog:
    path: Path
    layout: Layout
    entries: list[LogEntry]
    summary: dict[str, ClassCounts]
    """The log's own per-class counts: the published ground truth (empty if the log was cut short)."""
    notes: list[str] = field(default_factory=list)
    """Irregularities met while parsing (a truncated last record...)."""

    @property
    def kind(self) -> Literal["api", "llama.cpp"]:
        """The runner that wrote the log: an API one, or a local llama.cpp one (command lines or transcripts)."""
        return "api" if self.layout in ("messages", "prompt-response") else "llama.cpp"


@dataclass(frozen=True)
class MatchedReplies:
    replies: list[tuple[Quiz, str]]
    """Each counted record's quiz and reply, in log order."""
    notes: list[str]
    """Records left out, and why (a restarted run poses its first quizzes again)."""


def log_files(paths: Iterable[str]) -> list[Path]:
    """The `.log` files named, or found recursively in the folders named."""
    return files_named(paths, ".log", "log")


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


def _content(value: object) -> str | None:
    """A message's content as text: a string, or a list of parts (`{"type": "text", "text": ...}`) joined; None
    for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        return "".join(part["text"] for part in value if isinstance(part, dict) and isinstance(part.get("text"), str))
    return None


def _prompts(line: str) -> tuple[str, str | None] | None:
    """The user and system prompts of an API record line (its message list), or None if the line is not one (or is
    cut short). Read a message at a time, in memory that does not grow with the number of messages."""
    if not line.startswith(_API_RECORD):
        return None
    user: str | None = None
    system: str | None = None
    messages = 0
    try:
        for message in LiteralReader(line).elements():
            text = _content(message.get("content")) if isinstance(message, dict) else None
            if text is None:
                return None
            messages += 1
            role = message.get("role") if isinstance(message, dict) else None
            if role == "user" and user is None:
                user = text
            elif role == "system" and system is None:
                system = text
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return (user or "", system) if messages else None


def _layout(first: str) -> Layout | None:
    """Told by the log's first line, which opens its first record."""
    if first.startswith(_API_RECORD):
        return "messages"
    if first.startswith((_USER_PROMPT, _SYSTEM_PROMPT)):
        return "prompt-response"
    if _COMMAND_PROMPT in first:
        return "command"
    if _CHAT_TURN.match(first):
        return "transcript"
    return None


def parse_log(path: Path) -> FarelLog:
    """Read a farel-bench log of any layout; raises `InputError` naming the file when it is none of them."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read log {path}: {exc}") from None
    lines, summary = _split_summary(text.split("\n"))
    notes: list[str] = []
    if not summary:
        notes.append("no summary lines: the log is cut short or not finished, counts cannot be checked")
    layout = _layout(lines[0]) if lines else None
    if layout == "messages":
        entries = _api_entries(lines, notes)
        if not entries:
            raise InputError(f"{path}: no whole record: the log is cut short in its first message list")
        return FarelLog(path, layout, entries, summary, notes)
    if layout == "prompt-response":
        return FarelLog(path, layout, _prompt_response_entries(lines), summary, notes)
    if layout == "command":
        return FarelLog(path, layout, _command_entries(lines), summary, notes)
    if layout == "transcript":
        return FarelLog(path, layout, _transcript_entries(lines), summary, notes)
    raise InputError(
        f"{path} is not a farel-bench log: expected a message list, `User prompt:`, a llama.cpp command "
        "or a chat-template turn on line 1"
    )


def _api_entries(lines: list[str], notes: list[str]) -> list[LogEntry]:
    entries: list[LogEntry] = []
    start: tuple[int, tuple[str, str | None]] | None = None
    reply: list[str] = []

    def close() -> None:
        if start is None:
            return
        number, (user, system) = start
        entries.append(LogEntry(number, user, "\n".join(reply), system))

    for number, line in enumerate(lines, 1):
        prompts = _prompts(line)
        if prompts is None and line.startswith(_API_RECORD) and number == len(lines):
            notes.append(f"line {number}: a record cut short (its message list does not parse) was dropped")
            continue
        if prompts is not None:
            close()
            start, reply = (number, prompts), []
        else:
            reply.append(line)
    close()
    return entries


def _prompt_response_entries(lines: list[str]) -> list[LogEntry]:
    """The Google runner's records: `System prompt:` (if any), `User prompt:`, errors it retried, `Response:`."""
    starts = [i for i, line in enumerate(lines) if line.startswith(_USER_PROMPT)]
    entries: list[LogEntry] = []
    for begin, end in itertools.pairwise([*starts, len(lines)]):
        record = lines[begin:end]
        if end < len(lines) and record[-1].startswith(_SYSTEM_PROMPT):
            record = record[:-1]  # the next record's system prompt
        at = next((i for i, line in enumerate(record) if line.startswith(_RESPONSE)), len(record))
        before = lines[begin - 1] if begin else ""
        system = before.removeprefix(_SYSTEM_PROMPT) if before.startswith(_SYSTEM_PROMPT) else None
        prompt = "\n".join(record[:at]).removeprefix(_USER_PROMPT)
        entries.append(LogEntry(begin + 1, prompt, "\n".join(record[at:]).removeprefix(_RESPONSE), system))
    return entries


def _command_entries(lines: list[str]) -> list[LogEntry]:
    """Each record starts with the binary's command line; its text starts at the prompt (after ` -p `)."""
    binary = lines[0].split(" ", 1)[0] + " "
    starts = [i for i, line in enumerate(lines) if line.startswith(binary) and _COMMAND_PROMPT in line]
    entries: list[LogEntry] = []
    for begin, end in itertools.pairwise([*starts, len(lines)]):
        record = "\n".join(lines[begin:end])
        entries.append(LogEntry(begin + 1, record[record.index(_COMMAND_PROMPT) + len(_COMMAND_PROMPT) :], None))
    return entries


def _transcript_entries(lines: list[str]) -> list[LogEntry]:
    """Each record starts with the line that opens the first one (`<|im_start|>user`, or the system turn)."""
    starts = [i for i, line in enumerate(lines) if line == lines[0]]
    return [LogEntry(b + 1, "\n".join(lines[b:e]), None) for b, e in itertools.pairwise([*starts, len(lines)])]


def _normal(line: str) -> str:
    return " ".join(line.split())


def _body(prompt: str) -> tuple[str, ...]:
    """What identifies a quiz: its lines from the second to the last option (relations, question, options).

    The first line is left out because some chat templates put it on the command line, and the instruction
    after the options because runs reworded it (or, in the structured modes, it is not posed).
    """
    lines = [_normal(line) for line in prompt.split("\n")]
    options = [i for i, line in enumerate(lines) if _OPTION_LINE.match(line)]
    return tuple(lines[1 : options[-1] + 1] if options else lines)


@dataclass(frozen=True)
class _Record:
    """A log entry's lines, raw and whitespace-normalised, with where each normalised line occurs."""

    entry: LogEntry
    lines: list[str]
    normal: list[str]
    where: dict[str, list[int]]

    @classmethod
    def of(cls, entry: LogEntry) -> _Record:
        lines = entry.text.split("\n")
        normal = [_normal(line) for line in lines]
        where: dict[str, list[int]] = defaultdict(list)
        for number, line in enumerate(normal):
            where[line].append(number)
        return cls(entry, lines, normal, where)

    def _holds(self, body: tuple[str, ...], start: int) -> bool:
        return tuple(self.normal[start : start + len(body)]) == body

    def find(self, body: tuple[str, ...]) -> int | None:
        """The line after the first place where the quiz's body stands in this record, if anywhere."""
        starts = self.where.get(body[0], []) if body else []
        return next((start + len(body) for start in starts if self._holds(body, start)), None)

    def first_quiz(self, bodies: dict[str, list[tuple[str, ...]]]) -> tuple[tuple[str, ...], int] | None:
        """The quiz body (of those indexed by first line) that stands first in this record, and the line after it."""
        for start, line in enumerate(self.normal):
            for body in bodies.get(line, []):
                if self._holds(body, start):
                    return body, start + len(body)
        return None

    def reply(self, body_end: int) -> str:
        """The recorded reply; in llama.cpp records, the text after the instruction line that follows the body."""
        if self.entry.reply is not None:
            return self.entry.reply
        return "\n".join(self.lines[body_end + 1 :]).rstrip("\n").removesuffix(_END_OF_TEXT)


@dataclass(frozen=True)
class _Found:
    entry: LogEntry
    body: tuple[str, ...]
    reply: str


def _found(log: FarelLog, bodies: Iterable[tuple[str, ...]]) -> list[_Found]:
    """Each record's quiz body and reply; raises `InputError` at the first record holding none of `bodies`."""
    by_first: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for body in bodies:
        if body:
            by_first[body[0]].append(body)
    found: list[_Found] = []
    for entry in log.entries:
        record = _Record.of(entry)
        hit = record.first_quiz(by_first)
        if hit is None:
            raise InputError(
                f"{log.path}: the quiz at line {entry.line} is not in the dataset; "
                "name the dataset this log was run on",
                parameter="quizzes",
            )
        found.append(_Found(entry, hit[0], record.reply(hit[1])))
    return found


def _restarted(found: list[_Found], copies: dict[tuple[str, ...], int]) -> tuple[list[_Found], list[str]]:
    """Without the records a restarted run superseded: a quiz the dataset has once, posed twice in a row."""
    kept: list[_Found] = []
    notes: list[str] = []
    for current, following in zip(found, [*found[1:], None], strict=True):
        if following is not None and following.body == current.body and copies[current.body] == 1:
            notes.append(
                f"line {current.entry.line}: the same quiz is posed again at line {following.entry.line} "
                "(a restarted run); only the later record counts"
            )
        else:
            kept.append(current)
    return kept, notes


def match_replies(log: FarelLog, quizzes: Sequence[Quiz]) -> MatchedReplies:
    """Each record's quiz, found by content, and reply; raises `InputError` if a record's quiz is not known."""
    indices: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, quiz in enumerate(quizzes):
        indices[_body(quiz.prompt)].append(index)
    kept, notes = _restarted(_found(log, indices.keys()), {body: len(free) for body, free in indices.items()})
    first_line: dict[tuple[str, ...], int] = {}
    replies: list[tuple[Quiz, str]] = []
    for item in kept:
        free = indices[item.body]
        if not free:
            raise InputError(
                f"{log.path}: the quiz at line {item.entry.line} was answered already at line "
                f"{first_line[item.body]}, and the dataset has it only once"
            )
        first_line.setdefault(item.body, item.entry.line)
        replies.append((quizzes[free.pop(0)], item.reply))
    return MatchedReplies(replies, notes)


def _question(prompt: str) -> str:
    """A quiz prompt without the `<ANSWER>` instruction line, as every answer mode but tag poses it."""
    return "\n".join(line for line in prompt.split("\n") if line.strip() != TAG_INSTRUCTION)


def replies_by_question(replies: Sequence[tuple[Quiz, str]]) -> Callable[[str], str | None]:
    """The reply recorded for a quiz's prompt (in any mode: a prompt with or without the tag instruction)."""
    by_question = {_question(quiz.prompt): reply for quiz, reply in replies}
    return lambda prompt: by_question.get(_question(prompt))


def _log_replies(log: FarelLog) -> Callable[[str], str | None]:
    """The reply a log holds for a prompt (in any mode), found by the quiz's content. The latest record is
    searched first: when a run was restarted, its later reply is the one that counts."""
    records = [_Record.of(entry) for entry in reversed(log.entries)]

    def reply_to(prompt: str) -> str | None:
        body = _body(prompt)
        return next((record.reply(end) for record in records if (end := record.find(body)) is not None), None)

    return reply_to


def resolve_replay(log_path: str) -> ResolvedModel:
    """`replay:LOGFILE`: the log's replies as a model. Its cost is unknown, as that of the imported log."""
    log = parse_log(Path(log_path))
    name = f"replay:{log.path.stem}"
    return ResolvedModel(replay_model(_log_replies(log), name, none=_NO_REPLY), name, base_url=None, local=False)
