"""Regenerate the broken-export corpus (small JSON files + manifest.json).

Each case is one task (id 1, annotation id 10, annotator 4) with one defect, written by
hand below; ``manifest.json`` holds the fragment the error/warning must contain and, in
strict mode, the task id / annotation id / field the AdapterError must name.
Run: python tests/adapters/broken/make_corpus.py
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
    ("unknown_result_type", [task([res("brushy", "brushlabels", {"rle": [1, 2]})])],
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
    ("config_no_controls", "<View><Text name='t' value='$t'/></View>", "no supported control tag"),
    ("config_unknown_tag", "<View><Text name='t' value='$t'/><Sparkles name='s' toName='t'/>"
     "<TextArea name='c' toName='t'/></View>", "unknown control tag"),
    ("config_without_name", "<View><Text name='t' value='$t'/><TextArea toName='t'/></View>",
     "without a name"),
]


def main() -> None:
    manifest = []
    for name, content, fragment, exp in CASES:
        suffix = ".csv" if name == "csv_text" else ".json"
        path = HERE / f"{name}{suffix}"
        text = content if isinstance(content, str) else json.dumps(content, indent=1)
        path.write_text(text, encoding="utf-8")
        entry = {"file": path.name, "fragment": fragment, "level": exp.get("level", "task")}
        for k in ("field", "lenient"):
            if k in exp:
                entry[k] = exp[k]
        if entry["level"] == "task" and "task_id" not in exp and not exp.get("field", "").startswith("tasks["):
            entry["task_id"] = 1
        elif "task_id" in exp:
            entry["task_id"] = exp["task_id"]
        if "annotation_id" in exp:
            entry["annotation_id"] = exp["annotation_id"]
        elif entry.get("field", "").startswith("result"):
            entry["annotation_id"] = 10
        manifest.append(entry)
    for name, xml, fragment in CONFIG_CASES:
        (HERE / f"{name}.xml").write_text(xml, encoding="utf-8")
        manifest.append({"file": f"{name}.xml", "fragment": fragment, "level": "config",
                         "lenient": "warn" if name == "config_unknown_tag" else "raise"})
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"{len(manifest)} cases")


if __name__ == "__main__":
    main()
