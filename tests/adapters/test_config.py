"""Labeling config parsing against the real 14-control config and hand-written ones."""
from __future__ import annotations

import pytest

from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError


def test_real_config_controls(config_xml):
    cfg = parse_config(config_xml)
    kinds = {n: (c.tag, c.kind, c.object_name) for n, c in cfg.controls.items()}
    assert kinds == {
        "bbox": ("RectangleLabels", "boxes", "image"), "kp": ("KeyPointLabels", "keypoints", "image"),
        "poly": ("PolygonLabels", "polygons", "image"), "ner": ("Labels", "spans", "text"),
        "translation": ("TextArea", "text", "text"), "sentiment": ("Choices", "scalars", "text"),
        "topics": ("Choices", "sets", "text"), "quality": ("Rating", "scalars", "text"),
        "confidence": ("Number", "scalars", "text"), "taxonomy": ("Taxonomy", "sets", "text"),
        "event_date": ("DateTime", "scalars", "text"), "rank": ("Ranker", "rankings", "items"),
        "rank_buckets": ("Ranker", "rankings", "items2"), "pw": ("Pairwise", "pairwise", "left,right"),
    }
    c = cfg.controls
    assert c["bbox"].labels == ["Cat", "Dog"] and c["ner"].labels == ["PER", "ORG", "LOC"]
    assert c["taxonomy"].labels == ["Animal/Mammal", "Animal/Bird", "Plant"]
    assert c["rank_buckets"].buckets == ["relevant", "irrelevant"] and c["rank"].buckets is None
    assert c["quality"].labels == ["1", "2", "3", "4", "5"]
    assert c["topics"].multiple and not c["sentiment"].multiple
    assert c["pw"].to_name == ["left", "right"] and c["pw"].object_tags == ["Text", "Text"]
    assert c["rank"].data_keys == ["items"] and c["bbox"].data_keys == ["image"]
    assert cfg.warnings == []


def test_rectangle_plus_labels_on_image():
    cfg = parse_config("<View><Image name='img' value='$image'/><Rectangle name='r' toName='img'/>"
                       "<Labels name='lab' toName='img'><Label value='A'/><Label value='B'/></Labels></View>")
    assert cfg.controls["lab"].kind == "boxes" and cfg.controls["lab"].labels == ["A", "B"]
    assert cfg.controls["r"].kind == "boxes" and cfg.controls["r"].labels is None


def test_labels_with_polygon_tool_and_hypertext():
    cfg = parse_config("<View><Image name='img' value='$image'/><Polygon name='p' toName='img'/>"
                       "<Labels name='lab' toName='img'><Label value='A'/></Labels>"
                       "<HyperText name='h' value='$html'/><HyperTextLabels name='hl' toName='h'>"
                       "<Label value='X'/></HyperTextLabels></View>")
    assert cfg.controls["lab"].kind == "polygons"
    assert cfg.controls["hl"].kind == "spans"


def test_unsupported_and_unknown_tags():
    xml = ("<View><Image name='img' value='$image'/><SmartLabels name='b' toName='img'/>"
           "<Magic name='m' toName='img'/><Rectangle name='r' toName='img'/></View>")
    cfg = parse_config(xml)
    assert set(cfg.controls) == {"r"} and cfg.skipped == {"b", "m"}
    assert any("not supported" in w for w in cfg.warnings)
    with pytest.raises(AdapterError, match="unknown control tag Magic"):
        parse_config(xml, strict=True)


@pytest.mark.parametrize("xml, fragment", [
    ("", "empty"), ("<View>", "not well-formed"),
    ("<View><Choices name='c' toName='t'/></View>", "unknown object"),
    ("<View><Text name='t' value='$t'/></View>", "no measurable control"),
    ("<View><Text name='t' value='$t'/><Text name='t' value='$u'/><TextArea name='a' toName='t'/></View>",
     "two object tags"),
])
def test_invalid_configs(xml, fragment):
    with pytest.raises(AdapterError, match=fragment) as info:
        parse_config(xml)
    assert info.value.field and info.value.field.startswith("config")


def test_dynamic_choices_are_open():
    cfg = parse_config("<View><Text name='t' value='$t'/><Choices name='c' toName='t' value='$opts'/></View>")
    assert cfg.controls["c"].labels is None
