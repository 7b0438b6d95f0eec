"""``ls-agreement sync`` round trips against a real Label Studio (fixtures in conftest.py).

What is checked against the server itself (fresh reads, Data Manager task lists), not
against our own bookkeeping: the pushed values, the user's keys, the views' task lists,
and — for "a second sync writes nothing" — the tasks' ``updated_at`` stamps.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.cli import main as cli_main
from ls_agreement.plugin.settings import PluginSettings, SyncOptions
from ls_agreement.plugin.sync import sync_project

CONFIG = """<View>
  <Text name="text" value="$text"/>
  <Choices name="sentiment" toName="text" choice="single">
    <Choice value="Positive"/><Choice value="Negative"/><Choice value="Neutral"/>
  </Choices>
  <Choices name="topics" toName="text" choice="multiple">
    <Choice value="Sports"/><Choice value="Politics"/><Choice value="Tech"/>
  </Choices>
  <Rating name="quality" toName="text" maxRating="5"/>
</View>"""

SENT = ["Positive", "Negative", "Neutral"]
TOPICS = [["Sports"], ["Politics"], ["Tech"], ["Sports", "Tech"]]


def _result(sent: str, topics: list[str], rating: int) -> list[dict[str, Any]]:
    return [
        {"from_name": "sentiment", "to_name": "text", "type": "choices",
         "value": {"choices": [sent]}},
        {"from_name": "topics", "to_name": "text", "type": "choices",
         "value": {"choices": topics}},
        {"from_name": "quality", "to_name": "text", "type": "rating",
         "value": {"rating": rating}},
    ]


def differs(i: int) -> bool:
    """The tasks of :func:`make_tasks` where everyone differs: a minority, as in real
    projects (where half the project disagrees, disagreement is ordinary and the flag rule
    of README "How tasks are flagged" rightly flags none of it)."""
    return i % 10 == 5


def make_tasks(user_ids: list[int], n: int = 12) -> list[dict[str, Any]]:
    """``n`` tasks, 3 annotators each: tasks where :func:`differs` disagree widely on every
    control, the others agree fully (so some tasks are flagged and some are not), plus a
    user key and user meta. A 4th user id, if given, also annotates (like the first) the
    tasks with ``i % 4 == 1``."""
    tasks = []
    for i in range(n):
        anns = []
        who = list(enumerate(user_ids[:3]))
        if len(user_ids) > 3 and i % 4 == 1:
            who.append((0, user_ids[3]))
        for k, uid in who:
            if not differs(i):                   # everyone agrees
                res = _result(SENT[i % 3], TOPICS[i % 4], 1 + i % 5)
            else:                                # everyone differs
                res = _result(SENT[k], TOPICS[k], 1 + 2 * k)
            anns.append({"completed_by": uid, "result": res, "ground_truth": False})
        tasks.append({"data": {"text": f"text {i}", "ext_id": f"doc-{i}",
                               "agreement_mine": i},      # a user key with our prefix
                      "meta": {"source": "test", "batch": i // 4},
                      "annotations": anns})
    return tasks


def settings(**sync: Any) -> PluginSettings:
    return PluginSettings(report=ReportSettings(bootstrap=50),
                          sync=SyncOptions(**{"attempts": 3, "backoff": 0.05, "meta": True, **sync}))


def export(client: Any, pid: int) -> dict[int, dict[str, Any]]:
    # Label Studio has answered an export with an empty body while tasks were being
    # written (the plugin's own reader retries it the same way)
    for attempt in range(3):
        body = b"".join(client.projects.exports.download_sync(pid, export_type="JSON", download_all_tasks=True))
        if body.strip() or attempt == 2:
            return {int(t["id"]): t for t in json.loads(body)}
        time.sleep(1.0)
    raise AssertionError("unreachable")


@pytest.fixture
def users(annotators: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return annotators[:3]


def test_round_trip_views_and_idempotence(ls_server: Any, ls_client: Any,
                                          annotators: list[dict],
                                          make_project: Callable[..., int],
                                          tmp_path: Path) -> None:
    users = annotators[:4]
    pid = make_project(CONFIG, make_tasks([u["id"] for u in users], n=24))
    res = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                       progress=False)
    report = res.report.to_dict()  # the typed report, as its JSON contract
    assert set(report["controls"]) == {"sentiment", "topics", "quality"}
    assert res.n_tasks == 24 and res.n_written == 24 and res.calls["PATCH"] == 24
    tasks = export(ls_client, pid)
    for tid, t in tasks.items():
        d, i = t["data"], int(t["data"]["ext_id"].split("-")[1])
        rep = report["tasks"][str(tid)]
        # user keys and meta survive; our numbers are numbers
        assert d["text"] == f"text {i}" and d["agreement_mine"] == i
        assert t["meta"]["source"] == "test" and t["meta"]["batch"] == i // 4
        assert d["agreement_flag"] == int(bool(rep["flag"]))
        assert d["agreement_sigma"] == pytest.approx(rep["sigma"], abs=5e-4)  # 3 decimals
        who = [u for k, u in enumerate(users) if k < 3 or i % 4 == 1]
        assert isinstance(d["agreement_updated"], int)
        assert d["agreement_n_annotators"] == len(who)
        detail = t["meta"]["agreement"]["controls"]
        assert set(detail) == {"sentiment", "topics", "quality"}
        assert sorted(detail["sentiment"]["annotators"]) == sorted(str(u["id"]) for u in who)
        assert t["meta"]["agreement"]["annotators"][str(who[0]["id"])] == who[0]["email"]
        # per-annotator project quality on the task: the report's numbers for its annotators
        quality = t["meta"]["agreement"]["annotator_quality"]
        assert set(quality) == {str(u["id"]) for u in who}
        first = str(who[0]["id"])
        assert quality[first]["overall"]["sigma"] == pytest.approx(report["annotators"][first]["sigma"],
                                                                   abs=5e-4)
        assert set(quality[first]["controls"]["sentiment"]["co_annotators"]) >= {str(u["id"]) for u in who[1:]}
        assert "crowdtruth_wqs" in quality[first]["controls"]["sentiment"]
    # full agreement never scores below full disagreement
    agree = [t["data"]["agreement_sigma"] for t in tasks.values()
             if not differs(int(t["data"]["ext_id"][4:]))]
    differ = [t["data"]["agreement_sigma"] for t in tasks.values()
              if differs(int(t["data"]["ext_id"][4:]))]
    assert min(agree) > max(differ)
    flagged = {tid for tid, t in tasks.items() if t["data"]["agreement_flag"] == 1}
    assert flagged and len(flagged) < len(tasks)

    # views: the Data Manager's own task lists
    conn = Connection(ls_server.url, ls_server.token)
    views = {v["data"]["title"]: v for v in conn.list_views(pid)}
    low = views["Low agreement"]
    ids = conn.view_task_ids(pid, int(low["id"]))
    assert set(ids) == flagged
    sig = [tasks[i]["data"]["agreement_sigma"] for i in ids]
    assert sig == sorted(sig)                                    # worst first
    for u in users:
        v = views[f"Review: {u['email']}"]
        worked = {tid for tid, t in tasks.items()
                  if any(a["completed_by"] == u["id"] for a in t["annotations"])}
        assert set(conn.view_task_ids(pid, int(v["id"]))) == flagged & worked
    assert flagged & worked and flagged - worked           # the 4th user's queue is partial

    # second sync: nothing written, nothing duplicated, tasks untouched on the server
    res2 = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                        progress=False)
    assert res2.n_written == 0 and res2.calls.get("PATCH", 0) == 0
    assert res2.views is not None and not res2.views.created and not res2.views.updated
    after = export(ls_client, pid)
    assert {i: t["updated_at"] for i, t in after.items()} == \
        {i: t["updated_at"] for i, t in tasks.items()}
    titles = [v["data"]["title"] for v in conn.list_views(pid)]
    assert titles.count("Low agreement") == 1 and titles.count("Agreement") == 1
    assert len(titles) == 2 + len(users)

    # report files next to the run
    rows = res2.report_paths["annotators_csv"].read_text().splitlines()
    assert len(rows) == 1 + 4 * 3 + 4   # header, annotators x controls, one (project) row per annotator
    assert all(u["email"] in res2.report_paths["annotators_json"].read_text() or
               str(u["id"]) in res2.report_paths["annotators_json"].read_text() for u in users)
    conn.close()


def test_changed_annotation_repushes_only_affected(ls_server: Any, ls_client: Any,
                                                  users: list[dict],
                                                  make_project: Callable[..., int],
                                                  tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in users]))
    first = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                         progress=False)
    before = export(ls_client, pid)
    target = min(i for i, t in before.items() if differs(int(t["data"]["ext_id"][4:])))
    ann = before[target]["annotations"][0]
    ls_client.annotations.update(id=ann["id"], result=before[target]["annotations"][1]["result"])
    res = sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path,
                       progress=False)
    assert target in res.written
    after = export(ls_client, pid)
    for tid in res.written:
        if tid == target:
            continue
        # any other task written must have had its numbers move (project-level d* shift)
        old = {k: v for k, v in before[tid]["data"].items() if k != "agreement_updated"}
        new = {k: v for k, v in after[tid]["data"].items() if k != "agreement_updated"}
        assert old != new, f"task {tid} re-pushed without a change"
    untouched = set(before) - set(res.written)
    assert all(after[i]["updated_at"] == before[i]["updated_at"] for i in untouched)
    assert res.n_written < first.n_written


def test_user_edit_during_sync_is_merged(ls_server: Any, ls_client: Any, users: list[dict],
                                        make_project: Callable[..., int],
                                        tmp_path: Path) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in users], n=4))
    ids = sorted(export(ls_client, pid))
    last = ids[-1]

    def edit_once(done: int, total: int) -> None:
        if done == 1:   # between the sync's first read and its write of `last`
            t = ls_client.tasks.get(id=str(last))
            ls_client.tasks.update(id=str(last), data={**t.data, "reviewer_note": "edited"})

    res = sync_project(ls_server.url, ls_server.token, pid, settings(workers=1, chunk=1),
                       out_dir=tmp_path, progress=False, on_progress=edit_once)
    assert last in res.merged_fresh
    d = export(ls_client, pid)[last]["data"]
    assert d["reviewer_note"] == "edited" and "agreement_sigma" in d and d["ext_id"]


def test_legacy_token_and_pat_via_cli(ls_server: Any, ls_pat: str, users: list[dict],
                                      make_project: Callable[..., int], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    pid = make_project(CONFIG, make_tasks([u["id"] for u in users], n=4))
    s = tmp_path / "s.toml"
    s.write_text("[report]\nbootstrap = 20\n[report.distances]\nquality = \"interval\"\n")
    for token, written in ((ls_pat, "wrote 4 task"), (ls_server.token, "wrote 0 task")):
        assert Connection(ls_server.url, token).kind == ("pat" if token == ls_pat else "legacy")
        rc = cli_main(["sync", "--url", ls_server.url, "--token", token, "--project",
                       str(pid), "--settings", str(s), "--out", str(tmp_path / "out"),
                       "--quiet"])
        out = capsys.readouterr().out
        assert rc == 0 and written in out, out
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["controls"]["quality"]["distance"] == "interval"


def test_sync_reads_the_export_a_task_at_a_time(ls_server: Any, annotators: list[dict],
                                                 make_project: Callable[..., int], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: the export is spooled to a file and read back task by task, never parsed
    whole (``export_tasks`` is never called), also by the routing and the consensus
    predictions, which read it again (the push re-reads only its chunks of tasks); the file
    is gone after the sync, also after a failure."""
    import tempfile

    real = Connection.export_tasks

    def export_tasks(self: Connection, project_id: int, ids: Any = None) -> Any:
        assert ids is not None, "the export was read whole"     # the push re-reads its chunks
        return real(self, project_id, ids)

    monkeypatch.setattr(Connection, "export_tasks", export_tasks)
    users = annotators[:4]
    pid = make_project(CONFIG, make_tasks([u["id"] for u in users], n=24))
    spooled = lambda: list(Path(tempfile.gettempdir()).glob(f"ls-agreement-export-{pid}-*"))  # noqa: E731
    res = sync_project(ls_server.url, ls_server.token, pid, settings(route_flagged=True, consensus_prediction=True),
                       out_dir=tmp_path, progress=False)
    assert res.n_tasks == 24 and res.n_written == 24
    assert res.routing is not None and res.routing.raised
    assert res.consensus is not None and len(res.consensus.now) == 24
    assert not spooled()
    monkeypatch.setattr("ls_agreement.plugin.sync.push", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("cut")))
    with pytest.raises(RuntimeError):
        sync_project(ls_server.url, ls_server.token, pid, settings(), out_dir=tmp_path, progress=False)
    assert not spooled()
