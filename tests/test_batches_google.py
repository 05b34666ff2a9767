"""`--batch` with a Gemini model, against a loopback fake of the Gemini API's Files and Batch Mode endpoints that
google-genai calls (resumable upload of the JSONL input, `batchGenerateContent`, polls until the job succeeds,
download of its responses file, deletion of the input): exact records, batch prices, errors and follow-ups."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from genai_prices import Usage, calc_price

from tests.test_batches import BY_QUESTION, provider_batch_run, stored

API_KEY = "AIza-fake-gemini-0123456789"
MODEL = "gemini-2.0-flash"
Outcome = dict[str, Any]
"""A line of a job's responses file without its key: `{"response": GenerateContentResponse}` or `{"error": Status}`."""


def prompt_of(request: dict[str, Any]) -> str:
    """The text of the first user turn of a `generateContent` request."""
    first = next(c for c in request["contents"] if c.get("role", "user") == "user")
    return "".join(part.get("text", "") for part in first["parts"])


def function_call(answer: Any, tokens: tuple[int, int] = (100, 10)) -> Outcome:
    response = {
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "select_answer",
                                                                                 "args": {"answer": answer}}}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": tokens[0], "candidatesTokenCount": tokens[1],
                          "totalTokenCount": sum(tokens)},
        "modelVersion": MODEL, "responseId": "resp_fake",
    }  # fmt: skip
    return {"response": response}


class FakeGeminiBatches:
    """The Gemini API endpoints google-genai calls for a file-based batch; a job succeeds on its second poll.

    Every answer is decided when the job is created; every request's API key and any unexpected route are kept."""

    def __init__(self, answer: Callable[[dict[str, Any]], Outcome]) -> None:
        self.answer = answer
        self.created: list[list[str]] = []
        self.polls: dict[str, int] = {}
        self.uploaded: list[str] = []
        self.downloaded: list[str] = []
        self.deleted: list[str] = []
        self.keys: set[str | None] = set()
        self.unexpected: list[str] = []
        self._files: dict[str, bytes] = {}
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = urlsplit(self.path).path
                with fake._lock:
                    if path == "/upload/v1beta/files":
                        self._upload(body)
                    elif path == f"/v1beta/models/{MODEL}:batchGenerateContent":
                        fake.keys.add(self.headers.get("x-goog-api-key"))
                        self._send(fake.create(json.loads(body)))
                    else:
                        self._unexpected()

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with fake._lock:
                    fake.keys.add(self.headers.get("x-goog-api-key"))
                    if path.startswith("/v1beta/batches/"):
                        name = path.removeprefix("/v1beta/")
                        fake.polls[name] += 1
                        self._send(fake.job(name))
                    elif path.startswith("/v1beta/files/") and path.endswith(":download"):
                        name = "files/" + path.removeprefix("/v1beta/files/").removesuffix(":download")
                        fake.downloaded.append(name)
                        self._send_bytes(fake._files[name], "application/octet-stream")
                    else:
                        self._unexpected()

            def do_DELETE(self) -> None:
                path = urlsplit(self.path).path
                with fake._lock:
                    fake.keys.add(self.headers.get("x-goog-api-key"))
                    if path.startswith("/v1beta/files/"):
                        fake.deleted.append(path.removeprefix("/v1beta/"))
                        self._send({})
                    else:
                        self._unexpected()

            def _upload(self, body: bytes) -> None:
                command = self.headers["X-Goog-Upload-Command"]
                if command == "start":  # the resumable session: where to send the bytes
                    fake.keys.add(self.headers.get("x-goog-api-key"))
                    upload_id = len(fake.uploaded)
                    fake.uploaded.append("")
                    url = f"{fake.url}/upload/v1beta/files?upload_id={upload_id}&upload_protocol=resumable"
                    self._send({}, {"X-Goog-Upload-URL": url, "X-Goog-Upload-Status": "active"})
                    return
                assert command == "upload, finalize", command  # one chunk: the input is far below 8 MB
                upload_id = int(parse_qs(urlsplit(self.path).query)["upload_id"][0])
                name = f"files/input{upload_id}"
                fake.uploaded[upload_id] = name
                fake._files[name] = body
                file = {"name": name, "displayName": "pydantic-ai-batch", "mimeType": "application/jsonl",
                        "sizeBytes": str(len(body)), "state": "ACTIVE", "source": "UPLOADED",
                        "uri": f"{fake.url}/v1beta/{name}", "createTime": "2026-11-23T10:00:00Z"}  # fmt: skip
                self._send({"file": file}, {"X-Goog-Upload-Status": "final"})

            def _unexpected(self) -> None:
                fake.unexpected.append(f"{self.command} {self.path}")
                error = {"code": 404, "message": f"no route {self.path}", "status": "NOT_FOUND"}
                self._send({"error": error}, status=404)

            def _send(self, payload: dict[str, Any], headers: dict[str, str] | None = None, status: int = 200) -> None:
                self._send_bytes(json.dumps(payload).encode(), "application/json", headers, status)

            def _send_bytes(
                self, data: bytes, content_type: str, headers: dict[str, str] | None = None, status: int = 200
            ) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        """A job reading the uploaded input file: its responses file is written now, served once it succeeds."""
        lines = [json.loads(line) for line in self._files[body["batch"]["inputConfig"]["fileName"]].splitlines()]
        index = len(self.created)
        name = f"batches/job{index}"
        self.created.append([line["key"] for line in lines])
        results = [{"key": line["key"], **self.answer(line["request"])} for line in lines]
        self._files[f"files/output{index}"] = "".join(json.dumps(r) + "\n" for r in results).encode()
        self.polls[name] = 0
        return self.job(name)

    def job(self, name: str) -> dict[str, Any]:
        """The job as an operation: pending when created, running on the first poll, succeeded from the second."""
        polls = self.polls[name]
        state = "BATCH_STATE_SUCCEEDED" if polls >= 2 else "BATCH_STATE_RUNNING" if polls else "BATCH_STATE_PENDING"
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": name, "displayName": "pydantic-ai-batch", "model": f"models/{MODEL}", "state": state,
            "createTime": "2026-11-23T10:00:00Z", "updateTime": "2026-11-23T10:05:00Z",
        }  # fmt: skip
        operation: dict[str, Any] = {"name": name, "metadata": metadata}
        if state == "BATCH_STATE_SUCCEEDED":
            output = {"responsesFile": "files/output" + name.removeprefix("batches/job")}
            metadata |= {"endTime": "2026-11-23T10:05:00Z", "output": output}
            operation |= {"done": True, "response": {"@type": metadata["@type"], **output}}
        return operation

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_a_gemini_batch_run_records_answers_errors_and_follow_ups(tmp_path: Path) -> None:
    asked: dict[str, int] = {}

    def answer(request: dict[str, Any]) -> Outcome:
        quiz = BY_QUESTION[prompt_of(request).split("Select the correct answer:")[0]]
        asked[quiz.class_name] = asked.get(quiz.class_name, 0) + 1
        if quiz.class_name == "sibling" and asked["sibling"] == 1:
            return function_call(99)  # out of range: a corrective retry goes out in a follow-up batch
        if quiz.class_name == "grandparent":
            return {"error": {"code": 3, "message": "prompt is too long", "status": "INVALID_ARGUMENT"}}
        return function_call(quiz.correct)

    fake = FakeGeminiBatches(answer)
    try:
        pointed = {"GOOGLE_GEMINI_BASE_URL": fake.url, "GOOGLE_API_KEY": API_KEY, "GEMINI_API_KEY": API_KEY}
        done = provider_batch_run(f"google:{MODEL}", pointed, tmp_path)
    finally:
        fake.close()
    assert done.returncode == 0, done.stderr
    assert fake.unexpected == []
    assert fake.keys == {API_KEY}
    summary, records = stored(tmp_path)
    by_class = {record.group: record for record in records.values()}
    assert [len(batch) for batch in fake.created] == [9, 1]  # the sibling's corrective retry
    assert fake.uploaded == ["files/input0", "files/input1"]
    assert fake.downloaded == ["files/output0", "files/output1"]
    assert sorted(fake.deleted) == ["files/input0", "files/input1"]  # each input file, once its job has ended
    assert (summary.status, summary.settings.batch, len(records)) == ("finished", True, 9)
    sibling = by_class["sibling"]
    assert (sibling.status, sibling.corrective_retries, sibling.usage.requests) == ("correct", 1, 2)
    refused = by_class["grandparent"]
    # The job reports the google.rpc code (3); the record states it as generateContent would have answered: HTTP 400.
    refusal = "{'error': {'code': 400, 'message': 'prompt is too long', 'status': 'INVALID_ARGUMENT'}}"
    assert (refused.status, refused.error) == ("error", f"HTTP 400 from {MODEL}: {refusal}")
    assert (asked["grandparent"], refused.usage.requests) == (1, 1)  # not sent again; the one request sent, counted
    assert sum(r.status == "correct" for r in records.values()) == 8
    plain = by_class["parent"]
    assert (plain.usage.requests, plain.usage.input_tokens, plain.usage.output_tokens) == (1, 100, 10)
    live = calc_price(Usage(input_tokens=100, output_tokens=10), MODEL, provider_id="google").total_price
    assert plain.cost.usd == pytest.approx(float(live) / 2)
    assert (plain.cost.source, plain.cost.batch_price) == (
        "genai-prices",
        "documented batch discount x0.5: https://ai.google.dev/gemini-api/docs/batch-mode",
    )
    files = [path.read_text() for path in tmp_path.rglob("*") if path.is_file()]
    assert files and not any(API_KEY in text for text in files)  # the key is never stored
