"""Bulk push-back (Data Manager action ``add_data_field``) and its per-task fallback.

Against real Label Studio servers (fixtures in conftest.py): the session server runs with
``ff_back_experimental_features`` on (it lists the action); a second one, started here,
runs with it off. What is compared is read back from the servers' own exports: both paths
leave the same ``task.data`` — same values *and* JSON types — and ``task.meta``; a second
sync writes nothing; the user's keys survive. The planning and concurrency logic is also
checked without a server.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.push import BULK_ACTION, _plan, _Tuner, push
from ls_agreement.plugin.pushback import META_KEY, UPDATED_KEY, Desired, Write, current_of, needs_write
from ls_agreement.demo.local_server import LocalLabelStudio
from ls_agreement.plugin.settings import PluginSettings, ReportSettings, SyncOptions, settings_from_mapping
from ls_agreement.plugin.sync import sync_project

from .conftest import create_project
from .test_sync import CONFIG, export, make_tasks, settings


def _sync(server: Any, pid: int, out: Path, **opts: Any) -> Any:
    return sync_project(server.url, server.token, pid, settings(**opts), out_dir=out,
                        progress=False)


def _by_ext(tasks: dict[int, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Tasks keyed by their user id (``ext_id``), our timestamps left out, and the
    annotations' fingerprint (annotation ids differ between two projects)."""
    out = {}
    for t in tasks.values():
        data = {k: v for k, v in t["data"].items() if k != UPDATED_KEY}
        meta = json.loads(json.dumps(t["meta"]))
        if isinstance(meta.get(META_KEY), dict):
            meta[META_KEY].pop("updated", None)
            meta[META_KEY].pop("fingerprint", None)
        out[t["data"]["ext_id"]] = {"data": data, "meta": meta}
    return out


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text: ``1`` and ``1.0`` differ (Python's ``==`` would not see it)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# -- against the servers ---------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_server(ls_server: LocalLabelStudio,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLabelStudio]:
    """A second server with the experimental features off (depends on ``ls_server`` so the
    ``server`` marker and the skip of LS_AGREEMENT_NO_SERVER apply)."""
    server = LocalLabelStudio(tmp_path_factory.mktemp("label-studio-plain"), port=0,
                              experimental=False)
    server.start(timeout=300)
    try:
        yield server
    finally:
        server.stop()


def test_action_listed_only_with_the_flag(ls_server: LocalLabelStudio,
                                          plain_server: LocalLabelStudio,
                                          annotators: list[dict[str, Any]],
                                          make_project: Callable[..., int],
                                          tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in annotators[:3]], n=4))
    with_flag = Connection(ls_server.url, ls_server.token)
    assert BULK_ACTION in with_flag.dm_actions(pid)
    with_flag.close()

    # The plain server: same project, no action listed → per-task PATCH, same result.
    client = plain_server.client()
    users = [plain_server.create_user(u["email"]) for u in annotators[:3]]
    plain_pid = create_project(client, CONFIG, make_tasks(users, n=4))
    try:
        plain = Connection(plain_server.url, plain_server.token)
        assert BULK_ACTION not in plain.dm_actions(plain_pid)
        plain.close()
        res = _sync(plain_server, plain_pid, tmp_path / "plain", meta=False)
        assert res.push is not None and res.push.mode == "patch"
        assert res.n_written == 4 and res.calls["PATCH"] == 4
        again = _sync(plain_server, plain_pid, tmp_path / "plain", meta=False)
        assert again.n_written == 0 and not again.calls.get("PATCH")
    finally:
        client.projects.delete(id=plain_pid)


def check_bulk_and_per_task_write_the_same(server: LocalLabelStudio, client: Any,
                                           make: Callable[..., int], ids: list[int],
                                           tmp_path: Path, meta: bool) -> None:
    """Two copies of one project, one synced through the bulk action, one per task: the
    same values and JSON types, both what the report says, user keys kept; a second sync
    writes nothing; after one edit both write the same few tasks. Run on SQLite and on
    PostgreSQL (test_postgres_push.py), whose bulk action takes another path."""
    bulk_pid = make(CONFIG, make_tasks(ids))
    patch_pid = make(CONFIG, make_tasks(ids))
    bulk = _sync(server, bulk_pid, tmp_path / "b", meta=meta)
    per_task = _sync(server, patch_pid, tmp_path / "p", meta=meta, bulk=False)
    assert bulk.n_written == per_task.n_written == 12
    assert per_task.push is not None and per_task.push.mode == "patch"
    assert per_task.calls["PATCH"] == 12
    if not meta:
        # data keys only: the whole first sync is a handful of bulk requests, no PATCH
        assert bulk.push is not None and bulk.push.mode == "bulk"
        assert not bulk.calls.get("PATCH") and bulk.push.bulk_requests >= 5
    a, b = export(client, bulk_pid), export(client, patch_pid)
    assert _same_json(_by_ext(a), _by_ext(b))
    report = bulk.report.to_dict()     # ... and both are what the report says (3 decimals)
    for tid, t in a.items():
        d, i = t["data"], int(t["data"]["ext_id"].split("-")[1])
        rep = report["tasks"][str(tid)]
        assert d["agreement_sigma"] == pytest.approx(rep["sigma"], abs=5e-4)
        assert d["agreement_flag"] == int(bool(rep["flag"]))
        assert d["text"] == f"text {i}" and d["agreement_mine"] == i     # user keys survive
        assert t["meta"]["source"] == "test" and t["meta"]["batch"] == i // 4
        assert type(d[UPDATED_KEY]) is int and type(d["agreement_flag"]) is int
        assert type(d["agreement_n_annotators"]) is int
        assert type(d["agreement_sigma"]) is float
        assert (META_KEY in t["meta"]) is meta

    # a second sync with nothing changed writes nothing, on either path
    for pid, out, opts in ((bulk_pid, "b", {}), (patch_pid, "p", {"bulk": False})):
        before = export(client, pid)
        res = _sync(server, pid, tmp_path / out, meta=meta, **opts)
        assert res.n_written == 0 and not res.calls.get("PATCH") and not res.calls.get("POST")
        after = export(client, pid)
        assert {i: t["updated_at"] for i, t in after.items()} == \
            {i: t["updated_at"] for i, t in before.items()}

    # one annotation changes on both: again the same values, and only moved tasks written
    for pid in (bulk_pid, patch_pid):
        tasks = export(client, pid)
        target = min(i for i, t in tasks.items() if t["data"]["ext_id"] == "doc-5")  # a task where all differ
        ann = tasks[target]["annotations"][0]
        client.annotations.update(id=ann["id"], result=tasks[target]["annotations"][1]["result"])
    r1 = _sync(server, bulk_pid, tmp_path / "b", meta=meta)
    r2 = _sync(server, patch_pid, tmp_path / "p", meta=meta, bulk=False)
    assert 1 <= r1.n_written < 12 and r1.n_written == r2.n_written
    assert _same_json(_by_ext(export(client, bulk_pid)), _by_ext(export(client, patch_pid)))


@pytest.mark.parametrize("meta", [False, True], ids=["data-only", "with-meta"])
def test_bulk_and_per_task_write_the_same(ls_server: LocalLabelStudio, ls_client: Any,
                                          annotators: list[dict[str, Any]],
                                          make_project: Callable[..., int],
                                          tmp_path: Path, meta: bool) -> None:
    check_bulk_and_per_task_write_the_same(ls_server, ls_client, make_project,
                                           [u["id"] for u in annotators[:4]], tmp_path, meta)


def test_meta_switched_off_removes_the_detail(ls_server: LocalLabelStudio, ls_client: Any,
                                             annotators: list[dict[str, Any]],
                                             make_project: Callable[..., int],
                                             tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in annotators[:3]], n=6))
    _sync(ls_server, pid, tmp_path, meta=True)
    with_meta = export(ls_client, pid)
    assert all(META_KEY in t["meta"] for t in with_meta.values())
    res = _sync(ls_server, pid, tmp_path, meta=False)
    assert res.n_written == 6 and res.calls["PATCH"] == 6     # meta only: data unchanged
    without = export(ls_client, pid)
    for tid, t in without.items():
        assert META_KEY not in t["meta"] and t["meta"]["source"] == "test"
        assert t["data"] == with_meta[tid]["data"]          # timestamp included: not rewritten
    again = _sync(ls_server, pid, tmp_path, meta=False)
    assert again.n_written == 0 and not again.calls.get("PATCH") and not again.calls.get("POST")


def test_bulk_values_keep_their_json_types_and_skip_deleted_tasks(
        ls_server: LocalLabelStudio, ls_client: Any, make_project: Callable[..., int]) -> None:
    pid = make_project(CONFIG, [{"text": f"t{i}", "agreement_mine": i} for i in range(5)])
    tasks = export(ls_client, pid)
    ids = sorted(tasks)
    ls_client.tasks.delete(id=str(ids[-1]))              # deleted after the sync read it
    conn = Connection(ls_server.url, ls_server.token)
    want = Desired(data={"agreement_sigma": 0.667, "agreement_alpha": None,
                         "agreement_flag": 1, "agreement_n_annotators": 3}, meta=None)
    writes = [Write(t, "fp", want, dict(tasks[t]["data"]), dict(tasks[t]["meta"]))
              for t in ids]
    seen: list[int] = []
    out = push(conn, pid, writes, on_written=lambda w: seen.append(w.task_id))
    conn.close()
    assert out.mode == "bulk" and out.vanished == [ids[-1]] and not out.patches
    assert sorted(out.written) == sorted(seen) == ids[:-1]
    after = export(ls_client, pid)
    for tid in ids[:-1]:
        d = after[tid]["data"]
        assert _same_json({k: d[k] for k in want.data}, want.data)
        assert type(d[UPDATED_KEY]) is int and d["agreement_mine"] == tasks[tid]["data"]["agreement_mine"]
        assert not needs_write(want, current_of(after[tid]))


# -- without a server ------------------------------------------------------------------
def _w(data: dict[str, Any], meta: dict[str, Any] | None, want: Desired | None) -> Write:
    return Write(1, "fp", want, data, meta)


def test_plan_routes_each_task() -> None:
    want = Desired(data={"agreement_sigma": 0.5, "agreement_flag": 0}, meta=None)
    # nothing of ours yet: everything in bulk
    p = _plan(_w({"text": "x"}, {}, want), {"data": {"text": "x"}, "meta": {}})
    assert p is not None and not p.patch and p.bulk == want.data
    # only the moved key goes out; 0 and 0.0 are not the same JSON
    task = {"data": {"agreement_sigma": 0.5, "agreement_flag": 0.0}, "meta": {}}
    p = _plan(_w(task["data"], {}, want), task)
    assert p is None  # equal values: needs_write sees nothing to do
    task = {"data": {"agreement_sigma": 0.25, "agreement_flag": 0}, "meta": {}}
    p = _plan(_w(task["data"], {}, want), task)
    assert p is not None and p.bulk == {"agreement_sigma": 0.5}
    # a key of ours to remove, or a meta payload to write or remove: PATCH
    task = {"data": {"agreement_sigma": 0.5, "agreement_flag": 0,
                     "agreement_sigma__old": 0.1}, "meta": {}}
    assert _plan(_w(task["data"], {}, want), task).patch            # type: ignore[union-attr]
    with_meta = Desired(data=dict(want.data), meta={"version": 1})
    p = _plan(_w({}, {}, with_meta), {"data": {}, "meta": {}})
    assert p is not None and p.patch
    task = {"data": dict(want.data), "meta": {META_KEY: {"version": 1, "keys": list(want.data)}}}
    assert _plan(_w(task["data"], task["meta"], want), task).patch  # type: ignore[union-attr]
    # removal of everything: PATCH; a user's agreement_* key is not ours
    task = {"data": {"agreement_sigma": 0.5, "agreement_mine": 3}, "meta": {}}
    p = _plan(_w(task["data"], {}, None), task)
    assert p is not None and p.patch
    assert current_of({"data": {"agreement_mine": 3}, "meta": {}}) is None


class _FakeConn:
    patch_workers: int | None = None


def test_tuner_keeps_the_fastest_level_and_remembers_it() -> None:
    conn = _FakeConn()
    t = _Tuner(conn, 8, 500)  # type: ignore[arg-type]
    seen = []
    per_task = {1: 0.12, 2: 0.08, 4: 0.09, 8: 0.10}     # the shape measured on LS 1.23
    while t.fixed is None:
        w, n = t.next()
        assert n is not None and n >= 6
        seen.append(w)
        t.record(w, n, per_task[w] * n)
    assert seen == [1, 2, 4] and t.fixed == 2 and conn.patch_workers == 2
    assert _Tuner(conn, 8, 500).next() == (2, None)           # remembered
    assert _Tuner(_FakeConn(), 1, 500).next() == (1, None)     # a cap of 1 is a choice
    assert _Tuner(_FakeConn(), 8, 10).next() == (2, None)      # too few to measure


def test_sync_options_meta_and_bulk_keys() -> None:
    s = settings_from_mapping({"sync": {"meta": False, "bulk": False}})
    assert s.sync.meta is False and s.sync.bulk is False
    assert SyncOptions().meta is False and SyncOptions().bulk is True
    from ls_agreement.plugin.errors import BadInput
    with pytest.raises(BadInput, match="meta"):
        settings_from_mapping({"sync": {"meta": "no"}})


def test_server_environment_sets_the_flag(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ff_back_experimental_features", "false")   # a stray one is dropped
    monkeypatch.setenv("EXPERIMENTAL_FEATURES", "true")
    on = LocalLabelStudio(tmp_path / "a").environment()
    assert on["ff_back_experimental_features"] == "true" and "EXPERIMENTAL_FEATURES" not in on
    off = LocalLabelStudio(tmp_path / "b", experimental=False).environment()
    assert off["ff_back_experimental_features"] == "false"


class _RefusingConn:
    """Lists the bulk action but refuses it; PATCHes go to an in-memory task store."""

    def __init__(self, tasks: dict[int, dict[str, Any]]) -> None:
        self.tasks, self.patch_workers, self.forgot = tasks, None, False

    def has_dm_action(self, project_id: int, action: str) -> bool:
        return not self.forgot

    def forget_dm_actions(self, project_id: int) -> None:
        self.forgot = True

    def set_data_field(self, *args: Any) -> int:
        from ls_agreement.plugin.errors import RequestRejected
        raise RequestRejected("Label Studio refused setting a field: HTTP 400")

    def export_tasks(self, project_id: int, ids: list[int]) -> list[dict[str, Any]]:
        return [json.loads(json.dumps({"id": i, **self.tasks[i]})) for i in ids if i in self.tasks]

    def update_task(self, task_id: int, *, data: Any = None, meta: Any = None) -> None:
        if data is not None:
            self.tasks[task_id]["data"] = data
        if meta is not None:
            self.tasks[task_id]["meta"] = meta


def test_refused_action_falls_back_to_patch() -> None:
    tasks = {i: {"data": {"text": str(i), "agreement_mine": i}, "meta": {"m": i}} for i in (1, 2, 3)}
    conn = _RefusingConn(tasks)
    want = Desired(data={"agreement_sigma": 0.5, "agreement_flag": 1}, meta=None)
    writes = [Write(i, "fp", want, dict(t["data"]), dict(t["meta"])) for i, t in tasks.items()]
    out = push(conn, 1, writes)  # type: ignore[arg-type]
    assert conn.forgot and out.mode == "patch" and sorted(out.written) == [1, 2, 3]
    for i, t in tasks.items():
        assert t["data"]["agreement_mine"] == i and t["data"]["agreement_sigma"] == 0.5
        assert t["meta"] == {"m": i} and not needs_write(want, current_of(t))


def test_default_first_sync_is_bulk_only(ls_server: LocalLabelStudio, ls_client: Any,
                                         annotators: list[dict[str, Any]],
                                         make_project: Callable[..., int],
                                         tmp_path: Path) -> None:
    """With the default settings (no ``task.meta`` detail) and the action listed, a first
    sync writes every task without a single PATCH: a few POSTs per key, not one per task."""
    pid = make_project(CONFIG, make_tasks([u["id"] for u in annotators[:3]], n=12))
    res = sync_project(ls_server.url, ls_server.token, pid,
                       PluginSettings(report=ReportSettings(bootstrap=0)), out_dir=tmp_path,
                       progress=False)
    assert res.push is not None and res.push.mode == "bulk"
    assert res.n_written == 12 and not res.calls.get("PATCH")
    tasks = export(ls_client, pid)
    assert all(META_KEY not in t["meta"] and "agreement_sigma" in t["data"] for t in tasks.values())
    # one request per distinct (key, value) the tasks now carry, the stamp included
    ours = [k for k in tasks[min(tasks)]["data"] if k.startswith("agreement_") and k != "agreement_mine"]
    pairs = {(k, json.dumps(t["data"][k])) for t in tasks.values() for k in ours}
    assert res.push.bulk_requests == len(pairs)


def test_a_few_writes_go_by_patch_where_asked(ls_server: LocalLabelStudio, ls_client: Any,
                                              make_project: Callable[..., int]) -> None:
    """``patch_up_to``: the live path's one-task writes skip the action (one request per
    moved key) for one re-read and one PATCH; above it the same push goes in bulk."""
    pid = make_project(CONFIG, [{"text": f"t{i}"} for i in range(4)])
    tasks = export(ls_client, pid)
    ids = sorted(tasks)
    want = Desired(data={"agreement_sigma": 0.5, "agreement_alpha": 0.25,
                         "agreement_flag": 1, "agreement_n_annotators": 3}, meta=None)
    conn = Connection(ls_server.url, ls_server.token)
    try:
        one = push(conn, pid, [Write(ids[0], "fp", want, dict(tasks[ids[0]]["data"]),
                                     dict(tasks[ids[0]]["meta"]))], patch_up_to=1)
        assert one.mode == "patch" and one.written == [ids[0]] and one.bulk_requests == 0
        rest = [Write(t, "fp", want, dict(tasks[t]["data"]), dict(tasks[t]["meta"])) for t in ids[1:]]
        more = push(conn, pid, rest, patch_up_to=1)
        assert more.mode == "bulk" and sorted(more.written) == ids[1:]
    finally:
        conn.close()
    after = export(ls_client, pid)
    assert all(after[t]["data"]["agreement_sigma"] == 0.5 for t in ids)
    assert _same_json({k: v for k, v in after[ids[0]]["data"].items() if k != UPDATED_KEY},
                      {k: v for k, v in after[ids[1]]["data"].items() if k != UPDATED_KEY} | {"text": "t0"})
