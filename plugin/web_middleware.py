"""The ASGI middlewares of ``serve``'s application (:mod:`.web`): the request log without
tokens and ``no-store`` on every answer (:class:`Plumbing`), and the cookie that keeps a
``?token=`` a browser opened a page with (:class:`TokenCookie`)."""
from __future__ import annotations

from typing import Callable, TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .web_auth import COOKIE, redact_query

__all__ = ["Plumbing", "TokenCookie"]


class Plumbing:
    """Pure ASGI middleware: request log without tokens, ``no-store``, HEAD as GET.

    Not ``BaseHTTPMiddleware``: that one wraps the request body, and ``/webhook`` streams it.
    """

    def __init__(self, app: ASGIApp, log: Callable[[], TextIO | None]) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = 0

        async def send_(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        # HEAD is routed as GET; uvicorn sends the headers without the body
        inner = {**scope, "method": "GET"} if scope["method"] == "HEAD" else scope
        try:
            await self.app(inner, receive, send_)
        finally:
            log = self.log()
            if log is not None:
                client = (scope.get("client") or ("-",))[0]
                q = scope.get("query_string", b"").decode("latin-1")
                target = scope["path"] + ("?" + redact_query(q) if q else "")
                try:
                    print(f'{client} "{scope["method"]} {target} HTTP/{scope["http_version"]}"'
                          f" {status or '-'}", file=log, flush=True)
                except (OSError, ValueError):   # a closed log must not fail the request
                    pass


class TokenCookie:
    """Keeps a ``?token=`` that opened a page as an HttpOnly cookie.

    A browser following the page's links (``/projects/<id>``, ``/jobs``) then stays signed
    in without the token in every URL; the cookie is checked like the header each time.
    """

    def __init__(self, app: ASGIApp, enabled: Callable[[], bool]) -> None:
        self.app, self.enabled = app, enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or b"token=" not in scope.get("query_string", b"")
                or not self.enabled()):
            return await self.app(scope, receive, send)
        from urllib.parse import parse_qs

        token = (parse_qs(scope["query_string"].decode("latin-1")).get("token") or [""])[0]

        async def send_(message: Message) -> None:
            if (message["type"] == "http.response.start" and message["status"] < 400
                    and token and all(c.isprintable() and c not in ';,"\\ ' for c in token)):
                cookie = (f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; "
                          "Max-Age=3600").encode("latin-1", "replace")
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_)
