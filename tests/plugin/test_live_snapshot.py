"""The live state's stored form (plugin/live/snapshot.py) without a server: a baseline and a
mirror come back so that every task is rescored and planned exactly as before, and a blob
of another version, a tampered one or a pickle is refused before anything runs."""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from ls_agreement.plugin.live.baseline import make_baseline, score_tasks
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.live.snapshot import (SNAPSHOT_VERSION, SnapshotError, dump_baseline, dump_event,
                                               dump_pushed, load_baseline, load_event, load_pushed)
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
    back = load_baseline(dump_baseline(base))
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


def _base_blob() -> bytes:
    mirror = ProjectMirror()
    mirror.fill(rating_tasks(20, seed=1))
    return dump_baseline(make_baseline(RATING_CONFIG, mirror, ReportSettings(bootstrap=0)))


def test_another_versions_state_is_refused_before_its_body_is_read() -> None:
    blob = _base_blob()
    head, _, body = blob.partition(b"\n")
    newer = json.dumps({**json.loads(head), "version": SNAPSHOT_VERSION + 1}).encode()
    with pytest.raises(SnapshotError, match="another version"):
        load_baseline(newer + b"\n" + body)
    reshaped = json.dumps({**json.loads(head), "schema": "0" * 16}).encode()
    with pytest.raises(SnapshotError, match="another version"):
        load_baseline(reshaped + b"\n" + b"{not even json")


def test_a_tampered_state_is_refused(tmp_path: Path) -> None:
    blob = _base_blob()
    head, _, body = blob.partition(b"\n")
    doc = json.loads(body)
    doc["controls"][next(iter(doc["controls"]))]["d_e"] = "not a number"
    with pytest.raises(SnapshotError, match="d_e"):
        load_baseline(head + b"\n" + json.dumps(doc).encode())
    doc = json.loads(body)
    name = next(n for n, c in doc["controls"].items() if c["ordinal_domain"] is not None)
    doc["controls"][name]["ordinal_dtype"] = "|O"          # object arrays are not data we read
    with pytest.raises(SnapshotError, match="ordinal"):
        load_baseline(head + b"\n" + json.dumps(doc).encode())
    with pytest.raises(SnapshotError):
        load_baseline(head + b"\n" + body[: len(body) // 2])
    with pytest.raises(SnapshotError):
        load_pushed(b'{"data": 5, "meta": null}')
    with pytest.raises(SnapshotError):
        load_event(b'{"id": "x"}')


class _Exploit:
    """A pickle that creates a file when it is unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> Any:
        return (open, (self.path, "w"))


def test_a_pickle_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Exploit(marker))
    for load in (load_baseline, load_pushed, load_event):
        with pytest.raises(SnapshotError):
            load(evil)
        with pytest.raises(SnapshotError):     # behind our own header too
            load(_base_blob().partition(b"\n")[0] + b"\n" + evil)
    assert not marker.exists() and not os.path.exists(str(marker))
