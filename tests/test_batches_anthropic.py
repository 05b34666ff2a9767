"""`--batch` with an Anthropic model, against a loopback fake of the Message Batches API (create, poll until
ended, results as JSONL: succeeded, errored and expired requests): exact records, batch prices and follow-ups."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.test_batches import BY_QUESTION, provider_batch_run, stored

Outcome = dict[str, Any]
"""A Message Batches result: `{"type": "succeeded", "message": ...}`, `errored` or `expired`."""


def prompt_of(params: dict[str, Any]) -> str:
    content = params["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)


def tool_use(answer: Any, tokens: tuple[int, int] = (100, 10)) -> Outcome:
    message = {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "select_answer", "input": {"answer": answer}}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]},
    }  # fmt: skip
    return {"type": "succeeded", "message": message}


class FakeMessageBatches:
    """The Message Batches endpoints the anthropic client calls; a batch ends on its second poll."""

    def __init__(self, answer: Callable[[dict[str, Any]], Outcome]) -> None:
        self.answer = answer
        self.created: list[list[str]] = []
        self.polls: dict[str, int] = {}
        self._results: dict[str, list[dict[str, Any]]] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                batch_id = f"msgbatch_{len(fake.created)}"
                fake.created.append([r["custom_id"] for r in body["requests"]])
                fake._results[batch_id] = [
                    {"custom_id": r["custom_id"], "result": fake.answer(r["params"])} for r in body["requests"]
                ]
                fake.polls[batch_id] = 0
                self._send(fake.batch(batch_id, ended=False))

            def do_GET(self) -> None:
                parts = self.path.split("?")[0].strip("/").split("/")  # v1 messages batches ID [results]
                batch_id = parts[3]
                if parts[-1] == "results":
                    lines = "".join(json.dumps(line) + "\n" for line in fake._results[batch_id]).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/binary")
                    self.send_header("Content-Length", str(len(lines)))
                    self.end_headers()
                    self.wfile.write(lines)
                    return
                fake.polls[batch_id] += 1
                self._send(fake.batch(batch_id, ended=fake.polls[batch_id] >= 2))

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def batch(self, batch_id: str, *, ended: bool) -> dict[str, Any]:
        results = self._results[batch_id]
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        for line in results:
            counts[line["result"]["type"] if ended else "processing"] += 1
        return {
            "id": batch_id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts, "created_at": "2026-11-23T10:00:00Z", "expires_at": "2026-11-24T10:00:00Z",
            "ended_at": "2026-11-23T10:05:00Z" if ended else None, "cancel_initiated_at": None, "archived_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }  # fmt: skip

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_an_anthropic_batch_run_records_answers_errors_expiries_and_follow_ups(tmp_path: Path) -> None:
    asked: dict[str, int] = {}

    def answer(params: dict[str, Any]) -> Outcome:
        quiz = BY_QUESTION[prompt_of(params).split("Select the correct answer:")[0]]
        asked[quiz.class_name] = asked.get(quiz.class_name, 0) + 1
        if quiz.class_name == "sibling" and asked["sibling"] == 1:
            return tool_use(99)  # out of range: a corrective retry goes out in a follow-up batch
        if quiz.class_name == "grandparent":
            refusal = {"type": "invalid_request_error", "message": "prompt is too long"}
            return {"type": "errored", "error": {"type": "error", "error": refusal}}
        if quiz.class_name == "aunt or uncle" and asked["aunt or uncle"] == 1:
            return {"type": "expired"}  # never run: sent again in a follow-up batch
        return tool_use(quiz.correct)

    fake = FakeMessageBatches(answer)
    try:
        pointed = {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-fake-0123456789"}
        done = provider_batch_run("anthropic:claude-sonnet-4-5", pointed, tmp_path)
    finally:
        fake.close()
    assert done.returncode == 0, done.stderr
    summary, records = stored(tmp_path)
    by_class = {record.group: record for record in records.values()}
    assert [len(batch) for batch in fake.created] == [9, 2]  # the sibling's retry and the expired request
    assert (summary.status, summary.settings.batch, len(records)) == ("finished", True, 9)
    sibling = by_class["sibling"]
    assert (sibling.status, sibling.corrective_retries, sibling.usage.requests) == ("correct", 1, 2)
    refused = by_class["grandparent"]
    assert (refused.status, refused.error) == ("error", "HTTP 400 from claude-sonnet-4-5: {'error': {'message': "
                                               "'prompt is too long', 'type': 'invalid_request_error'}, "
                                               "'request_id': None, 'type': 'error'}")  # fmt: skip
    expired = by_class["aunt or uncle"]
    assert (expired.status, expired.usage.requests) == ("correct", 1)  # the request that never ran is not counted
    assert sum(r.status == "correct" for r in records.values()) == 8
    plain = by_class["parent"]
    assert (plain.usage.requests, plain.usage.input_tokens, plain.usage.output_tokens) == (1, 100, 10)
    assert plain.cost.usd == pytest.approx(0.00045 / 2)  # claude-sonnet-4-5: $3 in, $15 out per million, halved
    assert (plain.cost.source, plain.cost.batch_price) == ("genai-prices", "genai-prices batch price")
    files = [path.read_text() for path in tmp_path.rglob("*") if path.is_file()]
    assert files and not any("sk-ant-fake" in text for text in files)  # the key is never stored
