"""Regenerate the hostile-input corpus (small files + manifest.json).

Each case is one distinct mistake a real export, API answer or labeling config can carry:
wrong types for every field of task / annotation / result / value per control kind, huge
numbers, NaN/inf, deep nesting, huge declared sizes, config mistakes, encodings, duplicates,
ids of mixed types. Most are one task (id 1, annotation id 10, annotator 4) with one defect.

``manifest.json`` says, per case:

- ``level``: ``file`` (unreadable: a clear exit-2 error in both modes), ``task`` (a bad
  task/annotation/result), ``config`` (a bad labeling config), ``tolerated`` (odd but
  readable: both modes exit 0, e.g. a byte-order mark, a 3,000-deep taxonomy);
- ``fragment``: what the error (strict) and the warning (lenient) must contain;
- ``task_id`` / ``annotation_id`` / ``field``: the place the strict error must name (and
  the lenient warning too);
- ``lenient``: ``raise`` (refused in both modes), ``warn`` (config: a warning), or a
  fragment of the warning when the value is kept (``(kept)``) instead of skipped;
- ``export`` / ``config`` / ``args``: another export or config than the defaults (the real
  14-control config of ../shared/data/label-studio), extra command-line options.

Run: python tests/adapters/broken/make_corpus.py   (the case list grows here, never by hand)
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).parent
TEXT = "Alice works at Acme Corp in Paris."


def task(results, **over):
    t = {"id": 1, "data": {"image": "x.jpg", "text": TEXT, "items": [{"id": "a"}, {"id": "b"}],
                           "left": "L", "right": "R"},
         "annotations": [{"id": 10, "completed_by": 4, "result": results, "was_cancelled": False,
                          "ground_truth": False, "created_at": "2024-01-01T00:00:00Z",
                          "updated_at": "2024-01-01T00:00:00Z"}],
         "predictions": [], "drafts": []}
    t.update(over)
    return t


def rect(**value):
    v = {"x": 10.0, "y": 20.0, "width": 30.0, "height": 25.0, "rotation": 0, "rectanglelabels": ["Cat"]}
    v.update(value)
    return {"id": "r1", "from_name": "bbox", "to_name": "image", "type": "rectanglelabels",
            "original_width": 640, "original_height": 480, "value": v}


def res(from_name, type_, value, to_name="text", **extra):
    r = {"id": "x1", "from_name": from_name, "to_name": to_name, "type": type_, "value": value}
    r.update(extra)
    return r


def without(d, key):
    d = copy.deepcopy(d)
    d["value"].pop(key)
    return d


F = "result[0]"
CASES = [
    # name, content (python object or raw text), fragment, expectations
    ("malformed_json", "[{\"id\": 1, \"annotations\": [", "not valid JSON", {"level": "file"}),
    ("empty_file", "", "not valid JSON", {"level": "file"}),
    ("top_level_number", "42", "expected a list of tasks", {"level": "file"}),
    ("top_level_object", {"foo": 1}, "expected a list of tasks", {"level": "file"}),
    ("json_min", [{"id": 1, "annotator": 4, "annotation_id": 10, "bbox": []}], "JSON_MIN", {"level": "file"}),
    ("csv_text", "id,annotator,bbox\n1,4,[]\n", "CSV", {"level": "file"}),
    ("task_not_object", [1], "a task must be an object", {"field": "tasks[0]"}),
    ("task_without_id", [{"data": {}, "annotations": []}], "task id missing", {"field": "tasks[0].id"}),
    ("task_id_float", [{"id": 1.5, "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
    ("task_id_bool", [{"id": True, "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
    ("duplicate_task_id", [task([rect()]), task([rect()])], "duplicate task id", {"task_id": 1, "field": "id"}),
    ("data_not_object", [task([rect()], data=[1, 2])], "data must be an object", {"task_id": 1, "field": "data"}),
    ("annotations_not_list", [task([], annotations={"id": 10})], "annotations must be a list",
     {"task_id": 1, "field": "annotations"}),
    ("annotation_not_object", [task([], annotations=["oops"])], "annotation must be an object",
     {"task_id": 1, "field": "annotations[0]"}),
    ("completed_by_missing", [task([rect()], annotations=[{"id": 10, "result": [rect()]}])],
     "completed_by must be", {"task_id": 1, "annotation_id": 10, "field": "completed_by"}),
    ("completed_by_empty_dict", [task([], annotations=[{"id": 10, "completed_by": {"first_name": "A"},
                                                        "result": [rect()]}])],
     "neither an id nor an email", {"task_id": 1, "annotation_id": 10, "field": "completed_by"}),
    ("completed_by_list", [task([], annotations=[{"id": 10, "completed_by": [4], "result": []}])],
     "completed_by must be", {"task_id": 1, "annotation_id": 10, "field": "completed_by"}),
    ("result_not_list", [task({"x": 1})], "result must be a list", {"task_id": 1, "annotation_id": 10, "field": "result"}),
    ("result_item_not_object", [task(["bbox"])], "a result must be an object", {"field": F}),
    ("from_name_unknown", [task([res("nope", "choices", {"choices": ["A"]})])],
     "is not a control of the labeling config", {"field": F + ".from_name"}),
    ("from_name_missing", [task([{"type": "choices", "value": {"choices": ["Positive"]}}])],
     "from_name missing", {"field": F + ".from_name"}),
    ("unknown_result_type", [task([res("brushy", "sparklelabels", {"rle": [1, 2]})])],
     "unknown result type", {"field": F + ".type"}),
    ("type_mismatch", [task([res("bbox", "choices", {"choices": ["Cat"]}, to_name="image")])],
     "does not fit control", {"field": F + ".type"}),
    ("value_missing", [task([{"from_name": "bbox", "to_name": "image", "type": "rectanglelabels"}])],
     "missing or not an object", {"field": F + ".value"}),
    ("rect_x_nan", [task([rect(x=float("nan"))])], "not finite", {"field": F + ".value.x"}),
    ("rect_width_inf", [task([rect(width=float("inf"))])], "not finite", {"field": F + ".value.width"}),
    ("rect_negative_width", [task([rect(width=-5.0)])], "negative size", {"field": F + ".value.width"}),
    ("rect_negative_height", [task([rect(height=-0.1)])], "negative size", {"field": F + ".value.height"}),
    ("rect_x_huge", [task([rect(x=1e300)])], "out of range", {"field": F + ".value.x"}),
    ("rect_huge_image", [task([dict(rect(), original_width=1e300)])], "image size",
     {"field": F + ".original_width"}),
    ("rect_x_string", [task([rect(x="10")])], "expected a number", {"field": F + ".value.x"}),
    ("rect_x_missing", [task([without(rect(), "x")])], "missing", {"field": F + ".value.x"}),
    ("rect_rotation_nan", [task([rect(rotation=float("nan"))])], "not finite", {"field": F + ".value.rotation"}),
    ("rect_zero_image_width", [task([dict(rect(), original_width=0)])], "image size",
     {"field": F + ".original_width"}),
    ("rect_labels_not_list", [task([rect(rectanglelabels="Cat")])], "labels must be a list",
     {"field": F + ".value.rectanglelabels"}),
    ("polygon_two_points", [task([res("poly", "polygonlabels", {"points": [[1, 2], [3, 4]]}, to_name="image")])],
     "at least 3 points", {"field": F + ".value.points"}),
    ("polygon_bad_point", [task([res("poly", "polygonlabels", {"points": [[1, 2], [3], [5, 6]]}, to_name="image")])],
     "expected [x, y]", {"field": F + ".value.points[1]"}),
    ("polygon_nan_point", [task([res("poly", "polygonlabels", {"points": [[1, 2], [3, float("nan")], [5, 6]]},
                                     to_name="image")])], "not finite", {"field": F + ".value.points[1]"}),
    ("polygon_points_missing", [task([res("poly", "polygonlabels", {"polygonlabels": ["Region"]}, to_name="image")])],
     "missing or not a list", {"field": F + ".value.points"}),
    ("keypoint_y_missing", [task([res("kp", "keypointlabels", {"x": 5.0, "keypointlabels": ["Nose"]}, to_name="image")])],
     "missing", {"field": F + ".value.y"}),
    ("span_end_before_start", [task([res("ner", "labels", {"start": 10, "end": 4, "labels": ["PER"]})])],
     "before start", {"field": F + ".value.end"}),
    ("span_negative_start", [task([res("ner", "labels", {"start": -1, "end": 4, "labels": ["PER"]})])],
     "negative offset", {"field": F + ".value.start"}),
    ("span_past_text", [task([res("ner", "labels", {"start": 0, "end": 500, "labels": ["PER"]})])],
     "past the end", {"field": F + ".value.end"}),
    ("span_float_offset", [task([res("ner", "labels", {"start": 1.5, "end": 4, "labels": ["PER"]})])],
     "non-negative integer offset", {"field": F + ".value.start"}),
    ("span_start_missing", [task([res("ner", "labels", {"end": 4, "labels": ["PER"]})])],
     "non-negative integer offset", {"field": F + ".value.start"}),
    ("textarea_not_list", [task([res("translation", "textarea", {"text": 5})])], "missing or not a list",
     {"field": F + ".value.text"}),
    ("textarea_int_entry", [task([res("translation", "textarea", {"text": ["ok", 3]})])], "expected a string",
     {"field": F + ".value.text[1]"}),
    ("choices_two_for_single", [task([res("sentiment", "choices", {"choices": ["Positive", "Negative"]})])],
     "exactly one choice", {"field": F + ".value.choices"}),
    ("choices_not_list", [task([res("sentiment", "choices", {"choices": "Positive"})])],
     "missing or not a list of strings", {"field": F + ".value.choices"}),
    ("choice_unknown", [task([res("sentiment", "choices", {"choices": ["Angry"]})])], "not in the config",
     {"field": F + ".value.choices", "lenient": "(kept)"}),
    ("rating_fraction", [task([res("quality", "rating", {"rating": 2.5})])], "must be an integer",
     {"field": F + ".value.rating"}),
    ("rating_string", [task([res("quality", "rating", {"rating": "5"})])], "expected a number",
     {"field": F + ".value.rating"}),
    ("rating_out_of_range", [task([res("quality", "rating", {"rating": 9})])], "outside 1..5",
     {"field": F + ".value.rating", "lenient": "(kept)"}),
    ("number_nan", [task([res("confidence", "number", {"number": float("nan")})])], "not finite",
     {"field": F + ".value.number"}),
    ("number_bool", [task([res("confidence", "number", {"number": True})])], "expected a number",
     {"field": F + ".value.number"}),
    ("datetime_garbage", [task([res("event_date", "datetime", {"datetime": "yesterday"})])],
     "unparsable date", {"field": F + ".value.datetime"}),
    ("datetime_missing", [task([res("event_date", "datetime", {})])], "missing", {"field": F + ".value.datetime"}),
    ("taxonomy_empty_path", [task([res("taxonomy", "taxonomy", {"taxonomy": [[]]})])], "non-empty list",
     {"field": F + ".value.taxonomy[0]"}),
    ("taxonomy_unknown_path", [task([res("taxonomy", "taxonomy", {"taxonomy": [["Fungi"]]})])],
     "not in the config's taxonomy", {"field": F + ".value.taxonomy", "lenient": "(kept)"}),
    ("ranker_not_object", [task([res("rank", "ranker", {"ranker": ["a", "b"]}, to_name="items")])],
     "missing or not an object", {"field": F + ".value.ranker"}),
    ("ranker_duplicate_item", [task([res("rank", "ranker", {"ranker": {"rank": ["a", "a"]}}, to_name="items")])],
     "more than once", {"field": F + ".value.ranker"}),
    ("ranker_unknown_bucket", [task([res("rank_buckets", "ranker", {"ranker": {"maybe": ["a"]}}, to_name="items2")])],
     "unknown bucket", {"field": F + ".value.ranker"}),
    ("ranker_unknown_item", [task([res("rank", "ranker", {"ranker": {"rank": ["a", "zz"]}}, to_name="items")])],
     "not in the task's list", {"field": F + ".value.ranker", "lenient": "(kept)"}),
    ("pairwise_bad_side", [task([res("pw", "pairwise", {"selected": "middle"}, to_name="pw")])],
     "expected 'left' or 'right'", {"field": F + ".value.selected"}),
    ("two_results_single_control", [task([res("quality", "rating", {"rating": 2}), res("quality", "rating", {"rating": 3})])],
     "results for single-valued control", {"field": "result", "lenient": "the last one counts"}),
]

CONFIG_CASES = [
    ("config_not_xml", "<View><Image name='i' value='$i'>", "not well-formed XML"),
    ("config_unknown_object", "<View><Choices name='c' toName='nothing'><Choice value='A'/></Choices></View>",
     "unknown object"),
    ("config_duplicate_control", "<View><Text name='t' value='$t'/><TextArea name='c' toName='t'/>"
     "<TextArea name='c' toName='t'/></View>", "two control tags"),
    ("config_no_controls", "<View><Text name='t' value='$t'/></View>", "no measurable control"),
    ("config_unknown_tag", "<View><Text name='t' value='$t'/><Sparkles name='s' toName='t'/>"
     "<TextArea name='c' toName='t'/></View>", "unknown control tag"),
    ("config_without_name", "<View><Text name='t' value='$t'/><TextArea toName='t'/></View>",
     "without a name"),
]


def main() -> None:
    for old in HERE.iterdir():   # the corpus is regenerated whole: no stale case survives
        if old.suffix in (".json", ".xml", ".csv", ".tsv", ".txt") and old.name != "manifest.json":
            old.unlink()
    manifest = []
    for name, content, fragment, exp in CASES + generated_cases():
        suffix = exp.get("suffix") or (".csv" if name == "csv_text" else ".json")
        path = HERE / f"{name}{suffix}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            text = content if isinstance(content, str) else json.dumps(content, indent=1)
            path.write_text(text, encoding="utf-8")
        entry = {"file": path.name, "fragment": fragment, "level": exp.get("level", "task")}
        for k in ("field", "lenient", "config", "export", "args", "n_tasks", "warning"):
            if k in exp:
                entry[k] = exp[k]
        if entry["level"] == "task" and "task_id" not in exp and not exp.get("field", "").startswith("tasks["):
            entry["task_id"] = 1
        elif "task_id" in exp:
            entry["task_id"] = exp["task_id"]
        if "annotation_id" in exp:
            entry["annotation_id"] = exp["annotation_id"]
        elif entry.get("field", "").startswith("result") and entry["level"] == "task":
            entry["annotation_id"] = 10
        manifest.append(entry)
    for name, xml, fragment, *rest in CONFIG_CASES + generated_config_cases():
        exp = rest[0] if rest else {}
        (HERE / f"{name}.xml").write_text(xml, encoding="utf-8")
        entry = {"file": f"{name}.xml", "fragment": fragment, "level": exp.get("level", "config"),
                 "lenient": exp.get("lenient", "warn" if name == "config_unknown_tag" else "raise")}
        for k in ("field", "export", "n_tasks", "warning"):
            if k in exp:
                entry[k] = exp[k]
        if entry["level"] == "tolerated":
            entry.pop("lenient")
        manifest.append(entry)
    for name, content in SUPPORT.items():
        (HERE / name).write_text(content if isinstance(content, str) else json.dumps(content, indent=1),
                                 encoding="utf-8")
    names = [e["file"] for e in manifest]
    assert len(names) == len(set(names)), "case names must be unique"
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(manifest)} cases")


# --------------------------------------------------------------------------------------
# Generated cases: one mistake each, per field, type and control kind.

DELETE = object()


def mutate(result: dict, path: tuple, new) -> dict:
    """A copy of ``result`` with the field at ``path`` replaced (or deleted)."""
    r = copy.deepcopy(result)
    node = r
    for key in path[:-1]:
        node = node[key]
    if new is DELETE:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = new
    return r


GOOD = {   # one valid result per control of the real config
    "bbox": rect(),
    "kp": res("kp", "keypointlabels", {"x": 5.0, "y": 6.0, "keypointlabels": ["Nose"]}, to_name="image",
              original_width=640, original_height=480),
    "poly": res("poly", "polygonlabels", {"points": [[1, 2], [30, 4], [5, 60]], "polygonlabels": ["Region"]},
                to_name="image"),
    "ner": res("ner", "labels", {"start": 0, "end": 5, "text": "Alice", "labels": ["PER"]}),
    "translation": res("translation", "textarea", {"text": ["Alice travaille"]}),
    "sentiment": res("sentiment", "choices", {"choices": ["Positive"]}),
    "topics": res("topics", "choices", {"choices": ["Sports"]}),
    "quality": res("quality", "rating", {"rating": 3}),
    "confidence": res("confidence", "number", {"number": 50}),
    "taxonomy": res("taxonomy", "taxonomy", {"taxonomy": [["Animal", "Mammal"]]}),
    "event_date": res("event_date", "datetime", {"datetime": "2024-05-01"}),
    "rank": res("rank", "ranker", {"ranker": {"rank": ["a", "b"]}}, to_name="items"),
    "rank_buckets": res("rank_buckets", "ranker", {"ranker": {"relevant": ["a"], "irrelevant": ["b"]}},
                        to_name="items2"),
    "pw": res("pw", "pairwise", {"selected": "left"}, to_name="pw"),
}
NAN, INF, HUGE = float("nan"), float("inf"), 10 ** 400
KEPT = "(kept)"

# control, case name, path in the result, bad value, fragment, field (relative to result[0]), lenient
VALUE_CASES = [
    # rectangles
    ("bbox", "rect_y_bool", ("value", "y"), True, "expected a number", "value.y", None),
    ("bbox", "rect_height_null", ("value", "height"), None, "expected a number", "value.height", None),
    ("bbox", "rect_width_list", ("value", "width"), [30], "expected a number", "value.width", None),
    ("bbox", "rect_x_object", ("value", "x"), {"v": 1}, "expected a number", "value.x", None),
    ("bbox", "rect_x_nan_string", ("value", "x"), "NaN", "expected a number", "value.x", None),
    ("bbox", "rect_y_minus_inf", ("value", "y"), -INF, "not finite", "value.y", None),
    ("bbox", "rect_height_400_digits", ("value", "height"), HUGE, "out of range", "value.height", None),
    ("bbox", "rect_rotation_string", ("value", "rotation"), "45", "expected a number", "value.rotation", None),
    ("bbox", "rect_rotation_400_digits", ("value", "rotation"), -HUGE, "out of range", "value.rotation", None),
    ("bbox", "rect_label_not_string", ("value", "rectanglelabels"), [1], "a label must be a string",
     "value.rectanglelabels[0]", None),
    ("bbox", "rect_label_undeclared", ("value", "rectanglelabels"), ["Truck"], "not in the config",
     "value.rectanglelabels", KEPT),
    ("bbox", "rect_height_missing", ("value", "height"), DELETE, "missing", "value.height", None),
    ("bbox", "rect_image_height_string", ("original_height",), "480", "image size", "original_height", None),
    ("bbox", "rect_image_width_negative", ("original_width",), -640, "image size", "original_width", None),
    ("bbox", "rect_image_width_nan", ("original_width",), NAN, "image size", "original_width", None),
    ("bbox", "rect_image_width_400_digits", ("original_width",), HUGE, "image size", "original_width", None),
    ("bbox", "rect_image_height_bool", ("original_height",), True, "image size", "original_height", None),
    ("bbox", "rect_image_width_huge_declared", ("original_width",), 10 ** 8, "image size", "original_width", None),
    # generic "labels" key instead of "rectanglelabels", with an undeclared label
    ("bbox", "rect_generic_labels_undeclared", ("value", "rectanglelabels"), DELETE, "not in the config",
     "value.labels", KEPT),
    # key points
    ("kp", "keypoint_x_nan", ("value", "x"), NAN, "not finite", "value.x", None),
    ("kp", "keypoint_x_string", ("value", "x"), "5", "expected a number", "value.x", None),
    ("kp", "keypoint_y_huge_float", ("value", "y"), 1e300, "out of range", "value.y", None),
    ("kp", "keypoint_label_undeclared", ("value", "keypointlabels"), ["Tail"], "not in the config",
     "value.keypointlabels", KEPT),
    ("kp", "keypoint_labels_string", ("value", "keypointlabels"), "Nose", "labels must be a list",
     "value.keypointlabels", None),
    # polygons
    ("poly", "polygon_points_object", ("value", "points"), {"0": [1, 2]}, "missing or not a list", "value.points", None),
    ("poly", "polygon_points_string", ("value", "points"), "1,2 3,4 5,6", "missing or not a list", "value.points", None),
    ("poly", "polygon_points_null", ("value", "points"), None, "missing or not a list", "value.points", None),
    ("poly", "polygon_point_three_coords", ("value", "points"), [[1, 2, 3], [3, 4], [5, 6]], "expected [x, y]",
     "value.points[0]", None),
    ("poly", "polygon_point_strings", ("value", "points"), [[1, 2], ["3", "4"], [5, 6]], "expected a number",
     "value.points[1]", None),
    ("poly", "polygon_point_inf", ("value", "points"), [[1, 2], [3, 4], [INF, 6]], "not finite",
     "value.points[2]", None),
    ("poly", "polygon_point_400_digits", ("value", "points"), [[HUGE, 2], [3, 4], [5, 6]], "out of range",
     "value.points[0]", None),
    ("poly", "polygon_point_object", ("value", "points"), [{"x": 1, "y": 2}, [3, 4], [5, 6]], "expected [x, y]",
     "value.points[0]", None),
    ("poly", "polygon_points_all_equal", ("value", "points"), [[1, 2], [1, 2], [1, 2], [1, 2]],
     "distinct points", "value.points", None),
    ("poly", "polygon_label_undeclared", ("value", "polygonlabels"), ["Lake"], "not in the config",
     "value.polygonlabels", KEPT),
    # text spans (Labels on Text)
    ("ner", "span_start_string", ("value", "start"), "0", "non-negative integer offset", "value.start", None),
    ("ner", "span_end_null", ("value", "end"), None, "non-negative integer offset", "value.end", None),
    ("ner", "span_end_400_digits", ("value", "end"), HUGE, "out of range", "value.end", None),
    ("ner", "span_start_nan", ("value", "start"), NAN, "non-negative integer offset", "value.start", None),
    ("ner", "span_start_bool", ("value", "start"), True, "non-negative integer offset", "value.start", None),
    ("ner", "span_end_list", ("value", "end"), [5], "non-negative integer offset", "value.end", None),
    ("ner", "span_label_undeclared", ("value", "labels"), ["MISC"], "not in the config", "value.labels", KEPT),
    ("ner", "span_label_nested_list", ("value", "labels"), [["PER"]], "a label must be a string",
     "value.labels[0]", None),
    ("ner", "span_labels_string", ("value", "labels"), "PER", "labels must be a list", "value.labels", None),
    # TextArea
    ("translation", "textarea_text_object", ("value", "text"), {"0": "hi"}, "missing or not a list", "value.text", None),
    ("translation", "textarea_text_null_entry", ("value", "text"), [None], "expected a string", "value.text[0]", None),
    ("translation", "textarea_text_missing", ("value", "text"), DELETE, "missing or not a list", "value.text", None),
    ("translation", "textarea_text_nested", ("value", "text"), ["ok", ["nested"]], "expected a string",
     "value.text[1]", None),
    # Choices, single and multiple
    ("sentiment", "choices_empty_for_single", ("value", "choices"), [], "exactly one choice", "value.choices", None),
    ("sentiment", "choices_int_entry", ("value", "choices"), [1], "expected a string", "value.choices[0]", None),
    ("sentiment", "choices_null", ("value", "choices"), None, "missing or not a list", "value.choices", None),
    ("sentiment", "choices_case_differs", ("value", "choices"), ["positive"], "not in the config",
     "value.choices", KEPT),
    ("topics", "multi_choice_undeclared", ("value", "choices"), ["Sports", "Cooking"], "not in the config",
     "value.choices", KEPT),
    ("topics", "multi_choices_object", ("value", "choices"), {"Sports": True}, "missing or not a list",
     "value.choices", None),
    ("topics", "multi_choices_null_entry", ("value", "choices"), ["Sports", None], "expected a string",
     "value.choices[1]", None),
    # Rating
    ("quality", "rating_null", ("value", "rating"), None, "missing", "value.rating", None),
    ("quality", "rating_nan", ("value", "rating"), NAN, "not finite", "value.rating", None),
    ("quality", "rating_zero", ("value", "rating"), 0, "outside 1..5", "value.rating", KEPT),
    ("quality", "rating_400_digits", ("value", "rating"), HUGE, "too large", "value.rating", None),
    ("quality", "rating_list", ("value", "rating"), [5], "expected a number", "value.rating", None),
    ("quality", "rating_bool", ("value", "rating"), True, "expected a number", "value.rating", None),
    # Number
    ("confidence", "number_400_digits", ("value", "number"), HUGE, "too large", "value.number", None),
    ("confidence", "number_string", ("value", "number"), "12", "expected a number", "value.number", None),
    ("confidence", "number_inf", ("value", "number"), INF, "not finite", "value.number", None),
    ("confidence", "number_huge_float", ("value", "number"), 1e300, "too large", "value.number", None),
    ("confidence", "number_above_max", ("value", "number"), 150, "outside the config's range", "value.number", KEPT),
    ("confidence", "number_missing", ("value", "number"), DELETE, "missing", "value.number", None),
    ("confidence", "number_nan_string", ("value", "number"), "NaN", "expected a number", "value.number", None),
    # DateTime
    ("event_date", "datetime_int", ("value", "datetime"), 20240101, "expected a date string", "value.datetime", None),
    ("event_date", "datetime_feb_30", ("value", "datetime"), "2024-02-30", "unparsable date", "value.datetime", None),
    ("event_date", "datetime_empty", ("value", "datetime"), "", "unparsable date", "value.datetime", None),
    ("event_date", "datetime_hour_25", ("value", "datetime"), "2024-01-01T25:00", "unparsable date",
     "value.datetime", None),
    ("event_date", "datetime_megabyte", ("value", "datetime"), "2024" * 50_000, "not a date/time",
     "value.datetime", None),
    ("event_date", "datetime_list", ("value", "datetime"), ["2024-01-01"], "expected a date string",
     "value.datetime", None),
    ("event_date", "datetime_nan_string", ("value", "datetime"), "NaN", "unparsable date", "value.datetime", None),
    # Taxonomy
    ("taxonomy", "taxonomy_string", ("value", "taxonomy"), "Animal", "missing or not a list", "value.taxonomy", None),
    ("taxonomy", "taxonomy_int_level", ("value", "taxonomy"), [[1]], "non-empty list of strings",
     "value.taxonomy[0]", None),
    ("taxonomy", "taxonomy_null_path", ("value", "taxonomy"), [["Plant"], None], "non-empty list of strings",
     "value.taxonomy[1]", None),
    ("taxonomy", "taxonomy_unknown_branch", ("value", "taxonomy"), [["Animal", "Fish"]], "not in the config",
     "value.taxonomy", KEPT),
    ("taxonomy", "taxonomy_skipped_level", ("value", "taxonomy"), [["Mammal"]], "not in the config",
     "value.taxonomy", KEPT),
    ("taxonomy", "taxonomy_too_deep", ("value", "taxonomy"), [["Animal", "Mammal", "Cat"]], "not in the config",
     "value.taxonomy", KEPT),
    # Ranker, plain and with buckets
    ("rank", "ranker_list_string", ("value", "ranker", "rank"), "a,b", "expected a list of item ids",
     "value.ranker.rank", None),
    ("rank", "ranker_float_id", ("value", "ranker", "rank"), [1.5], "item id must be a string or an int",
     "value.ranker.rank[0]", None),
    ("rank", "ranker_no_key_for_control", ("value", "ranker"), {"x": ["a"], "y": ["b"]}, "no ranking under",
     "value.ranker", None),
    ("rank", "ranker_null", ("value", "ranker"), None, "missing or not an object", "value.ranker", None),
    ("rank", "ranker_null_id", ("value", "ranker", "rank"), ["a", None], "item id must be a string or an int",
     "value.ranker.rank[1]", None),
    ("rank_buckets", "bucket_list_string", ("value", "ranker", "relevant"), "a", "expected a list of item ids",
     "value.ranker.relevant", None),
    ("rank_buckets", "bucket_item_twice", ("value", "ranker", "irrelevant"), ["a"], "more than once",
     "value.ranker", None),
    ("rank_buckets", "bucket_unknown_item", ("value", "ranker", "relevant"), ["zz"], "not in the task's list",
     "value.ranker", KEPT),
    ("rank_buckets", "bucket_object_item", ("value", "ranker", "_"), [{"id": "a"}], "item id must be",
     "value.ranker._[0]", None),
    # Pairwise
    ("pw", "pairwise_selected_null", ("value", "selected"), None, "expected 'left' or 'right'", "value.selected", None),
    ("pw", "pairwise_selected_int", ("value", "selected"), 1, "expected 'left' or 'right'", "value.selected", None),
    ("pw", "pairwise_nested_bad", ("value",), {"pairwise": {"selected": 5}}, "expected 'left' or 'right'",
     "value.pairwise.selected", None),
    ("pw", "pairwise_nested_string", ("value",), {"pairwise": "sideways"}, "expected 'left' or 'right'",
     "value.pairwise", None),
]

# result-level mistakes: name, result (or results), fragment, field
RESULT_CASES = [
    ("result_type_list", [mutate(GOOD["quality"], ("type",), ["rating"])], "does not fit control", "result[0].type"),
    ("result_type_of_other_control", [mutate(GOOD["ner"], ("type",), "rectanglelabels")], "does not fit control",
     "result[0].type"),
    ("from_name_list", [mutate(GOOD["quality"], ("from_name",), ["quality"])], "from_name missing or not a string",
     "result[0].from_name"),
    ("from_name_object", [mutate(GOOD["quality"], ("from_name",), {"name": "quality"})],
     "from_name missing or not a string", "result[0].from_name"),
    ("from_name_int", [mutate(GOOD["quality"], ("from_name",), 7)], "from_name missing or not a string",
     "result[0].from_name"),
    ("from_name_empty", [mutate(GOOD["quality"], ("from_name",), "")], "is not a control of the labeling config",
     "result[0].from_name"),
    ("from_name_wrong_case", [mutate(GOOD["quality"], ("from_name",), "Quality")],
     "is not a control of the labeling config", "result[0].from_name"),
    ("to_name_other_object", [mutate(GOOD["quality"], ("to_name",), "image")], "is not the object of control",
     "result[0].to_name"),
    ("to_name_list", [mutate(GOOD["bbox"], ("to_name",), ["image"])], "is not the object of control",
     "result[0].to_name"),
    ("value_string", [mutate(GOOD["quality"], ("value",), "3")], "missing or not an object", "result[0].value"),
    ("value_list", [mutate(GOOD["bbox"], ("value",), [10, 20, 30, 25])], "missing or not an object",
     "result[0].value"),
    ("value_null", [mutate(GOOD["sentiment"], ("value",), None)], "missing or not an object", "result[0].value"),
    ("result_item_null", [None], "a result must be an object", "result[0]"),
    ("result_item_list", [[GOOD["quality"]]], "a result must be an object", "result[0]"),
    ("two_choices_results_single", [GOOD["sentiment"], mutate(GOOD["sentiment"], ("value", "choices"), ["Negative"])],
     "results for single-valued control", "result"),
]


def generated_cases() -> list:
    out = []
    for control, name, path, bad, fragment, field, lenient in VALUE_CASES:
        result = mutate(GOOD[control], path, bad)
        if name == "rect_generic_labels_undeclared":
            result["value"]["labels"] = ["Truck"]
        exp = {"field": F + "." + field}
        if lenient:
            exp["lenient"] = lenient
        out.append((name, [task([result])], fragment, exp))
    for name, results, fragment, field in RESULT_CASES:
        exp = {"field": field}
        if name == "two_choices_results_single":
            exp["lenient"] = "the last one counts"
        out.append((name, [task(results)], fragment, exp))
    out += annotation_cases() + task_cases() + file_cases() + hypertext_cases() + tolerated_cases()
    return out


def ann(**over) -> dict:
    a = {"id": 10, "completed_by": 4, "result": [GOOD["quality"]], "was_cancelled": False,
         "ground_truth": False, "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"}
    a.update(over)
    return a


def annotation_cases() -> list:
    A = {"task_id": 1, "annotation_id": 10}
    return [
        ("completed_by_bool", [task([], annotations=[ann(completed_by=True)])], "completed_by must be",
         dict(A, field="completed_by")),
        ("completed_by_fraction", [task([], annotations=[ann(completed_by=4.5)])], "completed_by must be",
         dict(A, field="completed_by")),
        ("completed_by_empty_string", [task([], annotations=[ann(completed_by="")])], "completed_by must be",
         dict(A, field="completed_by")),
        ("completed_by_400_digits", [task([], annotations=[ann(completed_by=HUGE)])], "not a user id",
         dict(A, field="completed_by")),
        ("completed_by_id_list", [task([], annotations=[ann(completed_by={"id": [4], "email": "a@x.org"})])],
         "not a user id", dict(A, field="completed_by")),
        ("completed_by_nan", [task([], annotations=[ann(completed_by=NAN)])], "completed_by must be",
         dict(A, field="completed_by")),
        ("annotation_id_list", [task([], annotations=[ann(id=[10])])], "annotation id must be",
         {"task_id": 1, "field": "annotations[0].id"}),
        ("annotation_id_object", [task([], annotations=[ann(id={"pk": 10})])], "annotation id must be",
         {"task_id": 1, "field": "annotations[0].id"}),
        ("annotation_id_bool", [task([], annotations=[ann(id=True)])], "annotation id must be",
         {"task_id": 1, "field": "annotations[0].id"}),
        ("annotation_id_float", [task([], annotations=[ann(id=10.5)])], "annotation id must be",
         {"task_id": 1, "field": "annotations[0].id"}),
        ("annotation_id_400_digits", [task([], annotations=[ann(id=HUGE)])], "annotation id must be",
         {"task_id": 1, "field": "annotations[0].id"}),
        ("annotation_id_duplicate", [task([], annotations=[ann(), ann(completed_by=5)])], "duplicate annotation id",
         dict(A, field="annotations[1].id")),
        ("was_cancelled_string", [task([], annotations=[ann(was_cancelled="true")])], "was_cancelled must be",
         dict(A, field="was_cancelled")),
        ("was_cancelled_int", [task([], annotations=[ann(was_cancelled=1)])], "was_cancelled must be",
         dict(A, field="was_cancelled")),
        ("ground_truth_string", [task([], annotations=[ann(ground_truth="yes")])], "ground_truth must be",
         dict(A, field="ground_truth", lenient="taken as false")),
        ("updated_at_garbage", [task([], annotations=[ann(updated_at="yesterday")])], "unusable timestamp",
         dict(A, field="updated_at", lenient="ignored when choosing")),
        ("updated_at_400_digits", [task([], annotations=[ann(updated_at=HUGE)])], "unusable timestamp",
         dict(A, field="updated_at", lenient="ignored when choosing")),
        ("updated_at_list", [task([], annotations=[ann(updated_at=["2024-01-01"])])], "unusable timestamp",
         dict(A, field="updated_at", lenient="ignored when choosing")),
        ("created_at_month_13", [task([], annotations=[ann(created_at="2024-13-01T00:00:00Z")])],
         "unusable timestamp", dict(A, field="created_at", lenient="ignored when choosing")),
        ("updated_at_nan", [task([], annotations=[ann(updated_at=NAN)])], "unusable timestamp",
         dict(A, field="updated_at", lenient="ignored when choosing")),
        ("result_null", [task([], annotations=[ann(result=None)])], "result must be a list",
         dict(A, field="result")),
        ("result_string", [task([], annotations=[ann(result="[]")])], "result must be a list",
         dict(A, field="result")),
        ("result_for_control_without_data", [task([GOOD["translation"]], data={"image": "x.jpg"})],
         "the task's data lacks", dict(A, field="result[0].from_name", lenient="ignored")),
        ("prediction_model_version_object",
         [task([], predictions=[{"id": 7, "model_version": {"v": 1}, "result": [GOOD["quality"]]}])],
         "model_version must be", {"task_id": 1, "annotation_id": 7, "field": "predictions[0].model_version",
                                   "args": ["--include-predictions"]}),
        ("prediction_result_object",
         [task([], predictions=[{"id": 7, "model_version": "m1", "result": {"quality": 3}}])],
         "prediction result must be a list", {"task_id": 1, "annotation_id": 7, "field": "predictions[0].result",
                                             "args": ["--include-predictions"]}),
        ("predictions_object", [task([], predictions={"id": 7})], "predictions must be a list",
         {"task_id": 1, "field": "predictions", "args": ["--include-predictions"]}),
    ]


def task_cases() -> list:
    return [
        ("task_id_null", [{"id": None, "data": {}, "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
        ("task_id_list", [{"id": [1], "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
        ("task_id_object", [{"id": {"pk": 1}, "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
        ("task_id_empty_string", [{"id": "", "annotations": []}], "task id missing or not", {"field": "tasks[0].id"}),
        ("task_id_400_digits", [{"id": HUGE, "annotations": []}], "out of range", {"field": "tasks[0].id"}),
        ("task_id_int_and_string", [task([GOOD["quality"]]), task([GOOD["quality"]], id="1")],
         "differ only in type", {"task_id": "1", "field": "tasks[1].id", "lenient": "raise"}),
        ("task_null", [task([GOOD["quality"]]), None], "a task must be an object", {"field": "tasks[1]"}),
        ("task_string", ["task 1"], "a task must be an object", {"field": "tasks[0]"}),
        ("task_list", [[task([GOOD["quality"]])]], "a task must be an object", {"field": "tasks[0]"}),
        ("data_string", [task([GOOD["quality"]], data="Alice works")], "data must be an object",
         {"task_id": 1, "field": "data"}),
        ("annotations_string", [task([], annotations="none")], "annotations must be a list",
         {"task_id": 1, "field": "annotations"}),
        ("annotations_number", [task([], annotations=3)], "annotations must be a list",
         {"task_id": 1, "field": "annotations"}),
        ("annotation_null", [task([], annotations=[None])], "annotation must be an object",
         {"task_id": 1, "field": "annotations[0]"}),
    ]


def file_cases() -> list:
    one = json.dumps([task([GOOD["quality"]])])
    f = {"level": "file"}
    return [
        ("latin1_bytes", one.replace("Alice", "Al\u00efce").encode("latin-1"), "not UTF-8 text", f),
        ("binary_png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not UTF-8 text", f),
        ("utf8_invalid_in_string", one.encode().replace(b"Alice", b"Al\xff\xfece"), "not UTF-8 text", f),
        ("number_5000_digits", '[{"id": ' + "7" * 5000 + ', "annotations": []}]', "5,000 digits", f),
        ("nested_100k_deep", "[" * 100_000 + "]" * 100_000, "nested too deeply", f),
        ("truncated_json", one[: len(one) // 2], "not valid JSON", f),
        ("trailing_garbage", one + " ]", "not valid JSON", f),
        ("json_lines", "\n".join(json.dumps(t) for t in [task([]), task([], id=2)]), "JSON Lines", f),
        ("top_level_string", '"tasks"', "expected a list of tasks", f),
        ("top_level_null", "null", "expected a list of tasks", f),
        ("whitespace_only", " \n\t\n", "not valid JSON", f),
        ("csv_with_bom", b"\xef\xbb\xbfid,annotator,bbox\n1,4,[]\n", "CSV", f),
        ("tsv_text", "id\tannotator\tsentiment\n1\t4\tPositive\n", "CSV/TSV", f),
        ("xml_instead_of_json", "<View><Text name='t' value='$t'/></View>", "not valid JSON", f),
        ("single_quotes_json", "[{'id': 1, 'annotations': []}]", "not valid JSON", f),
    ]


HYPERTEXT_CONFIG = """<View><HyperText name="html" value="$html"/>
<HyperTextLabels name="hl" toName="html"><Label value="Claim"/><Label value="Evidence"/></HyperTextLabels>
</View>"""


def hypertext_cases() -> list:
    def ht(**value):
        v = {"start": "/p[1]/text()[1]", "end": "/p[1]/text()[1]", "startOffset": 0, "endOffset": 5,
             "globalOffsets": {"start": 0, "end": 5}, "hypertextlabels": ["Claim"]}
        v.update(value)
        t = task([res("hl", "hypertextlabels", v, to_name="html")])
        t["data"] = {"html": "<p>Alice works at Acme.</p>"}
        return [t]

    c = {"config": "_hypertext_config.xml"}
    return [
        ("hypertext_global_offsets_list", ht(globalOffsets=[0, 5]), "expected an object",
         dict(c, field=F + ".value.globalOffsets")),
        ("hypertext_global_start_negative", ht(globalOffsets={"start": -3, "end": 5}), "negative offset",
         dict(c, field=F + ".value.globalOffsets.start")),
        ("hypertext_start_offset_string", ht(globalOffsets=None, startOffset="0"), "non-negative integer offset",
         dict(c, field=F + ".value.startOffset")),
        ("hypertext_across_nodes", ht(globalOffsets=None, end="/p[2]/text()[1]"), "across nodes",
         dict(c, field=F + ".value.start")),
        ("hypertext_label_undeclared", ht(hypertextlabels=["Opinion"]), "not in the config",
         dict(c, field=F + ".value.hypertextlabels", lenient=KEPT)),
        ("hypertext_end_before_start", ht(globalOffsets={"start": 9, "end": 2}), "before start",
         dict(c, field=F + ".value.end")),
    ]


def tolerated_cases() -> list:
    """Odd but readable inputs: both modes exit 0 and read every task."""
    tasks = [task([GOOD["quality"]], id=k) for k in (1, 2)]
    one = json.dumps(tasks, separators=(",", ":"))
    t = {"level": "tolerated", "n_tasks": 2}
    mixed = [task([GOOD["quality"]], id=1), task([GOOD["quality"]], id="a")]
    both = task([GOOD["quality"]])
    both["annotations"].append(dict(both["annotations"][0], id=11, completed_by="4",
                                    updated_at="2024-02-01T00:00:00Z"))
    return [
        ("utf8_bom_one_line", b"\xef\xbb\xbf" + one.encode(), "", t),
        ("utf16_le_bom", one.encode("utf-16"), "", t),
        ("utf16_be_no_bom", one.encode("utf-16-be"), "", t),
        ("utf32_bom", one.encode("utf-32"), "", t),
        ("crlf_pretty_json", json.dumps(tasks, indent=2).replace("\n", "\r\n"), "", t),
        ("task_ids_int_and_text", mixed, "", t),
        ("same_annotator_int_and_string_ids", [both], "several annotations",
         {"level": "tolerated", "n_tasks": 1, "warning": "several annotations"}),
        ("tasks_wrapper_object", {"tasks": tasks}, "", t),
    ]


# --------------------------------------------------------------------------------------
# Config cases: each body sits in a config that also has one good control (``note``), so
# that lenient mode can skip or fix the bad part and still report; the export for them is
# _config_export.json (three tasks, two annotators answering ``note``).

def wrap(body: str) -> str:
    return ('<View><Text name="t" value="$text"/><Image name="img" value="$image"/>'
            '<List name="lst" value="$items"/><Text name="t2" value="$text2"/>'
            f'<TextArea name="note" toName="t"/>{body}</View>')


def _deep_taxonomy(depth: int, leaves: int, level: str = "level") -> str:
    return ("<Taxonomy name='tax' toName='t'>" + f"<Choice value='{level}'>" * depth
            + "".join(f"<Choice value='leaf{k}'/>" for k in range(leaves)) + "</Choice>" * depth + "</Taxonomy>")


def generated_config_cases() -> list:
    def warn(field):
        return {"lenient": "warn", "field": field}

    raise_ = {"lenient": "raise"}
    bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            + "".join(f'<!ENTITY lol{i + 1} "{("&lol%s;" % (i if i else "")) * 10}">' for i in range(9))
            + ']>' + wrap('<TextArea name="x" toName="t" placeholder="&lol9;"/>'))
    return [
        ("config_xml_bomb", bomb, "not well-formed XML", raise_),
        ("config_external_entity", '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
         + wrap('<TextArea name="x" toName="t" placeholder="&x;"/>'), "not well-formed XML", raise_),
        ("config_empty", "", "empty", raise_),
        ("config_json", '{"label_config": "<View/>"}', "not well-formed XML", raise_),
        ("config_duplicate_object", wrap('<Text name="t" value="$other"/>'), "two object tags", raise_),
        ("config_to_name_empty", wrap('<Rating name="r" toName=""/>'), "has no toName", raise_),
        # Label Studio's validator accepts these (a toName naming a control, any maxRating):
        # the control is skipped with a warning, refused in strict mode
        ("config_to_name_is_control", wrap('<Rating name="r" toName="note"/>'), "control tags, not objects",
         warn("config.Rating[name=r].toName")),
        ("config_max_rating_float", wrap('<Rating name="r" toName="t" maxRating="1e8"/>'), "maxRating",
         warn("config.Rating[name=r].maxRating")),
        ("config_max_rating_400_digits", wrap(f'<Rating name="r" toName="t" maxRating="{"9" * 400}"/>'),
         "maxRating", warn("config.Rating[name=r].maxRating")),
        ("config_max_rating_zero", wrap('<Rating name="r" toName="t" maxRating="0"/>'), "maxRating",
         warn("config.Rating[name=r].maxRating")),
        ("config_pairwise_one_object", wrap('<Pairwise name="p" toName="t"/>'), "exactly two objects",
         warn("config.Pairwise[name=p].toName")),
        ("config_pairwise_three_objects", wrap('<Pairwise name="p" toName="t,t2,img"/>'), "exactly two objects",
         warn("config.Pairwise[name=p].toName")),
        ("config_empty_data_key", wrap('<Text name="bad" value="$"/><Choices name="c" toName="bad">'
                                       '<Choice value="A"/></Choices>'), "empty data key",
         warn("config.Text[name=bad].value")),
        ("config_rectangles_on_text", wrap('<RectangleLabels name="r" toName="t"><Label value="A"/>'
                                           '</RectangleLabels>'), "needs an Image object",
         warn("config.RectangleLabels[name=r].toName")),
        ("config_keypoints_on_list", wrap('<KeyPointLabels name="k" toName="lst"><Label value="A"/>'
                                          '</KeyPointLabels>'), "needs an Image object",
         warn("config.KeyPointLabels[name=k].toName")),
        ("config_ranker_on_text", wrap('<Ranker name="rk" toName="t"/>'), "needs a List object",
         warn("config.Ranker[name=rk].toName")),
        ("config_number_min_garbage", wrap('<Number name="n" toName="t" min="abc"/>'), "not a finite number",
         warn("config.Number[name=n].min")),
        ("config_number_max_inf", wrap('<Number name="n" toName="t" max="inf"/>'), "not a finite number",
         warn("config.Number[name=n].max")),
        ("config_number_min_above_max", wrap('<Number name="n" toName="t" min="10" max="1"/>'), "above max",
         warn("config.Number[name=n].min")),
        ("config_bucket_without_name", wrap('<Ranker name="rk" toName="lst"><Bucket title="x"/>'
                                            '<Bucket name="ok"/></Ranker>'), "Bucket without a name",
         warn("config.Ranker[name=rk]")),
        ("config_bucket_twice", wrap('<Ranker name="rk" toName="lst"><Bucket name="x"/><Bucket name="x"/>'
                                     '</Ranker>'), "declared twice", warn("config.Ranker[name=rk]")),
        ("config_bucket_underscore", wrap('<Ranker name="rk" toName="lst"><Bucket name="_"/><Bucket name="ok"/>'
                                          '</Ranker>'), "Bucket named '_'", warn("config.Ranker[name=rk]")),
        ("config_choices_none_declared", wrap('<Choices name="c" toName="t"/>'), "declares no choices",
         warn("config.Choices[name=c]")),
        ("config_labels_none_declared", wrap('<Labels name="l" toName="t"/>'), "declares no labels",
         warn("config.Labels[name=l]")),
        ("config_choice_twice", wrap('<Choices name="c" toName="t"><Choice value="A"/><Choice value="A"/>'
                                     '</Choices>'), "declared twice", warn("config.Choices[name=c]")),
        ("config_label_twice", wrap('<Labels name="l" toName="t"><Label value="A"/><Label value="A"/></Labels>'),
         "declared twice", warn("config.Labels[name=l]")),
        ("config_choice_without_value", wrap('<Choices name="c" toName="t"><Choice/><Choice value="A"/>'
                                             '</Choices>'), "without a value", warn("config.Choices[name=c]")),
        ("config_taxonomy_choice_without_value", wrap('<Taxonomy name="x" toName="t"><Choice value="A">'
                                                      '<Choice/></Choice></Taxonomy>'), "without a value",
         warn("config.Taxonomy[name=x]")),
        ("config_taxonomy_sibling_twice", wrap('<Taxonomy name="x" toName="t"><Choice value="A"/>'
                                               '<Choice value="A"/></Taxonomy>'), "declared twice",
         warn("config.Taxonomy[name=x]")),
        ("config_taxonomy_slash_in_value", wrap('<Taxonomy name="x" toName="t"><Choice value="A/B"/>'
                                                '</Taxonomy>'), "contains '/'", warn("config.Taxonomy[name=x]")),
        ("config_taxonomy_too_large", wrap(_deep_taxonomy(3000, 10)), "Taxonomy too large",
         warn("config.Taxonomy[name=tax]")),
        ("config_choice_mode_typo", wrap('<Choices name="c" toName="t" choice="multi"><Choice value="A"/>'
                                         '</Choices>'), "expected one of single", warn("config.Choices[name=c].choice")),
        ("config_control_named_like_object", wrap('<Choices name="t2" toName="t"><Choice value="A"/></Choices>'),
         "has the name of an object tag", warn("config.Choices[name=t2]")),
        # odd but valid configs: both modes read them
        ("config_utf8_bom", "\ufeff" + wrap(""), "", {"level": "tolerated", "n_tasks": 3}),
        ("config_xml_declaration", '<?xml version="1.0" encoding="UTF-8"?>\n' + wrap(""), "",
         {"level": "tolerated", "n_tasks": 3}),
        ("config_taxonomy_3000_deep", wrap(_deep_taxonomy(3000, 1, "a")), "", {"level": "tolerated", "n_tasks": 3}),
        ("config_view_nested_50k", "<View>" * 50_000 + wrap("") + "</View>" * 50_000, "",
         {"level": "tolerated", "n_tasks": 3}),
        ("config_max_rating_10e8", wrap('<Rating name="r" toName="t" maxRating="100000000"/>'), "",
         {"level": "tolerated", "n_tasks": 3, "export": "_rating_export.json"}),
        ("config_dynamic_choices_and_labels", wrap('<Choices name="dc" toName="t" value="$opts"><Choice value="A"/>'
                                                   '</Choices><Labels name="dl" toName="t" value="$labs"/>'), "",
         {"level": "tolerated", "n_tasks": 3, "export": "_dynamic_export.json"}),
        ("config_choice_alias", wrap('<Choices name="al" toName="t"><Choice value="Positive" alias="pos"/>'
                                     '<Choice value="Negative" alias="neg"/></Choices>'), "",
         {"level": "tolerated", "n_tasks": 3, "export": "_alias_export.json"}),
    ]


def _config_export(results) -> list:
    out = []
    for k in (1, 2, 3):
        anns = [{"id": k * 10 + a, "completed_by": a, "result": results(k, a)} for a in (1, 2)]
        out.append({"id": k, "data": {"text": TEXT, "text2": "other", "image": "x.jpg",
                                      "items": [{"id": "a"}, {"id": "b"}],
                                      "opts": [{"value": "Z"}], "labs": [{"value": "Q"}]},
                    "annotations": anns})
    return out


def _note(k, a):
    return [res("note", "textarea", {"text": [f"note {k} {a % 2}"]}, to_name="t")]


SUPPORT = {
    "_hypertext_config.xml": HYPERTEXT_CONFIG,
    "_config_export.json": _config_export(_note),
    "_rating_export.json": _config_export(lambda k, a: _note(k, a) + [
        res("r", "rating", {"rating": 99_999_000 + k * a}, to_name="t")]),
    "_dynamic_export.json": _config_export(lambda k, a: _note(k, a) + [
        res("dc", "choices", {"choices": ["Z"]}, to_name="t"),
        res("dl", "labels", {"start": 0, "end": 5, "labels": ["Q"]}, to_name="t")]),
    "_alias_export.json": _config_export(lambda k, a: _note(k, a) + [
        res("al", "choices", {"choices": ["pos" if a == 1 else "Negative"]}, to_name="t")]),
}


if __name__ == "__main__":
    main()
