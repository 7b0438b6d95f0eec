"""Job queues of ``serve``: the embedded SQLite one (plugin/jobs.py, one machine) or Redis
with RQ workers (:mod:`.redis_queue`, :mod:`.rq_worker`, :mod:`.shared_state`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..job_backend import JobBackend

__all__ = ["open_queue", "is_redis_url"]


def is_redis_url(spec: str | Path | None) -> bool:
    return isinstance(spec, str) and spec.split("://", 1)[0] in ("redis", "rediss", "unix")


def open_queue(spec: str | Path, **options: Any) -> JobBackend:
    """A :class:`~ls_agreement.plugin.job_backend.JobBackend` for a Redis URL or a SQLite file.

    Parameters
    ----------
    spec : str or Path
        ``redis://HOST:PORT/DB`` (Redis + RQ workers) or the path of the SQLite state file.
    **options
        ``max_attempts``, ``backoff``, ``max_backoff``; for Redis also ``lease`` and
        ``report_dir``.
    """
    if is_redis_url(spec):
        from .redis_queue import RedisQueue
        q = RedisQueue(str(spec), **options)
        q.ping()        # QueueUnavailable (exit 3) with the (password-free) URL when it does not answer
        return q
    from ..jobs import JobQueue
    options.pop("lease", None)
    options.pop("report_dir", None)
    return JobQueue(spec, **options)
