"""Configs Label Studio accepts are measured where they can be, with one warning for the
rest; and the words said about them are the right ones.

Result formats follow Label Studio's editor (``web/libs/editor/src``): a control without
``toName`` is bound to the only object tag (``core/Tree.tsx`` ``extractNames``); regions
on a ``<Image valueList>`` carry ``item_index`` (``Image.createSerializedResult``);
OcrLabels boxes carry ``pageIndex`` (label-studio-sdk ``OcrLabelsValue``); a ``Labels``
labelling the regions of a Rectangle and a Polygon tool writes a ``labels`` result in the
region's own shape.
"""
from __future__ import annotations

import pytest

from ls_agreement.adapters import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError, Unmeasured
from ls_agreement.metrics import Box, Polygon, agreement


def _task(tid, data, results_per_annotator):
    return {"id": tid, "data": data,
            "annotations": [{"id": tid * 10 + a, "completed_by": a + 1, "result": res}
                            for a, res in enumerate(results_per_annotator)]}


def test_rating_without_to_name_is_measured():
    """chatbot-assessment: <Rating name="likert_scale" maxRating="7"/> beside one Paragraphs."""
    config = ("<View><Paragraphs name='dialogue' value='$messages' nameKey='role' textKey='content'/>"
              "<Rating name='likert_scale' maxRating='7'/>"
              "<Choices name='fails' toName='dialogue'><Choice value='Yes'/><Choice value='No'/></Choices></View>")
    cfg = parse_config(config)
    assert cfg.controls["likert_scale"].to_name == ["dialogue"]
    tasks = [_task(t, {"messages": []}, [[{"from_name": "likert_scale", "to_name": "dialogue", "type": "rating",
                                           "value": {"rating": (t + a) % 7 + 1}}] for a in range(2)])
             for t in range(1, 6)]
    out = adapt(config, tasks, strict=True)
    assert len(out.controls["likert_scale"].table) == 10


def test_classification_without_to_name_among_several_objects_is_measured_unbound():
    config = "<View><Text name='a' value='$a'/><Text name='b' value='$b'/><Rating name='r'/></View>"
    spec = parse_config(config).controls["r"]
    assert spec.to_name == [] and spec.data_keys == []
    tasks = [_task(1, {"a": "x", "b": "y"}, [[{"from_name": "r", "type": "rating", "value": {"rating": 3}}]] * 2)]
    assert len(adapt(config, tasks, strict=True).controls["r"].table) == 2


def test_region_tool_without_object_is_skipped_with_one_warning():
    config = ("<View><Image name='a' value='$a'/><Image name='b' value='$b'/>"
              "<RectangleLabels name='r'><Label value='X'/></RectangleLabels>"
              "<Choices name='c' toName='a'><Choice value='x'/></Choices></View>")
    cfg = parse_config(config)
    assert list(cfg.controls) == ["c"]
    assert [w for w in cfg.warnings if "'r'" in w] == [
        "config.RectangleLabels[name=r].toName: RectangleLabels 'r' has no toName and the config has 2 object "
        "tags, so the object it draws on is unknown; control 'r' skipped"]
    with pytest.raises(AdapterError, match="invalid labeling config: RectangleLabels 'r' has no toName"):
        parse_config(config, strict=True)


def test_to_name_naming_a_control_is_skipped_and_an_unknown_name_refused():
    config = ("<View><Text name='t' value='$t'/><Choices name='a' toName='t'><Choice value='x'/></Choices>"
              "<Choices name='b' toName='a'><Choice value='y'/></Choices></View>")
    cfg = parse_config(config)
    assert list(cfg.controls) == ["a"] and "b" in cfg.skipped
    with pytest.raises(AdapterError, match=r"points to unknown object\(s\) \['nothing'\]"):
        parse_config("<View><Text name='t' value='$t'/><Choices name='a' toName='nothing'/></View>")


def test_max_rating_not_a_number_skips_the_rating_only():
    config = ("<View><Text name='t' value='$t'/><TextArea name='n' toName='t'/>"
              "<Rating name='r' toName='t' maxRating='many'/></View>")
    cfg = parse_config(config)
    assert list(cfg.controls) == ["n"] and any("maxRating 'many'" in w for w in cfg.warnings)
    with pytest.raises(AdapterError, match="maxRating"):
        parse_config(config, strict=True)


def _box(name, to, x, y, w, h, label, **top):
    return {"id": f"{name}{x}{y}", "from_name": name, "to_name": to, "type": "rectanglelabels",
            "original_width": 800, "original_height": 1000, **top,
            "value": {"x": x, "y": y, "width": w, "height": h, "rotation": 0, "rectanglelabels": [label]}}


def test_multipage_image_regions_keep_their_page():
    """<Image valueList="$pages">: the same box on two pages is two different regions."""
    config = ("<View><RectangleLabels name='rectangles' toName='pdf'><Label value='Title'/></RectangleLabels>"
              "<Image valueList='$pages' name='pdf'/></View>")
    assert parse_config(config).objects["pdf"].data_key == "pages"
    data = {"pages": ["p0.jpg", "p1.jpg"]}
    same = [[_box("rectangles", "pdf", 10, 10, 20, 5, "Title", item_index=0)],
            [_box("rectangles", "pdf", 10, 10, 20, 5, "Title", item_index=0)]]
    other = [[_box("rectangles", "pdf", 10, 10, 20, 5, "Title", item_index=0)],
             [_box("rectangles", "pdf", 10, 10, 20, 5, "Title", item_index=1)]]
    table = adapt(config, [_task(1, data, same), _task(2, data, other)], strict=True).controls["rectangles"].table
    values = list(table["value"])
    assert values[0] == values[1] and values[2] != values[3]
    a, b = values[2][0], values[3][0]
    assert (a.x, a.y, a.width, a.height) == (80.0, 100.0, 160.0, 50.0)   # percent of 800 x 1000 px
    assert b.y - a.y == 2 * 1000.0    # page 1 lies a page below the end of page 0: they cannot overlap
    from ls_agreement.metrics.distances.registry import get_distance
    assert get_distance("boxes.iou")(values[2], values[3]) == pytest.approx(1.0)


def test_ocr_labels_on_a_pdf_are_labelled_boxes_per_page():
    config = ("<View><OcrLabels name='ocr' toName='pdf'><Label value='Typo'/><Label value='Incorrect Amount'/>"
              "</OcrLabels><Pdf name='pdf' value='$pdf'/></View>")
    spec = parse_config(config).controls["ocr"]
    assert (spec.kind, spec.labels) == ("boxes", ["Typo", "Incorrect Amount"])
    res = {"id": "o", "from_name": "ocr", "to_name": "pdf", "type": "ocrlabels",
           "value": {"x": 5.0, "y": 7.0, "width": 10.0, "height": 2.0, "rotation": 0, "pageIndex": 2,
                     "ocrtext": "Opossum", "ocrlabels": ["Typo"]}}
    out = adapt(config, [_task(1, {"pdf": "d.pdf"}, [[res], [res]])], strict=True)
    box = out.controls["ocr"].table["value"][0][0]
    assert box == Box(5.0, 7.0 + 2 * 200.0, 10.0, 2.0, 0.0, "Typo")   # percent units, page 2
    assert not out.controls["ocr"].warnings      # a PDF page has no pixel size: nothing to say


def test_labels_on_an_image_with_rectangle_and_polygon_tools_read_both_shapes():
    """OCR template: 252 of 484 'labels' results were skipped with "value.x: missing"."""
    config = ("<View><Image name='image' value='$ocr'/><Labels name='label' toName='image'>"
              "<Label value='Text'/><Label value='Handwriting'/></Labels>"
              "<Rectangle name='bbox' toName='image'/><Polygon name='poly' toName='image'/></View>")
    assert parse_config(config).controls["label"].kind == "polygons"
    rect = {"id": "r", "from_name": "label", "to_name": "image", "type": "labels", "original_width": 100,
            "original_height": 200, "value": {"x": 10, "y": 10, "width": 20, "height": 10, "rotation": 0,
                                              "labels": ["Text"]}}
    poly = {"id": "p", "from_name": "label", "to_name": "image", "type": "labels", "original_width": 100,
            "original_height": 200, "value": {"points": [[50, 50], [60, 50], [60, 60]], "closed": True,
                                              "labels": ["Handwriting"]}}
    out = adapt(config, [_task(1, {"ocr": "i.jpg"}, [[rect, poly], [rect]])], strict=True)
    first = out.controls["label"].table["value"][0]
    assert first[0] == Polygon(((10.0, 20.0), (30.0, 20.0), (30.0, 40.0), (10.0, 40.0)), "Text")
    assert first[1] == Polygon(((50.0, 100.0), (60.0, 100.0), (60.0, 120.0)), "Handwriting")
    assert not [w for w in out.warnings if "value.x" in w]


def test_chat_is_said_once_and_its_messages_are_not_results_of_an_unknown_control():
    config = ("<View><Chat name='chat' value='$chat' editable='true'/>"
              "<Choices name='answered' toName='chat'><Choice value='Yes'/><Choice value='No'/></Choices></View>")
    cfg = parse_config(config)
    said = [w for w in cfg.warnings if "Chat 'chat'" in w]
    assert len(said) == 1 and "not measured" in said[0]
    msg = {"id": "m", "from_name": "chat", "to_name": "chat", "type": "chatmessage",
           "value": {"chatmessage": {"role": "user", "content": "hi"}}}
    ans = {"id": "a", "from_name": "answered", "to_name": "chat", "type": "choices", "value": {"choices": ["Yes"]}}
    out = adapt(config, [_task(1, {"chat": []}, [[msg, ans], [msg, ans]])], strict=True)
    assert len(out.controls["answered"].table) == 2
    assert [w for w in out.warnings if "chat" in w.lower()] == said


def test_a_valid_config_with_nothing_measured_says_so():
    with pytest.raises(Unmeasured) as info:
        parse_config("<View><Text name='t' value='$t'/><Chat name='chat' value='$chat' toName='chat'/></View>")
    assert "no measurable control" in str(info.value) and "invalid" not in str(info.value)
    assert info.value.exit_code == 2


def test_several_textarea_results_are_said_to_be_joined():
    config = "<View><Text name='t' value='$t'/><TextArea name='note' toName='t'/></View>"
    two = [{"id": str(k), "from_name": "note", "to_name": "t", "type": "textarea", "value": {"text": [s]}}
           for k, s in enumerate(("first", "second"))]
    out = adapt(config, [_task(1, {"t": "x"}, [two, two[:1]])])
    assert out.controls["note"].table["value"][0] == "first\nsecond"
    said = [w for w in out.warnings if "single-valued control 'note'" in w]
    assert said and "joined" in said[0] and "the last one counts" not in said[0]


def test_dynamic_choices_agreement_runs_through_the_options():
    config = "<View><Text name='t' value='$t'/><Choices name='c' toName='t' value='$opts'/></View>"
    tasks = []
    for t in range(1, 9):
        opts = [{"value": f"{t}-{q}"} for q in range(3)]
        tasks.append(_task(t, {"t": "x", "opts": opts},
                           [[{"from_name": "c", "to_name": "t", "type": "choices",
                              "value": {"choices": [opts[(t + a) % 3]["value"]]}}] for a in range(3)]))
    table = adapt(config, tasks).controls["c"].table
    assert table["options"][0] == ("1-0", "1-1", "1-2")
    # each annotator gives a different option on every task: full disagreement, below chance
    assert agreement(table, "nominal", bootstrap=0).alpha < 0


def test_no_variation_says_when_results_were_skipped():
    """Results the adapter cannot read leave empty answers: the control is not called
    "no variation" without saying that its results were skipped."""
    from ls_agreement.plugin.report.build import control_report
    from ls_agreement.plugin.settings import ReportSettings

    config = ("<View><Text name='t' value='$t'/><Choices name='c' toName='t' choice='multiple'>"
              "<Choice value='a'/><Choice value='b'/></Choices></View>")
    bad = [{"from_name": "c", "to_name": "t", "type": "choices", "value": {"choices": [{"not": "a choice"}]}}]
    out = adapt(config, [_task(t, {"t": "x"}, [bad] * 3) for t in range(1, 6)])
    ctl = out.controls["c"]
    assert ctl.warnings == ["15 of 15 results of this control could not be read and were skipped (the warnings "
                            "name each); the answers left are measured"]
    entry = control_report(ctl, ReportSettings(bootstrap=0))
    assert entry.status == "no_variation"
    assert entry.reason.endswith("but 15 of 15 results of this control could not be read and were skipped, so "
                                 "the answers left may not show what the export holds")
