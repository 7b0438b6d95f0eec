"""seed_measures(): report integration on small ControlData instances and the real export."""
import json

import numpy as np
import pandas as pd
import pytest

from ls_agreement.adapters.control import ControlData
from ls_agreement.plugin.report.model import SeedMeasures, to_jsonable
from ls_agreement.plugin.report.seed import seed_measures as typed_seed_measures
from ls_agreement.plugin.settings import ReportSettings
from ls_agreement.metrics.cross_kappa import cross_kappa
from ls_agreement.metrics.model import Span
from tests.shared_data import DATA

from ls_agreement.plugin.report.build import build_report as _build_report  # noqa: E402


def build_report(*args, **kwargs):
    """The report as its JSON contract (the typed ``Report`` serialised), as these tests read it."""
    return _build_report(*args, **kwargs).to_dict()


def seed_measures(control, settings):
    """The typed seed sections as JSON, only the parts that apply, as these tests read them."""
    typed = typed_seed_measures(control, settings)
    assert isinstance(typed, SeedMeasures)
    return {k: v for k, v in to_jsonable(typed).items() if v}


EXPORTS = DATA / "label-studio"


def _control(tag, kind, table, options=None, texts=None, distance="nominal"):
    return ControlData(name="c", tag=tag, object_name="o", kind=kind, table=table, options=options,
                       candidates=[distance], default_distance=distance, texts=texts or {})


def _choices_table(n=40, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.choice(["pos", "neg", "neu"], n)
    rows = []
    for i in range(n):
        for a in ("1", "2", "3", "model:v1"):
            v = truth[i] if rng.random() < 0.7 else rng.choice(["pos", "neg", "neu"])
            rows.append((i, a, str(v)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"])


def test_choices_kappa_x_and_crowdtruth():
    table = _choices_table()
    ctl = _control("Choices", "scalars", table, options=["pos", "neg", "neu"])
    st = ReportSettings.from_mapping({"groups": {"crowd": ["1", "2"], "experts": ["3"]},
                                      "humans_vs_model": True, "bootstrap": 100})
    out = seed_measures(ctl, st)
    json.dumps(out, allow_nan=False)
    assert set(out) == {"kappa_x", "crowdtruth"}
    assert set(out["kappa_x"]) == {"crowd vs experts", "humans vs model:v1"}
    ref = cross_kappa(table[table.annotator.isin(["1", "2"])], table[table.annotator == "3"], bootstrap=0)
    assert out["kappa_x"]["crowd vs experts"]["kappa_x"] == pytest.approx(ref.kappa_x)
    assert out["kappa_x"]["crowd vs experts"]["irr_y"] is None  # one expert: α undefined
    ct = out["crowdtruth"]
    assert set(ct["workers"]) == {"1", "2", "3", "model:v1"} and set(ct["annotations"]) == {"pos", "neg", "neu"}
    assert ct["closed"] and len(ct["units"]) == 40


def test_included_predictions_alone_give_humans_vs_model_kappa_x():
    ctl = _control("Choices", "scalars", _choices_table(), options=["pos", "neg", "neu"])
    out = seed_measures(ctl, ReportSettings.from_mapping({"include_predictions": True, "bootstrap": 0}))
    assert set(out["kappa_x"]) == {"humans vs model:v1"}
    assert "kappa_x" not in seed_measures(ctl, ReportSettings.from_mapping({"bootstrap": 0}))


def test_spans_span_f1_and_open_crowdtruth():
    texts = {1: "Alice met Bob in Paris today.", 2: "Acme Corp hired Carol."}
    rows = [(1, "4", (Span(0, 5, "PER"), Span(10, 13, "PER"), Span(17, 22, "LOC"))),
            (1, "5", (Span(0, 5, "PER"), Span(17, 22, "LOC"))),
            (2, "4", (Span(0, 9, "ORG"),)),
            (2, "5", (Span(0, 4, "ORG"), Span(16, 21, "PER")))]
    table = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    ctl = _control("Labels", "spans", table, texts=texts, distance="spans.lenient")
    out = seed_measures(ctl, ReportSettings())
    json.dumps(out, allow_nan=False)
    sf = out["span_f1"]
    # task 1 tokens: Alice met Bob in Paris today . -> TP 2 (PER Alice, LOC Paris), L 3 + 2;
    # task 2: Acme Corp hired Carol . -> ORG {0,1} vs {0}: TP 1, L 2 + 1; PER {3}: L 0 + 1
    assert sf["tp"] == 3.0 and sf["l_sum"] == 9.0
    assert sf["observed"] == pytest.approx(6 / 9)
    assert set(sf["tasks"]) == {"1", "2"} and 0 < sf["tasks"]["1"]["difficulty"] < 1
    ct = out["crowdtruth"]
    assert not ct["closed"] and ct["annotations"] == {}


def test_real_label_studio_export():
    xml = (EXPORTS / "label_config.xml").read_text()
    tasks = json.loads((EXPORTS / "exports" / "by_tag_labels.json").read_text())
    rep = build_report(xml, tasks, ReportSettings.from_mapping({"bootstrap": 50}))
    ner = [c for c in rep["controls"].values() if c.get("tag", "").lower() == "labels"]
    assert ner and "span_f1" in ner[0] and "crowdtruth" in ner[0]
    assert 0 < ner[0]["span_f1"]["observed"] <= 1
    json.dumps(rep, allow_nan=False)


def test_crowdtruth_counts_a_span_given_twice_in_one_annotation():
    """Issue 9 item 11: a highlight marked twice in one judgement counts twice, as in
    CrowdTruth-core; checked end to end (export -> report) against the count brute force."""
    from tests.seed.crowdtruth_brute import brute_crowdtruth

    xml = ('<View><Text name="t" value="$text"/><Labels name="ev" toName="t">'
           '<Label value="EVENT"/></Labels></View>')
    text = "The army attacked the town and then the rebels attacked back."
    spans = {1: [(4, 8), (9, 17), (9, 17)], 2: [(9, 17)], 3: [(4, 8), (47, 55)], 4: [(9, 17), (47, 55), (47, 55)]}
    tasks = []
    for tid in (1, 2, 3):
        anns = []
        for a, marks in spans.items():
            marks = marks if tid != 2 else marks[:1]
            anns.append({"id": tid * 10 + a, "completed_by": a, "result": [
                {"id": f"r{tid}{a}{k}", "from_name": "ev", "to_name": "t", "type": "labels",
                 "value": {"start": s, "end": e, "text": text[s:e], "labels": ["EVENT"]}}
                for k, (s, e) in enumerate(marks)]})
        tasks.append({"id": tid, "data": {"text": text}, "annotations": anns})
    rep = build_report(xml, tasks, ReportSettings.from_mapping({"bootstrap": 0}))
    ct = rep["controls"]["ev"]["crowdtruth"]
    rows = []
    for t in tasks:
        for ann in t["annotations"]:
            rows.append((t["id"], str(ann["completed_by"]),
                         [f"{r['value']['start']}-{r['value']['end']}:EVENT" for r in ann["result"]]))
    uqs, wqs, wua, wwa, _ = brute_crowdtruth(rows, None)
    assert any(len(set(r[2])) < len(r[2]) for r in rows)
    for w, v in wqs.items():
        assert ct["workers"][w]["wqs"] == pytest.approx(v, abs=1e-6)
    for u, v in uqs.items():
        assert ct["units"][str(u)]["uqs"] == pytest.approx(v, abs=1e-6)
    # counting once would give other numbers: the repeats matter here
    once = [(u, w, sorted(set(v))) for u, w, v in rows]
    assert max(abs(brute_crowdtruth(once, None)[1][w] - v) for w, v in wqs.items()) > 1e-3


def test_seed_sections_are_the_report_model_types():
    from ls_agreement.plugin.report.model import CrowdTruthSection, KappaX, KappaXIntervals

    ctl = _control("Choices", "scalars", _choices_table(), options=["pos", "neg", "neu"])
    out = typed_seed_measures(ctl, ReportSettings.from_mapping({"include_predictions": True, "bootstrap": 20}))
    kx = out.kappa_x["humans vs model:v1"]
    assert isinstance(kx, KappaX) and isinstance(kx.ci, KappaXIntervals) and isinstance(kx.ci.kappa_x, tuple)
    assert isinstance(out.crowdtruth, CrowdTruthSection) and out.span_f1 is None
    assert kx.kappa_x == pytest.approx(cross_kappa(ctl.table[ctl.table.annotator != "model:v1"],
                                                   ctl.table[ctl.table.annotator == "model:v1"],
                                                   bootstrap=0).kappa_x)
