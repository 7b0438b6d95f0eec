"""The live state workers share in Redis (plugin/queue/shared_state.py), on a real
``redis-server`` and a real Label Studio: a state written by a newer version of the code,
or tampered with (a pickle that would run code, values of the wrong shape), is not used:
the worker that meets it reads the project from Label Studio again, the job succeeds, no
stored code runs, and the tasks end as a sync from scratch writes them."""
from __future__ import annotations

import io
import json
import pickle
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from ls_agreement.demo.data import DEMO_CONFIG
from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.job_backend import DONE
from ls_agreement.plugin.live import snapshot
from ls_agreement.plugin.live.baseline import make_baseline
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.live.project import LiveOutcome, LiveProject
from ls_agreement.plugin.live.snapshot import dump_project
from ls_agreement.plugin.live.runner import LiveRunner
from ls_agreement.plugin.live.snapshot import SNAPSHOT_VERSION
from tests.local_redis import LocalRedis
from ls_agreement.plugin.queue.redis_queue import RedisQueue
from ls_agreement.plugin.queue.shared_state import P, SharedProjects, state_keys
from ls_agreement.plugin.settings import ReportSettings, load_settings
from ls_agreement.plugin.state import SyncState
from ls_agreement.plugin.worker import Worker
from tests.plugin.test_serve import CONFIG, SENT, export, make_tasks, result

from .test_live_snapshot import _Exploit
from .test_live_units import demo_tasks

pytestmark = pytest.mark.slow


class _Workers:
    """Worker processes stood for by runners, each with its own memory, on one Redis."""

    def __init__(self, ls: Any, redis: LocalRedis, tmp: Path) -> None:
        self.ls, self.tmp = ls, tmp
        settings = tmp / "settings.toml"
        settings.write_text("[report]\nbootstrap = 0\n[sync]\nviews = false\n")
        self.settings = load_settings(str(settings))
        self.q = RedisQueue(redis.url, lease=30)
        self.n = 0

    def runner(self) -> tuple[LiveRunner, io.StringIO]:
        self.n += 1
        log = io.StringIO()
        return LiveRunner(self.ls.url, self.ls.token, self.settings, self.q, self.tmp / f"w{self.n}.sqlite",
                          self.tmp / f"out{self.n}", log=log,
                          shared=SharedProjects(self.q.r, log=log)), log

    def run(self, runner: LiveRunner, pid: int, action: str, payload: dict[str, Any] | None = None) -> Any:
        """One job of ``pid`` through the worker's own path (start under the lock, finish)."""
        job = self.q.enqueue(pid, action.lower(), action=action,
                             payload=None if payload is None else json.dumps(payload).encode())
        started = self.q.start(job.id)
        assert started is not None
        done = Worker(self.q, runner, threading.Event(), log=None).execute(started)
        assert done.status == DONE, done.error
        return runner.last[pid]

    def mismatches(self, client: Any, pid: int) -> list[str]:
        runner, _ = self.runner()
        proj = runner.project(pid)
        assert runner.shared is not None and runner.shared.restore(proj), "the state is ours again"
        return proj.mismatches(export(client, pid).values())


def _edit(client: Any, pid: int, k: int) -> dict[str, Any]:
    """Change one annotation on the server; the webhook payload Label Studio sends for it."""
    task = export(client, pid)[min(export(client, pid))]
    ann = task["annotations"][0]
    client.annotations.update(id=ann["id"], result=result(SENT[k % 3], 1 + k % 5))
    fresh = export(client, pid)[task["id"]]
    now = next(a for a in fresh["annotations"] if a["id"] == ann["id"])
    return {"action": "ANNOTATION_UPDATED", "project": {"id": pid},
            "annotation": {**now, "task": task["id"]}, "task": {"id": task["id"], "data": task["data"]}}


def _newer(r: Any, pid: int, tmp: Path) -> None:
    head, _, body = r.get(f"{P}{pid}:snap").partition(b"\n")
    r.set(f"{P}{pid}:snap", json.dumps({**json.loads(head), "version": SNAPSHOT_VERSION + 1}).encode()
          + b"\n" + body)


def _pickled_snapshot(r: Any, pid: int, tmp: Path) -> None:
    r.set(f"{P}{pid}:snap", pickle.dumps(_Exploit(tmp / "pwned-snap")))


def _pickled_pushed(r: Any, pid: int, tmp: Path) -> None:
    key = next(iter(r.hkeys(f"{P}{pid}:pushed")))
    r.hset(f"{P}{pid}:pushed", key, pickle.dumps(_Exploit(tmp / "pwned-pushed")))


def _wrong_shape(r: Any, pid: int, tmp: Path) -> None:
    keys = state_keys(r, pid)
    assert keys is not None
    r.lset(keys[0], 0, json.dumps([{"id": "seven", "annotations": "none"}]).encode())


def _missing_block(r: Any, pid: int, tmp: Path) -> None:
    keys = state_keys(r, pid)
    assert keys is not None
    r.rpop(keys[1])


def _tampered_log(r: Any, pid: int, tmp: Path) -> None:
    r.rpush(f"{P}{pid}:log", pickle.dumps(_Exploit(tmp / "pwned-log")))


@pytest.mark.parametrize("spoil", [_newer, _pickled_snapshot, _pickled_pushed, _wrong_shape, _missing_block,
                                   _tampered_log],
                         ids=["newer-version", "pickled-snapshot", "pickled-task-values", "wrong-shape",
                              "missing-block", "tampered-log"])
def test_a_state_not_ours_is_rebuilt_from_label_studio(
        spoil: Callable[[Any, int, Path], None], redis_server: LocalRedis, ls_server: Any, ls_client: Any,
        annotators: list[dict], make_project: Callable, tmp_path: Path) -> None:
    cluster = _Workers(ls_server, redis_server, tmp_path)
    pid = make_project(CONFIG, make_tasks([a["id"] for a in annotators], n=6), title=f"shared {spoil.__name__}")
    first, _ = cluster.runner()
    assert cluster.run(first, pid, "RECONCILE").mode == "full"
    assert cluster.run(first, pid, "ANNOTATION_UPDATED", _edit(ls_client, pid, 1)).mode == "events"
    spoil(cluster.q.r, pid, tmp_path)
    cluster.q.r.incr(f"{P}{pid}:ver")              # as if another worker wrote it last
    # another worker takes the project's next event: it cannot use the state, so it reads
    # the project in full (the edit included) and the job succeeds
    second, log = cluster.runner()
    out = cluster.run(second, pid, "ANNOTATION_UPDATED", _edit(ls_client, pid, 2))
    assert out.mode == "full", "the state was used"
    assert "stored live state not used" in log.getvalue()
    assert not list(tmp_path.glob("pwned*")), "a stored pickle ran"
    # it wrote a state of its own version, which the next worker uses
    assert cluster.mismatches(ls_client, pid) == []
    third, log3 = cluster.runner()
    assert cluster.run(third, pid, "ANNOTATION_UPDATED", _edit(ls_client, pid, 3)).mode == "events"
    assert "not used" not in log3.getvalue()
    assert cluster.mismatches(ls_client, pid) == []
    cluster.q.close()


def test_a_state_is_written_in_blocks_and_switched_at_once(redis_server: LocalRedis, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror and the report go to Redis a block at a time, never as one value; a new
    state replaces the old one in one step and the old blocks go; blocks a writer left
    before its switch expire; a state missing a block is not used."""
    monkeypatch.setattr(snapshot, "TASKS_PER_BLOCK", 7)
    monkeypatch.setattr(snapshot, "ENTRIES_PER_BLOCK", 11)
    settings = load_settings(None)

    def project() -> LiveProject:
        return LiveProject(Connection("http://127.0.0.1:9", "t" * 40), 8, settings,
                           SyncState(tmp_path / "state.sqlite"), tmp_path / "out")

    proj = project()
    proj.mirror = ProjectMirror()
    proj.mirror.fill(demo_tasks(60, seed=4))
    proj.config_xml = DEMO_CONFIG
    proj.base = make_baseline(DEMO_CONFIG, proj.mirror, ReportSettings(bootstrap=0))
    q = RedisQueue(redis_server.url, lease=30)
    log = io.StringIO()
    shared = SharedProjects(q.r, log=log)
    shared.save(proj, LiveOutcome("full"), [])
    first = state_keys(q.r, 8)
    assert first is not None
    assert q.r.llen(first[0]) == 9 and q.r.ttl(first[0]) == -1 and q.r.ttl(first[1]) == -1
    blocks = sum(len(b) for k in first for b in q.r.lrange(k, 0, -1))
    assert len(q.r.get(f"{P}8:snap")) < blocks / 4, "the head holds tasks or per-task entries"
    back = project()
    assert shared.restore(back)
    assert back.base.report == proj.base.report
    assert back.mirror.export() == proj.mirror.export()
    # a second state: the first one's blocks are gone
    shared.save(proj, LiveOutcome("full"), [])
    second = state_keys(q.r, 8)
    assert second != first and not q.r.exists(*first) and q.r.exists(*second) == 2
    # a writer that dies before its switch leaves blocks that expire, and the state stands
    left = shared._write((f"{P}8:snap:abandoned:tasks", f"{P}8:snap:abandoned:entries"), dump_project(proj))
    assert all(0 < q.r.ttl(k) <= 3600 for k in left)
    again = project()
    assert shared.restore(again) and state_keys(q.r, 8) == second
    # a block missing: not used, the project is read in full at its next job
    q.r.rpop(second[0])
    assert not shared.restore(project())
    assert "incomplete" in log.getvalue()
    shared.forget(8)
    assert not q.r.keys(f"{P}8:*") or set(q.r.keys(f"{P}8:*")) == {k.encode() for k in left}
    q.close()


def test_a_background_baseline_is_handed_over_in_blocks(redis_server: LocalRedis, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline one worker made in the background reaches the worker that adopts it
    whole, in blocks; taking it removes it; a newer one replaces it and its blocks; one
    with a block missing is not adopted (the next reconcile makes another)."""
    monkeypatch.setattr(snapshot, "ENTRIES_PER_BLOCK", 11)
    mirror = ProjectMirror()
    mirror.fill(demo_tasks(40, seed=6))
    base = make_baseline(DEMO_CONFIG, mirror, ReportSettings(bootstrap=0))
    q = RedisQueue(redis_server.url, lease=30)
    log = io.StringIO()
    shared = SharedProjects(q.r, log=log)
    shared.put_next(9, base)
    first = state_keys(q.r, 9, "next")
    shared.put_next(9, base)
    second = state_keys(q.r, 9, "next")
    assert first is not None and second is not None and not q.r.exists(*first)
    assert q.r.llen(second[1]) > 1 and q.r.ttl(second[1]) == -1
    taken = shared.take_next(9)
    assert taken is not None and taken.report == base.report
    assert shared.take_next(9) is None and not q.r.keys(f"{P}9:*")
    shared.put_next(9, base)
    keys = state_keys(q.r, 9, "next")
    assert keys is not None
    q.r.rpop(keys[1])
    assert shared.take_next(9) is None and "incomplete" in log.getvalue()
    assert not q.r.keys(f"{P}9:*")
    q.close()
