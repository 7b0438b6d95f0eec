"""Each control tag of the real exports -> the common model (values worked out by hand
from the export files: percent x image size / 100, epoch seconds, ...)."""
from __future__ import annotations

from datetime import datetime, timezone

from ls_agreement.adapters.adapt import adapt
from ls_agreement.metrics.model import Box, Keypoint, Polygon, Span

from .conftest import load


def values(config_xml, export, control, **kw):
    out = adapt(config_xml, load(export), **kw)
    t = out.controls[control].table
    return dict(zip(t["annotator"], t["value"])), out


def test_rectangles_in_pixels_with_rotation(config_xml):
    v, _ = values(config_xml, "by_tag_rectanglelabels.json", "bbox")
    assert v["4"] == (Box(64.0, 96.0, 192.0, 120.0, 0.0, "Cat"),)
    assert v["5"] == (Box(70.4, 96.0, 192.0, 115.2, 15.0, "Cat"),)
    assert v["6"][0].label == "Dog"


def test_percent_kept_for_the_whole_control_when_a_size_is_missing(config_xml):
    tasks = load("by_tag_rectanglelabels.json")
    del tasks[0]["annotations"][1]["result"][0]["original_width"]
    del tasks[0]["annotations"][1]["result"][0]["original_height"]
    out = adapt(config_xml, tasks)
    vals = dict(zip(out.controls["bbox"].table["annotator"], out.controls["bbox"].table["value"]))
    assert vals["4"][0].x == 10.0 and vals["5"][0].x == 11.0   # both percent
    assert any("percent" in w for w in out.controls["bbox"].warnings)


def test_keypoints_and_polygons(config_xml):
    v, _ = values(config_xml, "by_tag_keypointlabels.json", "kp")
    assert v["4"] == (Keypoint(320.0, 192.0, "Nose"),) and v["6"] == (Keypoint(332.8, 192.0, "Nose"),)
    v, _ = values(config_xml, "by_tag_polygonlabels.json", "poly")
    assert v["4"] == (Polygon(((64.0, 48.0), (256.0, 60.0), (224.0, 216.0)), "Region"),)


def test_spans_and_texts(config_xml):
    v, out = values(config_xml, "by_tag_labels.json", "ner")
    assert v["6"] == (Span(0, 5, "PER"), Span(15, 24, "LOC"), Span(28, 33, "LOC"))
    assert v["4"][1] == Span(15, 24, "ORG") and v["4"][1].text == "Acme Corp"
    assert out.controls["ner"].texts == {1: "Alice works at Acme Corp in Paris."}


def test_textarea_choices_scalars(config_xml):
    assert values(config_xml, "by_tag_textarea.json", "translation")[0]["5"] == "Alice travaille chez Acme Corp à Paris."
    assert values(config_xml, "by_tag_choices__sentiment.json", "sentiment")[0] == {
        "4": "Positive", "5": "Neutral", "6": "Negative"}
    assert values(config_xml, "by_tag_choices__topics.json", "topics")[0]["5"] == frozenset({"Tech", "Politics"})
    assert values(config_xml, "by_tag_rating.json", "quality")[0] == {"4": 5, "5": 4, "6": 3}
    assert values(config_xml, "by_tag_number.json", "confidence")[0] == {"4": 90, "5": 80, "6": 70}
    may1 = datetime(2024, 5, 1, tzinfo=timezone.utc).timestamp()
    assert values(config_xml, "by_tag_datetime.json", "event_date")[0] == {
        "4": may1, "5": may1 + 86400, "6": may1}
    assert values(config_xml, "by_tag_taxonomy.json", "taxonomy")[0]["5"] == frozenset({"Animal/Bird", "Plant"})


def test_rankers(config_xml):
    assert values(config_xml, "by_tag_ranker__rank.json", "rank")[0] == {
        "4": ("a", "b", "c"), "5": ("b", "a", "c"), "6": ("a", "c", "b")}
    v, _ = values(config_xml, "by_tag_ranker__rank_buckets.json", "rank_buckets")
    # buckets relevant, irrelevant (config order), then "_" (not bucketed)
    assert v["4"] == (("a",), ("c",), ("b",))
    assert v["5"] == (("a", "b"), ("c",), ())


def test_pairwise_both_shapes(config_xml):
    tasks = load("by_tag_pairwise.json")
    assert {a: v for a, v in values(config_xml, "by_tag_pairwise.json", "pw")[0].items()} == {
        "4": "left", "5": "left", "6": "right"}
    r0 = tasks[0]["annotations"][0]["result"][0]
    r0.update(to_name="left,right", value={"pairwise": {"selected": "right"}})
    r1 = tasks[0]["annotations"][1]["result"][0]
    r1["value"] = {"selected": "right"}  # the object name form
    r1["value"]["selected"] = "right"
    r2 = tasks[0]["annotations"][2]["result"][0]
    r2["value"] = {"selected": "left"}
    out = adapt(config_xml, tasks, strict=True)
    t = out.controls["pw"].table
    assert dict(zip(t["annotator"], t["value"])) == {"4": "right", "5": "right", "6": "left"}


def test_missing_vs_empty(config_xml):
    # by_tag_choices__sentiment: the annotators gave only a sentiment
    out = adapt(config_xml, load("by_tag_choices__sentiment.json"))
    c = out.controls
    assert c["bbox"].table["value"].tolist() == [(), (), ()]          # no boxes is an answer
    assert c["ner"].table["value"].tolist() == [(), (), ()]
    assert c["topics"].table["value"].tolist() == [frozenset()] * 3  # nothing ticked is an answer
    for scalar in ("quality", "confidence", "event_date", "translation", "rank", "pw"):
        assert len(c[scalar].table) == 0, scalar                       # unanswered = missing
    assert len(c["sentiment"].table) == 3


def test_control_not_applicable_without_its_data(config_xml):
    tasks = load("by_tag_rectanglelabels.json")
    del tasks[0]["data"]["image"]
    out = adapt(config_xml, tasks)
    assert len(out.controls["bbox"].table) == 0 and len(out.controls["ner"].table) == 3


def test_candidates_and_defaults(config_xml):
    out = adapt(config_xml, load("by_tag_rating.json"))
    c = out.controls
    assert c["sentiment"].default_distance == "nominal" and "interval" not in c["sentiment"].candidates
    assert c["quality"].default_distance == "ordinal" and "ordinal" in c["quality"].candidates
    assert c["confidence"].default_distance == "interval" == c["event_date"].default_distance
    assert c["topics"].default_distance == "sets.masi" == c["taxonomy"].default_distance
    assert c["bbox"].default_distance == "boxes.iou" and "boxes.iou" in c["bbox"].candidates
    assert c["pw"].default_distance == "nominal" and c["pw"].kind == "pairwise"
    assert c["rank"].default_distance == "rankings.kendall"
    assert c["quality"].options == ["1", "2", "3", "4", "5"]


def test_hypertext_offsets():
    xml = ("<View><HyperText name='h' value='$html'/><Labels name='l' toName='h'>"
           "<Label value='X'/></Labels></View>")
    res = lambda value: {"from_name": "l", "to_name": "h", "type": "labels", "value": value}
    tasks = [{"id": 1, "data": {"html": "<p>hello world</p>"}, "annotations": [
        {"id": 1, "completed_by": 1, "result": [res({"start": "/p[1]/text()[1]", "end": "/p[1]/text()[1]",
                                                     "startOffset": 0, "endOffset": 5, "labels": ["X"]})]},
        {"id": 2, "completed_by": 2, "result": [res({"start": "/p[1]", "end": "/p[2]", "startOffset": 0,
                                                     "endOffset": 5, "globalOffsets": {"start": 3, "end": 9},
                                                     "labels": ["X"]})]},
        {"id": 3, "completed_by": 3, "result": [res({"start": "/p[1]", "end": "/p[2]", "startOffset": 0,
                                                     "endOffset": 5, "labels": ["X"]})]}]}]
    out = adapt(xml, tasks)
    v = dict(zip(out.controls["l"].table["annotator"], out.controls["l"].table["value"]))
    assert v["1"] == (Span(0, 5, "X"),) and v["2"] == (Span(3, 9, "X"),) and v["3"] == ()
    assert any("across nodes" in w for w in out.warnings)
