"""Controls measured in worker processes (plugin/report/parallel.py, issue 24.1): the same
report as one process, the work really done elsewhere, and a failing worker not fatal."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from ls_agreement.adapters.control import ControlData
from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.parallel import _fork_ok, measure_controls
from ls_agreement.plugin.settings import ReportSettings

pytestmark = pytest.mark.skipif(not _fork_ok(), reason="no fork here: controls always run in-process")


def _tasks(n: int) -> list[dict]:
    users = {a.email: 10 + k for k, a in enumerate(ANNOTATORS)}
    return [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=n, seed=5).tasks, start=1)]


def test_workers_give_the_very_same_report() -> None:
    tasks = _tasks(50)
    settings = ReportSettings(bootstrap=60, seed=11)
    one = build_report(DEMO_CONFIG, tasks, settings).to_json(indent=1)
    many = build_report(DEMO_CONFIG, tasks, settings, workers=3).to_json(indent=1)
    assert len(build_report(DEMO_CONFIG, tasks, settings).controls) == 5
    assert many == one


def _controls(n: int) -> dict[str, ControlData]:
    return {f"c{k}": ControlData(name=f"c{k}", tag="choices", kind="labels", object_name="x", options=None, candidates=["nominal"], default_distance="nominal",
                                 table=pd.DataFrame({"item": [1] * (k + 1), "annotator": ["a"] * (k + 1),
                                                     "value": ["v"] * (k + 1)}))
            for k in range(n)}


def test_each_control_runs_in_its_own_worker_and_comes_back_in_order() -> None:
    controls = _controls(4)
    out = measure_controls(controls, lambda c: (c.name, len(c.table), os.getpid()), workers=2)
    assert list(out) == list(controls)
    assert [(v[0], v[1]) for v in out.values()] == [(f"c{k}", k + 1) for k in range(4)]
    pids = {v[2] for v in out.values()}
    # a fresh process per control, never this one
    assert os.getpid() not in pids and len(pids) == 4


def test_a_result_that_cannot_travel_back_is_measured_here() -> None:
    controls = _controls(3)
    # a lambda does not pickle: the worker's result is lost, the control is measured here
    out = measure_controls(controls, lambda c: (lambda: c.name), workers=2)
    assert [f() for f in out.values()] == ["c0", "c1", "c2"]


def test_one_worker_runs_everything_here() -> None:
    out = measure_controls(_controls(3), lambda c: os.getpid(), workers=1)
    assert set(out.values()) == {os.getpid()}
