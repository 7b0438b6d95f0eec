"""Ground truth, predictions and error types in the report (issue 13 items 3-4)."""
from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.metrics.reference import agreement_with_reference
from ls_agreement.demo import data as demo_data
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.report.render import ANNOTATOR_COLUMNS, render_csv, render_html
from ls_agreement.plugin.report.render_quality import QUALITY_COLUMNS
from ls_agreement.plugin.settings import ReportSettings

USER_IDS = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}


@pytest.fixture(scope="module")
def project() -> tuple[str, list[dict]]:
    proj = demo_data.generate(USER_IDS, n_tasks=24, seed=5)
    tasks = proj.tasks
    for k, t in enumerate(tasks):
        t["id"] = k + 1
        for m, a in enumerate(t["annotations"]):
            a["id"] = 100 * (k + 1) + m
            a["ground_truth"] = k % 3 == 0 and m == 0
        t["predictions"] = [{"model_version": "v1", "result": copy.deepcopy(t["annotations"][-1]["result"])}]
    return proj.config, tasks


def test_ground_truth_counts_as_an_ordinary_annotation(project) -> None:
    config, tasks = project
    s = ReportSettings(bootstrap=0)
    with_gt = build_report(config, tasks, s)
    plain = copy.deepcopy(tasks)
    for t in plain:
        for a in t["annotations"]:
            a["ground_truth"] = False
    without = build_report(config, plain, s)
    for name, e in with_gt.controls.items():
        assert e.alpha == without.controls[name].alpha
        assert {a: v.alpha for a, v in e.annotators.items()} == \
            {a: v.alpha for a, v in without.controls[name].annotators.items()}
        assert e.ground_truth and not without.controls[name].ground_truth


def test_report_numbers_are_the_metric_and_round_trip(project) -> None:
    config, tasks = project
    rep = build_report(config, tasks, ReportSettings(bootstrap=200, include_predictions=True))
    ctl = adapt(config, tasks, include_predictions=True).controls["sentiment"]
    e = rep.controls["sentiment"]
    gt_rows = pd.Series([(i, a) in ctl.ground_truth for i, a in zip(ctl.table.item, ctl.table.annotator)])
    direct = agreement_with_reference(ctl.table, ctl.table[gt_rows.to_numpy()], distance=e.distance, d_e=e.d_e,
                                      bootstrap=200, seed=rep.settings["seed"]).annotators
    for a, g in e.ground_truth.items():
        assert g.similarity == pytest.approx(direct.loc[a, "similarity"])
        assert g.alpha == pytest.approx(direct.loc[a, "alpha"]) and g.n_items == direct.loc[a, "n_items"]
    assert set(e.models) == {"v1"} and e.models["v1"].humans.n_items > 0
    assert e.models["v1"].ground_truth is not None and e.predictions
    assert rep.controls["objects"].error_types.kind == "boxes"
    assert rep.controls["entities"].error_types.kind == "spans"
    assert rep.controls["sentiment"].error_types is None
    d = rep.to_dict()
    json.dumps(d, allow_nan=False)
    assert Report.from_dict(d).to_dict() == d
    _, ann_csv = render_csv(rep)
    assert ann_csv.splitlines()[0].split(",") == ANNOTATOR_COLUMNS and set(QUALITY_COLUMNS) <= set(ANNOTATOR_COLUMNS)
    page = render_html(rep)
    assert "Members" in page and "Error types" in page and "Models" in page
