"""Runs whose every answer is known, made by the evaluator itself, and the viewer served over them as the command
line serves it (`main.py view DIR --port 0`, a child process): what the viewer's API and browser tests share.

Twelve cases `case K`, answered by three `FunctionModel`s on the same cases (one run each, retries 1, $1/$2 per
million tokens, a request reads 100 x its turn tokens and writes 10):

| case | alpha | beta | gamma |
| --- | --- | --- | --- |
| c00 | right | right | wrong |
| c01 | right | right | right |
| c02 | right | wrong | right |
| c03 | right | invalid, then the fix (right) | right |
| c04 | invalid, then the fix (right) | wrong | right |
| c05 | right, its note the XSS text | wrong | right |
| c06 | right | right | right |
| c07 (prompt about zebras) | right | wrong | right |
| c08 | invalid twice: missing | right | right |
| c09 | wrong | HTTP 503: error | right |
| c10 | wrong | right | right |
| ODD_ID (11) | wrong | wrong | right |

so alpha and beta disagree on c02, c04, c05, c07 (only alpha right) and c08, c10 (only beta); c09 is not scored in
beta, so it is no pair.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import BaseModel
from pydantic_ai import ModelHTTPError, ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

import evaluator
from tests.conftest import PYTHON, REPO
from typed_eval.core.attempts import UserPrices

XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
"""A model's answer (alpha's note on c05) that would run if the viewer did not show it as text."""
XSS_PROMPT = "</pre><script>window.__xss=3</script>"
"""What c05's prompt ends with."""
ODD_ID = "dir/case <i>eleven</i>?50%&x=1#top"
"""A case id with a slash, spaces, markup and the characters a URL gives a meaning to."""
IDS = [f"c{k:02d}" for k in range(11)] + [ODD_ID]
ODD = [IDS[k] for k in range(1, 12, 2)]
EVEN = [IDS[k] for k in range(0, 12, 2)]
RIGHT = {"alpha": set(range(8)), "beta": {0, 1, 3, 6, 8, 10}, "gamma": set(range(1, 12))}
FEEDBACK = "value: Input should be a valid integer, unable to parse string as an integer"
"""What a model answering `{"value": "not a number"}` is told."""
GAMMA = "gamma<b>bold</b>"
"""gamma's model name: markup, shown as text."""


class Answer(BaseModel):
    value: int
    note: str = ""


def prompt(k: int) -> str:
    return f"case {k}" + {5: f" {XSS_PROMPT}", 7: " about Zebras"}.get(k, "")


CASES = [
    evaluator.Case(id=IDS[k], prompt=prompt(k), expected=k, group="even" if k % 2 == 0 else "odd") for k in range(12)
]


def task() -> evaluator.Task[Answer]:
    return evaluator.Task(name="numbers", output_type=Answer, score=lambda case, out: float(out.value == case.expected))


def answering(
    name: str,
    *,
    fixed: frozenset[int] = frozenset(),
    invalid: frozenset[int] = frozenset(),
    errors: frozenset[int] = frozenset(),
    notes: dict[int, str] | None = None,
) -> FunctionModel:
    """A model right on `RIGHT[name]`, wrong (the value + 100) elsewhere; an invalid value first on `fixed`, always
    on `invalid`; HTTP 503 on `errors`."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[0]
        assert isinstance(request, ModelRequest)
        k = int(next(str(p.content) for p in request.parts if isinstance(p, UserPromptPart)).split()[1])
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if k in errors:
            raise ModelHTTPError(503, name, body="overloaded")
        args: dict[str, Any]
        if k in invalid or (k in fixed and turn == 0):
            args = {"value": "not a number"}
        else:
            args = {"value": k if k in RIGHT[name.partition("<")[0]] else k + 100}
            if notes and k in notes:
                args["note"] = notes[k]
        usage = RequestUsage(input_tokens=100 * (turn + 1), output_tokens=10)
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)], usage=usage)

    return FunctionModel(respond, model_name=name)


MODELS = {
    "alpha": lambda: answering("alpha", fixed=frozenset({4}), invalid=frozenset({8}), notes={5: XSS}),
    "beta": lambda: answering("beta", fixed=frozenset({3}), errors=frozenset({9})),
    "gamma": lambda: answering(GAMMA),
}
PRICES = UserPrices(input_per_million=1.0, output_per_million=2.0)


@dataclass(frozen=True)
class Runs:
    results: Path
    keys: dict[str, str]
    """By model (alpha, beta, gamma): the run key, `<model-folder>/<run-folder>`."""
    outcomes: dict[str, evaluator.RunOutcome]

    @property
    def a(self) -> str:
        return self.keys["alpha"]

    @property
    def b(self) -> str:
        return self.keys["beta"]

    @property
    def g(self) -> str:
        return self.keys["gamma"]


def run_one(results: Path, name: str, **options: Any) -> evaluator.RunOutcome:
    return asyncio.run(
        evaluator.run(task(), CASES, MODELS[name](), results_dir=results, retries=1, concurrency=1, prices=PRICES,
                      **options)
    )  # fmt: skip


def make_runs(results: Path) -> Runs:
    """The three runs, alpha then beta then gamma (so listed in that order: oldest first)."""
    outcomes = {name: run_one(results, name) for name in MODELS}
    keys = {name: outcome.run_dir.relative_to(results).as_posix() for name, outcome in outcomes.items()}
    return Runs(results, keys, outcomes)


def case_path(case_id: str) -> str:
    return quote(case_id, safe="")


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        assert self.headers["content-type"] == "application/json", self.headers
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


class Viewer:
    """`main.py view DIR --port 0` as a child process: its URL once it has printed it; stopped by a signal."""

    def __init__(self, results: Path, *args: str, sigint_ignored: bool = False) -> None:
        """`sigint_ignored`: started as a shell starts a command in the background (`view &`), SIGINT ignored."""
        self.process = subprocess.Popen(
            [PYTHON, "main.py", "view", str(results), "--port", "0", *args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None,
        )  # fmt: skip
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        line = self.process.stdout.readline() if ready else ""
        if not line.startswith("serving http://"):
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError(f"the viewer did not start: {line!r} {err}")
        self.line = line
        self.url = line.split()[1]
        parts = urlsplit(self.url)
        assert parts.hostname is not None and parts.port is not None
        self.host, self.port = parts.hostname, parts.port

    def get(self, path: str, headers: dict[str, str] | None = None) -> Reply:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request("GET", path, headers=headers or {})
            response = connection.getresponse()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            connection.close()

    def api(self, path: str) -> Any:
        reply = self.get(path)
        assert reply.status == 200, (path, reply.status, reply.body)
        return reply.json()

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 5.0) -> tuple[int, float, str]:
        """The exit code, the seconds it took and stderr, after `signum`."""
        started = time.monotonic()
        self.process.send_signal(signum)
        try:
            _, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise AssertionError(f"the viewer did not stop within {timeout} s of signal {signum}") from None
        return self.process.returncode, time.monotonic() - started, err

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()
