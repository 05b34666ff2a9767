"""Hostile input, round four, on the network side: the viewer's Host check on a loopback address spelled another way,
an outage met one request at a time, usage that cannot be read, 429s that ask for no wait, an error sent with
HTTP 200, and a cost budget over a server that reports no usage. Each driven the way it broke, against a loopback
server started by the test, with exact counts and messages."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.viewer_runs import Viewer

# --- 1: the viewer's Host check follows the bound socket -------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["127.1", "2130706433", "localhost"])
def test_loopback_in_any_spelling_keeps_the_host_check_and_warns_of_nothing(spelling: str, tmp_path: Path) -> None:
    server = Viewer(tmp_path, "--host", spelling)
    try:
        if server.host == "::1":
            assert server.line == f"serving http://[::1]:{server.port}/\n"
        else:
            assert server.line == f"serving http://127.0.0.1:{server.port}/\n"
        for host in ("evil.example", f"evil.example:{server.port}", "127.0.0.1.evil.example"):
            refused = server.get("/api/runs", {"Host": host})
            assert (refused.status, refused.body) == (400, b"Invalid host header"), (spelling, host)
        for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"{spelling}:{server.port}"):
            reply = server.get("/api/runs", {"Host": host})
            assert (reply.status, reply.json()) == (200, []), (spelling, host)
        assert server.stop(signal.SIGTERM)[::2] == (143, "")  # no word of serving every network
    finally:
        server.close()


def test_every_network_is_said_once_and_answers_any_host(tmp_path: Path) -> None:
    server = Viewer(tmp_path, "--host", "0.0.0.0")
    try:
        assert server.line == f"serving http://0.0.0.0:{server.port}/\n"
        assert server.get("/api/runs", {"Host": "evil.example"}).status == 200
        assert server.stop(signal.SIGTERM)[::2] == (
            143, "main.py: serving every network on 0.0.0.0: anyone who reaches it sees the runs\n"
        )  # fmt: skip
    finally:
        server.close()
