"""Faults and bad input for ``ls-agreement sync`` against a real Label Studio.

5xx and timeouts are injected by a tiny HTTP proxy on 127.0.0.1 in front of the real
server (fault injection, not a mock); the server-killed case stops a second real server
in the middle of the push phase, restarts it on the same data dir and syncs again.
"""
from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import pytest

from ls_agreement.plugin.cli import main as cli_main
from ls_agreement.plugin.client import AuthError, NotFound, ServerUnavailable
from ls_agreement.plugin.pushback import current_of, desired_for, fingerprint, needs_write
from ls_agreement.demo.host import free_port
from ls_agreement.demo.local_server import LocalLabelStudio
from ls_agreement.plugin.settings import PluginSettings, SyncOptions
from ls_agreement.plugin.state import SyncState, project_key
from ls_agreement.plugin.sync import sync_project

from .test_sync import CONFIG, make_tasks

FAST = dict(attempts=3, backoff=0.05, timeout=5.0)


class FaultProxy:
    """Forwards every request to ``upstream``; ``rule(method, path)`` may answer 502
    (return ``"502"``), answer 200 with an empty body (``"empty"``), sleep past the client's timeout (return a delay in seconds) or
    pass (None). Counts requests by method."""

    def __init__(self, upstream: str) -> None:
        up = urlsplit(upstream)
        self.host, self.port_up = up.hostname or "127.0.0.1", up.port or 80
        self.rule: Callable[[str, str], Any] = lambda m, p: None
        self.seen: list[tuple[str, str, str]] = []   # (method, path, outcome)
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy.lock:
                    action = proxy.rule(self.command, self.path)
                outcome = "ok"
                if action == "502":
                    outcome = "502"
                    payload = b"<html>bad gateway</html>"
                    self.send_response(502)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    with proxy.lock:
                        proxy.seen.append((self.command, self.path, outcome))
                    return
                if action == "empty":       # 200 with no body: an export Label Studio cut short
                    outcome = "empty"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    with proxy.lock:
                        proxy.seen.append((self.command, self.path, outcome))
                    return
                if isinstance(action, (int, float)):
                    outcome = "delayed"
                    with proxy.lock:
                        proxy.seen.append((self.command, self.path, outcome))
                    time.sleep(action)
                conn = http.client.HTTPConnection(proxy.host, proxy.port_up, timeout=120)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "accept-encoding")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length",
                                         "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                conn.close()
                # logged before the body goes out: the client may act on the answer (and a
                # test read ``seen``) before this thread runs again after the write
                if outcome == "ok":
                    with proxy.lock:
                        proxy.seen.append((self.command, self.path, outcome))
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    return              # the client gave up (timed out) meanwhile

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(ls_server: LocalLabelStudio) -> Iterator[FaultProxy]:
    p = FaultProxy(ls_server.url)
    yield p
    p.close()


@pytest.fixture
def project(make_project: Callable[..., int], annotators: list[dict[str, Any]]) -> int:
    return make_project(CONFIG, make_tasks([a["id"] for a in annotators[:3]], n=8))


def _settings(**sync: Any) -> PluginSettings:
    # with the meta detail every task goes by PATCH: the faults below are injected there
    return PluginSettings(sync=SyncOptions(**{**FAST, "meta": True, **sync}))


def _all_correct(client: Any, pid: int, report: Any) -> None:
    """Every task on the server carries exactly what the report says (fresh export)."""
    import json

    tasks = json.loads(b"".join(client.projects.exports.download_sync(
        pid, export_type="JSON", download_all_tasks=True)))
    names = {str(u.id): u.email for u in client.users.list()}
    for t in tasks:
        want = desired_for(report, int(t["id"]), fingerprint(t), names, meta=True)
        assert not needs_write(want, current_of(t)), f"task {t['id']} not synced"


# -- bad input / refused -----------------------------------------------------------------
def test_wrong_url_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    rc = cli_main(["sync", "--url", f"http://127.0.0.1:{port}", "--token", "abcdef123456",
                   "--project", "1", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 3 and "connection refused" in err and "Traceback" not in err


def test_not_a_url_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main(["sync", "--url", "localhost:8080", "--token", "abcdef123456",
                   "--project", "1", "--out", str(tmp_path), "--quiet"])
    assert rc == 2 and "http://" in capsys.readouterr().err


def test_bad_token_and_unknown_project(ls_server: LocalLabelStudio, project: int,
                                       tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AuthError, match="401|403"):
        sync_project(ls_server.url, "wrongtoken123", project, _settings(),
                     out_dir=tmp_path, progress=False)
    rc = cli_main(["sync", "--url", ls_server.url, "--token", "wrongtoken123",
                   "--project", str(project), "--out", str(tmp_path), "--quiet"])
    assert rc == 3 and "refused" in capsys.readouterr().err
    with pytest.raises(NotFound, match="project 999999 does not exist"):
        sync_project(ls_server.url, ls_server.token, 999999, _settings(),
                     out_dir=tmp_path, progress=False)


def test_bad_settings_exit_2(ls_server: LocalLabelStudio, project: int, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "s.toml"
    bad.write_text("[sync]\nworkers = 0\n")
    rc = cli_main(["sync", "--url", ls_server.url, "--token", ls_server.token,
                   "--project", str(project), "--settings", str(bad), "--out",
                   str(tmp_path), "--quiet"])
    assert rc == 2 and "workers" in capsys.readouterr().err


# -- 5xx and timeouts through the proxy ----------------------------------------------------
def test_transient_502_and_timeouts_are_retried(proxy: FaultProxy, ls_server: LocalLabelStudio,
                                                ls_client: Any, project: int,
                                                tmp_path: Path) -> None:
    counts = {"PATCH": 0, "GET": 0}

    def rule(method: str, path: str) -> Any:
        if method in counts:
            counts[method] += 1
            n = counts[method]
            if method == "PATCH" and n in (1, 3, 6):
                return "502"
            if method == "PATCH" and n == 4:
                return 2.0          # longer than the client's 1 s timeout below
            if method == "GET" and n == 2:
                return "502"
        return None

    proxy.rule = rule
    res = sync_project(proxy.url, ls_server.token, project, _settings(timeout=1.0, workers=1),
                       out_dir=tmp_path, progress=False)
    assert res.n_written == res.n_tasks == 8
    outcomes = [o for _, _, o in proxy.seen]
    assert outcomes.count("502") == 4 and "delayed" in outcomes
    assert res.calls["PATCH"] >= 8 + 4          # every fault cost one more attempt
    _all_correct(ls_client, project, res.report)


def test_persistent_502_fails_cleanly_then_recovers(proxy: FaultProxy,
                                                    ls_server: LocalLabelStudio,
                                                    ls_client: Any, project: int,
                                                    tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    ok_patches = {"n": 0}

    def rule(method: str, path: str) -> Any:
        if method == "PATCH":
            if ok_patches["n"] >= 3:
                return "502"
            ok_patches["n"] += 1
        return None

    proxy.rule = rule
    with pytest.raises(ServerUnavailable, match="502"):
        sync_project(proxy.url, ls_server.token, project, _settings(workers=1, chunk=2),
                     state_path=state, out_dir=tmp_path, progress=False)
    key = project_key(proxy.url, project)
    with SyncState(state) as st:
        assert len(st.task_rows(key)) == 3           # only the writes that succeeded
        assert st.runs(key)[-1]["status"] == "failed"
    proxy.rule = lambda m, p: None
    res = sync_project(proxy.url, ls_server.token, project, _settings(), state_path=state,
                       out_dir=tmp_path, progress=False)
    assert res.n_written == 5                        # the rest, not the 3 already done
    _all_correct(ls_client, project, res.report)


# -- the server stops in the middle of the push phase --------------------------------------
@pytest.mark.slow
def test_server_killed_mid_sync_then_resumed(tmp_path: Path) -> None:
    server = LocalLabelStudio(tmp_path / "ls2", port=free_port())  # fixed: restart keeps the URL
    server.start(timeout=300)
    try:
        ids = [server.create_user(f"k{i}@example.com") for i in range(3)]
        client = server.client()
        proj = client.projects.create(title="kill test", label_config=CONFIG)
        client.projects.import_tasks(id=proj.id, request=make_tasks(ids, n=12))
        state = tmp_path / "state.sqlite"

        def kill_after(done: int, total: int) -> None:
            if done >= 4 and server.running:
                server.stop()

        with pytest.raises(ServerUnavailable):
            sync_project(server.url, server.token, proj.id, _settings(workers=1, chunk=3),
                         state_path=state, out_dir=tmp_path / "out", progress=False,
                         on_progress=kill_after)
        key = project_key(server.url, proj.id)
        with SyncState(state) as st:
            done_before = len(st.task_rows(key))
            assert 4 <= done_before < 12
            assert st.runs(key)[-1]["status"] == "failed"
        server.start(timeout=300)                    # same data dir, same port
        assert project_key(server.url, proj.id) == key
        res = sync_project(server.url, server.token, proj.id, _settings(), state_path=state,
                           out_dir=tmp_path / "out", progress=False)
        assert res.n_written == 12 - done_before
        _all_correct(server.client(), proj.id, res.report)
        with SyncState(state) as st:
            assert len(st.task_rows(key)) == 12
    finally:
        server.stop()


def test_streamed_export_reads_what_the_export_holds_and_retries_a_cut_body(
        proxy: FaultProxy, ls_server: LocalLabelStudio, project: int) -> None:
    """The live path's full read (Connection.stream_tasks) spools the export to a file and
    reads it back task by task: the same tasks as the in-memory export; an export answered
    with an empty body is read again; the file is gone once the read ends."""
    from ls_agreement.plugin.client import Connection, RetryPolicy

    direct = Connection(ls_server.url, ls_server.token).export_tasks(project)
    cut = {"n": 0}

    def rule(method: str, path: str) -> Any:
        if "export" in path and cut["n"] == 0:
            cut["n"] += 1
            return "empty"
        return None

    proxy.rule = rule
    conn = Connection(proxy.url, ls_server.token, timeout=10.0, retry=RetryPolicy(attempts=3, base=0.05))
    with conn.stream_tasks(project) as stream:
        streamed = list(stream)
        path = stream.path
        assert path.exists()
    assert not path.exists()
    assert streamed == direct and len(streamed) == 8
    assert [o for _, p, o in proxy.seen if "export" in p] == ["empty", "ok"]
