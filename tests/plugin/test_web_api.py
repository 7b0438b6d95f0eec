"""The HTTP layer of ``ls-agreement serve`` (FastAPI on uvicorn) over real sockets.

Size limit, shared secret, OpenAPI description, tokens on a non-loopback bind, timeouts
and the request log. Most tests need no Label Studio: the service points at
``http://127.0.0.1:9`` (nothing listens) and nothing here reaches the worker's sync. The
Label-Studio-token test starts the real server (``ls_server``, marked ``server``).
"""
from __future__ import annotations

import argparse
import io
import socket
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from ls_agreement.plugin import web, web_models, webhooks
from ls_agreement.plugin.commands import serve as serve_cmd
from ls_agreement.plugin.errors import BadInput

SECRET = "test-secret-123"
API_TOKEN = "api-token-7f3c9e1d-never-logged"
NOWHERE = "http://127.0.0.1:9"     # no Label Studio: token checks against it cannot succeed
EVENT = {"action": "ANNOTATION_CREATED", "project": {"id": 1}}
OK = {"X-LS-Agreement-Secret": SECRET}

Start = Callable[..., serve_cmd.Service]


def make_args(tmp: Path, *extra: str, url: str = NOWHERE, token: str = "unused-token",
              secret: str | None = SECRET) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    serve_cmd.add_arguments(p)
    return p.parse_args(["--url", url, "--token", token, "--port", "0",
                         "--state", str(tmp / "state.sqlite"), "--out", str(tmp / "out"),
                         "--interval", "0", "--grace", "5", "--retry-backoff", "60",
                         *(["--secret", secret] if secret else []), *extra])


@pytest.fixture
def start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Start]:
    """``start(*extra, log=StringIO|None, url=..., token=...)`` → a started service."""
    monkeypatch.delenv(serve_cmd.API_TOKEN_ENV, raising=False)
    monkeypatch.delenv("LS_AGREEMENT_WEBHOOK_SECRET", raising=False)
    started: list[serve_cmd.Service] = []

    def go(*extra: str, log: io.StringIO | None = None, **kw: Any) -> serve_cmd.Service:
        svc = serve_cmd.make_service(make_args(tmp_path, *extra, **kw), log=log).start()
        started.append(svc)
        return svc

    yield go
    for svc in started:
        svc.stop(grace=5)


def local(svc: serve_cmd.Service) -> str:
    """The service's URL through the loopback interface, whatever address it is bound to."""
    return f"http://127.0.0.1:{svc.port}"


def raw_request(port: int, head: bytes, body: bytes = b"") -> bytes:
    """Send a request by hand (headers that ``requests`` would correct) and read the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + body)
        chunks = []
        while True:
            got = s.recv(65536)
            if not got:
                break
            chunks.append(got)
    return b"".join(chunks)


def no_jobs(svc: serve_cmd.Service) -> bool:
    return not any(svc.queue.counts().values()) and svc.queue.recent(10) == []


def test_oversize_body_is_refused_without_a_job(start: Start,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    svc = start()
    # announced size over the limit: 413 from the headers alone (no body is ever sent)
    head = (f"POST /webhook HTTP/1.1\r\nHost: x\r\nX-LS-Agreement-Secret: {SECRET}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {webhooks.MAX_BODY + 1}\r\n\r\n")
    answer = raw_request(svc.port, head.encode())
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"exceeds" in answer and b"connection: close" in answer.lower()

    monkeypatch.setattr(webhooks, "MAX_BODY", 2000)   # read per request
    padded = {**EVENT, "pad": "x" * 5000}
    r = requests.post(f"{svc.address}/webhook", json=padded, headers=OK, timeout=10)
    assert r.status_code == 413 and "exceeds 2000" in r.json()["error"]

    # a chunked body announces no length: counted while streaming
    def chunks() -> Iterator[bytes]:
        yield b'{"action": "ANNOTATION_CREATED", "project": {"id": 1}, "pad": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'
    r = requests.post(f"{svc.address}/webhook", data=chunks(), headers=OK, timeout=10)
    assert r.status_code == 413 and "exceeds 2000" in r.json()["error"]
    assert no_jobs(svc)
    # under the limit the same route queues
    r = requests.post(f"{svc.address}/webhook", json=EVENT, headers=OK, timeout=10)
    assert r.status_code == 200 and r.json()["status"] == "queued"


def test_wrong_secret_is_refused_before_the_body_is_read(start: Start) -> None:
    svc = start()
    for headers in ({}, {"X-LS-Agreement-Secret": "nope"},
                    {"X-LS-Agreement-Secret": SECRET + "x"}):
        r = requests.post(f"{svc.address}/webhook", json=EVENT, headers=headers, timeout=5)
        assert r.status_code == 401 and "X-LS-Agreement-Secret" in r.json()["error"]
    # the headers promise a body that never comes: the 401 does not wait for it
    t0 = time.monotonic()
    answer = raw_request(svc.port, b"POST /webhook HTTP/1.1\r\nHost: x\r\n"
                                   b"X-LS-Agreement-Secret: nope\r\nContent-Length: 1000\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 401") and time.monotonic() - t0 < 5
    assert no_jobs(svc)
    # the rejected requests are counted with the webhook answer times, as before
    health = requests.get(f"{svc.address}/health", timeout=5).json()
    assert health["webhooks"]["n"] == 4


def test_openapi_describes_the_routes(start: Start) -> None:
    svc = start()
    spec = requests.get(f"{svc.address}/openapi.json", timeout=5).json()
    assert spec["openapi"].startswith("3.")
    paths = spec["paths"]
    assert {"/webhook", "/", "/health", "/jobs", "/projects/{project_id}",
            "/projects/{project_id}/report.json"} <= set(paths)
    assert set(paths["/webhook"]) == {"post"} and "get" in paths["/jobs"]
    schemas = spec["components"]["schemas"]
    assert {"HealthOut", "JobsOut", "JobOut", "WebhookOut", "ErrorOut"} <= set(schemas)
    assert {"bearer", "token"} <= set(spec["components"]["securitySchemes"])
    params = {p["name"] for p in paths["/jobs"]["get"]["parameters"]}
    assert {"limit", "project"} <= params
    assert "413" in paths["/webhook"]["post"]["responses"]


def test_answers_match_the_documented_models(start: Start) -> None:
    svc = start()
    assert requests.post(f"{svc.address}/webhook", json=EVENT, headers=OK,
                         timeout=5).status_code == 200
    web_models.HealthOut.model_validate(requests.get(f"{svc.address}/health", timeout=5).json())
    got = web_models.JobsOut.model_validate(requests.get(f"{svc.address}/jobs", timeout=5).json())
    assert got.jobs[0].project_id == 1 and got.counts.pending + got.counts.running == 1


def test_non_loopback_bind_requires_the_api_token(start: Start) -> None:
    svc = start("--host", "0.0.0.0", "--api-token", API_TOKEN)
    base = local(svc)
    guarded = ["/", "/index.html", "/jobs", "/projects/1", "/projects/1/report.json",
               "/openapi.json"]
    for path in guarded:
        r = requests.get(base + path, timeout=5)
        assert r.status_code == 401, path
        assert r.headers["WWW-Authenticate"] == "Bearer" and API_TOKEN not in r.text
    # a browser gets a form asking for the token (sent back as ?token=)
    r = requests.get(f"{base}/projects/1", headers={"Accept": "text/html"}, timeout=5)
    assert r.status_code == 401 and "name=token" in r.text
    # /health without a token: the status only (a liveness probe needs no secret)
    r = requests.get(f"{base}/health", timeout=5)
    assert r.status_code == 200 and r.json() == {"status": "UP"}

    bearer = {"Authorization": f"Bearer {API_TOKEN}"}
    for path in guarded:
        r = requests.get(base + path, headers=bearer, timeout=5)
        assert r.status_code in (200, 404), path      # 404: project 1 has no report
        assert r.status_code == 200 or path.startswith("/projects/")
    assert "worker_alive" in requests.get(f"{base}/health", headers=bearer, timeout=5).json()
    assert requests.get(f"{base}/jobs", headers={"Authorization": f"Token {API_TOKEN}"},
                        timeout=5).status_code == 200

    # as a query parameter; the answer leaves an HttpOnly cookie for the page's links
    with requests.Session() as browser:
        r = browser.get(f"{base}/", params={"token": API_TOKEN}, timeout=5)
        assert r.status_code == 200 and "HttpOnly" in r.headers["Set-Cookie"]
        assert browser.get(f"{base}/jobs", timeout=5).status_code == 200
    # a wrong token is not the API token; Label Studio (not running) cannot vouch for it
    r = requests.get(f"{base}/jobs", headers={"Authorization": "Bearer wrong"}, timeout=5)
    assert r.status_code == 503 and "cannot reach Label Studio" in r.json()["error"]
    # the webhook keeps its own check: the shared secret, no token
    r = requests.post(f"{base}/webhook", json=EVENT, headers=OK, timeout=5)
    assert r.status_code == 200 and r.json()["status"] == "queued"


def test_what_counts_as_bound_elsewhere(start: Start, tmp_path: Path) -> None:
    from ls_agreement.plugin.web_auth import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.1.1", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.org", ""]))
    # loopback: open, unless an API token was configured (e.g. behind a reverse proxy)
    assert requests.get(start().address + "/jobs", timeout=5).status_code == 200
    svc = start("--api-token", API_TOKEN)
    assert requests.get(svc.address + "/jobs", timeout=5).status_code == 401
    assert requests.get(svc.address + "/jobs", params={"token": API_TOKEN},
                        timeout=5).status_code == 200
    # reachable from elsewhere without a webhook secret: refused at start
    with pytest.raises(BadInput, match="--secret"):
        serve_cmd.make_service(make_args(tmp_path, "--host", "0.0.0.0", secret=None), log=None)


def test_page_rendering_is_bounded_by_the_request_timeout(
        start: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow(self: web.App) -> str:
        time.sleep(3)
        return "<p>late</p>"
    monkeypatch.setattr(web.App, "index_html", slow)
    svc = start("--request-timeout", "0.5")
    t0 = time.monotonic()
    r = requests.get(svc.address + "/", timeout=10)
    assert r.status_code == 504 and "0.5 s" in r.json()["error"]
    assert time.monotonic() - t0 < 2.5
    assert requests.get(svc.address + "/health", timeout=5).status_code == 200


def test_tokens_never_reach_the_log(start: Start, capfd: pytest.CaptureFixture[str]) -> None:
    log = io.StringIO()
    svc = start("--host", "0.0.0.0", "--api-token", API_TOKEN, log=log)
    base = local(svc)
    requests.get(f"{base}/jobs", params={"token": API_TOKEN, "limit": 5}, timeout=5)
    requests.get(f"{base}/", headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=5)
    requests.get(f"{base}/jobs?limit=x&token={API_TOKEN}", timeout=5)         # a 400
    requests.get(f"{base}/jobs", params={"token": API_TOKEN + "-wrong"}, timeout=5)  # 503
    requests.get(f"{base}/nowhere", params={"token": API_TOKEN}, timeout=5)  # 404
    svc.stop()
    text = log.getvalue() + "".join(capfd.readouterr())
    assert '"GET /jobs?token=***&limit=5 HTTP/1.1" 200' in text
    assert "/jobs?limit=x&token=*** HTTP/1.1\" 400" in text
    assert API_TOKEN not in text and API_TOKEN not in repr(svc.auth)


def test_label_studio_tokens_open_the_api(ls_server: Any, ls_pat: str, start: Start) -> None:
    svc = start("--host", "0.0.0.0", "--api-token", API_TOKEN, url=ls_server.url,
                token=ls_server.token)
    base = local(svc)
    for header in (f"Token {ls_server.token}", f"Bearer {ls_server.token}", f"Bearer {ls_pat}"):
        r = requests.get(f"{base}/jobs", headers={"Authorization": header}, timeout=30)
        assert r.status_code == 200, header
    assert requests.get(f"{base}/jobs", params={"token": ls_server.token},
                        timeout=30).status_code == 200
    for bad in ("0" * 40, ls_server.token[:-1] + "x"):
        r = requests.get(f"{base}/jobs", headers={"Authorization": f"Token {bad}"}, timeout=30)
        assert r.status_code == 401
    # Label Studio's answers (valid or not) are cached for a minute
    n = svc.auth.ls_checks
    for _ in range(3):
        requests.get(f"{base}/jobs", headers={"Authorization": f"Token {ls_server.token}"},
                     timeout=30)
        requests.get(f"{base}/jobs", headers={"Authorization": "Token " + "0" * 40},
                     timeout=30)
    assert svc.auth.ls_checks == n


def test_token_checks_go_through_the_client(ls_server: Any, ls_pat: str) -> None:
    """The service's token check is the client's (plugin/client.py): a 502 from a proxy in
    front of Label Studio is retried, a refused token is a refusal (401, cached), and a
    server that keeps failing is 'cannot reach' (503), never a refusal."""
    from ls_agreement.plugin.web_auth import ApiAuth, AuthUnavailable

    from .test_sync_faults import FaultProxy

    proxy = FaultProxy(ls_server.url)
    try:
        auth = ApiAuth(required=True, ls_url=proxy.url)
        failed: list[str] = []

        def once(method: str, path: str) -> Any:     # the first whoami of each check fails
            if "whoami" in path and len(failed) % 2 == 0:
                failed.append(path)
                return "502"
            if "whoami" in path:
                failed.append(path)
            return None

        proxy.rule = once
        assert auth.accepts(ls_server.token) and auth.accepts(ls_pat)
        assert [o for m, p, o in proxy.seen if "whoami" in p] == ["502", "ok", "502", "ok"]
        assert not auth.accepts("0" * 40)                   # refused, not unavailable
        proxy.rule = lambda m, p: "502"
        with pytest.raises(AuthUnavailable, match="cannot reach Label Studio"):
            auth.accepts(ls_server.token[:-1] + "y")
    finally:
        proxy.close()
