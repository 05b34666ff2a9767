"""τ-bench's results files (`tau2 run --save-to`, tau2's `Results`) and leaderboard submissions naming theirs, read
without trusting them: only regular files, at most `MAX_BYTES` of each read, every field the import uses checked
before anything is stored, each message turned into a transcript message as our runs store them. No value read is
ever run, and what an error quotes of a file is cut and stripped of control characters (`shown`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from typed_eval.core.dialogue import Message
from typed_eval.core.errors import InputError
from typed_eval.core.files import FileTooLarge, NotRegularFile, read_regular
from typed_eval.core.terminal import plain_line

__all__ = [
    "MAX_BYTES",
    "SUBMISSION_FILE",
    "ReadMessage",
    "ResultsFile",
    "ResultsSource",
    "Simulation",
    "read_json",
    "read_results",
    "results_sources",
    "shown",
    "transcript",
]

MAX_BYTES = 512 * 2**20
"""A results file larger than this is refused (τ-bench's largest published ones are tens of MB)."""
SUBMISSION_FILE = "submission.json"
TRAJECTORIES = "trajectories"
_Model = TypeVar("_Model", bound=BaseModel)


def shown(value: object, most: int = 80) -> str:
    """A value from a file as an error or a line may quote it: one line, no control characters, cut."""
    return plain_line(str(value), most)


class _Read(BaseModel):
    """What the import reads of a file; what it does not read is left alone (a newer tau2 adds fields)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class Participant(_Read):
    implementation: str | None = None
    llm: str | None = None
    llm_args: dict[str, Any] | None = None


class EnvironmentInfo(_Read):
    domain_name: str


class Info(_Read):
    num_trials: int = Field(ge=1, le=1000)
    max_steps: int | None = None
    max_errors: int | None = None
    seed: int | None = None
    user_info: Participant
    agent_info: Participant
    environment_info: EnvironmentInfo


class NLCheck(_Read):
    nl_assertion: str
    met: bool
    justification: str | None = None


class StoredReward(_Read):
    reward: float = Field(ge=0, le=1)
    nl_assertions: list[NLCheck] | None = None


class Simulation(_Read):
    id: str
    task_id: str
    trial: int | None = Field(None, ge=0)
    seed: int | None = None
    termination_reason: str = Field(pattern=r"^[a-z_]{1,40}$")
    messages: list[dict[str, Any]]
    reward_info: StoredReward | None = None
    agent_cost: float | None = Field(None, ge=0)
    user_cost: float | None = Field(None, ge=0)
    skipped: bool = False


class ResultsFile(_Read):
    """tau2's `Results`, as far as the import reads it."""

    timestamp: str | None = None
    info: Info
    tasks: list[dict[str, Any]]
    simulations: list[Simulation]


class _Submission(_Read):
    model_name: str
    trajectory_files: dict[str, str] | None = None


class _Call(_Read):
    id: str = ""
    name: str
    arguments: dict[str, Any]


class _Said(_Read):
    role: Literal["assistant", "user"]
    content: str | None = None
    tool_calls: list[_Call] | None = None
    usage: dict[str, Any] | None = None


class _ToolResult(_Read):
    role: Literal["tool"]
    id: str
    content: str | None = None
    requestor: Literal["user", "assistant"] = "assistant"
    error: bool = False


class _ToolResults(_Read):
    role: Literal["tool"]
    tool_messages: list[_ToolResult]


@dataclass(frozen=True)
class ResultsSource:
    """A results file to import; from a submission, with its model name and the domain it lists the file for."""

    path: Path
    submission: str | None = None
    domain: str | None = None


def results_sources(name: str) -> list[ResultsSource]:
    """The results files a path names: a file; a submission (its folder, or its `submission.json`): the files its
    `trajectory_files` lists; a folder: its `.json` files, found recursively, a submission in it read as one."""
    path = Path(name)
    if path.is_dir():
        if (path / SUBMISSION_FILE).is_file():
            return _submission(path / SUBMISSION_FILE)
        submissions = sorted(p.parent for p in path.rglob(SUBMISSION_FILE) if p.is_file())
        found = [source for folder in submissions for source in _submission(folder / SUBMISSION_FILE)]
        found += [
            ResultsSource(p)
            for p in sorted(path.rglob("*.json"))
            if p.is_file() and p.name != SUBMISSION_FILE and not any(s in p.parents for s in submissions)
        ]
        if not found:
            raise InputError(f"no .json files in {name}")
        return found
    if not path.exists() and not path.is_symlink():
        raise InputError(f"no results file or folder {name}")
    return _submission(path) if path.name == SUBMISSION_FILE else [ResultsSource(path)]


def _submission(path: Path) -> list[ResultsSource]:
    """The results files a leaderboard submission lists, each a bare file name in its `trajectories/` folder."""
    found = _validated(_Submission, read_json(path), path, "not a τ-bench leaderboard submission")
    if not found.trajectory_files:
        raise InputError(f"{path}: lists no trajectory_files (import the results files themselves)")
    model = shown(found.model_name, 120)
    sources = []
    for domain, file in found.trajectory_files.items():
        if file in ("", ".", "..") or Path(file).name != file or "\\" in file or "\0" in file:
            raise InputError(f"{path}: trajectory_files.{shown(domain, 40)}: {shown(file)!r} is not a file name in "
                             f"its {TRAJECTORIES}/ folder")  # fmt: skip
        sources.append(ResultsSource(path.parent / TRAJECTORIES / file, model, domain))
    return sources


def read_bytes(path: Path, most: int | None = None) -> bytes:
    """A regular file's bytes, refused when larger than `most` (default `MAX_BYTES`): its size is checked before
    reading and bounded while reading, so a FIFO, a device or a file growing is never read without end."""
    bound = MAX_BYTES if most is None else most
    try:
        return read_regular(path, bound)
    except NotRegularFile:
        raise InputError(f"{path}: not a regular file") from None
    except FileTooLarge:
        raise InputError(f"{path}: over {bound // 2**20} MB, not a τ-bench results file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: Path, body: bytes | None = None) -> Any:
    """A file's JSON (NaN and Infinity refused: no reward or cost is either)."""
    raw = read_bytes(path) if body is None else body
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise InputError(f"{path}: not JSON: nested too deep") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON: {shown(exc, 120)}") from None


def _validated(model: type[_Model], data: Any, path: Path, what: str) -> _Model:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"])) or "the file"
        raise InputError(f"{path}: {what}: {shown(where)}: {shown(error['msg'], 120)}") from None


def read_results(path: Path) -> tuple[bytes, ResultsFile]:
    """A results file's bytes and what the import reads of it; anything else is one line."""
    body = read_bytes(path)
    data = read_json(path, body)
    if not isinstance(data, dict) or not {"info", "tasks", "simulations"} <= data.keys():
        raise InputError(f"{path}: not a τ-bench results file (tau2 run --save-to writes info, tasks and simulations)")
    return body, _validated(ResultsFile, data, path, "not a τ-bench results file")


@dataclass(frozen=True)
class ReadMessage:
    """A transcript message, and the token usage tau2 recorded with it (agent and user messages)."""

    message: Message
    usage: Mapping[str, Any] | None = None


def transcript(messages: list[dict[str, Any]], where: str) -> list[ReadMessage]:
    """tau2's messages as transcript messages: several results of one turn (`MultiToolMessage`) as one message each,
    system messages (never in a trajectory tau2 writes) left out; a message of another shape is one line."""
    made: list[ReadMessage] = []
    for index, data in enumerate(messages):
        try:
            made.extend(_messages(data))
        except ValidationError as exc:
            error = exc.errors()[0]
            at = ".".join(map(str, error["loc"]))
            raise InputError(f"{where}: message {index}: {shown(at)}: {shown(error['msg'], 120)}") from None
        except ValueError as exc:
            raise InputError(f"{where}: message {index}: {exc}") from None
    return made


def _messages(data: dict[str, Any]) -> Iterator[ReadMessage]:
    role = data.get("role")
    if role == "system":
        return
    if role in ("assistant", "user"):
        said = _Said.model_validate(data)
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in said.tool_calls or []]
        yield ReadMessage({"role": said.role, "content": said.content, "tool_calls": calls or None}, said.usage)
        return
    if role != "tool":
        raise ValueError(f"role {shown(role, 40)!r} is none of assistant, user, tool")
    results = _ToolResults.model_validate(data).tool_messages if "tool_messages" in data else [
        _ToolResult.model_validate(data)]  # fmt: skip
    for result in results:
        yield ReadMessage({"role": "tool", "id": result.id, "content": result.content, "requestor": result.requestor,
                           "error": result.error})  # fmt: skip
