"""The live path of ``serve`` against a real Label Studio: random sequences of annotation
creates, updates and deletes and task imports and deletes, sent by Label Studio's own
webhooks; afterwards every task must carry exactly what a sync from scratch at the same
baseline gives (issue: "Equal to a full sync"), and no event may write other tasks."""
from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import requests

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.job_backend import StoredEvent
from ls_agreement.plugin.live.project import RECONCILE, LiveProject
from ls_agreement.plugin.settings import PluginSettings, ReportSettings, SyncOptions
from ls_agreement.plugin.state import SyncState
from tests.plugin.test_serve import (CONFIG, SENT, connect, export, make_tasks, result,  # noqa: F401
                                     start_service, wait_for)

SPANS_CONFIG = CONFIG.replace("</View>", """  <Labels name="entities" toName="text">
    <Label value="PER"/><Label value="ORG"/>
  </Labels>
</View>""")


def _result(rng: random.Random) -> list[dict[str, Any]]:
    out = result(rng.choice(SENT), rng.randint(1, 5))
    if rng.random() < 0.7:
        s = rng.randint(0, 4)
        out.append({"from_name": "entities", "to_name": "text", "type": "labels",
                    "value": {"start": s, "end": s + 4, "labels": [rng.choice(["PER", "ORG"])]}})
    return out


def _idle(svc: Any, pid: int) -> bool:
    counts = svc.queue.counts()
    return not counts.get("pending") and not counts.get("running") and not svc.queue.events(pid)


def _from_scratch_mismatches(svc: Any, pid: int, tasks: dict[int, dict[str, Any]]) -> list[str]:
    """Tasks whose server values differ from a from-scratch computation at the service's
    current baseline (fresh mirror from a full export, every task rescored)."""
    return svc.worker.runner.projects[pid].mismatches(tasks.values())


@pytest.mark.parametrize("seed", [1, 2])
def test_random_events_equal_a_sync_from_scratch(
        seed: int, ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        start_service: Callable, tmp_path: Path) -> None:
    rng = random.Random(seed)
    users = [a["id"] for a in annotators]
    tasks = make_tasks(users, n=8)
    for t in tasks:
        t["data"]["text"] = "Ann Smith joined Acme Corp " + t["data"]["text"]
    pid = make_project(SPANS_CONFIG, tasks, title=f"live random {seed}")
    live = tmp_path / "live.toml"
    live.write_text("[report]\nbootstrap = 0\n[sync]\nviews = false\nrebaseline_events = 1000\n")
    svc = start_service(ls_server.url, ls_server.token, "--settings", str(live))
    assert connect(ls_server, pid, f"{svc.address}/webhook", tmp_path) == 0
    wait_for(lambda: pid in svc.worker.runner.projects and svc.worker.runner.projects[pid].base
             and _idle(svc, pid), 120, "the start-up read")

    for step in range(14):
        current = export(ls_client, pid)
        op = rng.choice(["create", "create", "update", "update", "delete", "import", "delete_task"])
        tid = rng.choice(sorted(current))
        anns = current[tid]["annotations"]
        if op == "create":
            free = [u for u in users if u not in {a["completed_by"] for a in anns}]
            if free:
                ls_client.annotations.create(id=tid, result=_result(rng), completed_by=rng.choice(free))
        elif op == "update" and anns:
            ls_client.annotations.update(id=rng.choice(anns)["id"], result=_result(rng))
        elif op == "delete" and anns:
            ls_client.annotations.delete(id=rng.choice(anns)["id"])
        elif op == "import":
            who = rng.sample(users, rng.randint(0, 3))
            ls_client.projects.import_tasks(id=pid, request=[{
                "data": {"text": f"Bob Jones left Initech {step}"},
                "annotations": [{"completed_by": u, "result": _result(rng)} for u in who]}])
        elif op == "delete_task" and len(current) > 4:
            ls_client.tasks.delete(id=tid)
        time.sleep(rng.choice([0.0, 0.3]))

    wait_for(lambda: _idle(svc, pid), 120, "the events to be applied", step=0.3)
    runner = svc.worker.runner
    proj = runner.projects[pid]
    final = export(ls_client, pid)
    assert proj.mirror.diff(final.values()).n == 0, "the mirror missed an event"
    assert _from_scratch_mismatches(svc, pid, final) == []
    # events wrote only the tasks they touched
    events_jobs = [j for j in svc.queue.recent(200, pid) if j.status == "done"]
    assert events_jobs
    for out in runner.last.values():
        if out.mode == "events":
            assert set(out.written) <= set(out.touched)

    # a reconcile: a new baseline from a full read, no lost events, still equal. Waited for
    # by what lasts (its job done, the baseline in place), never by a state that lasts one
    # job: the read's outcome is replaced by the swap's as soon as the baseline is ready.
    job = svc.queue.enqueue(pid, "reconcile", action="RECONCILE")
    wait_for(lambda: svc.queue.get(job.id).status == "done", 120, "the reconcile's read")
    assert svc.queue.live_stats()[pid]["lost_events"] == 0
    # its new baseline is made beside the event path, then swapped in and republished
    wait_for(lambda: _idle(svc, pid) and proj.base.reason == "reconcile" and not proj.baseline_pending(),
             120, "the new baseline")
    final = export(ls_client, pid)
    assert _from_scratch_mismatches(svc, pid, final) == []
    health = requests.get(f"{svc.address}/health", timeout=5).json()
    assert health["live"][str(pid)]["lost_events"] == 0
    report = requests.get(f"{svc.address}/projects/{pid}/report.json", timeout=10).json()
    assert report["baseline"]["reason"] == "reconcile" and report["baseline"]["events_since"] == 0


def test_full_reads_faster_than_baselines_do_not_starve_them(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        tmp_path: Path) -> None:
    """Reconciles (or events the mirror cannot place) that come while a baseline is being
    made keep it: it goes in with the reads' tasks rescored, then the last read's own
    baseline follows. Dropping it at every read let a project whose reads came faster than
    its baselines keep its old baseline for ever."""
    import threading

    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=8), title="live kept baseline")
    settings = PluginSettings(report=ReportSettings(bootstrap=0), sync=SyncOptions(views=False))
    gate, made = threading.Event(), []
    conn = Connection(ls_server.url, ls_server.token)

    def held(base: Any) -> None:           # a baseline that takes as long as the test wants
        made.append(base.reason)
        gate.wait(60)

    with SyncState(tmp_path / "state.sqlite") as st:
        proj = LiveProject(conn, pid, settings, st, tmp_path / "out", on_baseline=held)
        proj.run([])                                       # start-up: baseline on the event path
        reconcile = [StoredEvent(1, RECONCILE, None, time.time())]
        assert proj.run(reconcile).mode == "full"          # its baseline is now in flight
        first = proj._next
        ids = sorted(export(ls_client, pid))
        for k in range(3):                                  # three silent edits, three reads
            ann = export(ls_client, pid)[ids[k]]["annotations"][0]
            ls_client.annotations.update(id=ann["id"], result=result("Negative", 1 + k))
            out = proj.run(reconcile)
            assert out.mode == "full" and out.lost == 1 and proj._next is first
        gate.set()
        wait_for(lambda: first.done(), 60, "the first baseline")
        out = proj.run([StoredEvent(2, "BASELINE", None, time.time())])
        assert out.mode == "rebaseline" and proj.base is first.result()
        assert proj.baseline_pending(), "the last read's own baseline follows"
        wait_for(lambda: proj.baseline_ready(), 60, "the follow-up baseline")
        assert proj.run([StoredEvent(3, "BASELINE", None, time.time())]).mode == "rebaseline"
        assert not proj.baseline_pending() and made == ["reconcile", "reconcile"]
        assert proj.mismatches(export(ls_client, pid).values()) == []
    conn.close()


def test_reconcile_counts_a_lost_event(ls_server: Any, ls_client: Any, annotators: list[dict],
                                       make_project: Callable, start_service: Callable,
                                       tmp_path: Path) -> None:
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=4), title="live lost event")
    live = tmp_path / "live.toml"
    live.write_text("[report]\nbootstrap = 0\n[sync]\nviews = false\n")
    svc = start_service(ls_server.url, ls_server.token, "--settings", str(live))
    # no webhook: the annotation below reaches the service only through the next reconcile
    svc.queue.add_project(pid, "cli")
    svc.queue.enqueue(pid, "startup", action="RECONCILE")
    runner = svc.worker.runner
    wait_for(lambda: pid in runner.projects and runner.projects[pid].base and _idle(svc, pid), 120, "start-up")
    tid = min(export(ls_client, pid))
    ls_client.annotations.create(id=tid, result=result("Negative", 2), completed_by=users[3])
    svc.queue.enqueue(pid, "reconcile", action="RECONCILE")

    def lost() -> int:
        return requests.get(f"{svc.address}/health", timeout=5).json()["live"][str(pid)]["lost_events"]

    wait_for(lambda: _idle(svc, pid) and lost() == 1, 120, "the reconcile to find it")
    assert export(ls_client, pid)[tid]["data"]["agreement_n_annotators"] == 4



def test_events_in_a_reconciles_job_are_written_by_that_job(
        ls_server: Any, ls_client: Any, annotators: list[dict], make_project: Callable,
        tmp_path: Path) -> None:
    """A job holding annotation events *and* a RECONCILE (the service restarted, or a
    reconcile was due) writes the events' tasks itself, at the baseline it serves with: not
    minutes later at the new baseline's swap. A task whose event needed a GET is no lost
    event; a task changed with no event at all is one."""
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, make_tasks(users, n=8), title="live reconcile job")
    settings = PluginSettings(report=ReportSettings(bootstrap=0), sync=SyncOptions(views=False))
    conn = Connection(ls_server.url, ls_server.token)
    with SyncState(tmp_path / "state.sqlite") as st:
        proj = LiveProject(conn, pid, settings, st, tmp_path / "out")
        proj.run([])                                   # start-up: full read, baseline, push
        ids = sorted(export(ls_client, pid))
        # tasks 0, 2, 4 agree fully (make_tasks); one answer each now departs. The first
        # event carries task and annotation, the second needs a GET, the third never comes.
        full_id, get_id, silent_id = ids[0], ids[2], ids[4]
        for tid, new in ((full_id, result("Negative", 5)), (get_id, result("Positive", 5)),
                         (silent_id, result("Positive", 1))):
            before = export(ls_client, pid)[tid]["annotations"][0]
            ls_client.annotations.update(id=before["id"], result=new)
        fresh = export(ls_client, pid)

        def event(k: int, body: dict[str, Any]) -> StoredEvent:
            return StoredEvent(k, body["action"], json.dumps(body), time.time())

        base = proj.base
        out = proj.run([
            event(1, {"action": "ANNOTATION_UPDATED", "project": {"id": pid},
                      "annotation": {**fresh[full_id]["annotations"][0], "task": full_id},
                      "task": {"id": full_id, "data": fresh[full_id]["data"]}}),
            event(2, {"action": "ANNOTATION_UPDATED", "project": {"id": pid},
                      "annotation": {"id": fresh[get_id]["annotations"][0]["id"], "task": get_id}}),
            StoredEvent(3, RECONCILE, None, time.time()),
        ])
        assert out.mode == "full" and out.lost == 1            # the silent change only
        assert proj.base is base                                # the new baseline is not in yet
        assert {full_id, get_id, silent_id} <= set(out.written)
        after = export(ls_client, pid)
        assert all(after[t]["data"]["agreement_sigma"] < 1 for t in (full_id, get_id, silent_id))
        assert proj.mismatches(after.values()) == []
    conn.close()
