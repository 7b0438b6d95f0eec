"""build_report: the JSON contract, project-level rules, robustness, rendering."""
from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.report.render import ANNOTATOR_COLUMNS, TASK_COLUMNS, render_csv, render_html
from ls_agreement.metrics.diagnostics import expected_modes as _modes
from ls_agreement.plugin.report.build import build_report as _build_report
from ls_agreement.plugin.settings import ReportSettings

from .conftest import load

def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


CONTROL_KEYS = {"tag", "kind", "distance", "form", "alpha", "ks", "ks_statistic", "sigma", "threshold",
                "n_items", "n_pairs", "n_expected_pairs", "ci", "items", "annotators"}


@pytest.fixture(scope="module")
def report(config_xml, snapshot_expanded):
    return build_report(config_xml, snapshot_expanded,
                        ReportSettings(bootstrap=30, distances={"sentiment": "nominal", "quality": "ordinal"}))


def test_contract_shape(report):
    json.dumps(report, allow_nan=False)   # strictly JSON: no NaN
    assert {"controls", "tasks", "annotators", "warnings", "settings"} <= set(report)
    assert len(report["controls"]) == 14
    for name, c in report["controls"].items():
        assert CONTROL_KEYS <= set(c), name
        assert {"alpha", "ks", "sigma", "bootstrap", "seed"} <= set(c["ci"])
        for item, rec in c["items"].items():
            assert isinstance(item, str)
            assert {"sigma", "alpha", "mean_distance", "n_pairs", "flag", "annotators"} <= set(rec)
        for a, rec in c["annotators"].items():
            assert {"name", "sigma", "alpha", "mean_distance", "n_pairs", "n_items", "pairs"} <= set(rec)
    assert report["controls"]["sentiment"]["distance"] == "nominal"
    assert report["controls"]["bbox"]["form"] == "canonical"


def test_alpha_matches_krippendorff_package(report, config_xml, snapshot_expanded):
    # independent reference: the krippendorff package on the adapted sentiment/quality tables
    data = adapt(config_xml, snapshot_expanded).controls
    for name, level, encode in (("sentiment", "nominal", {"Positive": 0, "Negative": 1, "Neutral": 2}.get),
                                ("quality", "ordinal", float)):
        t = data[name].table
        anns, items = sorted(set(t["annotator"])), sorted(set(t["item"]))
        m = np.full((len(anns), len(items)), np.nan)
        for it, a, v in zip(t["item"], t["annotator"], t["value"]):
            m[anns.index(a), items.index(it)] = encode(v)
        ref = krippendorff.alpha(reliability_data=m, level_of_measurement=level)
        assert report["controls"][name]["alpha"] == pytest.approx(ref, abs=1e-9)


def test_project_tasks_min_sigma_and_any_flag(report):
    for tid, t in report["tasks"].items():
        sig = [c["items"][tid]["sigma"] for c in report["controls"].values()
               if tid in c["items"] and c["items"][tid]["sigma"] is not None]
        flags = [c["items"][tid]["flag"] for c in report["controls"].values() if tid in c["items"]]
        assert t["sigma"] == (min(sig) if sig else None)
        assert t["flag"] == any(flags)
        assert set(t["flagged_controls"]) <= set(t["controls"])


def test_project_annotators_pair_weighted(report):
    a = report["annotators"]["4"]
    assert a["name"] == "ann1@example.com"
    per = [(c["annotators"]["4"]["sigma"], c["annotators"]["4"]["n_pairs"]) for c in report["controls"].values()
           if "4" in c["annotators"] and c["annotators"]["4"]["sigma"] is not None and c["annotators"]["4"]["n_pairs"]]
    assert a["sigma"] == pytest.approx(sum(s * n for s, n in per) / sum(n for _, n in per))


def test_unpairable_control_reported_with_nulls(config_xml):
    tasks = load("by_tag_rating.json")
    for ann in tasks[0]["annotations"][1:]:
        ann["was_cancelled"] = True            # one annotator left
    rep = build_report(config_xml, tasks, ReportSettings(bootstrap=0))
    q = rep["controls"]["quality"]
    assert q["alpha"] is None and q["sigma"] is None and q["n_items"] == 1
    assert any("fewer than two annotators" in w for w in q["warnings"])
    assert any(w.startswith("quality: fewer than two") for w in rep["warnings"])


def test_only_items_restricts_output_not_numbers(config_xml, snapshot_expanded, report):
    small = build_report(config_xml, snapshot_expanded,
                         ReportSettings(bootstrap=30, distances={"sentiment": "nominal", "quality": "ordinal"}),
                         only_items={1})
    assert set(small["tasks"]) == {"1"}
    assert small["controls"]["sentiment"]["alpha"] == report["controls"]["sentiment"]["alpha"]


def test_unknown_distance_is_refused_up_front_and_unknown_control_warned(config_xml):
    # one settings model for every command: distance names are checked before any work (issue 10)
    with pytest.raises(ValueError, match="unknown distance.*no.such"):
        build_report(config_xml, load("by_tag_rating.json"),
                     ReportSettings(bootstrap=0, distances={"quality": "no.such"}))
    rep = build_report(config_xml, load("by_tag_rating.json"),
                       ReportSettings(bootstrap=0, distances={"ghost": "nominal"}))
    assert any("ghost" in w for w in rep["warnings"])


def test_modes_detector():
    assert _modes([0] * 10 + [50, 80, 50] + [0] * 10 + [40, 70, 40] + [0] * 5) == 2
    assert _modes(list(np.exp(-0.5 * ((np.arange(30) - 15) / 4.0) ** 2) * 100)) == 1
    assert _modes([500, 0, 0, 500]) == 1     # a 0/1 distance is not "multi-modal"


def test_render_html_self_contained(report):
    page = render_html(Report.from_dict(report))
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<svg class='chart dist'" in page and "<svg class='chart annotators'" in page   # inline charts
    assert "<title>" in page and page.count("<script>") == 1 and "<script src" not in page
    assert "src='http" not in page and 'src="http' not in page and "<link" not in page
    for name in report["controls"]:
        assert f"id='c-{name}'" in page
    assert "Flagged tasks" in page and "d* =" in page
    assert "canonical weighting" in page
    json_round = json.loads(json.dumps(report))
    assert render_html(Report.from_dict(json_round)).count("<section class=control>") == len(report["controls"])


def test_render_html_escapes(config_xml):
    xml = config_xml.replace('name="sentiment"', 'name="s&lt;script&gt;"')
    tasks = load("by_tag_choices__sentiment.json")
    for ann in tasks[0]["annotations"]:
        for r in ann["result"]:
            r["from_name"] = "s<script>"
    page = render_html(_build_report(xml, tasks, ReportSettings(bootstrap=0)))
    assert "s<script>" not in page and "s&lt;script&gt;" in page
    assert page.count("<script>") == 1     # the page's own script only


def test_render_csv(report):
    tasks_csv, ann_csv = render_csv(Report.from_dict(report))
    t_lines, a_lines = tasks_csv.strip().splitlines(), ann_csv.strip().splitlines()
    assert t_lines[0].split(",") == TASK_COLUMNS and a_lines[0].split(",") == ANNOTATOR_COLUMNS
    n_items = sum(len(c["items"]) for c in report["controls"].values())
    assert len(t_lines) - 1 == n_items
    assert any(line.startswith("(project),4,ann1@example.com") for line in a_lines)


def test_span_distances_count_tokens_not_characters():
    """measures.md §4: span distances are in token units (characters mapped by nltk)."""
    from ls_agreement.plugin.settings import ReportSettings

    config = ('<View><Text name="text" value="$text"/>'
              '<Labels name="ner" toName="text"><Label value="PER"/></Labels></View>')
    text = "John Smith lives in New York"

    def ann(aid, user, start, end):
        return {"id": aid, "completed_by": user, "was_cancelled": False, "result": [
            {"id": f"r{aid}", "from_name": "ner", "to_name": "text", "type": "labels",
             "value": {"start": start, "end": end, "text": text[start:end], "labels": ["PER"]}}]}

    tasks = [{"id": 1, "data": {"text": text}, "annotations": [ann(1, 1, 0, 10), ann(2, 2, 0, 4)]},
             {"id": 2, "data": {"text": text}, "annotations": [ann(3, 1, 20, 28), ann(4, 2, 20, 28)]}]
    rep = build_report(config, tasks, ReportSettings(distances={"ner": "spans.lenient"}, bootstrap=0))
    entry = rep["controls"]["ner"]
    assert entry["units"] == "tokens (nltk)"
    # "John Smith" (2 tokens) vs "John" (1 token): P = 1/2, R = 1 -> F1 = 2/3 -> D = 1/3
    # (in characters it would be P = 4/10 -> D = 0.4286)
    assert entry["items"]["1"]["mean_distance"] == pytest.approx(1 / 3)
    assert entry["items"]["2"]["mean_distance"] == pytest.approx(0.0)
