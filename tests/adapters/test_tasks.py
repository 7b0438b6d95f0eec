"""Which annotations count: identity, duplicates, cancelled, drafts, predictions, ground truth."""
from __future__ import annotations


import pytest

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.adapters import load_export, parse_export
from ls_agreement.adapters.tasks import annotator_of

from .conftest import EXPORTS, load


@pytest.mark.parametrize("raw, expected", [
    (4, ("4", None)),
    ({"id": 4, "email": "a@x.org", "first_name": "A"}, ("4", "a@x.org")),
    ({"id": 5, "email": "", "first_name": "Ann", "last_name": "Two"}, ("5", "Ann Two")),
    ({"email": "b@x.org"}, ("b@x.org", "b@x.org")),
    ("c@x.org", ("c@x.org", "c@x.org")),
    (7.0, ("7", None)),
])
def test_annotator_identity(raw, expected):
    assert annotator_of(raw) == expected


@pytest.mark.parametrize("raw", [None, True, float("nan"), {}, [], ""])
def test_annotator_identity_refused(raw):
    with pytest.raises(ValueError):
        annotator_of(raw)


def test_snapshot_expanded_rules(config_xml, snapshot_expanded):
    out = adapt(config_xml, snapshot_expanded)
    sent = out.controls["sentiment"]
    t8 = sent.table[sent.table["item"] == 8]
    # annotator 5 has annotations 15 (a sentiment, earlier) and 17 (only a rating, later): the
    # whole of 17 counts, so 5 is missing for sentiment on task 8 and rated it 2
    assert sorted(t8["annotator"]) == ["1", "4"]
    q = out.controls["quality"].table
    assert q[(q["item"] == 8)].set_index("annotator")["value"].to_dict() == {"5": 2}
    assert any("annotator 5 has several annotations" in w and "id 17" in w for w in out.warnings)
    # task 3: annotation 11 by annotator 6 was cancelled
    assert sorted(sent.table[sent.table["item"] == 3]["annotator"]) == ["4", "5"]
    # ground truth marked (tasks 7 and 8 imported with ground_truth)
    assert (8, "4") in sent.ground_truth and (8, "1") in sent.ground_truth
    assert (8, "5") not in sent.ground_truth       # the counted annotation 17 is not ground truth
    assert (7, "4") in out.controls["bbox"].ground_truth
    assert sent.annotator_names["4"] == "ann1@example.com"
    # no prediction unless asked
    assert not any(a.startswith("model:") for a in out.controls["bbox"].table["annotator"])


def test_latest_by_updated_then_created_then_id(config_xml):
    tasks = load("by_tag_choices__sentiment.json")
    anns = tasks[0]["annotations"]
    anns[1]["completed_by"] = 4
    anns[1]["updated_at"] = anns[0]["updated_at"]
    anns[1]["created_at"] = anns[0]["created_at"]
    anns[1]["id"] = 0                              # same times: the higher id (annotation 1) wins
    t = adapt(config_xml, tasks).controls["sentiment"].table
    assert t.set_index("annotator").loc["4", "value"] == "Positive"
    anns[1]["updated_at"] = "2030-01-01T00:00:00Z"  # later update wins whatever the id
    t = adapt(config_xml, tasks).controls["sentiment"].table
    assert t.set_index("annotator").loc["4", "value"] == "Neutral"


def test_drafts_never_count(config_xml):
    tasks = load("by_tag_choices__sentiment.json")
    tasks[0]["drafts"] = [{"id": 99, "user": 9, "result": [{"from_name": "sentiment", "to_name": "text",
                                                            "type": "choices", "value": {"choices": ["Positive"]}}]}]
    t = adapt(config_xml, tasks).controls["sentiment"].table
    assert "9" not in set(t["annotator"])


def test_predictions_as_model_annotator(config_xml, snapshot_expanded):
    out = adapt(config_xml, snapshot_expanded, include_predictions=True)
    bbox = out.controls["bbox"].table
    model = bbox[bbox["annotator"] == "model:demo-model-v1"]
    assert sorted(model["item"]) == [1, 2, 3, 4]
    # the model predicted only regions: it is missing (not empty) for the other controls
    assert "model:demo-model-v1" not in set(out.controls["ner"].table["annotator"])


def test_snapshot_prediction_ids_warn(config_xml):
    tasks = load("project_export_snapshot.json")
    out = adapt(config_xml, tasks, include_predictions=True)
    assert any("prediction #0 is an id" in w for w in out.warnings)


def test_json_export_and_api_shapes(config_xml):
    tasks = load("by_tag_rating.json")
    assert parse_export({"tasks": tasks}) == tasks
    assert parse_export(tasks[0]) == tasks
    with pytest.raises(AdapterError, match="JSON_MIN"):
        load_export(EXPORTS / "project_export.min.json")
    with pytest.raises(AdapterError, match="CSV"):
        load_export(EXPORTS / "project_export.csv")


def test_malformed_json_names_line(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('[\n{"id": 1,\n "annotations": [}\n]')
    with pytest.raises(AdapterError, match="line 3"):
        load_export(p)
    with pytest.raises(AdapterError, match="cannot read"):
        load_export(tmp_path / "missing.json")


def test_generator_of_tasks_accepted(config_xml):
    tasks = load("by_tag_rating.json")
    out = adapt(config_xml, (t for t in tasks))
    assert len(out.controls["quality"].table) == 3 and out.n_tasks == 1
