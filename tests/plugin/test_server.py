"""LocalLabelStudio and the fixtures, against a real Label Studio 1.23.2."""
from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from ls_agreement.demo import local_server as srv
from ls_agreement.demo.local_server import LocalLabelStudio

CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="Positive"/><Choice value="Negative"/>
  </Choices>
</View>"""


# -- without a server ----------------------------------------------------------------
def test_environment_strips_stray_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("USERNAME", "PASSWORD", "HOST", "PORT", "LABEL_STUDIO_HOST",
                 "HEARTEX_FOO", "DJANGO_DB"):
        monkeypatch.setenv(name, "stray")
    env = LocalLabelStudio(tmp_path / "d", token="abcdefgh").environment()
    for name in ("USERNAME", "PASSWORD", "HOST", "PORT", "LABEL_STUDIO_HOST", "HEARTEX_FOO",
                 "DJANGO_DB"):
        assert name not in env
    assert env["LABEL_STUDIO_BASE_DATA_DIR"] == str((tmp_path / "d").resolve())
    assert env["LABEL_STUDIO_USER_TOKEN"] == "abcdefgh"
    assert env["LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN"] == "true"
    assert env["SSRF_PROTECTION_ENABLED"] == "false"


def test_token_length_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="6..40"):
        LocalLabelStudio(tmp_path, token="short")
    with pytest.raises(ValueError, match="6..40"):
        LocalLabelStudio(tmp_path, token="x" * 41)


def test_cache_layout_is_keyed_by_version_and_identity(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LS_AGREEMENT_CACHE", str(tmp_path / "cache"))
    a = LocalLabelStudio(tmp_path / "a")
    assert a.venv_dir == tmp_path / "cache" / f"label-studio-{srv.LS_VERSION}" / "venv"
    b = LocalLabelStudio(tmp_path / "b", version="9.9.9")
    c = LocalLabelStudio(tmp_path / "c", token="another-token")
    assert a.template_dir != b.template_dir and a.template_dir != c.template_dir
    assert "9.9.9" in str(b.template_dir)
    assert not a.is_installed()


def test_file_lock_serialises(tmp_path: Path) -> None:
    # flock locks belong to open file descriptions, so two opens in one process conflict.
    lock = tmp_path / "x.lock"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with srv.file_lock(lock):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(5)
    threading.Timer(0.5, release.set).start()
    t0 = time.monotonic()
    with srv.file_lock(lock):
        waited = time.monotonic() - t0
    t.join()
    assert waited >= 0.4


def test_start_failure_reports_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake "installed" venv whose label-studio exits at once: start() must raise with
    # the log tail instead of waiting for the timeout.
    cache = tmp_path / "cache"
    ls = LocalLabelStudio(tmp_path / "data", port=0, cache_dir=cache)
    exe = ls.executable
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho 'boom: database is locked'\nexit 3\n")
    exe.chmod(0o755)
    (ls.venv_dir / srv._INSTALLED_MARKER).write_text("fake")
    (ls.data_dir).mkdir(parents=True)
    (ls.data_dir / "label_studio.sqlite3").write_text("")
    with pytest.raises(srv.LabelStudioError, match="(?s)exited with code 3.*database is locked"):
        ls.start(timeout=20)
    assert not ls.running


# -- against the real server -----------------------------------------------------------
def test_health_and_legacy_token(ls_server: LocalLabelStudio, ls_client: Any) -> None:
    r = requests.get(f"{ls_server.url}/health", timeout=5)
    assert r.json() == {"status": "UP"}
    assert ls_server.url.startswith("http://127.0.0.1:")
    assert (ls_server.data_dir / "label_studio.sqlite3").exists()
    me = ls_client.users.whoami()
    assert me.email == srv.DEFAULT_EMAIL
    # The legacy token also works as a raw header (what scripts do).
    r = requests.get(f"{ls_server.url}/api/projects/", timeout=10,
                     headers={"Authorization": f"Token {ls_server.token}"})
    assert r.status_code == 200
    r = requests.get(f"{ls_server.url}/api/projects/", timeout=10,
                     headers={"Authorization": "Token wrong-token-123"})
    assert r.status_code == 401


def test_personal_access_token(ls_server: LocalLabelStudio, ls_pat: str) -> None:
    from label_studio_sdk import LabelStudio
    assert ls_pat.count(".") == 2  # a JWT
    client = LabelStudio(base_url=ls_server.url, api_key=ls_pat)
    assert client.users.whoami().email == srv.DEFAULT_EMAIL
    assert isinstance(client.projects.list().items, list)


def test_annotators_are_members(ls_server: LocalLabelStudio, ls_client: Any,
                                annotators: list[dict[str, Any]]) -> None:
    assert len(annotators) == 5
    assert len({a["id"] for a in annotators}) == 5
    org = ls_client.users.whoami().active_organization
    # Raw API: SDK 2.1.2 members.list gets an HTML error page from 1.23.2 (measured).
    r = requests.get(f"{ls_server.url}/api/organizations/{org}/memberships?page_size=1000",
                     headers={"Authorization": f"Token {ls_server.token}"}, timeout=10)
    r.raise_for_status()
    members = {m["user"]["id"] for m in r.json()["results"]}
    assert {a["id"] for a in annotators} <= members
    # Idempotent: asking again returns the same id.
    assert ls_server.create_user(annotators[0]["email"]) == annotators[0]["id"]


def test_make_project_imports_annotations(ls_client: Any, annotators: list[dict[str, Any]],
                                          make_project: Any) -> None:
    tasks = [{"data": {"text": f"task {i}"},
              "annotations": [{"completed_by": a["id"], "result": [
                  {"from_name": "sentiment", "to_name": "text", "type": "choices",
                   "value": {"choices": ["Positive" if (i + k) % 2 else "Negative"]}}]}
                  for k, a in enumerate(annotators[:3])]}
             for i in range(4)]
    pid = make_project(CONFIG, tasks)
    got = list(ls_client.tasks.list(project=pid, fields="all"))
    assert len(got) == 4
    by_text = {t.data["text"]: t for t in got}
    for i in range(4):
        anns = ls_client.annotations.list(id=by_text[f"task {i}"].id)
        assert sorted(a.completed_by for a in anns) == sorted(a["id"] for a in annotators[:3])
        choice = {a.completed_by: a.result[0]["value"]["choices"][0] for a in anns}
        assert choice[annotators[0]["id"]] == ("Positive" if i % 2 else "Negative")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_busy_port_is_followed_and_stop_kills_the_group(ls_server: LocalLabelStudio,
                                                        tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        busy = blocker.getsockname()[1]
        second = LocalLabelStudio(tmp_path / "second", port=busy)
        second.start(timeout=180)
        try:
            port = int(second.url.rsplit(":", 1)[1])
            assert port != busy
            assert requests.get(f"{second.url}/health", timeout=5).json()["status"] == "UP"
            pid = second.pid
            assert pid is not None
        finally:
            second.stop()
    assert not second.running
    deadline = time.monotonic() + 10
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _pid_alive(pid)
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/health", timeout=3)
    # Restarting on the existing data dir keeps its content (the demo's reuse path).
    assert (tmp_path / "second" / "label_studio.sqlite3").exists()
