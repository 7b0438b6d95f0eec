"""Push-back on a Label Studio that runs on PostgreSQL (fixture ``postgres_label_studio``).

Label Studio's bulk action ``add_data_field`` takes another path on PostgreSQL: one
``UPDATE task SET data = jsonb_set(data, '{key}', value)`` for a "Number" value, where
SQLite loads the tasks and saves them back from Python; and ``task.data``/``task.meta``
are ``jsonb`` there (keys reordered, numbers kept as ``numeric`` text). Everything checked
here is read back from the servers (exports, Data Manager actions, the database itself):
the bulk path leaves what per-task ``PATCH`` leaves and what the report computed from
scratch says, a demo-like project gets the same values on PostgreSQL as on the SQLite
server, and an incremental sync ends where a sync from scratch does.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.client import Connection
from tests.local_postgres import LocalPostgres, LocalPostgresError, PostgresLabelStudio, find_bin_dir
from ls_agreement.plugin.push import BULK_ACTION, push
from ls_agreement.plugin.pushback import (META_KEY, UPDATED_KEY, Desired, Write, current_of,
                                          needs_write)
from ls_agreement.demo.local_server import LocalLabelStudio
from ls_agreement.plugin.sync import sync_project

from .conftest import ANNOTATOR_EMAILS, create_project
from .test_bulk_push import check_bulk_and_per_task_write_the_same
from .test_sync import CONFIG, export, make_tasks, settings

def _sync(server: LocalLabelStudio, pid: int, out: Path, **opts: Any) -> Any:
    return sync_project(server.url, server.token, pid, settings(**opts), out_dir=out,
                        progress=False)


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON text: ``1`` and ``1.0`` differ (Python's ``==`` would not see it)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two JSON values first differ, for the assertion's message."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'second' if k not in a else 'first'}"
            if not _same_json(a[k], b[k]):
                return _first_difference(a[k], b[k], f"{path}/{k}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            if not _same_json(x, y):
                return _first_difference(x, y, f"{path}[{k}]")
    return f"{path}: {json.dumps(a, sort_keys=True)[:300]} != {json.dumps(b, sort_keys=True)[:300]}"


def _ours(task: dict[str, Any], key: str) -> dict[str, Any]:
    """A task's values from us and the user's keys, keyed for comparison across projects:
    timestamps and the annotations' fingerprint dropped (ids differ between projects)."""
    data = {k: v for k, v in task["data"].items() if k != UPDATED_KEY}
    meta = json.loads(json.dumps(task["meta"]))
    if isinstance(meta.get(META_KEY), dict):
        meta[META_KEY].pop("updated", None)
        meta[META_KEY].pop("fingerprint", None)
        for name, ctl in (meta[META_KEY].get("controls") or {}).items():
            if isinstance(ctl, dict) and ctl.get("consensus_by") is not None:
                ctl["consensus_by"] = _answer(task, ctl["consensus_by"], name)
    return {"key": task["data"][key], "data": data, "meta": meta}


def _answer(task: dict[str, Any], user: str, control: str) -> list[Any]:
    """The answer of ``user`` to ``control`` on ``task``: who gave the consensus is compared
    by what they answered. Annotators with equal answers tie, and a tie goes to the first
    annotation in the export, whose order neither database guarantees."""
    def by(a: dict[str, Any]) -> str:
        who = a.get("completed_by")
        return str(who.get("id") if isinstance(who, dict) else who)

    answer = sorted(json.dumps({k: r.get(k) for k in ("type", "value")}, sort_keys=True)
                    for a in task.get("annotations", []) if by(a) == str(user)
                    for r in a.get("result", []) if r.get("from_name") == control)
    assert answer, (task["id"], user, control)   # the consensus is someone's answer
    return answer


def _by(tasks: dict[int, dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    return {t["data"][key]: _ours(t, key) for t in tasks.values()}


def _users_to_emails(obj: Any, emails: dict[str, str]) -> Any:
    """Replace user ids (dict keys, list items: strings in the meta payload) by emails, so
    values from two servers compare; lists of users sorted (their order follows the
    annotations' order in the export, which neither database guarantees)."""
    if isinstance(obj, dict):
        return {emails.get(k, k): _users_to_emails(v, emails) for k, v in obj.items()}
    if isinstance(obj, list):
        out = [emails.get(v, v) if isinstance(v, str) else _users_to_emails(v, emails)
               for v in obj]
        return sorted(out) if out and all(isinstance(v, str) and v in emails.values()
                                          for v in out) else out
    return obj


# -- fixtures --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pg_server(postgres_label_studio: LocalLabelStudio) -> LocalLabelStudio:
    return postgres_label_studio


@pytest.fixture(scope="module")
def pg_client(pg_server: LocalLabelStudio) -> Any:
    return pg_server.client()


@pytest.fixture(scope="module")
def pg_annotators(pg_server: LocalLabelStudio) -> list[int]:
    return [pg_server.create_user(email, first_name=f"Annotator{i}", last_name="Test")
            for i, email in enumerate(ANNOTATOR_EMAILS, start=1)]


@pytest.fixture
def pg_project(pg_client: Any) -> Iterator[Callable[..., int]]:
    """``pg_project(config, tasks) -> id`` on the PostgreSQL server, deleted afterwards."""
    created: list[int] = []

    def factory(config_xml: str, tasks: list[dict[str, Any]]) -> int:
        pid = create_project(pg_client, config_xml, tasks, f"pg test {len(created) + 1}")
        created.append(pid)
        return pid

    yield factory
    for pid in created:
        try:
            pg_client.projects.delete(id=pid)
        except Exception:  # noqa: BLE001 - cleanup must not mask the test's own failure
            pass


# -- the server ------------------------------------------------------------------------
@pytest.mark.slow
def test_server_runs_on_postgres_and_lists_the_action(pg_server: LocalLabelStudio,
                                                      pg_annotators: list[int],
                                                      pg_project: Callable[..., int]) -> None:
    pg = pg_server.postgres
    assert pg is not None and pg_server.database
    pid = pg_project(CONFIG, make_tasks(pg_annotators[:3], n=4))
    # The tasks are rows of the PostgreSQL database, and there is no SQLite one.
    rows = pg.psql(f"SELECT count(*) FROM task WHERE project_id = {pid}", pg_server.database)
    assert rows == "4"
    assert not (pg_server.data_dir / "label_studio.sqlite3").exists()
    env = pg_server.environment()
    assert env["DJANGO_DB"] == "default" and env["POSTGRE_PORT"] == str(pg.port)
    conn = Connection(pg_server.url, pg_server.token)
    try:
        assert BULK_ACTION in conn.dm_actions(pid)
    finally:
        conn.close()
    # users made through the API have their token in PostgreSQL (read by user_token)
    token = pg_server.user_token(pg_annotators[0])
    me = Connection(pg_server.url, token)
    try:
        assert int(me.whoami()["id"]) == pg_annotators[0]
    finally:
        me.close()


# -- bulk on PostgreSQL ----------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("meta", [False, True], ids=["data-only", "with-meta"])
def test_bulk_and_per_task_write_the_same_on_postgres(pg_server: LocalLabelStudio, pg_client: Any,
                                                      pg_annotators: list[int],
                                                      pg_project: Callable[..., int],
                                                      tmp_path: Path, meta: bool) -> None:
    check_bulk_and_per_task_write_the_same(pg_server, pg_client, pg_project, pg_annotators[:4],
                                           tmp_path, meta)


@pytest.mark.slow
def test_bulk_values_keep_their_json_types_on_postgres(pg_server: LocalLabelStudio,
                                                       pg_client: Any,
                                                       pg_project: Callable[..., int]) -> None:
    """Floats go through ``jsonb_set`` ("Number"), ints and null through the Expression
    path: read back, each keeps its JSON type and value. PostgreSQL's ``numeric`` has no
    negative zero (``-0.0`` comes back ``0.0``): equal for the sync, so no rewrite loop."""
    pid = pg_project(CONFIG, [{"text": f"t{i}", "agreement_mine": i} for i in range(4)])
    tasks = export(pg_client, pid)
    ids = sorted(tasks)
    want = Desired(data={"agreement_sigma": 0.30000000000000004, "agreement_alpha": None,
                         "agreement_flag": 1, "agreement_n_annotators": 3,
                         "agreement_sigma__a": 1.0, "agreement_sigma__b": 1e-07,
                         "agreement_sigma__c": -0.25, "agreement_sigma__d": -0.0},
                   meta=None)
    writes = [Write(t, "fp", want, dict(tasks[t]["data"]), dict(tasks[t]["meta"])) for t in ids]
    conn = Connection(pg_server.url, pg_server.token)
    try:
        out = push(conn, pid, writes)
    finally:
        conn.close()
    assert out.mode == "bulk" and sorted(out.written) == ids and not out.patches
    after = export(pg_client, pid)
    expect = {**want.data, "agreement_sigma__d": 0.0}
    for tid in ids:
        d = after[tid]["data"]
        assert _same_json({k: d[k] for k in want.data}, expect)
        assert type(d[UPDATED_KEY]) is int
        assert d["agreement_mine"] == tasks[tid]["data"]["agreement_mine"]
        assert not needs_write(want, current_of(after[tid]))


# -- same values as on SQLite, incremental = from scratch --------------------------------
def _demo_project(server: LocalLabelStudio, n_tasks: int) -> tuple[int, dict[str, str]]:
    """The demo's sample project (seeded, ``n_tasks`` tasks) on ``server``; returns its id
    and the server's user id → email of the demo annotators."""
    ids = {a.email: server.create_user(a.email, a.first_name, a.last_name)
           for a in demo_data.ANNOTATORS}
    sample = demo_data.generate(ids, n_tasks=n_tasks)
    client = server.client()
    project = client.projects.create(title="ls-agreement pg vs sqlite", label_config=sample.config)
    for start in range(0, len(sample.tasks), 20):   # the demo imports in chunks too (data URIs)
        client.projects.import_tasks(id=project.id, request=sample.tasks[start:start + 20])
    return int(project.id), {str(uid): email for email, uid in ids.items()}


@pytest.mark.slow
def test_demo_project_gets_the_same_values_on_postgres_as_on_sqlite(
        ls_server: LocalLabelStudio, pg_server: LocalLabelStudio, tmp_path: Path) -> None:
    """First a data-only sync (all bulk on PostgreSQL; SQLite's own bulk path), then one
    with the meta detail (PATCH): after each, both servers carry the same values — task
    data and meta, with user ids replaced by emails (ids differ between servers)."""
    projects = {name: (server, *_demo_project(server, 30))
                for name, server in (("sqlite", ls_server), ("postgres", pg_server))}
    try:
        for meta in (False, True):
            seen = {}
            for name, (server, pid, emails) in projects.items():
                res = _sync(server, pid, tmp_path / name, meta=meta)
                assert res.n_written == 30
                if not meta:
                    assert res.push is not None and res.push.mode == "bulk", name
                tasks = export(server.client(), pid)
                seen[name] = _users_to_emails(_by(tasks, "sample_id"), emails)
                # the report of this sync says what landed (task sigma, 3 decimals)
                report = res.report.to_dict()
                for tid, t in tasks.items():
                    assert t["data"]["agreement_sigma"] == \
                        pytest.approx(report["tasks"][str(tid)]["sigma"], abs=5e-4)
                    assert (META_KEY in t["meta"]) is meta
            assert len(seen["postgres"]) == 30
            assert _same_json(seen["postgres"], seen["sqlite"]), \
                _first_difference(seen["postgres"], seen["sqlite"])
    finally:
        for server, pid, _ in projects.values():
            server.client().projects.delete(id=pid)


@pytest.mark.slow
def test_incremental_sync_ends_where_a_sync_from_scratch_does(pg_server: LocalLabelStudio,
                                                             pg_client: Any,
                                                             pg_annotators: list[int],
                                                             pg_project: Callable[..., int],
                                                             tmp_path: Path) -> None:
    ids = pg_annotators[:4]
    inc_pid = pg_project(CONFIG, make_tasks(ids))
    first = _sync(pg_server, inc_pid, tmp_path / "inc", meta=False)
    assert first.n_written == 12 and first.push is not None and first.push.mode == "bulk"

    # two annotations change; the same project made afresh with the changed annotations
    tasks = export(pg_client, inc_pid)
    changed: dict[str, list[dict[str, Any]]] = {}
    for ext in ("doc-5", "doc-4"):   # one task where all differ, one where all agree
        tid = next(i for i, t in tasks.items() if t["data"]["ext_id"] == ext)
        anns = tasks[tid]["annotations"]
        pg_client.annotations.update(id=anns[0]["id"], result=anns[1]["result"])
        changed[ext] = anns[1]["result"]
    fresh_tasks = make_tasks(ids)
    for t in fresh_tasks:
        if t["data"]["ext_id"] in changed:
            t["annotations"][0]["result"] = changed[t["data"]["ext_id"]]
    scratch_pid = pg_project(CONFIG, fresh_tasks)

    inc = _sync(pg_server, inc_pid, tmp_path / "inc", meta=False)
    scratch = _sync(pg_server, scratch_pid, tmp_path / "scratch", meta=False)
    assert 1 <= inc.n_written < 12 and scratch.n_written == 12
    assert inc.push is not None and inc.push.mode == "bulk" and not inc.calls.get("PATCH")
    a, b = export(pg_client, inc_pid), export(pg_client, scratch_pid)
    assert _same_json(_by(a, "ext_id"), _by(b, "ext_id"))
    # the changed tasks did move (the comparison above is not of two untouched projects)
    assert any(_by(tasks, "ext_id")[e]["data"] != _by(a, "ext_id")[e]["data"] for e in changed)

    # from scratch on the same project (no state): nothing on the server differs
    again = _sync(pg_server, inc_pid, tmp_path / "no-state", meta=False)
    assert again.n_written == 0 and not again.calls.get("PATCH") and not again.calls.get("POST")


# -- without a server ------------------------------------------------------------------
def test_environment_points_label_studio_at_postgres_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTGRE_HOST", "db.elsewhere")       # stray ones never reach it
    monkeypatch.setenv("DJANGO_DB", "default")
    plain = LocalLabelStudio(tmp_path / "a").environment()
    assert "DJANGO_DB" not in plain and not any(k.startswith("POSTGRE_") for k in plain)
    pg = LocalPostgres(tmp_path / "pg", port=5999, user="ls_user", database="ls_db")
    on_pg = PostgresLabelStudio(tmp_path / "b", postgres=pg, database="other").environment()
    assert on_pg["DJANGO_DB"] == "default"
    assert {k: on_pg[k] for k in ("POSTGRE_NAME", "POSTGRE_USER", "POSTGRE_HOST", "POSTGRE_PORT")} \
        == {"POSTGRE_NAME": "other", "POSTGRE_USER": "ls_user", "POSTGRE_HOST": "127.0.0.1",
            "POSTGRE_PORT": "5999"}
    assert on_pg["POSTGRE_PASSWORD"] == pg.password and len(pg.password) >= 20
    assert pg.dsn == f"postgresql://ls_user:{pg.password}@127.0.0.1:5999/ls_db"


def test_missing_binaries_say_what_to_install(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LS_AGREEMENT_PG_BIN", str(tmp_path))
    with pytest.raises(LocalPostgresError, match="apt-get install -y postgresql"):
        find_bin_dir()
    with pytest.raises(LocalPostgresError, match="not found"):
        LocalPostgres(tmp_path / "pg").start()
    assert not (tmp_path / "pg" / "pgdata").exists()          # nothing half-made
    with pytest.raises(ValueError, match="identifier"):
        LocalPostgres(tmp_path / "pg", database="robert'); DROP")
