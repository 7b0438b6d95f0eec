"""A real ``redis-server`` in its own folder on a loopback port (tests and benchmarks).

The queue of ``serve --queue redis://…`` must keep every acknowledged webhook event across
a Redis restart, so this server runs with the append-only file on and ``appendfsync
always``: a write is on disk before Redis answers it, and the receiver answers 200 only
after Redis did (docs/design.md, "State and scale"). The same two options are set in
docker/docker-compose.yml.

The binary is Debian's ``redis-server`` (``apt-get install redis-server``; ``run.sh test``
installs it when missing) or any ``redis-server`` on ``PATH`` / ``$LS_AGREEMENT_REDIS``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from ls_agreement.demo.host import free_port, tail_log
from ls_agreement.plugin.errors import LocalServerError

__all__ = ["LocalRedis", "redis_binary"]


def redis_binary() -> str | None:
    """Path of a ``redis-server`` binary (``$LS_AGREEMENT_REDIS`` first), or None."""
    env = os.environ.get("LS_AGREEMENT_REDIS")
    if env:
        return env if Path(env).exists() else None
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None)


class LocalRedis:
    """One ``redis-server`` process, data (AOF + RDB) in ``data_dir``, on 127.0.0.1.

    Parameters
    ----------
    data_dir : Path
        Its working folder; a restart on the same folder replays the append-only file.
    port : int
        0 picks a free port at the first start; a restart keeps the port.

    Examples
    --------
    >>> with LocalRedis(tmp_path / "redis") as r:          # doctest: +SKIP
    ...     queue_url = r.url                             # 'redis://127.0.0.1:PORT/0'
    """

    def __init__(self, data_dir: Path, port: int = 0) -> None:
        self.data_dir = Path(data_dir)
        self.port = int(port)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 30.0) -> "LocalRedis":
        """Start the server and wait until it answers PING."""
        if self.running:
            return self
        binary = redis_binary()
        if binary is None:
            raise LocalServerError("no redis-server binary: install Debian's `redis-server` "
                                   "package (bash run.sh test does it when run as root) or set "
                                   "LS_AGREEMENT_REDIS to one")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        cmd = [binary, "--bind", "127.0.0.1", "--port", str(self.port),
               "--dir", str(self.data_dir), "--appendonly", "yes", "--appendfsync", "always",
               "--save", "", "--protected-mode", "yes", "--daemonize", "no",
               "--logfile", str(self.log_path)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        import redis
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LocalServerError(f"redis-server exited with code {self._proc.returncode}; "
                                       f"last lines of {self.log_path}:\n{tail_log(self.log_path)}")
            try:
                if redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping():
                    return self
            except redis.RedisError:
                pass
            time.sleep(0.05)
        self.stop()
        raise LocalServerError(f"redis-server did not answer within {timeout:.0f} s; last lines "
                               f"of {self.log_path}:\n{tail_log(self.log_path)}")

    def stop(self, timeout: float = 10.0, *, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``: nothing is flushed beyond what AOF already has)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def restart(self, *, kill: bool = True, down: float = 0.0) -> None:
        """Stop (SIGKILL by default: the hard case), stay down ``down`` s, start again."""
        self.stop(kill=kill)
        if down:
            time.sleep(down)
        self.start()

    def __enter__(self) -> "LocalRedis":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
