"""A real OpenAI-compatible chat server on loopback, scripted per test: `reply(request) -> response`.

It speaks HTTP like any server the evaluator meets (status codes, JSON bodies, usage fields), so the
tests exercise the real openai client and pydantic-ai's OpenAI model, not a mock of them.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typed_eval.contracts import Quiz

Reply = Callable[[dict[str, Any]], "dict[str, Any] | tuple[int, dict[str, Any]] | Fault"]


def completion(
    message: dict[str, Any],
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 10,
    reasoning_tokens: int = 0,
    cost: float | None = None,
    model: str = "fake-model",
    **extra: Any,
) -> dict[str, Any]:
    """A chat.completion body with `message`, exact usage counts, OpenRouter's `usage.cost`, and `extra` fields."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }
    if cost is not None:
        usage["cost"] = cost
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
        ],
        "usage": usage,
        **extra,
    }


def tool_call(arguments: dict[str, Any] | str, name: str = "select_answer") -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}],
    }


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def prompt_of(request: dict[str, Any]) -> str:
    """The text of the first user message (the quiz)."""
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    raise AssertionError("no user message in request")


def answer_key(quizzes: Sequence[Quiz]) -> Callable[[dict[str, Any]], Quiz]:
    """Find the quiz a request asks about (by the text before its answer options, the same in every mode)."""
    by_question = {q.prompt.split("Select the correct answer:")[0]: q for q in quizzes}
    return lambda request: by_question[prompt_of(request).split("Select the correct answer:")[0]]


def embeddings(vector: Callable[[str], Sequence[float]], calls: list[dict[str, Any]] | None = None) -> Route:
    """A `/v1/embeddings` route: each input's vector from `vector`, a token per word as usage; every request body is
    appended to `calls`. Vectors go back as the client asks: floats, or base64 of little-endian float32 (the openai
    client's default)."""

    def route(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if calls is not None:
            calls.append(request)
        inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = []
        for index, text in enumerate(inputs):
            values = [float(x) for x in vector(text)]
            packed = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
            encoded = packed if request.get("encoding_format") == "base64" else values
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text.split()) for text in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": request["model"], "usage": usage}

    return route


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    """A real server's backlog: with the default 5, a burst of new connections is refused by the kernel."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that was killed mid-request (as some tests do) is not a server failure."""


@dataclass
class Fault:
    """A reply that goes wrong on the wire: a status with headers (Retry-After...), a delay, a raw or
    malformed body, or a connection dropped in the middle of the response."""

    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    drip_s: float = 0.0
    """Send the body one byte at a time, this many seconds apart (a server that is slow but never silent)."""
    echo: bool = False
    """Answer with the request line and headers in the error body, as some servers do (keys and all)."""


Route = Callable[[dict[str, Any]], "tuple[int, dict[str, Any] | list[dict[str, Any]]]"]
"""Another endpoint: request JSON in, status and a JSON body out (a list is streamed as NDJSON, as Ollama does)."""


class FakeOpenAI:
    """Serves `/v1/chat/completions` with `reply`, and `routes` ("GET /api/tags": ...) for other endpoints.

    Every chat request body is kept in `requests`.
    """

    def __init__(self, reply: Reply, routes: dict[str, Route] | None = None) -> None:
        self.reply = reply
        self.routes = routes or {}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def _answer(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw) if raw else {}
                route = fake.routes.get(f"{method} {self.path}")
                try:
                    if route is not None:
                        result: Any = route(body)
                    elif method == "POST" and self.path.endswith("/chat/completions"):
                        with fake._lock:
                            fake.requests.append(body)
                        result = fake.reply(body)
                    else:
                        result = (404, {"error": f"fake server: no route {method} {self.path}"})
                except Exception as exc:  # a broken test script shows up as a server error, not a hang
                    result = (599, {"error": {"message": f"fake server: {type(exc).__name__}: {exc}"}})
                if isinstance(result, Fault):
                    self._fault(result)
                    return
                status, payload = result if isinstance(result, tuple) else (200, result)
                if isinstance(payload, list):
                    data = b"".join(json.dumps(item).encode() + b"\n" for item in payload)
                    kind = "application/x-ndjson"
                else:
                    data, kind = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _fault(self, fault: Fault) -> None:
                time.sleep(fault.delay_s)
                if fault.drop:  # promise a body, send a piece of it, hang up
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 500\r\n\r\n{\"id\": \"chat")  # fmt: skip
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                body = fault.body
                if fault.echo:
                    echoed = f"{self.command} {self.path} {dict(self.headers.items())}"
                    body = {"error": {"message": f"cannot serve {echoed}", "type": "invalid_request_error"}}
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(fault.status)
                for name, value in {"Content-Type": "application/json", **fault.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not fault.drip_s:
                    self.wfile.write(data)
                    return
                for byte in data:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(fault.drip_s)

            def log_message(self, *_: object) -> None:
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
