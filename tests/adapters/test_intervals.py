"""1-d labelled regions (adapters/intervals.py): Label Studio's result shapes per tag, bad
values, the templates Label Studio ships, and agreement through ``adapt`` + the report in
three scenarios (identical, careless, random) per tag."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import yaml

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config
from ls_agreement.adapters.errors import AdapterError
from ls_agreement.metrics.model import Interval as I
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.model import Report
from ls_agreement.plugin.report.render import render_html
from ls_agreement.demo.local_server import LS_VERSION, default_cache_dir
from ls_agreement.plugin.settings import ReportSettings

AUDIO = """<View><Labels name="label" toName="audio"><Label value="Speech"/><Label value="Noise"/></Labels>
<Audio name="audio" value="$audio"/></View>"""
AUDIO_SPLIT = AUDIO.replace('value="$audio"/>', 'value="$audio" splitChannels="true"/>')
TIMELINE = """<View><TimelineLabels name="videoLabels" toName="video"><Label value="Movement"/>
<Label value="Still"/><Label value="Slow Motion"/></TimelineLabels><Video name="video" value="$video"/></View>"""
TS_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
TIMESERIES = f"""<View><TimeSeriesLabels name="label" toName="ts"><Label value="Run"/><Label value="Walk"/>
</TimeSeriesLabels><TimeSeries name="ts" valueType="url" value="$csv" timeColumn="time"
timeFormat="{TS_FORMAT}"><Channel column="velocity"/></TimeSeries></View>"""
CHANGES = """<View><TimeSeriesLabels name="label" toName="ts"><Label value="Change"/></TimeSeriesLabels>
<TimeSeries name="ts" valueType="url" value="$csv" timeColumn="time"><Channel column="v"/></TimeSeries></View>"""
PARAGRAPHS = """<View><ParagraphLabels name="entity_slot" toName="dialogue"><Label value="Person"/>
<Label value="Location"/></ParagraphLabels><Paragraphs name="dialogue" value="$dialogue" layout="dialogue"/></View>"""
PARA_LABELS = PARAGRAPHS.replace("ParagraphLabels", "Labels")


def _task(tid: int, data: dict, *results_by_annotator: list) -> dict:
    return {"id": tid, "data": data,
            "annotations": [{"id": 100 * tid + k, "completed_by": k + 1, "result": res}
                            for k, res in enumerate(results_by_annotator)]}


def _values(config: str, tasks: list, name: str, **kw: Any) -> dict:
    ctl = adapt(config, tasks, **kw).controls[name]
    assert ctl.kind == "intervals"
    return {(t, a): v for t, a, v in zip(ctl.table["item"], ctl.table["annotator"], ctl.table["value"])}


# -- Label Studio's result shapes -----------------------------------------------------------------
def test_audio_result():
    res = {"id": "r1", "from_name": "label", "to_name": "audio", "type": "labels", "original_length": 60.0,
           "value": {"start": 1.5, "end": 3.25, "channel": 0, "labels": ["Speech"]}}
    two = dict(res, id="r2", value={"start": 0.2, "end": 0.9, "channel": 0, "labels": ["Speech", "Noise"]})
    v = _values(AUDIO, [_task(1, {"audio": "a.wav"}, [res, two], [])], "label")
    # positions are shares of the 60 s clip
    assert v[(1, "1")] == (I(0.2 / 60, 0.9 / 60, "Noise|Speech"), I(1.5 / 60, 3.25 / 60, "Speech"))
    assert v[(1, "2")] == ()                  # an annotation without regions: nothing marked
    # split channels: the channel is part of the label
    res["value"]["channel"] = 1
    v = _values(AUDIO_SPLIT, [_task(1, {"audio": "a.wav"}, [res])], "label")
    assert v[(1, "1")] == (I(1.5 / 60, 3.25 / 60, "Speech [channel 1]"),)


def test_audio_clips_of_different_lengths_and_unknown_lengths():
    def res(s: float, e: float, length: float | None) -> dict:
        r = {"from_name": "label", "to_name": "audio", "type": "labels",
             "value": {"start": s, "end": e, "channel": 0, "labels": ["Speech"]}}
        return r if length is None else dict(r, original_length=length)
    tasks = [_task(1, {"audio": "a.wav"}, [res(1, 2, 10.0)]), _task(2, {"audio": "b.wav"}, [res(6, 12, 60.0)])]
    v = _values(AUDIO, tasks, "label")
    assert v[(1, "1")] == (I(0.1, 0.2, "Speech"),) and v[(2, "1")] == (I(0.1, 0.2, "Speech"),)
    # one task without its length: the whole control stays in seconds, never a mix
    tasks[1]["annotations"][0]["result"] = [res(6, 12, None)]
    ctl = adapt(AUDIO, tasks).controls["label"]
    assert list(ctl.table["value"]) == [(I(1, 2, "Speech"),), (I(6, 12, "Speech"),)]
    assert any("original_length" in w and "1 of 2 tasks" in w for w in ctl.warnings)


def test_timeline_result_frames_both_ends_included():
    res = {"id": "t1", "from_name": "videoLabels", "to_name": "video", "type": "timelinelabels",
           "value": {"ranges": [{"start": 3, "end": 5}], "timelinelabels": ["Movement"]}}
    single = {"id": "t2", "from_name": "videoLabels", "to_name": "video", "type": "timelinelabels",
              "value": {"ranges": [{"start": 9, "end": 9}, {"start": 20, "end": 24}], "timelinelabels": ["Still"]}}
    v = _values(TIMELINE, [_task(1, {"video": "v.mp4"}, [res, single])], "videoLabels")
    # frames 3..5 are 3 frames; a single frame counts 1
    assert v[(1, "1")] == (I(2, 5, "Movement"), I(8, 9, "Still"), I(19, 24, "Still"))


def test_time_series_numbers_and_instants():
    a = {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
         "value": {"start": 10, "end": 20.5, "instant": False, "timeserieslabels": ["Change"]}}
    b = {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
         "value": {"start": 15, "end": 15, "instant": True, "timeserieslabels": ["Change"]}}
    v = _values(CHANGES, [_task(1, {"csv": "s.csv"}, [a, b])], "label")
    assert v[(1, "1")] == (I(10, 20.5, "Change"), I(15, 15, "Change"))
    assert v[(1, "1")][1].instant


def test_time_series_dates_measured_from_each_task_earliest_mark():
    day = [datetime(2024, 1, 2, tzinfo=timezone.utc), datetime(2024, 3, 9, tzinfo=timezone.utc)]

    def at(t: int, sec: float) -> str:
        return (day[t] + timedelta(seconds=sec)).strftime(TS_FORMAT)   # as d3's utcFormat writes it

    def res(t: int, s: float, e: float, lab: str = "Run") -> dict:
        return {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
                "value": {"start": at(t, s), "end": at(t, e), "instant": s == e, "timeserieslabels": [lab]}}
    tasks = [_task(1, {"csv": "a.csv"}, [res(0, 10, 20.5)], [res(0, 5, 5, "Walk")]),
             _task(2, {"csv": "b.csv"}, [res(1, 100, 160)], [res(1, 130, 190.25)])]
    v = _values(TIMESERIES, tasks, "label")
    assert v[(1, "1")] == (I(5, 15.5, "Run"),)     # task 1's earliest mark: 5 s
    assert v[(1, "2")] == (I(0, 0, "Walk"),)
    assert v[(2, "1")] == (I(0, 60, "Run"),)
    assert v[(2, "2")] == (I(30, 90.25, "Run"),)
    # d3's %L (milliseconds) reads as a fraction of a second
    ms = TIMESERIES.replace(".%f", ".%L")
    r = {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
         "value": {"start": "2024-01-02 00:00:01.250", "end": "2024-01-02 00:00:02.000",
                   "timeserieslabels": ["Run"]}}
    r2 = json.loads(json.dumps(r).replace("01.250", "00.750"))
    v = _values(ms, [_task(1, {"csv": "a.csv"}, [r], [r2])], "label")
    assert v[(1, "1")] == (I(0.5, 1.25, "Run"),) and v[(1, "2")] == (I(0, 1.25, "Run"),)


DIALOGUE = [{"author": "Mia", "text": "Hello there."}, {"author": "Vincent", "text": "General Kenobi!"},
            {"author": "Mia", "text": "Ça va? 👋"}]


def _para(start: Any, so: int, end: Any, eo: int, lab: str = "Person", key: str = "paragraphlabels") -> dict:
    return {"from_name": "entity_slot", "to_name": "dialogue", "type": key,
            "value": {"start": start, "end": end, "startOffset": so, "endOffset": eo, "text": "x", key: [lab]}}


def test_paragraph_positions_in_the_concatenated_texts():
    tasks = [_task(1, {"dialogue": DIALOGUE}, [_para("0", 6, "1", 7), _para("2", 7, "2", 9, "Location")])]
    v = _values(PARAGRAPHS, tasks, "entity_slot")
    # "Hello there." is 12 long; the emoji is 2 UTF-16 units, as JavaScript counts it: the
    # dialogue has 12 + 15 + 9 = 36, and positions are shares of it
    n = 36
    assert v[(1, "1")] == (I(6 / n, 19 / n, "Person"), I((12 + 15 + 7) / n, (12 + 15 + 9) / n, "Location"))
    # Labels on Paragraphs: the same shape under "labels"
    tasks = [_task(1, {"dialogue": DIALOGUE}, [_para(0, 0, 0, 5, key="labels")])]
    assert _values(PARA_LABELS, tasks, "entity_slot")[(1, "1")] == (I(0, 5 / n, "Person"),)


def test_paragraphs_without_their_texts_go_by_index():
    tasks = [_task(1, {"dialogue": "https://example.com/d.json"}, [_para("0", 6, "1", 7)], [_para("2", 0, "2", 3)])]
    ad = adapt(PARAGRAPHS, tasks)
    ctl = ad.controls["entity_slot"]
    v = dict(zip(ctl.table["annotator"], ctl.table["value"]))
    m = 8    # one more than the largest offset (7): paragraphs never overlap
    assert v["1"] == (I(6, m + 7, "Person"),) and v["2"] == (I(2 * m, 2 * m + 3, "Person"),)
    assert any("paragraph index" in w for w in ctl.warnings)


@pytest.mark.parametrize("config,name,value,field", [
    (AUDIO, "label", {"end": 3.0, "labels": ["Speech"]}, "value.start"),
    (AUDIO, "label", {"start": 4.0, "end": 3.0, "labels": ["Speech"]}, "value.end"),
    (AUDIO, "label", {"start": float("nan"), "end": 3.0, "labels": ["Speech"]}, "value.start"),
    (AUDIO, "label", {"start": "1.0", "end": 3.0, "labels": ["Speech"]}, "value.start"),
    (TIMELINE, "videoLabels", {"ranges": [{"start": None, "end": 4}], "timelinelabels": ["Still"]},
     "value.ranges[0].start"),
    (TIMELINE, "videoLabels", {"timelinelabels": ["Still"]}, "value.ranges"),
    (TIMESERIES, "label", {"start": "yesterday", "end": "2024-01-02 00:00:01.000000"}, "value.start"),
    (TIMESERIES, "label", {"start": "2024-01-02 00:00:09.000000", "end": "2024-01-02 00:00:01.000000"},
     "value.end"),
    (PARAGRAPHS, "entity_slot", {"start": "7", "end": "7", "startOffset": 0, "endOffset": 1}, "value.start"),
    (PARAGRAPHS, "entity_slot", {"start": "0", "end": "0", "startOffset": 0, "endOffset": 40}, "value.endOffset"),
    (PARAGRAPHS, "entity_slot", {"start": "1", "end": "0", "startOffset": 0, "endOffset": 1}, "value.end"),
])
def test_bad_values_name_their_field(config, name, value, field):
    obj = parse_config(config).controls[name].to_name[0]
    data = {"audio": "a.wav", "video": "v.mp4", "csv": "s.csv", "dialogue": DIALOGUE}
    tasks = [_task(7, data, [{"from_name": name, "to_name": obj, "value": value}])]
    with pytest.raises(AdapterError) as exc:
        adapt(config, tasks, strict=True)
    assert exc.value.field == f"result[0].{field}" and exc.value.task_id == 7 and exc.value.annotation_id == 700
    lenient = adapt(config, tasks)   # lenient: the result is skipped, the annotation marked nothing
    assert any(f"result[0].{field}" in w for w in lenient.warnings)
    assert list(lenient.controls[name].table["value"]) == [()]


def test_undeclared_label_is_kept_with_a_warning():
    res = {"from_name": "label", "to_name": "audio", "type": "labels",
           "value": {"start": 1.0, "end": 2.0, "labels": ["Music"]}}
    ad = adapt(AUDIO, [_task(1, {"audio": "a.wav"}, [res])])
    assert list(ad.controls["label"].table["value"]) == [(I(1, 2, "Music"),)]
    assert any("Music" in w and "not in the config" in w for w in ad.warnings)


def test_control_on_the_wrong_object_is_skipped():
    cfg = """<View><ParagraphLabels name="p" toName="audio"><Label value="A"/></ParagraphLabels>
    <Labels name="l" toName="audio"><Label value="A"/></Labels><Audio name="audio" value="$audio"/></View>"""
    pc = parse_config(cfg)
    assert "p" in pc.skipped and pc.controls["l"].kind == "intervals"
    assert any("needs a Paragraphs object" in w for w in pc.warnings)
    with pytest.raises(AdapterError, match="Paragraphs"):
        parse_config(cfg, strict=True)


def _templates() -> Path | None:
    hits = sorted((default_cache_dir() / f"label-studio-{LS_VERSION}").glob(
        "venv/lib/python*/site-packages/label_studio/annotation_templates"))
    return hits[0] if hits else None


def test_label_studio_templates_with_1d_regions_are_measured():
    root = _templates()
    if root is None:
        pytest.skip(f"Label Studio {LS_VERSION} is not installed under {default_cache_dir()}")
    found = {}
    for path in sorted(root.glob("*/*/config.yml")):
        xml = yaml.safe_load(path.read_text())["config"]
        low = xml.lower()
        if not any(t in low for t in ("<timelinelabels", "<timeserieslabels", "<paragraphlabels", "<audio")):
            continue
        cfg = parse_config(xml)
        for spec in cfg.controls.values():
            obj = spec.object_tags[0].lower() if spec.object_tags else ""
            if spec.lower in ("timelinelabels", "timeserieslabels", "paragraphlabels") or (
                    spec.lower == "labels" and obj in ("audio", "audioplus", "paragraphs", "timeseries")):
                assert spec.kind == "intervals", (path.parent.name, spec.name)
                found[path.parent.name] = spec.region
        assert not {w for w in cfg.warnings if "not supported" in w and "Labels" in w
                    and "Video" not in w}, (path.parent.name, cfg.warnings)
    # every template of the list (Labels on Audio, TimelineLabels, TimeSeriesLabels, ParagraphLabels)
    assert {"sound-event-detection", "speaker-segmentation", "automatic-speech-recognition-using-segments",
            "intent-classification", "video-timeline-segmentation", "video-frame-classification",
            "activity-recognition", "change-point-detection", "outliers-anomaly-detection", "signal-quality",
            "time-series-forecasting", "conversational-analysis",
            "intent-classification-and-slot-filling"} <= set(found)
    assert found["video-frame-classification"] == "timeline" and found["conversational-analysis"] == "paragraphs"


# -- the three scenarios through adapt + the report -------------------------------------------------
N_TASKS, N_ANN = 30, 4
Geom = tuple[float, float, str]       # start, end on the task's axis [0, 1), label


class Case:
    """One tag: its config, task data and how a region on the unit axis is written."""

    def __init__(self, config: str, name: str, labels: list[str], data: Callable[[int], dict],
                 write: Callable[[int, Geom], dict], instants: float = 0.0) -> None:
        self.config, self.name, self.labels, self.data, self.write = config, name, labels, data, write
        self.instants = instants


def _audio(t: int, g: Geom) -> dict:
    return {"from_name": "label", "to_name": "audio", "type": "labels", "original_length": 60.0,
            "value": {"start": round(60 * g[0], 3), "end": round(60 * g[1], 3), "channel": 0, "labels": [g[2]]}}


def _timeline(t: int, g: Geom) -> dict:
    s = 1 + int(299 * g[0])
    return {"from_name": "videoLabels", "to_name": "video", "type": "timelinelabels",
            "value": {"ranges": [{"start": s, "end": max(s, 1 + int(299 * g[1]))}], "timelinelabels": [g[2]]}}


def _dated(t: int, g: Geom) -> dict:
    day = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(days=t)    # every task its own day

    def at(x: float) -> str:
        return (day + timedelta(seconds=round(3600 * x, 3))).strftime(TS_FORMAT)
    return {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
            "value": {"start": at(g[0]), "end": at(g[1]), "instant": g[0] == g[1], "timeserieslabels": [g[2]]}}


def _changes(t: int, g: Geom) -> dict:
    return {"from_name": "label", "to_name": "ts", "type": "timeserieslabels",
            "value": {"start": round(1000 * g[0], 2), "end": round(1000 * g[1], 2), "instant": g[0] == g[1],
                      "timeserieslabels": [g[2]]}}


_WORDS = "the quick brown fox jumps over a lazy dog near river bank at dawn".split()


def _dialogue(t: int) -> dict:
    rng = np.random.default_rng(1000 + t)
    return {"dialogue": [{"author": ("Mia", "Vincent")[k % 2],
                          "text": " ".join(rng.choice(_WORDS, size=int(rng.integers(8, 14))))} for k in range(6)]}


def _paragraph(t: int, g: Geom) -> dict:
    # the unit axis is the dialogue's characters: positions back to (paragraph, offset)
    texts = [p["text"] for p in _dialogue(t)["dialogue"]]
    cum = np.cumsum([0] + [len(x) for x in texts])
    total = cum[-1]

    def where(x: float, end: bool) -> tuple[int, int]:
        pos = int(round(x * total))
        p = int(np.searchsorted(cum, pos, side="left" if end else "right")) - 1
        p = min(max(p, 0), len(texts) - 1)
        return p, int(pos - cum[p])
    (p0, o0), (p1, o1) = where(g[0], False), where(g[1], True)
    if (p1, o1) <= (p0, o0):
        p1, o1 = p0, min(o0 + 1, len(texts[p0]))
    return _para(str(p0), o0, str(p1), o1, g[2])


CASES = {
    "audio": Case(AUDIO, "label", ["Speech", "Noise"], lambda t: {"audio": f"{t}.wav"}, _audio),
    "timeline": Case(TIMELINE, "videoLabels", ["Movement", "Still", "Slow Motion"], lambda t: {"video": f"{t}.mp4"},
                     _timeline),
    "timeseries": Case(TIMESERIES, "label", ["Run", "Walk"], lambda t: {"csv": f"{t}.csv"}, _dated, instants=0.3),
    "changepoints": Case(CHANGES, "label", ["Change"], lambda t: {"csv": f"{t}.csv"}, _changes, instants=1.0),
    "paragraphs": Case(PARAGRAPHS, "entity_slot", ["Person", "Location"], _dialogue, _paragraph),
}


def _truth(case: Case, rng: np.random.Generator) -> list[Geom]:
    """1 to 3 regions in disjoint slots of the unit axis."""
    k = int(rng.integers(1, 4))
    out = []
    for a in np.arange(k) / k:
        if rng.random() < case.instants:
            x = float(a + rng.uniform(0.2, 0.8) / k)
            out.append((x, x, str(rng.choice(case.labels))))
        else:
            length = rng.uniform(0.2, 0.6) / k
            s = float(a + rng.uniform(0, 1 / k - length))
            out.append((s, s + length, str(rng.choice(case.labels))))
    return out


def _near(g: Geom, rng: np.random.Generator) -> Geom:
    """A careful annotator's redraw: ends moved by ~3 % of the length (instants by 0.4 % of the axis)."""
    if g[0] == g[1]:
        x = float(np.clip(g[0] + rng.normal(0, 0.004), 0, 1))
        return (x, x, g[2])
    sd = 0.03 * (g[1] - g[0])
    s, e = sorted(np.clip([g[0] + rng.normal(0, sd), g[1] + rng.normal(0, sd)], 0, 1))
    return (float(s), float(max(e, s + 1e-3)), g[2])


def _tasks(case: Case, scenario: str, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    tasks = []
    for t in range(N_TASKS):
        truth = _truth(case, rng)
        anns = []
        for a in range(N_ANN):
            if scenario == "identical":
                geoms = truth
            elif scenario == "careless" and a < N_ANN - 1:
                geoms = [_near(g, rng) for g in truth]
            else:                                   # the careless annotator, and everyone at random
                geoms = _truth(case, rng)
            anns.append([dict(case.write(t, g), id=f"r{t}_{a}_{k}") for k, g in enumerate(geoms)])
        tasks.append(_task(t + 1, case.data(t), *anns))
    return tasks


def _report(case: Case, tasks: list) -> dict:
    rep = build_report(case.config, tasks, ReportSettings(bootstrap=0)).to_dict()
    json.dumps(rep, allow_nan=False)     # strictly JSON: no NaN
    return rep


@pytest.mark.parametrize("tag", list(CASES))
def test_identical_annotators_agree_fully(tag):
    case = CASES[tag]
    c = _report(case, _tasks(case, "identical"))["controls"][case.name]
    assert c["kind"] == "intervals" and c["distance"].startswith("intervals.")
    assert c["alpha"] == pytest.approx(1.0)


@pytest.mark.parametrize("tag", list(CASES))
def test_careless_annotator_is_lowest(tag):
    case = CASES[tag]
    rep = _report(case, _tasks(case, "careless"))
    c = rep["controls"][case.name]
    careless = str(N_ANN)
    others = [a for a in c["annotators"] if a != careless]
    for measure in ("alpha", "sigma"):
        assert c["annotators"][careless][measure] < min(c["annotators"][a][measure] for a in others), measure
    assert c["alpha"] > 0.3
    render_html(Report.from_dict(rep))          # the page renders (error types, per label, pairs)
    assert c["error_types"] is not None and c["per_label"] is not None


@pytest.mark.parametrize("tag", list(CASES))
def test_random_annotators_near_zero(tag):
    case = CASES[tag]
    c = _report(case, _tasks(case, "random", seed=1))["controls"][case.name]
    assert abs(c["alpha"]) < 0.15
