"""An OpenAI-compatible chat completions server on loopback for the benchmarks: asyncio on a thread of its own,
keep-alive, `latency_s` before each answer; a subclass says what it answers (`respond`)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

REASONS = {200: b"OK", 400: b"Bad Request"}


class LoopbackChat:
    """The server: started as it is made, on a free port, for the life of the process."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.port = 0
        threading.Thread(target=self._serve, daemon=True).start()
        self._ready.wait()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body answering a chat request."""
        raise NotImplementedError

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                length = next((int(x.split(b":")[1]) for x in lines if x.lower().startswith(b"content-length:")), 0)
                body = json.loads(await reader.readexactly(length)) if length else {}
                await asyncio.sleep(self.latency_s)
                status, answer = self.respond(body)
                data = json.dumps(answer).encode()
                writer.write(
                    b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    % (status, REASONS.get(status, b"Error"), len(data))
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
