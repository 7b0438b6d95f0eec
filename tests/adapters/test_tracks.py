"""VideoRectangle (object tracking) through the adapters, the engine and the report.

Results are written in Label Studio 1.23's shape (``regions/VideoRegion.js`` serialize; the
Video merges the labels of its ``Labels`` tag into the VideoRectangle result) and each
generated result passes label-studio-sdk's validator. The object-tracking template is
read from the installed Label Studio package when it is there.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import yaml
from label_studio_sdk.label_interface import LabelInterface

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.metrics import agreement
from ls_agreement.metrics.distances.tracks import visible_boxes
from ls_agreement.metrics.model import Track
from ls_agreement.plugin.cli import main as cli_main

CONFIG = """<View>
  <Labels name="videoLabels" toName="video" allowEmpty="true">
    <Label value="Man" background="blue"/>
    <Label value="Woman" background="red"/>
    <Label value="Other" background="green"/>
  </Labels>
  <Video name="video" value="$video" framerate="25.0"/>
  <VideoRectangle name="box" toName="video" />
</View>"""
FRAMES = 120
FPS = 25.0
LABELS = ("Man", "Woman", "Other")


def _template_config() -> str | None:
    """The object-tracking template of the installed Label Studio, when it is installed."""
    root = Path.home() / ".cache" / "ls-agreement" / "label-studio-1.23.2" / "venv"
    hits = sorted(root.glob("lib/python3*/site-packages/label_studio/annotation_templates/videos/"
                            "video-object-tracking/config.yml"))
    return yaml.safe_load(hits[0].read_text())["config"] if hits else None


# -- Label Studio's result shape ------------------------------------------------------------

def ls_result(keys: list[dict], label: str | None, rng: random.Random, frames: int = FRAMES) -> dict:
    """One VideoRectangle result as Label Studio writes it."""
    value = {"framesCount": frames, "duration": frames / FPS,
             "sequence": [{"frame": k["frame"], "enabled": k["enabled"], "rotation": 0, "x": k["x"], "y": k["y"],
                           "width": k["w"], "height": k["h"], "time": k["frame"] / FPS} for k in keys]}
    if label is not None:
        value["labels"] = [label]
    return {"value": value, "id": f"{rng.getrandbits(40):010x}", "from_name": "box", "to_name": "video",
            "type": "videorectangle", "origin": "manual"}


def random_object(rng: random.Random) -> tuple[str, list[dict]]:
    """A truth: a label and keyframes every 10-30 frames along a path, the last one ending it
    or not."""
    x, y = rng.uniform(0, 70), rng.uniform(0, 70)
    vx, vy = rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)
    w, h = rng.uniform(8, 25), rng.uniform(8, 25)
    keys, f = [], rng.randint(1, 20)
    while f <= FRAMES:
        keys.append({"frame": f, "enabled": True, "x": min(max(x + vx * f, 0), 75), "y": min(max(y + vy * f, 0), 75),
                     "w": w, "h": h})
        f += rng.randint(10, 30)
    keys[-1]["enabled"] = rng.random() < 0.5
    return rng.choice(LABELS), keys


def near(keys: list[dict], rng: random.Random, jitter: float) -> list[dict]:
    return [dict(k, x=k["x"] + rng.gauss(0, jitter), y=k["y"] + rng.gauss(0, jitter),
                 w=max(1.0, k["w"] + rng.gauss(0, jitter)), h=max(1.0, k["h"] + rng.gauss(0, jitter))) for k in keys]


def make_export(scenario: str, n_tasks: int, n_annotators: int = 4, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for t in range(n_tasks):
        truth = [random_object(rng) for _ in range(rng.randint(1, 3))]
        anns = []
        for a in range(n_annotators):
            if scenario == "identical":
                result = [ls_result(keys, label, rng) for label, keys in truth]
            elif scenario == "careless" and a < n_annotators - 1:
                result = [ls_result(near(keys, rng, 1.0), label, rng) for label, keys in truth]
            else:   # careless's last annotator, and everyone at random
                result = [ls_result(*reversed(random_object(rng)), rng) for _ in range(rng.randint(1, 3))]
            anns.append({"id": 1000 * t + a, "completed_by": a + 1, "result": result,
                         "was_cancelled": False, "ground_truth": False})
        tasks.append({"id": t + 1, "data": {"video": f"/data/upload/1/clip_{t}.mp4"}, "annotations": anns})
    return tasks


@pytest.mark.parametrize("scenario", ["identical", "careless", "random"])
def test_generated_results_pass_label_studio_validator(scenario):
    li = LabelInterface(CONFIG)
    for task in make_export(scenario, 5):
        for ann in task["annotations"]:
            for res in ann["result"]:
                assert li.validate_region(res, return_errors=True) == []


# -- the config -------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["template", "docs"])
def test_config_tracks_take_the_labels_of_their_video(source):
    xml = _template_config() if source == "template" else CONFIG
    if xml is None:
        pytest.skip("Label Studio's templates are not installed")
    cfg = parse_config(xml, strict=True)
    assert list(cfg.controls) == ["box"]
    box = cfg.controls["box"]
    assert (box.family, box.kind, box.labels) == ("tracks", "tracks", list(LABELS))
    assert "videoLabels" in cfg.skipped
    note = [w for w in cfg.warnings if "videoLabels" in w]
    assert len(note) == 1 and "'box'" in note[0] and "not supported" not in note[0]


def test_config_without_labels_and_on_the_wrong_object():
    cfg = parse_config('<View><Video name="v" value="$v"/><VideoRectangle name="t" toName="v"/></View>')
    assert cfg.controls["t"].labels is None and not cfg.controls["t"].closed
    xml = ('<View><Image name="i" value="$i"/><VideoRectangle name="t" toName="i"/>'
           '<Choices name="c" toName="i"><Choice value="a"/></Choices></View>')
    cfg = parse_config(xml)
    assert "t" not in cfg.controls and any("needs a Video" in w for w in cfg.warnings)
    with pytest.raises(AdapterError, match="needs a Video"):
        parse_config(xml, strict=True)


# -- results ----------------------------------------------------------------------------------

# Label Studio's own sample (web/libs/editor tests, data/video: simpleVideoResult)
LS_SAMPLE = {
    "value": {"framesCount": 131, "duration": 5.425,
              "sequence": [{"frame": 1, "enabled": True, "rotation": 0, "x": 20.54721030042918,
                            "y": 15.665236051502147, "width": 58.90557939914163, "height": 68.6695278969957,
                            "time": 0.041666666666666664},
                           {"x": 20.54721030042918, "y": 15.665236051502147, "width": 58.90557939914163,
                            "height": 68.6695278969957, "rotation": 0, "enabled": False, "frame": 3,
                            "time": 0.125}],
              "labels": ["Label 1"]},
    "id": "RRxnu061g3", "from_name": "box", "to_name": "video", "type": "videorectangle", "origin": "manual"}
LS_SAMPLE_CONFIG = """<View>
  <Video name="video" value="$video" />
  <VideoRectangle name="box" toName="video" />
  <Labels name="tag" toName="video">
    <Label value="Label 1" background="green" hotkey="1"/>
    <Label value="Label 2" background="blue" hotkey="2"/>
  </Labels>
</View>"""


def _one(config: str, results: list, **kw):
    tasks = [{"id": 7, "data": {"video": "/v.mp4"},
              "annotations": [{"id": 70, "completed_by": 1, "result": results}]}]
    return adapt(config, tasks, **kw)


def test_label_studio_sample_result():
    ad = _one(LS_SAMPLE_CONFIG, [LS_SAMPLE])
    assert [w for w in ad.warnings if "tag" not in w] == []
    (value,) = ad.controls["box"].table["value"]
    (track,) = value
    assert isinstance(track, Track) and track.label == "Label 1" and track.end == 131
    assert [(k.frame, k.enabled) for k in track.keyframes] == [(1, True), (3, False)]
    assert track.keyframes[0].x == 20.54721030042918 and track.keyframes[0].height == 68.6695278969957
    frames, _ = visible_boxes(track)
    assert frames.tolist() == [1, 2, 3]   # the disabled keyframe at 3 ends the track


def test_pixels_when_every_track_has_the_frame_size():
    res = json.loads(json.dumps(LS_SAMPLE))
    res["original_width"], res["original_height"] = 1000, 500
    (track,) = _one(LS_SAMPLE_CONFIG, [res]).controls["box"].table["value"][0]
    k = track.keyframes[0]
    assert (k.x, k.y, k.width, k.height) == pytest.approx((205.4721030042918, 78.32618025751074,
                                                           589.0557939914163, 343.3476394849785))


def test_unsorted_sequence_missing_enabled_and_frame_count():
    res = json.loads(json.dumps(LS_SAMPLE))
    seq = res["value"]["sequence"]
    seq.reverse()
    for k in seq:
        del k["enabled"]
    del res["value"]["framesCount"]
    ad = _one(LS_SAMPLE_CONFIG, [res])
    (track,) = ad.controls["box"].table["value"][0]
    assert [k.frame for k in track.keyframes] == [1, 3] and track.end is None
    assert visible_boxes(track)[0].tolist() == [1, 3]   # keyframes without 'enabled': their own frames only
    notes = " ".join(ad.controls["box"].warnings)
    assert "2 keyframe(s) without 'enabled'" in notes and "1 of 1 tracks lack value.framesCount" in notes


def test_undeclared_label_is_kept_with_a_warning():
    res = json.loads(json.dumps(LS_SAMPLE))
    res["value"]["labels"] = ["Cat"]
    ad = _one(LS_SAMPLE_CONFIG, [res])
    assert ad.controls["box"].table["value"][0][0].label == "Cat"
    assert any("'Cat'" in w and "value.labels" in w and "(kept)" in w for w in ad.warnings)


def _broken(change) -> dict:
    res = json.loads(json.dumps(LS_SAMPLE))
    change(res["value"])
    return res


BAD = [
    (lambda v: v.pop("sequence"), "value.sequence", "missing"),
    (lambda v: v.update(sequence=[]), "value.sequence", "empty"),
    (lambda v: v.update(sequence={"frame": 1}), "value.sequence", "expected a list"),
    (lambda v: v["sequence"].__setitem__(0, "k"), "value.sequence[0]", "must be an object"),
    (lambda v: v["sequence"][0].pop("frame"), "value.sequence[0].frame", "missing"),
    (lambda v: v["sequence"][0].update(frame=2.5), "value.sequence[0].frame", "whole frame number"),
    (lambda v: v["sequence"][1].update(frame=-1), "value.sequence[1].frame", "out of range"),
    (lambda v: v["sequence"][1].update(enabled="yes"), "value.sequence[1].enabled", "true or false"),
    (lambda v: v["sequence"][0].update(x="12"), "value.sequence[0].x", "expected a number"),
    (lambda v: v["sequence"][0].update(width=-3), "value.sequence[0].width", "negative"),
    (lambda v: v["sequence"][1].update(y=float("nan")), "value.sequence[1].y", "not finite"),
    (lambda v: v.update(framesCount="131"), "value.framesCount", "whole frame number"),
    (lambda v: v.update(labels="Label 1"), "value.labels", "list"),
]


@pytest.mark.parametrize("change,field,words", BAD)
def test_bad_results_name_task_annotation_and_field(change, field, words):
    ad = _one(LS_SAMPLE_CONFIG, [_broken(change), LS_SAMPLE])
    hit = [w for w in ad.warnings if "task 7" in w and "annotation 70" in w and f"result[0].{field}'" in w]
    assert hit and words in hit[0], ad.warnings
    assert len(ad.controls["box"].table["value"][0]) == 1   # the good track is kept
    with pytest.raises(AdapterError, match=field.replace("[", r"\[").replace("]", r"\]")):
        _one(LS_SAMPLE_CONFIG, [_broken(change)], strict=True)


def test_annotation_without_tracks_is_the_empty_value():
    tasks = [{"id": 1, "data": {"video": "/v.mp4"},
              "annotations": [{"id": 1, "completed_by": 1, "result": [LS_SAMPLE]},
                              {"id": 2, "completed_by": 2, "result": []}]}]
    t = adapt(LS_SAMPLE_CONFIG, tasks).controls["box"].table
    assert [len(v) for v in t["value"]] == [1, 0]


# -- the three scenarios through adapt and the engine ----------------------------------------

def _control(scenario: str, n_tasks: int):
    ad = adapt(CONFIG, make_export(scenario, n_tasks))
    ctl = ad.controls["box"]
    assert ctl.kind == "tracks" and ctl.default_distance == "tracks.iou"
    return ctl


def test_identical_annotators_agree_fully():
    ctl = _control("identical", 20)
    res = agreement(ctl.table, ctl.default_distance, bootstrap=0)
    assert res.alpha == pytest.approx(1.0, abs=1e-12) and res.d_o == 0.0


def test_careless_annotator_is_lowest_by_alpha_and_sigma():
    ctl = _control("careless", 30)
    res = agreement(ctl.table, ctl.default_distance, bootstrap=0)
    per = res.per_annotator
    careless = "4"
    others = per.drop(index=careless)
    assert per.loc[careless, "alpha"] < others["alpha"].min()
    assert per.loc[careless, "sigma"] < others["sigma"].min()
    assert res.alpha > 0.3


def test_random_annotators_have_no_agreement():
    ctl = _control("random", 30)
    res = agreement(ctl.table, ctl.default_distance, bootstrap=0)
    assert abs(res.alpha) < 0.15


# -- the report, json and html ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["json", "html"])
def test_report_command(tmp_path, fmt, capsys):
    export, config = tmp_path / "export.json", tmp_path / "config.xml"
    export.write_text(json.dumps(make_export("careless", 12)))
    config.write_text(CONFIG)
    out = tmp_path / f"report.{fmt}"
    code = cli_main(["report", str(export), "--config", str(config), "--format", fmt, "--out", str(out),
                     "--bootstrap", "50", "--debug"])
    assert code == 0, capsys.readouterr().err
    text = out.read_text()
    assert "NaN" not in text
    if fmt == "html":
        assert "VideoRectangle" in text and "tracks.iou" in text
        return
    rep = json.loads(text)
    box = rep["controls"]["box"]
    assert (box["kind"], box["status"], box["distance"]) == ("tracks", "ok", "tracks.iou")
    assert np.isfinite(box["alpha"]) and box["ci"]["alpha"] is not None
    assert set(box["per_label"]["labels"]) <= set(LABELS)
    assert "videoLabels" not in rep["controls"]
    assert any("videoLabels" in w for w in rep["warnings"])
