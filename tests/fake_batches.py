"""A real OpenAI Files + Batches server on loopback, scripted per test.

It speaks the endpoints the openai client calls for a batch of Responses API requests: upload the JSONL input
(multipart), create the batch, poll it (`validating`, `in_progress`, then `completed` or `expired`), download
its output and error files, cancel it, delete files. Each input line is answered by `answer(body)`.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Outcome = dict[str, Any] | tuple[int, dict[str, Any]] | None
"""A Responses API body (the request ran), a status and an error body (it failed), or None (it never ran)."""
Answer = Callable[[dict[str, Any]], Outcome]


def function_call(arguments: dict[str, Any] | str, name: str = "select_answer", *, tokens: tuple[int, int] = (100, 10),
                  model: str = "gpt-4o-mini-2024-07-18") -> dict[str, Any]:  # fmt: skip
    """A Responses API body whose only output is a call of `name`, with exact usage."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": "resp_fake", "object": "response", "created_at": 1_700_000_000, "model": model, "status": "completed",
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": args,
                    "status": "completed"}],
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": sum(tokens),
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
        "parallel_tool_calls": True, "tool_choice": "required", "tools": [],
    }  # fmt: skip


def prompt_of(body: dict[str, Any]) -> str:
    """The text of the first user message of a Responses API request."""
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    for item in items:
        if item.get("role") == "user":
            content = item["content"]
            return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    raise AssertionError("no user message in the request")


def is_retry(body: dict[str, Any]) -> bool:
    """A corrective retry: the request carries the model's earlier call and the feedback on it."""
    items = body["input"] if isinstance(body["input"], list) else []
    return any(item.get("type") == "function_call_output" for item in items)


@dataclass
class _Batch:
    id: str
    input_file_id: str
    created_at: int
    lines: list[dict[str, Any]]
    status: str = "validating"
    polls: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})


class FakeBatches:
    """Serves the OpenAI Files and Batches endpoints. A batch is `in_progress` from its first poll and ends on
    poll number `polls_to_end` (not before `release` is set): `completed`, or `expired` when some line was not
    run (its answer is None). Uploads, batches and every request line are kept for the tests to count."""

    def __init__(self, answer: Answer, *, polls_to_end: int = 2) -> None:
        self.answer = answer
        self.polls_to_end = polls_to_end
        self.release = threading.Event()
        self.release.set()
        self.files: dict[str, bytes] = {}
        self.uploads: list[str] = []
        self.deleted: list[str] = []
        self.batches: dict[str, _Batch] = {}
        self.polls = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply(fake._get(self.path))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._reply(fake._post(self.path, raw, self.headers.get("Content-Type", "")))

            def do_DELETE(self) -> None:
                file_id = self.path.rsplit("/", 1)[-1]
                fake.deleted.append(file_id)
                self._reply((200, {"id": file_id, "object": "file", "deleted": True}))

            def _reply(self, result: tuple[int, dict[str, Any] | bytes]) -> None:
                status, payload = result
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                kind = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def batch_sizes(self) -> list[int]:
        """How many requests each batch held, in the order they were created."""
        return [len(b.lines) for b in self.batches.values()]

    def __enter__(self) -> FakeBatches:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _file(self, content: bytes) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return file_id

    def _post(self, path: str, raw: bytes, content_type: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path == "/v1/files":
                form = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
                parts = {p.get_param("name", header="content-disposition"): p for p in form.iter_parts()}
                content = parts["file"].get_payload(decode=True)
                assert isinstance(content, bytes)
                assert parts["purpose"].get_content() == "batch"
                file_id = self._file(content)
                self.uploads.append(file_id)
                return 200, {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                             "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}  # fmt: skip
            if path == "/v1/batches":
                request = json.loads(raw)
                assert (request["endpoint"], request["completion_window"]) == ("/v1/responses", "24h")
                lines = [json.loads(line) for line in self.files[request["input_file_id"]].decode().splitlines()]
                assert all((line["method"], line["url"]) == ("POST", "/v1/responses") for line in lines)
                batch = _Batch(f"batch_{len(self.batches) + 1}", request["input_file_id"], int(time.time()), lines)
                batch.counts["total"] = len(lines)
                self.batches[batch.id] = batch
                return 200, self._describe(batch)
            if path.startswith("/v1/batches/") and path.endswith("/cancel"):
                batch = self.batches[path.split("/")[3]]
                batch.status = "cancelled"
                return 200, self._describe(batch)
        return 404, {"error": {"message": f"fake: no route POST {path}"}}

    def _get(self, path: str) -> tuple[int, dict[str, Any] | bytes]:
        with self._lock:
            if path.startswith("/v1/batches/"):
                batch = self.batches.get(path.split("/")[3])
                if batch is None:
                    return 404, {"error": {"message": "No batch found", "type": "invalid_request_error"}}
                self.polls += 1
                batch.polls += 1
                if batch.status in ("validating", "in_progress"):
                    batch.status = "in_progress"
                    if batch.polls >= self.polls_to_end and self.release.is_set():
                        self._end(batch)
                return 200, self._describe(batch)
            if path.startswith("/v1/files/") and path.endswith("/content"):
                return 200, self.files[path.split("/")[3]]
        return 404, {"error": {"message": f"fake: no route GET {path}"}}

    def _end(self, batch: _Batch) -> None:
        output, errors = [], []
        for line in batch.lines:
            outcome = self.answer(line["body"])
            custom_id = line["custom_id"]
            if outcome is None:
                errors.append({"id": "req", "custom_id": custom_id, "response": None, "error": {
                    "code": "batch_expired", "message": "This request could not be executed before the "
                    "completion window expired."}})  # fmt: skip
            elif isinstance(outcome, tuple):
                status, body = outcome
                errors.append({"id": "req", "custom_id": custom_id, "error": None,
                               "response": {"status_code": status, "request_id": "r", "body": body}})  # fmt: skip
            else:
                output.append({"id": "req", "custom_id": custom_id, "error": None,
                               "response": {"status_code": 200, "request_id": "r", "body": outcome}})  # fmt: skip
        expired = any(e["error"] is not None for e in errors)
        batch.status = "expired" if expired else "completed"
        batch.counts.update(completed=len(output), failed=len(errors))
        if output:
            batch.output_file_id = self._file(b"\n".join(json.dumps(x).encode() for x in output) + b"\n")
        if errors:
            batch.error_file_id = self._file(b"\n".join(json.dumps(x).encode() for x in errors) + b"\n")

    def _describe(self, batch: _Batch) -> dict[str, Any]:
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/responses", "errors": None,
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": batch.created_at, "request_counts": dict(batch.counts), "metadata": None,
        }  # fmt: skip
