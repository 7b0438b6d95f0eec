"""``ls-agreement serve`` and ``connect`` against a real Label Studio over real HTTP.

Label Studio itself calls the receiver (its webhooks), the worker syncs through the real
API, and every check reads the server (task data through the export, the webhook list)
or the service's HTTP answers — never the service's internals.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from ls_agreement.plugin.cli import main as cli_main
from ls_agreement.plugin.commands import serve as serve_cmd
from ls_agreement.plugin.commands.connect import PAGE_LINK_PREFIX, quality_page_url, with_page_link
from ls_agreement.plugin.job_backend import PENDING, RUNNING
from ls_agreement.plugin.jobs import JobQueue
from ls_agreement.demo.host import free_port
from tests.shared_data import DATA

from .test_sync import export

WEBHOOKS = DATA / "label-studio" / "webhooks"
SECRET = "test-secret-123"
CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="Positive"/><Choice value="Negative"/><Choice value="Neutral"/>
  </Choices>
  <Rating name="quality" toName="text" maxRating="5"/>
</View>"""
SENT = ["Positive", "Negative", "Neutral"]


def result(sent: str, rating: int) -> list[dict[str, Any]]:
    return [{"from_name": "sentiment", "to_name": "text", "type": "choices",
             "value": {"choices": [sent]}},
            {"from_name": "quality", "to_name": "text", "type": "rating",
             "value": {"rating": rating}}]


def make_tasks(user_ids: list[int], n: int = 6) -> list[dict[str, Any]]:
    """3 annotators per task; even tasks agree, odd ones disagree."""
    tasks = []
    for i in range(n):
        anns = [{"completed_by": uid, "ground_truth": False,
                 "result": result(SENT[i % 3], 1 + i % 5) if i % 2 == 0
                 else result(SENT[k], 1 + 2 * k)}
                for k, uid in enumerate(user_ids[:3])]
        tasks.append({"data": {"text": f"text {i}"}, "annotations": anns})
    return tasks


def wait_for(cond: Callable[[], Any], timeout: float, what: str, step: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def serve_args(url: str, token: str, tmp: Path, *extra: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    serve_cmd.add_arguments(p)
    settings = tmp / "settings.toml"
    settings.write_text("[report]\nbootstrap = 20\n[sync]\nattempts = 2\nbackoff = 0.1\n")
    return p.parse_args(["--url", url, "--token", token, "--port", "0", "--secret", SECRET,
                         "--state", str(tmp / "state.sqlite"), "--out", str(tmp / "out"),
                         "--settings", str(settings), "--interval", "0", "--quiet",
                         "--grace", "10", *extra])


@pytest.fixture
def start_service(tmp_path: Path) -> Iterator[Callable[..., serve_cmd.Service]]:
    started: list[serve_cmd.Service] = []

    def start(url: str, token: str, *extra: str) -> serve_cmd.Service:
        svc = serve_cmd.make_service(serve_args(url, token, tmp_path, *extra)).start()
        started.append(svc)
        return svc

    yield start
    for svc in started:
        svc.stop(grace=10)


def connect(ls_server: Any, pid: int, receiver: str, tmp: Path, *extra: str) -> int:
    return cli_main(["connect", "--url", ls_server.url, "--token", ls_server.token,
                     "--project", str(pid), "--receiver", receiver, "--secret", SECRET,
                     "--state", str(tmp / "state.sqlite"), "--out", str(tmp / "out"),
                     "--settings", str(tmp / "settings.toml"), "--quiet", *extra])


def jobs(svc: serve_cmd.Service, pid: int) -> list[dict[str, Any]]:
    r = requests.get(f"{svc.address}/jobs", params={"project": pid, "limit": 100}, timeout=5)
    assert r.status_code == 200
    return r.json()["jobs"]


def test_annotation_event_recomputes_and_quality_page(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        start_service: Callable, tmp_path: Path) -> None:
    svc = start_service(ls_server.url, ls_server.token)
    pid = make_project(CONFIG, make_tasks([a["id"] for a in annotators]), title="serve e2e")
    hook = f"{svc.address}/webhook"
    assert connect(ls_server, pid, hook, tmp_path) == 0
    assert connect(ls_server, pid, hook.removesuffix("/webhook"), tmp_path) == 0  # idempotent
    hooks = [h for h in ls_client.webhooks.list(project=str(pid)) if h.project == pid]
    assert len(hooks) == 1 and hooks[0].url == hook and hooks[0].send_payload
    assert hooks[0].headers == {"X-LS-Agreement-Secret": SECRET}

    before = export(ls_client, pid)
    assert all(t["data"]["agreement_n_annotators"] == 3 for t in before.values())
    target = min(before)
    n_jobs = len(jobs(svc, pid))
    # a 4th annotator on one task: Label Studio calls the webhook → job → sync
    ls_client.annotations.create(id=target, result=result("Negative", 2),
                                 completed_by=annotators[3]["id"])
    after = wait_for(lambda: (lambda t: t if t[target]["data"].get(
        "agreement_n_annotators") == 4 else None)(export(ls_client, pid)), 60,
        "the webhook-triggered sync to update the task")
    assert after[target]["data"]["text"] == before[target]["data"]["text"]
    got = jobs(svc, pid)
    # a new job, or the event coalesced into a pending one (connect's): either records it
    assert len(got) > n_jobs or any("ANNOTATION_CREATED" in j["last_reason"] for j in got)
    # the event may be coalesced into the job connect queued (its reason stays "connect")
    done = wait_for(lambda: [j for j in jobs(svc, pid) if j["status"] == "done"
                             and "ANNOTATION_CREATED" in j["reason"] + j["last_reason"]], 30, "job done")
    assert done
    # some job wrote the task (which one depends on how the events were coalesced)
    settled = wait_for(lambda: (lambda js: js if all(j["status"] in ("done", "failed") for j in js)
                                else None)(jobs(svc, pid)), 60, "every job finished")
    assert sum((j["result"] or {}).get("n_written", 0) for j in settled) >= 1
    assert all(j["status"] != "failed" for j in jobs(svc, pid))

    # the quality page
    rep = requests.get(f"{svc.address}/projects/{pid}/report.json", timeout=10)
    assert rep.status_code == 200
    report = rep.json()
    sigma = report["controls"]["sentiment"]["sigma"]
    assert report["project"] == pid and isinstance(sigma, float)
    page = requests.get(f"{svc.address}/projects/{pid}", timeout=60)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "<svg class='chart" in page.text and "serve e2e" in page.text   # charts drawn inline
    assert f"{sigma:.3f}" in page.text
    index = requests.get(svc.address + "/", timeout=10)
    assert index.status_code == 200 and f"/projects/{pid}" in index.text
    assert "serve e2e" in index.text and f"{sigma:.3f}" in index.text
    health = requests.get(f"{svc.address}/health", timeout=5).json()
    assert health["status"] == "UP" and pid in health["projects"]
    assert requests.get(f"{svc.address}/projects/999999", timeout=5).status_code == 404


def test_page_link_helpers() -> None:
    assert quality_page_url("http://h:8765/webhook", 7) == "http://h:8765/projects/7"
    assert quality_page_url("https://h/lsa/webhook", 7) == "https://h/lsa/projects/7"   # proxy prefix
    line = PAGE_LINK_PREFIX + "http://h/projects/7"
    assert with_page_link(None, "http://h/projects/7") == line
    once = with_page_link("My notes.\n\n  indented\n", "http://h/projects/7")
    assert once == "My notes.\n\n  indented\n\n" + line
    assert with_page_link(once, "http://h/projects/7") == once                 # idempotent
    moved = with_page_link(once, "http://k/projects/7")
    assert moved.count(PAGE_LINK_PREFIX) == 1 and moved.endswith("http://k/projects/7")
    assert with_page_link(moved, None) == "My notes.\n\n  indented"


def test_connect_links_the_quality_page_from_the_description(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        start_service: Callable, tmp_path: Path) -> None:
    svc = start_service(ls_server.url, ls_server.token)
    pid = make_project(CONFIG, make_tasks([a["id"] for a in annotators], n=4), title="page link")
    mine = "Sentiment of support tickets.\nAsk Ana before changing the labels."
    ls_client.projects.update(id=pid, description=mine)

    def description() -> str:
        return ls_client.projects.get(id=pid).description or ""

    assert connect(ls_server, pid, f"{svc.address}/webhook", tmp_path) == 0
    page_url = f"{svc.address}/projects/{pid}"
    assert description() == f"{mine}\n\n{PAGE_LINK_PREFIX}{page_url}"
    assert connect(ls_server, pid, svc.address, tmp_path, "--no-sync") == 0     # again: no second link
    assert description() == f"{mine}\n\n{PAGE_LINK_PREFIX}{page_url}"
    # the link Label Studio shows leads to the page
    link = description().rsplit(PAGE_LINK_PREFIX, 1)[1]
    page = requests.get(link, timeout=60)
    assert page.status_code == 200 and "page link" in page.text and "id=control-filter" in page.text
    # the receiver moved: the link follows, still once
    moved = f"http://127.0.0.1:{free_port()}"
    assert connect(ls_server, pid, moved + "/webhook", tmp_path, "--no-sync") == 0
    assert description() == f"{mine}\n\n{PAGE_LINK_PREFIX}{moved}/projects/{pid}"
    assert connect(ls_server, pid, moved, tmp_path, "--no-sync", "--no-page-link") == 0
    assert description() == mine


def test_auth_and_malformed_payloads(start_service: Callable) -> None:
    # no Label Studio needed: nothing here reaches the worker
    svc = start_service("http://127.0.0.1:9", "unused-token")
    url = f"{svc.address}/webhook"
    ok = {"X-LS-Agreement-Secret": SECRET}
    body = {"action": "ANNOTATION_CREATED", "project": {"id": 1}}
    assert requests.post(url, json=body, timeout=5).status_code == 401
    r = requests.post(url, json=body, headers={"X-LS-Agreement-Secret": "nope"}, timeout=5)
    assert r.status_code == 401 and "X-LS-Agreement-Secret" in r.json()["error"]
    for raw, fragment in ((b"{broken", "not valid JSON"), (b"[]", "JSON object"),
                          (b'{"project": {"id": 1}}', "'action'"),
                          (b'{"action": "TASKS_CREATED", "tasks": []}', "no project id")):
        r = requests.post(url, data=raw, headers={**ok, "Content-Type": "application/json"},
                          timeout=5)
        assert r.status_code == 400, raw
        assert fragment in r.json()["error"] and "Traceback" not in r.text
    assert requests.get(f"{svc.address}/nowhere", timeout=5).status_code == 404
    assert requests.post(f"{svc.address}/health", timeout=5).status_code == 405
    assert requests.get(f"{svc.address}/jobs?limit=x", timeout=5).status_code == 400
    assert requests.get(f"{svc.address}/jobs", timeout=5).json()["jobs"] == []


def test_replayed_captured_payloads(ls_server: Any, ls_client: Any, annotators: list[dict],
                                    make_project: Callable, start_service: Callable) -> None:
    svc = start_service(ls_server.url, ls_server.token)
    pid = make_project(CONFIG, make_tasks([a["id"] for a in annotators], n=4))
    assert not any("agreement_sigma" in t["data"] for t in export(ls_client, pid).values())
    files = sorted(WEBHOOKS.glob("*.json"))
    assert len(files) >= 6
    for f in files:
        payload = json.loads(f.read_text())["payload"]
        payload["project"]["id"] = pid            # the captured project id was 1
        for key in ("annotation", "task"):
            if isinstance(payload.get(key), dict):
                payload[key]["project"] = pid
        r = requests.post(f"{svc.address}/webhook", json=payload,
                          headers={"X-LS-Agreement-Secret": SECRET}, timeout=2)
        assert r.status_code == 200, (f.name, r.text)
        assert r.json()["status"] == "queued" and r.json()["project"] == pid
    # a burst is coalesced: one job absorbs the events (a second opens while one runs)
    js = jobs(svc, pid)
    assert 1 <= len(js) <= 2 and sum(j["events"] for j in js) == len(files)
    tasks = wait_for(lambda: (lambda t: t if all("agreement_sigma" in x["data"]
                                                  for x in t.values()) else None)(
        export(ls_client, pid)), 60, "the replayed event's sync")
    assert all(t["data"]["agreement_n_annotators"] == 3 for t in tasks.values())


def test_missed_events_are_reconciled(ls_server: Any, ls_client: Any, annotators: list[dict],
                                      make_project: Callable, start_service: Callable,
                                      tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([a["id"] for a in annotators], n=4))
    dead = f"http://127.0.0.1:{free_port()}/webhook"     # the receiver is "down"
    (tmp_path / "settings.toml").write_text("[report]\nbootstrap = 20\n")
    assert connect(ls_server, pid, dead, tmp_path) == 0
    svc = start_service(ls_server.url, ls_server.token, "--interval", "2")
    wait_for(lambda: [j for j in jobs(svc, pid) if j["status"] == "done"], 60,
             "the start-up sync")
    target = min(export(ls_client, pid))
    ls_client.annotations.create(id=target, result=result("Neutral", 5),
                                 completed_by=annotators[4]["id"])
    wait_for(lambda: export(ls_client, pid)[target]["data"]["agreement_n_annotators"] == 4,
             60, "the periodic reconcile to catch up")
    # the task is written before its job is recorded done: wait for the record
    wait_for(lambda: [j for j in jobs(svc, pid) if j["status"] == "done"
                      and j["reason"] == "reconcile" and j["result"]["n_written"] >= 1],
             30, "the reconcile job that wrote the task")
    reasons = {j["reason"] for j in jobs(svc, pid)}
    assert not any(r.startswith("ANNOTATION") for r in reasons)   # no event ever arrived


def test_sigterm_stops_cleanly_and_jobs_survive(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LS_AGREEMENT_WEBHOOK_SECRET", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ls_agreement.plugin.cli", "serve", "--url",
         "http://127.0.0.1:9", "--token", "unused-token", "--port", "0", "--state", str(state),
         "--out", str(tmp_path / "out"), "--retry-backoff", "60", "--grace", "1",
         "--interval", "0"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", line)
            port = int(m.group(1)) if m else None
        assert port, "serve did not start"
        r = requests.post(f"http://127.0.0.1:{port}/webhook", timeout=2,
                          json={"action": "PROJECT_UPDATED", "project": {"id": 42}})
        assert r.status_code == 200 and r.json()["status"] == "queued"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the job (for an unreachable server: failing, retried later) is still on disk
    q = JobQueue(state)
    (job,) = q.recent(10, project_id=42)
    assert job.status in (PENDING, RUNNING) and job.reason == "PROJECT_UPDATED"
    q.recover()
    assert q.get(job.id).status == PENDING
