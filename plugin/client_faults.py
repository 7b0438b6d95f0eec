"""What a failed request to Label Studio means, and when to try it again.

Transport failures, timeouts, 5xx, 408 and 429 are transient: retried a bounded number of
times with exponential backoff and jitter (:class:`RetryPolicy`); anything else is
translated at once by :class:`~.client.Connection` into one of our errors.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import httpx


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return int(status) if isinstance(status, int) else None


def _is_transient(exc: BaseException) -> bool:
    """Worth retrying: transport failures, timeouts, 5xx, 408 and 429."""
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    status = _status_of(exc)
    return status is not None and (status >= 500 or status in (408, 429))


def _body_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("detail") or body.get("validation_errors") or body
    text = str(body if body is not None else exc)
    return text if len(text) < 300 else text[:300] + "…"


@dataclass
class RetryPolicy:
    """Bounded retries: ``attempts`` tries in all, sleeping ``base * 2**k`` (±25 % jitter,
    capped at ``cap`` seconds) between them."""

    attempts: int = 4
    base: float = 0.5
    cap: float = 8.0

    def delay(self, k: int) -> float:
        d = min(self.cap, self.base * 2.0 ** k)
        return d * random.uniform(0.75, 1.25)
