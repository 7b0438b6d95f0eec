"""Exports in Label Studio's result format for controls that hang on regions: relations
between text spans, per-region answers on audio segments, OCR boxes and time-series
regions. Three scenarios (issue 21): ``identical`` (every annotator gives the task's truth),
``careless`` (three annotators near the truth, the fourth at random), ``random``.

The shapes follow Label Studio's serializers (``Result.serialize``: every result of a region
carries the region's id and geometry; ``RelationStore.serialize``: relations without
``from_name``), as its own templates show them.
"""
from __future__ import annotations

import random
import string
from typing import Any, Callable, Literal

Scenario = Literal["identical", "careless", "random"]

RELATIONS_CONFIG = """<View>
   <Relations>
    <Relation value="org:founded_by"/>
    <Relation value="org:founded"/>
    <Relation value="per:employee_of"/>
  </Relations>
  <Labels name="label" toName="text">
    <Label value="Organization"/><Label value="Person"/><Label value="Datetime"/>
  </Labels>
  <Text name="text" value="$text"/>
</View>"""

ASR_CONFIG = """<View>
  <Labels name="labels" toName="audio"><Label value="Speech"/><Label value="Noise"/></Labels>
  <Audio name="audio" value="$audio"/>
  <TextArea name="transcription" toName="audio" rows="2" editable="true" perRegion="true" required="true"/>
  <Choices name="intent" toName="audio" perRegion="true">
    <Choice value="Question"/><Choice value="Request"/><Choice value="Satisfied"/><Choice value="Unsatisfied"/>
  </Choices>
</View>"""

OCR_CONFIG = """<View>
  <Image name="image" value="$image"/>
  <RectangleLabels name="bbox" toName="image"><Label value="Text"/><Label value="Handwriting"/></RectangleLabels>
  <TextArea name="transcription" toName="image" editable="true" perRegion="true" required="true"/>
  <Rating name="legibility" toName="image" maxRating="5" perRegion="true"/>
</View>"""

TS_CONFIG = """<View>
  <TimeSeries name="ts" value="$csv" valueType="url" timeColumn="time">
    <Channel column="signal"/>
  </TimeSeries>
  <TimeSeriesLabels name="label" toName="ts"><Label value="Region"/></TimeSeriesLabels>
  <Choices name="region_type" toName="ts" perRegion="true" choice="multiple">
    <Choice value="Outlier"/><Choice value="Anomaly"/><Choice value="Drift"/>
  </Choices>
  <Number name="severity" toName="ts" perRegion="true" min="0" max="100"/>
</View>"""

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"]
INTENTS = ["Question", "Request", "Satisfied", "Unsatisfied"]
KINDS_TS = ["Outlier", "Anomaly", "Drift"]


def _rid(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


# -- relations on text spans ---------------------------------------------------------------

def _text_task(rng: random.Random) -> tuple[str, list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """A text, its entity spans (start, end, label) and relations (from, to, label) on them."""
    words = [rng.choice(WORDS) for _ in range(60)]
    text = " ".join(words)
    starts = [0]
    for w in words[:-1]:
        starts.append(starts[-1] + len(w) + 1)
    picks = sorted(rng.sample(range(0, 60, 3), 6))
    spans = [(starts[k], starts[k] + len(words[k]) + 1 + len(words[k + 1]), rng.choice(["Organization", "Person", "Datetime"]))
             for k in picks]
    rels = []
    for _ in range(4):
        a, b = rng.sample(range(len(spans)), 2)
        rels.append((a, b, rng.choice(["org:founded_by", "org:founded", "per:employee_of"])))
    return text, spans, rels


def _relations_result(rng: random.Random, text: str, spans: list, rels: list) -> list[dict]:
    ids = [_rid(rng) for _ in spans]
    out: list[dict] = [{"value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}, "id": i,
                        "from_name": "label", "to_name": "text", "type": "labels"}
                       for (s, e, lab), i in zip(spans, ids)]
    for a, b, lab in rels:
        direction = rng.choice(["right", "left"])
        src, dst = (a, b) if direction == "right" else (b, a)   # "left": the arrow runs to -> from
        out.append({"from_id": ids[src], "to_id": ids[dst], "type": "relation", "direction": direction,
                    "labels": [lab]})
    return out


def relations_tasks(scenario: Scenario, n_tasks: int = 30, n_annotators: int = 4, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    tasks = []
    for t in range(n_tasks):
        text, spans, rels = _text_task(rng)
        anns = []
        for a in range(n_annotators):
            if scenario == "random" or (scenario == "careless" and a == n_annotators - 1):
                _, sp, rl = _text_task(rng)        # spans and relations of another text
                sp = [(min(s, len(text) - 1), min(e, len(text)), lab) for s, e, lab in sp]
            elif scenario == "careless":
                sp = [(max(0, s + rng.choice([-1, 0, 0, 1])), e, lab) for s, e, lab in spans]
                rl = [r for r in rels if rng.random() > 0.1]
            else:
                sp, rl = spans, rels
            anns.append(_annotation(t, a, _relations_result(rng, text, sp, rl), rng))
        tasks.append({"id": t + 1, "data": {"text": text}, "annotations": anns})
    return tasks


# -- per-region answers ----------------------------------------------------------------------

def _annotation(t: int, a: int, result: list[dict], rng: random.Random) -> dict:
    rng.shuffle(result)    # drawing order means nothing
    return {"id": t * 100 + a + 1, "completed_by": a + 1, "result": result}


def _segments(rng: random.Random, length: float, n: int) -> list[tuple[float, float]]:
    cuts = sorted(rng.uniform(0, length) for _ in range(2 * n))
    return [(cuts[2 * k], cuts[2 * k + 1]) for k in range(n)]


def _asr_truth(rng: random.Random) -> list[tuple]:
    return [(s, e, rng.choice(["Speech", "Noise"]), _sentence(rng, rng.randint(3, 8)), rng.choice(INTENTS))
            for s, e in _segments(rng, 30.0, rng.randint(2, 5))]


def _asr_result(rng: random.Random, regions: list[tuple]) -> list[dict]:
    out: list[dict] = []
    for s, e, lab, words, intent in regions:
        i = "wavesurfer_" + _rid(rng)
        base = {"original_length": 30.0, "id": i, "to_name": "audio"}
        out.append({**base, "value": {"start": s, "end": e, "channel": 0, "labels": [lab]},
                    "from_name": "labels", "type": "labels"})
        out.append({**base, "value": {"start": s, "end": e, "channel": 0, "text": [words]},
                    "from_name": "transcription", "type": "textarea"})
        out.append({**base, "value": {"start": s, "end": e, "channel": 0, "choices": [intent]},
                    "from_name": "intent", "type": "choices"})
    return out


def _near_asr(rng: random.Random, truth: list[tuple]) -> list[tuple]:
    out = []
    for s, e, lab, words, intent in truth:
        w = words.split()
        if rng.random() < 0.3:
            w[rng.randrange(len(w))] = rng.choice(WORDS)
        jit = 0.02 * (e - s)
        s2 = max(0.0, s + rng.uniform(-jit, jit))
        out.append((s2, max(s2, e + rng.uniform(-jit, jit)), lab, " ".join(w),
                    intent if rng.random() > 0.1 else rng.choice(INTENTS)))
    return out


def _ocr_truth(rng: random.Random) -> list[tuple]:
    out = []
    for k in range(rng.randint(2, 5)):
        x, y = rng.uniform(0, 80), rng.uniform(0, 90)
        out.append((x, y, rng.uniform(5, 20), rng.uniform(3, 8), rng.choice(["Text", "Handwriting"]),
                    _sentence(rng, rng.randint(1, 4)), rng.randint(1, 5)))
    return out


def _ocr_result(rng: random.Random, regions: list[tuple]) -> list[dict]:
    out: list[dict] = []
    for x, y, w, h, lab, words, rating in regions:
        geom = {"x": x, "y": y, "width": w, "height": h, "rotation": 0}
        base = {"original_width": 1000, "original_height": 800, "image_rotation": 0, "id": _rid(rng),
                "to_name": "image"}
        out.append({**base, "value": {**geom, "rectanglelabels": [lab]}, "from_name": "bbox",
                    "type": "rectanglelabels"})
        out.append({**base, "value": {**geom, "text": [words]}, "from_name": "transcription", "type": "textarea"})
        out.append({**base, "value": {**geom, "rating": rating}, "from_name": "legibility", "type": "rating"})
    return out


def _near_ocr(rng: random.Random, truth: list[tuple]) -> list[tuple]:
    out = []
    for x, y, w, h, lab, words, rating in truth:
        chars = list(words)
        if rng.random() < 0.3:
            chars[rng.randrange(len(chars))] = rng.choice(string.ascii_lowercase)
        out.append((x + rng.uniform(-0.3, 0.3), y + rng.uniform(-0.3, 0.3), w, h, lab, "".join(chars),
                    min(5, max(1, rating + rng.choice([0, 0, 0, 1, -1])))))
    return out


def _ts_truth(rng: random.Random) -> list[tuple]:
    out = []
    for s, e in _segments(rng, 1000.0, rng.randint(2, 4)):
        if rng.random() < 0.3:
            e = s   # an instant
        out.append((round(s), round(e), frozenset(rng.sample(KINDS_TS, rng.randint(1, 2))), rng.randint(0, 100)))
    return out


def _ts_result(rng: random.Random, regions: list[tuple]) -> list[dict]:
    out: list[dict] = []
    for s, e, kinds, severity in regions:
        geom = {"start": s, "end": e, "instant": s == e}
        i = _rid(rng)
        out.append({"value": {**geom, "timeserieslabels": ["Region"]}, "id": i, "from_name": "label",
                    "to_name": "ts", "type": "timeserieslabels"})
        out.append({"value": {**geom, "choices": sorted(kinds)}, "id": i, "from_name": "region_type",
                    "to_name": "ts", "type": "choices"})
        out.append({"value": {**geom, "number": severity}, "id": i, "from_name": "severity",
                    "to_name": "ts", "type": "number"})
    return out


def _near_ts(rng: random.Random, truth: list[tuple]) -> list[tuple]:
    out = []
    for s, e, kinds, sev in truth:
        s2 = s + rng.choice([0, 0, 1])
        e2 = s2 if e == s else max(s2, e + rng.choice([0, 0, 1]))   # an instant stays one
        out.append((s2, e2, kinds, min(100, max(0, sev + rng.randint(-3, 3)))))
    return out


PER_REGION: dict[str, tuple[str, dict, Callable, Callable, Callable]] = {
    # name: config, data, truth(rng), near(rng, truth), result(rng, regions)
    "asr": (ASR_CONFIG, {"audio": "/static/samples/game.wav"}, _asr_truth, _near_asr, _asr_result),
    "ocr": (OCR_CONFIG, {"image": "/static/samples/receipt.png"}, _ocr_truth, _near_ocr, _ocr_result),
    "timeseries": (TS_CONFIG, {"csv": "/samples/time-series.csv"}, _ts_truth, _near_ts, _ts_result),
}


def per_region_tasks(template: str, scenario: Scenario, n_tasks: int = 30, n_annotators: int = 4,
                     seed: int = 0) -> list[dict]:
    _, data, truth_fn, near_fn, result_fn = PER_REGION[template]
    rng = random.Random(seed)
    tasks = []
    for t in range(n_tasks):
        truth = truth_fn(rng)
        anns = []
        for a in range(n_annotators):
            if scenario == "random" or (scenario == "careless" and a == n_annotators - 1):
                regions = truth_fn(rng)
            elif scenario == "careless":
                regions = near_fn(rng, truth)
            else:
                regions = truth
            anns.append(_annotation(t, a, result_fn(rng, regions), rng))
        tasks.append({"id": t + 1, "data": dict(data), "annotations": anns})
    return tasks


def config_of(template: str) -> str:
    return RELATIONS_CONFIG if template == "relations" else PER_REGION[template][0]


def tasks_of(template: str, scenario: Scenario, **kw: Any) -> list[dict]:
    if template == "relations":
        return relations_tasks(scenario, **kw)
    return per_region_tasks(template, scenario, **kw)
