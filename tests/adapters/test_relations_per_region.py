"""Relations and perRegion answers, from Label Studio's result format to α and the report.

Label Studio's own templates (read from the installed package) give the exact shapes; the
scenarios of issue 21 (identical, careless, random) come from ``region_answers_gen``.
"""
from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.metrics import agreement
from ls_agreement.metrics.model import Attributed, Box, Relation, Span
from ls_agreement.plugin.cli import main

from .region_answers_gen import RELATIONS_CONFIG, config_of, tasks_of

TEMPLATES = (Path.home() / ".cache/ls-agreement/label-studio-1.23.2/venv/lib/python3.11/site-packages"
             / "label_studio/annotation_templates")
DEPENDENT = ("relations", "attributes")


def template(rel: str) -> tuple[str, dict]:
    """A Label Studio template's config and the example task in its trailing comment."""
    path = TEMPLATES / rel / "config.xml"
    if not path.exists():
        pytest.skip("Label Studio's templates are not installed")
    xml = path.read_text()
    m = re.search(r"<!--\s*(\{.*\})\s*-->\s*$", xml, re.S)
    return xml[: m.start()], json.loads(m.group(1))


def two_annotators(example: dict, shuffle_second: bool = True) -> list[dict]:
    res = example["annotations"][0]["result"]
    other = list(res)
    if shuffle_second:
        random.Random(1).shuffle(other)
    data = dict(example.get("data") or {})
    return [{"id": 1, "data": data, "annotations": [{"id": 1, "completed_by": 1, "result": res},
                                                    {"id": 2, "completed_by": 2, "result": other}]}]


# -- Label Studio's shapes ---------------------------------------------------------------------

def test_relation_extraction_template():
    xml, ex = template("natural-language-processing/relation-extraction")
    ex["data"] = ex.get("data") or {"text": "x" * 200}
    a = adapt(xml, two_annotators(ex), strict=True)
    ctl = a.controls["relations"]          # the template's <Relations> has no name
    assert ctl.kind == "relations" and ctl.options == ["org:founded_by", "org:founded"]
    v1, v2 = ctl.table["value"]
    assert v1 == v2 and len(v1) == 3
    founded_by = next(r for r in v1 if r.label == "org:founded_by")
    assert founded_by == Relation(Span(0, 9, "Organization"), Span(25, 35, "Person"), "org:founded_by", True)
    assert None in {r.label for r in v1}    # "labels": [] is an unlabelled relation


@pytest.mark.parametrize("rel, control, answers", [
    ("audio-speech-processing/intent-classification", "intent", ["Question"]),
    ("audio-speech-processing/automatic-speech-recognition-using-segments", "transcription", ["Wow wow wow!!!...."]),
    ("time-series-analysis/signal-quality", "rating", [8]),
    ("time-series-analysis/outliers-anomaly-detection", "region_type", ["Anomaly", "Outlier", "Outlier"]),
])
def test_per_region_templates(rel, control, answers):
    xml, ex = template(rel)
    data = dict(ex.get("data") or {})
    for key in re.findall(r'value="\$(\w+)"', xml):
        data.setdefault(key, "/samples/x")
    ex["data"] = data
    a = adapt(xml, two_annotators(ex), strict=True)
    ctl = a.controls[control]
    assert ctl.kind == "attributes" and not ctl.warnings
    v1, v2 = ctl.table["value"]
    assert v1 == v2                            # result order plays no part
    assert sorted(x.value for x in v1) == answers
    drawn = a.controls["label" if "time-series" in rel else "labels"].table["value"].iloc[0]
    assert {x.region for x in v1} == set(drawn)   # the regions the region control measures


def test_ocr_text_per_region_is_no_longer_joined():
    xml = config_of("ocr")
    geom = lambda x: {"x": x, "y": 10, "width": 10, "height": 5, "rotation": 0}
    res = []
    for rid, x, text in (("r1", 10, "total"), ("r2", 50, "12.50")):
        base = {"id": rid, "to_name": "image", "original_width": 200, "original_height": 100}
        res += [{**base, "from_name": "bbox", "type": "rectanglelabels", "value": {**geom(x), "rectanglelabels": ["Text"]}},
                {**base, "from_name": "transcription", "type": "textarea", "value": {**geom(x), "text": [text]}}]
    a = adapt(xml, [{"id": 1, "data": {"image": "i.png"}, "annotations": [{"id": 1, "completed_by": 1, "result": res}]}],
              strict=True)
    (value,) = a.controls["transcription"].table["value"]
    assert set(value) == {Attributed(Box(20.0, 10.0, 20.0, 5.0, label="Text"), "total"),
                          Attributed(Box(100.0, 10.0, 20.0, 5.0, label="Text"), "12.50")}   # in pixels, as bbox


# -- config: what Label Studio accepts ---------------------------------------------------------

def test_relations_names_and_per_region_kinds():
    cfg = parse_config(RELATIONS_CONFIG, strict=True)
    assert cfg.controls["relations"].family == "relations"
    named = parse_config(RELATIONS_CONFIG.replace("<Relations>", '<Relations name="rel">'), strict=True)
    assert "rel" in named.controls
    clash = parse_config(RELATIONS_CONFIG.replace('name="label"', 'name="relations"'), strict=True)
    assert clash.controls["relations_1"].family == "relations"
    asr = parse_config(config_of("asr"), strict=True).controls
    assert (asr["transcription"].kind, asr["transcription"].answer_family) == ("attributes", "text")
    ts = parse_config(config_of("timeseries"), strict=True).controls
    assert (ts["region_type"].answer_kind, ts["severity"].answer_family) == ("sets", "scalars")


def test_default_and_candidate_distances_follow_the_answers():
    a = adapt(config_of("timeseries"), tasks_of("timeseries", "identical", n_tasks=2))
    assert a.controls["region_type"].default_distance == "attributes.jaccard"
    assert a.controls["severity"].candidates == ["attributes.interval", "attributes.nominal"]
    b = adapt(config_of("asr"), tasks_of("asr", "identical", n_tasks=2))
    assert b.controls["transcription"].default_distance == "attributes.levenshtein"
    assert b.controls["intent"].candidates == ["attributes.nominal"]


# -- results that do not resolve ---------------------------------------------------------------

def _span(rid: str, s: int, e: int, label: str = "Person") -> dict:
    return {"id": rid, "from_name": "label", "to_name": "text", "type": "labels",
            "value": {"start": s, "end": e, "labels": [label]}}


def _rel(f: str, t: str, direction: str = "right", labels=None) -> dict:
    r = {"from_id": f, "to_id": t, "type": "relation", "direction": direction}
    if labels is not None:
        r["labels"] = labels
    return r


def _one(result: list[dict], config: str = RELATIONS_CONFIG, strict: bool = False):
    return adapt(config, [{"id": 7, "data": {"text": "y" * 80},
                           "annotations": [{"id": 3, "completed_by": 1, "result": result}]}], strict=strict)


def test_relation_to_a_missing_region_is_skipped_with_a_warning():
    a = _one([_span("a", 0, 5), _span("b", 10, 15), _rel("a", "b", labels=["org:founded"]),
              _rel("a", "ghost", labels=["org:founded"])], strict=True)
    ctl = a.controls["relations"]
    (value,) = ctl.table["value"]
    assert value == (Relation(Span(0, 5, "Person"), Span(10, 15, "Person"), "org:founded", True),)
    assert any("ghost" in w and "task 7, annotation 3" in w for w in ctl.warnings)


def test_directions_labels_and_undeclared_labels():
    a = _one([_span("a", 0, 5), _span("b", 10, 15), _rel("a", "b", "left", ["org:founded", "org:founded_by"]),
              _rel("b", "a", "bi"), _rel("a", "b", None, ["made:up"])])
    (value,) = a.controls["relations"].table["value"]
    sa, sb = Span(0, 5, "Person"), Span(10, 15, "Person")
    assert set(value) == {Relation(sb, sa, "org:founded", True), Relation(sb, sa, "org:founded_by", True),
                          Relation(sb, sa, None, False), Relation(sa, sb, "made:up", True)}
    assert any("made:up" in w for w in a.warnings)
    with pytest.raises(AdapterError, match="made:up"):
        _one([_span("a", 0, 5), _span("b", 10, 15), _rel("a", "b", labels=["made:up"])], strict=True)
    with pytest.raises(AdapterError, match="direction"):
        _one([_span("a", 0, 5), _rel("a", "a", "up")], strict=True)


def test_relations_without_a_relations_tag_are_not_measured():
    cfg = RELATIONS_CONFIG.split("<Relations>")[0] + RELATIONS_CONFIG.split("</Relations>")[1]
    a = _one([_span("a", 0, 5), _span("b", 10, 15), _rel("a", "b")], config=cfg, strict=True)
    assert set(a.controls) == {"label"}
    assert any("no <Relations> tag" in w for w in a.warnings)


def test_annotation_without_relations_is_the_empty_answer():
    a = _one([_span("a", 0, 5)])
    assert list(a.controls["relations"].table["value"]) == [()]


# -- α through the engine: drawing order, scenarios ----------------------------------------------

def dependent_controls(tpl: str, scenario: str, **kw):
    a = adapt(config_of(tpl), tasks_of(tpl, scenario, **kw))
    return {n: c for n, c in a.controls.items() if c.kind in DEPENDENT}


@pytest.mark.parametrize("tpl", ["relations", "asr", "ocr", "timeseries"])
def test_identical_annotators_agree_fully_whatever_the_drawing_order(tpl):
    # every annotation's results are shuffled by the generator: the value must not care
    for name, ctl in dependent_controls(tpl, "identical", n_tasks=12).items():
        for dist in ctl.candidates:
            assert agreement(ctl.table, dist, bootstrap=0).alpha == pytest.approx(1.0, abs=1e-12), (name, dist)


@pytest.mark.parametrize("tpl", ["relations", "asr", "ocr", "timeseries"])
def test_careless_annotator_is_lowest_by_alpha_and_sigma(tpl):
    for name, ctl in dependent_controls(tpl, "careless").items():
        res = agreement(ctl.table, ctl.default_distance, bootstrap=0)
        per = res.per_annotator
        careless = per.index.max()          # annotator "4", the last one, answers at random
        for col in ("alpha", "sigma"):
            others = per[col].drop(careless)
            assert per.loc[careless, col] < others.min(), (name, col, per[col].to_dict())


@pytest.mark.parametrize("tpl", ["relations", "asr", "ocr", "timeseries"])
def test_random_annotators_have_alpha_near_zero(tpl):
    for name, ctl in dependent_controls(tpl, "random", n_tasks=30, n_annotators=4).items():
        for dist in ctl.candidates:
            alpha = agreement(ctl.table, dist, bootstrap=0).alpha
            assert abs(alpha) < 0.15, (name, dist, alpha)


# -- the report ------------------------------------------------------------------------------

def _finite(obj, where="report"):
    if isinstance(obj, float):
        assert math.isfinite(obj), where
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for k, v in enumerate(obj):
            _finite(v, f"{where}[{k}]")


@pytest.mark.parametrize("tpl", ["relations", "asr", "ocr", "timeseries"])
def test_report_json_and_html(tpl, tmp_path, capsys):
    cfg = tmp_path / "config.xml"
    cfg.write_text(config_of(tpl))
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks_of(tpl, "careless", n_tasks=10)))
    out = tmp_path / "r.json"
    assert main(["report", str(export), "--config", str(cfg), "--bootstrap", "20", "--out", str(out)]) == 0
    rep = json.loads(out.read_text())
    _finite(rep)
    measured = {n: c for n, c in rep["controls"].items() if c["kind"] in DEPENDENT}
    assert measured and all(c["alpha"] is not None and c["distance"] for c in measured.values())
    page = tmp_path / "r.html"
    assert main(["report", str(export), "--config", str(cfg), "--bootstrap", "0", "--format", "html",
                 "--out", str(page)]) == 0
    html = page.read_text()
    assert all(n in html for n in measured) and "NaN" not in html
