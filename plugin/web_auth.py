"""Who may read the quality pages and the JSON API of ``ls-agreement serve``.

Rules (README "Against a server"):

* bound to a loopback address (the default ``127.0.0.1``) and no ``--api-token``: open —
  only processes on this machine reach the port;
* otherwise a token is required, given as ``Authorization: Bearer <token>`` (or ``Token
  <token>``, Label Studio's own scheme) or as ``?token=<token>``. It is accepted when it
  equals ``--api-token`` (constant-time comparison) or when Label Studio accepts it as a
  user's API token: ``whoami`` through :class:`~ls_agreement.plugin.client.Connection`,
  the one client of Label Studio (its SDK exchanges a personal access token first; its
  retries and error mapping apply: a refused token is a refusal, a server that cannot
  answer is :class:`AuthUnavailable`). Label Studio's answers are cached for a minute so
  that a page view does not cost a round trip per request.

``POST /webhook`` is not covered here: it keeps its shared-secret header
(:func:`~ls_agreement.plugin.webhooks.authenticate`). Tokens are never logged: only a hash
of a token is kept, as the cache key, and the access log redacts ``token=`` (see
:func:`redact_query`).
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["ApiAuth", "AuthUnavailable", "is_loopback", "redact_query", "token_from",
           "COOKIE", "LS_CACHE_SECONDS"]

LS_CACHE_SECONDS = 60.0
COOKIE = "ls_agreement_token"   # set by web.py after a ?token= page view
# bounded: a flood of random tokens must not grow the cache without limit
_CACHE_MAX = 4096
_TOKEN_QUERY = re.compile(r"((?:^|&)(?:token|access_token)=)[^&]*", re.IGNORECASE)


class AuthUnavailable(Exception):
    """Label Studio could not be asked whether a token is valid (answer 503, not 401)."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the port on this machine.

    Parameters
    ----------
    host : str
        The ``--host`` value: an IPv4/IPv6 address or a host name.

    Returns
    -------
    bool
        True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1). Any other name
        counts as reachable from elsewhere: resolving it could change after the check.
    """
    h = host.strip().strip("[]").lower()
    if h in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def redact_query(query: str) -> str:
    """``query`` with the values of ``token=`` / ``access_token=`` replaced by ``***``."""
    return _TOKEN_QUERY.sub(r"\1***", query)


def token_from(headers: Mapping[str, str], query: Mapping[str, str],
               cookies: Mapping[str, str] | None = None) -> str | None:
    """The token of a request: ``Authorization: Bearer|Token <t>``, else ``?token=``, else
    the cookie a ``?token=`` page view left (:data:`COOKIE`)."""
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() in ("bearer", "token") and value.strip():
            return value.strip()
    for t in (query.get("token"), (cookies or {}).get(COOKIE)):
        if t and t.strip():
            return t.strip()
    return None


@dataclass
class ApiAuth:
    """The access rule of the pages and JSON API.

    Parameters
    ----------
    required : bool
        Whether a token is needed at all (False: loopback bind without ``--api-token``).
    api_token : str or None
        The service's own token (``--api-token`` / ``$LS_AGREEMENT_API_TOKEN``).
    ls_url : str
        Label Studio's base URL, where users' tokens are checked ("" turns that off).
    timeout : float
        Seconds to wait for Label Studio's answer.
    cache_seconds : float
        How long an answer of Label Studio (valid or not) is reused.
    """

    required: bool
    api_token: str | None = None
    ls_url: str = ""
    timeout: float = 5.0
    cache_seconds: float = LS_CACHE_SECONDS
    # sha256(token) -> (expires at, accepted); never the token itself
    _cache: dict[str, tuple[float, bool]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    ls_checks: int = 0     # calls made to Label Studio (tests read it to see the cache work)

    def __repr__(self) -> str:   # the dataclass repr would print api_token
        return (f"ApiAuth(required={self.required}, api_token={'***' if self.api_token else None},"
                f" ls_url={self.ls_url!r})")

    @property
    def schemes(self) -> str:
        """What a 401 tells the client to send (no secret in it)."""
        what = ["the service's API token"] if self.api_token else []
        if self.ls_url:
            what.append("a Label Studio API token")
        return " or ".join(what) or "a token"

    def accepts(self, token: str | None) -> bool:
        """Whether ``token`` opens the pages and JSON API.

        Raises
        ------
        AuthUnavailable
            The token is not the API token and Label Studio could not be asked.
        """
        if not self.required:
            return True
        if not token:
            return False
        if self.api_token and hmac.compare_digest(token.encode(), self.api_token.encode()):
            return True
        if not self.ls_url:
            return False
        return self._ls_accepts(token)

    # -- Label Studio -----------------------------------------------------------------------
    def _ls_accepts(self, token: str) -> bool:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] > now:
                return hit[1]
        ok = self._ask_ls(token)
        with self._lock:
            if len(self._cache) >= _CACHE_MAX:
                self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
                if len(self._cache) >= _CACHE_MAX:
                    self._cache.clear()
            self._cache[key] = (now + self.cache_seconds, ok)
        return ok

    def _ask_ls(self, token: str) -> bool:
        """One check against Label Studio: True/False on its answer, else AuthUnavailable."""
        from .client import Connection, RetryPolicy
        from .errors import AuthError, BadInput, LabelStudioError, RequestRejected

        self.ls_checks += 1
        try:
            conn = Connection(self.ls_url, token, timeout=self.timeout,
                              retry=RetryPolicy(attempts=2, base=0.2, cap=1.0), pool=1)
        except (AuthError, LabelStudioError, BadInput):   # an expired or malformed token: refused
            return False
        try:
            user = conn.whoami()
        except (AuthError, RequestRejected):    # 401/403, or a refresh the server refused
            return False
        except LabelStudioError as exc:
            # the messages name the URL only: the token travels in a header or a body
            raise AuthUnavailable(f"cannot reach Label Studio to check the token: {exc}") from None
        finally:
            conn.close()
        return isinstance(user.get("id"), int)
