"""What the local servers (Label Studio, PostgreSQL, Redis: tests, benchmarks, demo) need
from the host: a free loopback port, secrets made once and kept across restarts in their
data folders, and the tail of a log for error messages."""
from __future__ import annotations

import secrets
import socket
from collections import deque
from pathlib import Path

__all__ = ["free_port", "port_in_use", "secret_file", "tail_log"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host`` (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def secret_file(path: Path, nbytes: int) -> str:
    """A random secret kept in ``path`` (mode 0600), made on first use: restarts keep it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(nbytes))
        path.chmod(0o600)
    return path.read_text().strip()


def tail_log(path: Path, n: int = 40) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(deque(fh, maxlen=n))
    except OSError:
        return "(no log)"
