"""The HTTP server of ``ls-agreement serve``: uvicorn running :func:`~.web.create_app` in a
daemon thread of the service, on a socket bound before it starts."""
from __future__ import annotations

import socket
import threading
import time

import uvicorn

from .web import App, create_app, log_line

KEEP_ALIVE = 5              # s: an idle keep-alive connection is closed after this
GRACEFUL_SHUTDOWN = 5       # s: requests still running at stop() are cancelled after this


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``(host, port)``; raises OSError (port busy, bad address)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        # listening before uvicorn's loop runs: early connections wait in the backlog
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


class QualityServer:
    """uvicorn serving :func:`create_app` in a daemon thread of the service.

    The socket is bound here, so a busy port fails in the constructor (``OSError``) and
    ``--port 0`` knows its port at once. uvicorn installs no signal handlers from a thread
    that is not the main one: ``serve`` handles SIGTERM itself and calls :meth:`stop`.

    Parameters
    ----------
    address : (str, int)
        Host and port to bind (port 0: any free port).
    app : App
        What the routes read.
    keep_alive : int
        Seconds an idle keep-alive connection stays open.
    graceful : int
        Seconds :meth:`stop` lets running requests finish before cancelling them.
    """

    def __init__(self, address: tuple[str, int], app: App, *, keep_alive: int = KEEP_ALIVE,
                 graceful: int = GRACEFUL_SHUTDOWN) -> None:
        self.app = app
        self.socket = _bind(*address)
        self.port: int = int(self.socket.getsockname()[1])
        config = uvicorn.Config(
            create_app(app), lifespan="off", timeout_keep_alive=keep_alive,
            timeout_graceful_shutdown=graceful,
            # our own request log (tokens redacted), no dictConfig of the process' logging
            log_config=None, access_log=False, server_header=False,
            # behind a proxy the client address would come from X-Forwarded-For: it decides
            # nothing here (no address-based access), so the headers are not trusted
            proxy_headers=False)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="ls-agreement-http",
                                        daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self.socket])
        except BaseException as exc:  # noqa: BLE001 - SystemExit from uvicorn included
            self.error = exc
            log_line(self.app, f"http server stopped: {type(exc).__name__}: {exc}")

    def start(self, timeout: float = 30.0) -> None:
        """Start serving; returns once uvicorn accepts connections (or raises)."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the HTTP server did not start: {self.error!r}")
            time.sleep(0.01)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = GRACEFUL_SHUTDOWN + 5.0) -> None:
        """Stop accepting, let running requests finish (``graceful`` s), close the socket."""
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            self.server.force_exit = True
            self._thread.join(2.0)
        self.socket.close()
