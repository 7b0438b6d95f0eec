"""Routing (plugin/routing.py) and the "Agreement" tab (plugin/views.py) on a real Label
Studio (fixtures in conftest.py).

Routing is checked by what Label Studio itself does with it: a fourth annotator asking
``GET /api/projects/<id>/next`` (as that user) is handed the flagged task, and nothing
before routing raised its overlap.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.routing import ROUTING_KEY
from ls_agreement.plugin.sync import sync_project
from ls_agreement.plugin.views import AGREEMENT_TITLE, MARKER, agreement_columns

from .test_sync import CONFIG, _result, make_tasks, settings


def _tasks(user_ids: list[int], n: int = 8) -> list[dict[str, Any]]:
    """``n`` tasks fully annotated by three annotators; task 0 clearly disagrees on every
    control, all others agree (so task 0 alone is flagged)."""
    sent, topics = ["Positive", "Negative", "Neutral"], [["Sports"], ["Politics"], ["Tech"]]
    out = []
    for i in range(n):
        anns = []
        for k, uid in enumerate(user_ids):
            res = (_result(sent[k], topics[k], 1 + 2 * k) if i == 0
                   else _result(sent[i % 3], topics[i % 3], 1 + i % 5))
            anns.append({"completed_by": uid, "result": res, "ground_truth": False})
        out.append({"data": {"text": f"text {i}", "ext_id": f"doc-{i}"}, "annotations": anns})
    return out


def _next_task(url: str, token: str, pid: int) -> int | None:
    """The task Label Studio hands this user next (None: nothing left for them)."""
    r = httpx.get(f"{url}/api/projects/{pid}/next", headers={"Authorization": f"Token {token}"},
                  timeout=60)
    if r.status_code == 404:
        return None
    r.raise_for_status()
    return int(r.json()["id"])


def _by_ext(ls_client: Any, pid: int) -> dict[int, int]:
    return {int(t.data["ext_id"].split("-")[1]): int(t.id)
            for t in ls_client.tasks.list(project=pid, page_size=100)}


def _task(conn: Connection, tid: int) -> dict[str, Any]:
    return conn.get_task(tid)


@pytest.fixture
def routed_project(ls_client: Any, annotators: list[dict],
                   make_project: Callable[..., int]) -> tuple[int, dict[int, int]]:
    """A project distributing each task to 3 annotators, all done (overlap 3)."""
    pid = make_project(CONFIG, _tasks([u["id"] for u in annotators[:3]]))
    # Imported tasks get overlap = maximum_annotations (1 by default); raising the setting
    # makes Label Studio set every task's overlap to 3 and recompute is_labeled.
    ls_client.projects.update(id=pid, maximum_annotations=3)
    return pid, _by_ext(ls_client, pid)


def test_routing_raises_hands_out_and_restores(ls_server: Any, ls_client: Any,
                                               annotators: list[dict],
                                               routed_project: tuple[int, dict[int, int]],
                                               tmp_path: Path) -> None:
    pid, ids = routed_project
    flagged = ids[0]
    conn = Connection(ls_server.url, ls_server.token)
    fourth = ls_server.user_token(annotators[3]["id"])
    try:
        assert all(_task(conn, t)["overlap"] == 3 and _task(conn, t)["is_labeled"]
                   for t in ids.values())
        assert _next_task(ls_server.url, fourth, pid) is None  # all done: nothing to hand out

        # routing off: values pushed, overlap untouched
        res0 = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                            progress=False)
        assert {int(t) for t, e in res0.report.tasks.items() if e.flag} == {flagged}
        assert res0.routing is not None and not res0.routing.changed
        assert _task(conn, flagged)["overlap"] == 3

        opts = settings(route_flagged=True, route_max_overlap=4)
        res = sync_project(ls_server.url, ls_server.token, pid, opts, out_dir=tmp_path,
                           progress=False)
        assert res.routing is not None and res.routing.raised == [flagged]
        t = _task(conn, flagged)
        assert t["overlap"] == 4 and t["is_labeled"] is False
        assert t["meta"][ROUTING_KEY]["original"] == 3
        assert t["meta"][ROUTING_KEY]["raised_to"] == 4
        assert "agreement" in t["meta"]           # the push's own entry is intact
        assert all(_task(conn, o)["overlap"] == 3 for e, o in ids.items() if e != 0)

        # Label Studio hands the flagged task to a fourth annotator
        assert _next_task(ls_server.url, fourth, pid) == flagged

        # still flagged: a second sync raises nothing more (one extra annotator, not more)
        res2 = sync_project(ls_server.url, ls_server.token, pid, opts, out_dir=tmp_path,
                            progress=False)
        assert res2.routing is not None and not res2.routing.changed
        assert _task(conn, flagged)["overlap"] == 4

        # the disagreement is resolved: every annotation now says the same
        for ann in ls_client.annotations.list(id=flagged):
            ls_client.annotations.update(id=ann.id, result=_result("Positive", ["Sports"], 3))
        res3 = sync_project(ls_server.url, ls_server.token, pid, opts, out_dir=tmp_path,
                            progress=False)
        assert not any(e.flag for e in res3.report.tasks.values())
        assert res3.routing is not None and res3.routing.restored == [flagged]
        t = _task(conn, flagged)
        assert t["overlap"] == 3 and t["is_labeled"] is True
        assert ROUTING_KEY not in t["meta"] and "agreement" in t["meta"]
    finally:
        conn.close()


def test_routing_never_undoes_a_users_overlap(ls_server: Any, ls_client: Any,
                                              routed_project: tuple[int, dict[int, int]],
                                              tmp_path: Path) -> None:
    """The user changes the raised overlap: it is theirs; no later sync moves it."""
    pid, ids = routed_project
    flagged = ids[0]
    conn = Connection(ls_server.url, ls_server.token)
    try:
        opts = settings(route_flagged=True, route_max_overlap=4)
        res = sync_project(ls_server.url, ls_server.token, pid, opts, out_dir=tmp_path,
                           progress=False)
        assert res.routing is not None and res.routing.raised == [flagged]
        ls_client.tasks.update(id=str(flagged), overlap=6)
        # routing switched off: undo everything we raised — but not the user's overlap
        res2 = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                            progress=False)
        assert res2.routing is not None and res2.routing.released == [flagged]
        t = _task(conn, flagged)
        assert t["overlap"] == 6 and ROUTING_KEY not in t["meta"]
        # on again, the task is still flagged and not recorded: raised from the user's 6?
        # No: 6 is above route_max_overlap, so it is left alone.
        res3 = sync_project(ls_server.url, ls_server.token, pid, opts, out_dir=tmp_path,
                            progress=False)
        assert res3.routing is not None and res3.routing.at_max == [flagged]
        assert _task(conn, flagged)["overlap"] == 6
    finally:
        conn.close()


def test_agreement_tab(ls_server: Any, ls_client: Any, annotators: list[dict],
                       make_project: Callable[..., int], tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in annotators[:3]]))
    conn = Connection(ls_server.url, ls_server.token)
    try:
        res = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                           progress=False)
        assert res.views is not None and "agreement" in res.views.created
        res2 = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                            progress=False)
        assert res2.views is not None and not res2.views.created and not res2.views.updated
        tabs = [v for v in conn.list_views(pid) if v["data"].get("title") == AGREEMENT_TITLE]
        assert len(tabs) == 1 and tabs[0]["data"][MARKER] == {"view": "agreement"}
        data = tabs[0]["data"]
        ours = agreement_columns(list(res.report.controls))
        assert set(ours) >= {"tasks:data.agreement_sigma", "tasks:data.agreement_alpha",
                             "tasks:data.agreement_flag", "tasks:data.agreement_n_annotators",
                             "tasks:data.agreement_sigma__sentiment"}
        hidden = data["hiddenColumns"]
        assert hidden["explore"] and not set(ours) & (set(hidden["explore"]) | set(hidden["labeling"]))
        assert all(data["columnsDisplayType"][c] == "Number" for c in ours)
        assert data["ordering"] == ["tasks:data.agreement_sigma"]

        # every task, worst σ first (numerically; tasks without σ last)
        report = res2.report.to_dict()
        order = conn.view_task_ids(pid, int(tabs[0]["id"]))
        assert len(order) == len(set(order)) == 12
        # the Data Manager orders by the pushed value (3 decimals), not full precision
        sigmas = [None if (s := report["tasks"].get(str(t), {}).get("sigma")) is None
                  else round(s, 3) for t in order]
        known = [s for s in sigmas if s is not None]
        assert known and known[0] == min(known)
        assert known == sorted(known) and sigmas[:len(known)] == known

        # a user hides one of our columns and another one: ours comes back, theirs stays
        conn.update_view(int(tabs[0]["id"]), pid, {
            **data, "hiddenColumns": {"explore": hidden["explore"] + [
                "tasks:data.agreement_alpha", "tasks:data.ext_id"],
                "labeling": hidden["labeling"]}})
        res3 = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                            progress=False)
        assert res3.views is not None and res3.views.updated == ["agreement"]
        data = next(v for v in conn.list_views(pid) if v["id"] == tabs[0]["id"])["data"]
        assert "tasks:data.ext_id" in data["hiddenColumns"]["explore"]
        assert "tasks:data.agreement_alpha" not in data["hiddenColumns"]["explore"]
    finally:
        conn.close()


class _FakeConn:
    """Just the two calls routing makes, over a dict of tasks (unit tests, no server)."""

    def __init__(self, tasks: dict[int, dict[str, Any]]) -> None:
        self.tasks, self.writes = tasks, []

    def get_task(self, tid: int) -> dict[str, Any]:
        from ls_agreement.plugin.errors import NotFound
        if tid not in self.tasks:
            raise NotFound(f"task {tid}")
        return self.tasks[tid]

    def set_task_overlap(self, tid: int, *, overlap: int | None, is_labeled: bool | None,
                         meta: dict[str, Any]) -> None:
        self.writes.append((tid, overlap, is_labeled))
        t = self.tasks[tid]
        t["meta"] = meta
        if overlap is not None:
            t["overlap"], t["is_labeled"] = overlap, is_labeled


def test_route_task_ids_decisions() -> None:
    """The live path (task ids): raise, leave a user's change, cap, vanish, undo."""
    from ls_agreement.plugin.report.model import Report, TaskEntry
    from ls_agreement.plugin.routing import route_flagged
    from ls_agreement.plugin.settings import SyncOptions

    ann = [{"completed_by": u, "result": [], "was_cancelled": False} for u in (1, 2, 3)]
    skip = {"completed_by": {"id": 4}, "result": [], "was_cancelled": True}
    rec = {"original": 3, "raised_to": 4, "at": 0}
    tasks = {
        1: {"id": 1, "overlap": 3, "meta": {"mine": 1}, "annotations": ann + [skip]},
        2: {"id": 2, "overlap": 6, "meta": {ROUTING_KEY: rec}, "annotations": ann},  # user's 6
        3: {"id": 3, "overlap": 5, "meta": {}, "annotations": ann},                   # at max
        5: {"id": 5, "overlap": 4, "meta": {ROUTING_KEY: rec}, "annotations": ann},   # unflagged
    }
    report = Report()
    report.tasks = {str(t): TaskEntry(flag=True) for t in (1, 2, 3, 4)}
    conn = _FakeConn(tasks)
    out = route_flagged(conn, 1, report, SyncOptions(route_flagged=True, route_max_overlap=5),
                        task_ids=[1, 2, 3, 4, 5])
    assert (out.raised, out.released, out.at_max, out.vanished, out.restored) == \
        ([1], [2], [3], [4], [5])
    assert tasks[1]["overlap"] == 4 and tasks[1]["is_labeled"] is False  # the skip does not count
    assert tasks[1]["meta"]["mine"] == 1 and tasks[1]["meta"][ROUTING_KEY]["original"] == 3
    assert tasks[2]["overlap"] == 6 and tasks[2]["meta"][ROUTING_KEY]["released"] is True
    assert tasks[5]["overlap"] == 3 and tasks[5]["is_labeled"] is True
    assert ROUTING_KEY not in tasks[5]["meta"]
    # again: nothing moves (a raised task is raised once; released stays hands-off)
    conn.writes.clear()
    out = route_flagged(conn, 1, report, SyncOptions(route_flagged=True, route_max_overlap=5),
                        task_ids=[1, 2, 3, 5])
    assert not conn.writes and not out.changed
