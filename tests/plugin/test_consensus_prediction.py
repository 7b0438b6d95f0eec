"""The consensus answer as a Label Studio prediction (``[sync] consensus_prediction``),
against a real Label Studio: what the server holds is read back through the SDK and
compared with the annotations themselves (the answer most annotators gave on a task where
two of three agree), never with our own bookkeeping."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.consensus import MODEL_VERSION
from ls_agreement.plugin.job_backend import StoredEvent
from ls_agreement.plugin.live.project import LiveProject
from ls_agreement.plugin.settings import PluginSettings, ReportSettings, SyncOptions
from ls_agreement.plugin.state import SyncState
from ls_agreement.plugin.sync import sync_project
from tests.plugin.test_serve import CONFIG, SENT, export, result

N_TASKS = 12


def _tasks(user_ids: list[int]) -> list[dict[str, Any]]:
    """Three annotators per task: two agree on the sentiment and the rating, the third
    (a different one each time) says something else, except every fourth task where
    all three agree."""
    out = []
    for i in range(N_TASKS):
        anns = []
        for k, uid in enumerate(user_ids[:3]):
            odd = i % 4 and k == i % 3
            anns.append({"completed_by": uid, "ground_truth": False,
                         "result": result(SENT[(i + 1) % 3], 5) if odd else result(SENT[i % 3], 1 + i % 4)})
        out.append({"data": {"text": f"text {i}"}, "annotations": anns})
    return out


def _ours(client: Any, pid: int) -> dict[int, list[Any]]:
    """Our predictions per task, read back through the SDK."""
    out: dict[int, list[Any]] = {}
    for p in client.predictions.list(project=pid):
        if p.model_version == MODEL_VERSION:
            out.setdefault(int(p.task), []).append(p)
    return out


def _majority(task: dict[str, Any], control: str) -> Any:
    """The answer most annotations hold for ``control`` (their ``value`` dict)."""
    values = [json.dumps(r["value"], sort_keys=True) for a in task["annotations"] for r in a["result"]
              if r["from_name"] == control]
    return json.loads(Counter(values).most_common(1)[0][0])


def _settings(on: bool, **report: Any) -> PluginSettings:
    return PluginSettings(report=ReportSettings(bootstrap=0, **report),
                          sync=SyncOptions(views=False, consensus_prediction=on, attempts=3, backoff=0.05))


def test_sync_pushes_the_consensus_as_a_prediction_once(ls_server: Any, ls_client: Any, annotators: list[dict],
                                                        make_project: Callable[..., int], tmp_path: Path) -> None:
    pid = make_project(CONFIG, _tasks([a["id"] for a in annotators]), title="consensus prediction")
    res = sync_project(ls_server.url, ls_server.token, pid, _settings(True, include_predictions=True),
                       progress=False, out_dir=tmp_path)
    assert res.consensus is not None and len(res.consensus.created) == N_TASKS
    tasks = export(ls_client, pid)
    ours = _ours(ls_client, pid)
    assert set(ours) == set(tasks) and all(len(v) == 1 for v in ours.values())
    for tid, task in tasks.items():
        pred = ours[tid][0]
        by_control = {r["from_name"]: r["value"] for r in pred.result}
        # the consensus of each control is the answer two or three annotators gave
        assert by_control == {"sentiment": _majority(task, "sentiment"), "quality": _majority(task, "quality")}
        assert 0.0 < pred.score <= 1.0
    # unanimous tasks are surer than split ones
    unanimous = [ours[t][0].score for i, t in enumerate(sorted(tasks)) if i % 4 == 0]
    split = [ours[t][0].score for i, t in enumerate(sorted(tasks)) if i % 4]
    assert min(unanimous) > max(split)
    # our predictions are no agreement input, even with predictions read as annotators
    assert not any(a.startswith("model:") for c in res.report.controls.values() for a in c.annotators)

    again = sync_project(ls_server.url, ls_server.token, pid, _settings(True, include_predictions=True),
                         progress=False, out_dir=tmp_path)
    assert again.consensus is not None and again.consensus.unchanged == N_TASKS
    assert not (again.consensus.created or again.consensus.updated or again.consensus.deleted)
    assert again.n_written == 0
    assert {t: [p.id for p in v] for t, v in _ours(ls_client, pid).items()} == \
        {t: [p.id for p in v] for t, v in ours.items()}

    off = sync_project(ls_server.url, ls_server.token, pid, _settings(False), progress=False, out_dir=tmp_path)
    assert off.consensus is not None and len(off.consensus.deleted) == N_TASKS
    assert _ours(ls_client, pid) == {}


def test_live_event_updates_the_consensus_prediction(ls_server: Any, ls_client: Any, annotators: list[dict],
                                                     make_project: Callable[..., int], tmp_path: Path) -> None:
    users = [a["id"] for a in annotators]
    pid = make_project(CONFIG, _tasks(users), title="consensus live")
    conn = Connection(ls_server.url, ls_server.token)
    with SyncState(tmp_path / "state.sqlite") as st:
        proj = LiveProject(conn, pid, _settings(True), st, tmp_path / "out")
        proj.run([])                                            # start-up: full read, baseline, push
        tasks = export(ls_client, pid)
        tid = sorted(tasks)[0]                                  # unanimous: SENT[0]
        assert {r["from_name"]: r["value"] for r in _ours(ls_client, pid)[tid][0].result}["sentiment"] == \
            {"choices": [SENT[0]]}
        # two of its three annotators change their sentiment: the consensus moves with them
        events = []
        for k, ann in enumerate(tasks[tid]["annotations"][:2]):
            ls_client.annotations.update(id=ann["id"], result=result(SENT[2], 1))
            fresh = export(ls_client, pid)[tid]
            new = next(a for a in fresh["annotations"] if a["id"] == ann["id"])
            body = {"action": "ANNOTATION_UPDATED", "project": {"id": pid}, "annotation": {**new, "task": tid},
                    "task": {"id": tid, "data": fresh["data"]}}
            events.append(StoredEvent(k + 1, body["action"], json.dumps(body), time.time()))
        others = {t: [p.id for p in v] for t, v in _ours(ls_client, pid).items() if t != tid}
        out = proj.run(events)
        assert out.mode == "events"
        pred = _ours(ls_client, pid)[tid]
        assert len(pred) == 1
        assert {r["from_name"]: r["value"] for r in pred[0].result}["sentiment"] == {"choices": [SENT[2]]}
        # no other task's prediction was touched
        assert {t: [p.id for p in v] for t, v in _ours(ls_client, pid).items() if t != tid} == others
    conn.close()
