"""The live state's stored form (plugin/live/snapshot.py) without a server: a baseline and a
mirror come back so that every task is rescored and planned exactly as before, in blocks
that are never one value, and a state of another version, a tampered or incomplete one or
a pickle is refused before anything runs."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from ls_agreement.plugin.live.baseline import make_baseline, score_tasks
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.live import snapshot
from ls_agreement.plugin.live.snapshot import (SNAPSHOT_VERSION, SnapshotError, dump_baseline, dump_event,
                                               dump_project, dump_pushed, load_baseline, load_event,
                                               load_project, load_pushed)
from ls_agreement.plugin.job_backend import StoredEvent
from ls_agreement.plugin.pushback import Desired, desired_for
from ls_agreement.demo.data import DEMO_CONFIG
from ls_agreement.plugin.settings import ReportSettings

from .test_live_units import RATING_CONFIG, demo_tasks, rating_tasks


def _plans(base: Any, mirror: ProjectMirror) -> dict[int, Any]:
    """What every task should carry at ``base`` (the push-back values)."""
    from ls_agreement.plugin.live.baseline import apply_scores

    apply_scores(base.report, score_tasks(base, mirror, mirror.tasks))
    return {t: desired_for(base.report, t, mirror.tasks[t].fingerprint(), {}, base.quality)
            for t in mirror.tasks}


@pytest.mark.parametrize("config, tasks", [(DEMO_CONFIG, demo_tasks(60, seed=3)),
                                           (RATING_CONFIG, rating_tasks(80, seed=5))],
                         ids=["demo", "ordinal"])
def test_a_stored_baseline_rescores_every_task_as_the_original(config: str, tasks: list[dict[str, Any]]) -> None:
    mirror = ProjectMirror()
    mirror.fill(tasks)
    base = make_baseline(config, mirror, ReportSettings(bootstrap=20, seed=2))
    stored = dump_baseline(base)
    back = load_baseline(stored.head, stored.entries)
    assert back.report == base.report
    assert back.quality == base.quality and back.settings == base.settings
    assert set(back.controls) == set(base.controls)
    for name, b in base.controls.items():
        c = back.controls[name]
        assert (c.distance, c.d_e, c.threshold, c.flag_below) == (b.distance, b.d_e, b.threshold, b.flag_below)
        if b.ordinal_domain is not None:     # the rating control: counts of its categories
            assert c.ordinal_domain.dtype == b.ordinal_domain.dtype
            assert c.ordinal_domain.tolist() == b.ordinal_domain.tolist()
            assert c.ordinal_counts.tolist() == b.ordinal_counts.tolist()
    assert any(b.ordinal_domain is not None for b in base.controls.values()) == (config == RATING_CONFIG)
    # the mirror as stored (export shape) and read back: same fingerprints, same plans
    again = ProjectMirror()
    again.fill(json.loads(json.dumps(mirror.export())))
    assert _plans(back, again) == _plans(base, mirror)


def test_pushed_values_and_events_round_trip() -> None:
    for v in (None, Desired({"agreement_sigma": 0.25, "agreement_flag": True}, None),
              Desired({"agreement_alpha": None}, {"controls": {"c": {"sigma": 1.0}}})):
        assert load_pushed(dump_pushed(v)) == v
    ev = StoredEvent(4, "ANNOTATION_UPDATED", '{"a": 1}', 1.5)
    assert load_event(dump_event(ev)) == ev


def _base_blob() -> tuple[bytes, list[bytes]]:
    mirror = ProjectMirror()
    mirror.fill(rating_tasks(20, seed=1))
    stored = dump_baseline(make_baseline(RATING_CONFIG, mirror, ReportSettings(bootstrap=0)))
    return stored.head, list(stored.entries)


def test_another_versions_state_is_refused_before_its_body_is_read() -> None:
    blob, entries = _base_blob()
    head, _, body = blob.partition(b"\n")
    newer = json.dumps({**json.loads(head), "version": SNAPSHOT_VERSION + 1}).encode()
    with pytest.raises(SnapshotError, match="another version"):
        load_baseline(newer + b"\n" + body, entries)
    reshaped = json.dumps({**json.loads(head), "schema": "0" * 16}).encode()
    with pytest.raises(SnapshotError, match="another version"):
        load_baseline(reshaped + b"\n" + b"{not even json", entries)


def test_a_tampered_state_is_refused(tmp_path: Path) -> None:
    blob, entries = _base_blob()
    head, _, body = blob.partition(b"\n")
    doc = json.loads(body)
    doc["controls"][next(iter(doc["controls"]))]["d_e"] = "not a number"
    with pytest.raises(SnapshotError, match="d_e"):
        load_baseline(head + b"\n" + json.dumps(doc).encode(), entries)
    doc = json.loads(body)
    name = next(n for n, c in doc["controls"].items() if c["ordinal_domain"] is not None)
    doc["controls"][name]["ordinal_dtype"] = "|O"          # object arrays are not data we read
    with pytest.raises(SnapshotError, match="ordinal"):
        load_baseline(head + b"\n" + json.dumps(doc).encode(), entries)
    with pytest.raises(SnapshotError):
        load_baseline(head + b"\n" + body[: len(body) // 2], entries)
    # the blocks: one missing, one of a control the report does not have, one of the wrong shape
    with pytest.raises(SnapshotError, match="incomplete"):
        load_baseline(blob, entries[:-1])
    block = json.loads(entries[0])
    with pytest.raises(SnapshotError, match="control"):
        load_baseline(blob, [json.dumps({**block, "control": "nobody"}).encode()] + entries[1:])
    with pytest.raises(SnapshotError, match="entries"):
        load_baseline(blob, [json.dumps({**block, "items": {"1": {"sigma": "high"}}}).encode()] + entries[1:])
    with pytest.raises(SnapshotError):
        load_pushed(b'{"data": 5, "meta": null}')
    with pytest.raises(SnapshotError):
        load_event(b'{"id": "x"}')


class _Project:
    """The attributes of a LiveProject the stored state reads and writes."""

    def __init__(self, project_id: int) -> None:
        self.project_id, self.config_xml, self.title = project_id, "", None
        self.names: dict[str, str] = {}
        self.users: dict[int, str] = {}
        self.mirror: ProjectMirror | None = None
        self.base: Any = None


def test_a_project_is_stored_and_read_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot, "TASKS_PER_BLOCK", 7)
    monkeypatch.setattr(snapshot, "ENTRIES_PER_BLOCK", 11)
    proj = _Project(4)
    proj.mirror = ProjectMirror()
    proj.mirror.fill(demo_tasks(60, seed=3))
    proj.config_xml, proj.title, proj.names = DEMO_CONFIG, "demo", {"1": "Ada"}
    proj.base = make_baseline(DEMO_CONFIG, proj.mirror, ReportSettings(bootstrap=0))
    exported = proj.mirror.export
    monkeypatch.setattr(proj.mirror, "export", lambda: pytest.fail("the mirror was exported whole"))
    stored = dump_project(proj)
    # the head holds no task and no per-task entry
    body = json.loads(stored.head.partition(b"\n")[2])
    assert "tasks" not in body and body["task_blocks"] == 9
    report = body["baseline"]["report"]
    assert report["tasks"] == {} and all(c["items"] == {} for c in report["controls"].values())
    tasks, entries = list(stored.tasks), list(stored.entries)
    assert len(tasks) == 9 and all(len(json.loads(b)) <= 7 for b in tasks)
    n_entries = 60 * (len(proj.base.report.controls) + 1)
    assert sum(len(json.loads(b)["items"]) + len(json.loads(b)["tasks"]) for b in entries) == n_entries
    assert all(len(json.loads(b)["items"]) + len(json.loads(b)["tasks"]) <= 11 for b in entries)

    back = _Project(4)
    load_project(back, stored.head, iter(tasks), iter(entries))
    assert back.base.report == proj.base.report
    assert back.config_xml == DEMO_CONFIG and back.title == "demo" and back.names == {"1": "Ada"}
    assert back.mirror.export() == exported()
    assert _plans(back.base, back.mirror) == _plans(proj.base, proj.mirror)
    # nothing is put into the project unless every block reads
    spoiled = _Project(4)
    for blocks in (tasks[:-1], tasks[:3] + [b'[{"id": "seven", "annotations": "none"}]'] + tasks[4:]):
        with pytest.raises(SnapshotError, match="tasks"):
            load_project(spoiled, stored.head, iter(blocks), iter(entries))
        assert spoiled.mirror is None and spoiled.base is None
    with pytest.raises(SnapshotError, match="project 4's"):
        load_project(_Project(5), stored.head, iter(tasks), iter(entries))


class _Exploit:
    """A pickle that creates a file when it is unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> Any:
        return (open, (self.path, "w"))


def test_a_pickle_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Exploit(marker))
    head, entries = _base_blob()
    for load in (lambda b: load_baseline(b, entries), load_pushed, load_event):
        with pytest.raises(SnapshotError):
            load(evil)
        with pytest.raises(SnapshotError):     # behind our own header too
            load(head.partition(b"\n")[0] + b"\n" + evil)
    with pytest.raises(SnapshotError):         # as a block of entries
        load_baseline(head, [evil] + entries[1:])
    assert not marker.exists() and not os.path.exists(str(marker))
