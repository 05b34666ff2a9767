"""`view`: the case viewer, a local web application over the stored runs, served until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import signal
import socket
import sys
from pathlib import Path
from types import FrameType

from typed_eval.cli.common import EXIT_INTERRUPTED, EXIT_TERMINATED, prog
from typed_eval.core.errors import InputError, ResultFileError

DEFAULT_PORT = 7788
SHUTDOWN_S = 3
"""Seconds open connections (a browser's keep-alive) get to finish once the server is told to stop."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    view = commands.add_parser("view", help="browse the stored runs' cases side by side in a web browser")
    view.add_argument("dir", nargs="?", type=Path, default=Path("result"), help="results folder (default result)")
    view.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: a free one)")
    view.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to serve on (default 127.0.0.1, this machine only; 0.0.0.0 serves every network)",
    )
    view.set_defaults(command=command_view)


def command_view(args: argparse.Namespace) -> int:
    """Serve the viewer; print where, once the port is bound, and end cleanly on Ctrl-C or SIGTERM."""
    import uvicorn

    from typed_eval.reports.viewer.app import LOOPBACK_HOSTS, create_app

    if not args.dir.is_dir():
        raise ResultFileError(f"no results folder {args.dir}: run `python main.py run` first or name another folder")
    if not 0 <= args.port <= 65535:
        raise InputError(f"must be 0 to 65535, got {args.port}", parameter="port")
    listener = _bind(args.host, args.port)
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    # what the socket is bound to decides, never the spelling asked for (127.1, 0x7f000001 and localhost bind
    # loopback too); a loopback address other than the usual ones (127.0.0.2) is the Host its own address sends,
    # and the name asked for is the Host a browser sends for it
    loopback = _is_loopback(host)
    asked = args.host.strip("[]")
    app = create_app(args.dir, hosts=(*LOOPBACK_HOSTS, host, shown, asked) if loopback else ("*",))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=SHUTDOWN_S, lifespan="on"
    )
    server = uvicorn.Server(config)
    stopped: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        """SIGINT or SIGTERM: the server stops (uvicorn's own handlers do the same while it serves, then raise the
        signal again under these, which records it). Nothing is raised: a signal that comes before uvicorn listens
        for them, even before its loop runs, stops it as cleanly."""
        stopped.append(signum)
        server.should_exit = True

    # set before the line is printed, so that whoever read it can stop the server at once; SIGINT's too, as a
    # process started in the background (`view &`) inherits it ignored
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"serving http://{shown}:{port}/", flush=True)
        if not loopback:
            print(f"{prog()}: {_reach(host)}: anyone who reaches it sees the runs", file=sys.stderr)
        server.run(sockets=[listener])
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        listener.close()
    if not stopped:
        return 0
    return EXIT_INTERRUPTED if stopped[-1] == signal.SIGINT else EXIT_TERMINATED  # uvicorn raises them last first


def _is_loopback(address: str) -> bool:
    """The bound socket's address (a numeric one, as `getsockname` gives it) is this machine's alone."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _reach(address: str) -> str:
    """Who can reach a socket bound to `address` (not loopback), said as it is."""
    if ipaddress.ip_address(address).is_unspecified:
        return f"serving every network on {address}"
    return f"serving beyond this machine on {address}"


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the line that names it is printed (port 0 gets a free port)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"cannot serve on {host!r}: {exc.strerror}", parameter="host") from None
    family, kind, proto, _, address = infos[0]
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(128)
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"{port} is in use: choose another (0 picks a free one)", parameter="port") from None
        about = "host" if exc.errno == errno.EADDRNOTAVAIL else "port"  # an address that is not this machine's
        raise InputError(f"cannot serve on {host} port {port}: {exc.strerror}", parameter=about) from None
    listener.set_inheritable(True)
    return listener
