"""Adapter speed: adapting a 100,000-task export (3 annotations per task, mixed control tags)
must take no more than 2x the time of ``json.load`` of the same file.

The export is generated synthetically in a temporary folder with the shape of the real
Label Studio 1.23 JSON export (``data/label-studio/exports``): every annotation carries
the same metadata fields, results carry ids, ``origin`` and image sizes.
Run: ``python -m benchmarks adapters`` or ``python -m benchmarks.bench_adapters --tasks N``.
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import tempfile
import time
from pathlib import Path

from ls_agreement.adapters.adapt import adapt
from ls_agreement.adapters.config import parse_config

CONFIG = """<View>
  <Image name="image" value="$image"/>
  <RectangleLabels name="bbox" toName="image"><Label value="Cat"/><Label value="Dog"/></RectangleLabels>
  <KeyPointLabels name="kp" toName="image"><Label value="Nose"/></KeyPointLabels>
  <PolygonLabels name="poly" toName="image"><Label value="Region"/></PolygonLabels>
  <Text name="text" value="$text"/>
  <Labels name="ner" toName="text"><Label value="PER"/><Label value="ORG"/></Labels>
  <Choices name="sentiment" toName="text"><Choice value="Positive"/><Choice value="Negative"/></Choices>
  <Choices name="topics" toName="text" choice="multiple"><Choice value="A"/><Choice value="B"/><Choice value="C"/></Choices>
  <Rating name="quality" toName="text"/>
  <TextArea name="translation" toName="text"/>
  <List name="items" value="$items"/>
  <Ranker name="rank" toName="items"/>
</View>"""
TEXT = "Alice works at Acme Corp in Paris and Bob at Initech in Berlin."
ITEMS = [{"id": c, "title": c} for c in "abcd"]


def _rid(rng: random.Random) -> str:
    return f"{rng.getrandbits(40):010x}"


def _results(k: int, rng: random.Random) -> list[dict]:
    """Results of one annotation; the control mix rotates with the task number."""
    mix = k % 4
    img = {"to_name": "image", "original_width": 640, "original_height": 480, "image_rotation": 0,
           "origin": "manual"}
    txt = {"to_name": "text", "origin": "manual"}
    out = []
    if mix == 0:
        for _ in range(rng.randint(1, 3)):
            out.append({"id": _rid(rng), "from_name": "bbox", "type": "rectanglelabels", **img,
                        "value": {"x": rng.uniform(0, 60), "y": rng.uniform(0, 60), "width": rng.uniform(5, 30),
                                  "height": rng.uniform(5, 30), "rotation": 0,
                                  "rectanglelabels": [rng.choice(["Cat", "Dog"])]}})
        out.append({"id": _rid(rng), "from_name": "sentiment", "type": "choices", **txt,
                    "value": {"choices": [rng.choice(["Positive", "Negative"])]}})
    elif mix == 1:
        for s, e, lab in ((0, 5, "PER"), (15, 24, "ORG"), (rng.randint(40, 45), 50, "PER")):
            out.append({"id": _rid(rng), "from_name": "ner", "type": "labels", **txt,
                        "value": {"start": s, "end": e, "text": TEXT[s:e], "labels": [lab]}})
        out.append({"id": _rid(rng), "from_name": "quality", "type": "rating", **txt,
                    "value": {"rating": rng.randint(1, 5)}})
    elif mix == 2:
        out.append({"id": _rid(rng), "from_name": "topics", "type": "choices", **txt,
                    "value": {"choices": rng.sample(["A", "B", "C"], rng.randint(1, 3))}})
        out.append({"id": _rid(rng), "from_name": "translation", "type": "textarea", **txt,
                    "value": {"text": [rng.choice(["Alice arbeitet bei Acme.", "Alice travaille chez Acme."])]}})
    else:
        out.append({"id": _rid(rng), "from_name": "kp", "type": "keypointlabels", **img,
                    "value": {"x": rng.uniform(0, 100), "y": rng.uniform(0, 100), "width": 0.6,
                              "keypointlabels": ["Nose"]}})
        out.append({"id": _rid(rng), "from_name": "poly", "type": "polygonlabels", **img,
                    "value": {"points": [[rng.uniform(0, 50), rng.uniform(0, 50)] for _ in range(4)],
                              "closed": True, "polygonlabels": ["Region"]}})
        out.append({"id": _rid(rng), "from_name": "rank", "to_name": "items", "type": "ranker", "origin": "manual",
                    "value": {"ranker": {"rank": rng.sample("abcd", 4)}}})
    return out


def make_export(path: Path, n_tasks: int, seed: int = 0) -> int:
    """Write a synthetic JSON export; returns its size in bytes."""
    rng = random.Random(seed)
    tasks = []
    ann_id = 0
    for k in range(1, n_tasks + 1):
        anns = []
        for who in (4, 5, 6):
            ann_id += 1
            anns.append({"id": ann_id, "completed_by": who, "result": _results(k, rng), "was_cancelled": False,
                         "ground_truth": False, "created_at": "2026-11-20T23:50:38.766154Z",
                         "updated_at": "2026-11-20T23:50:38.766207Z", "draft_created_at": None,
                         "lead_time": 12.5, "prediction": {}, "result_count": 0,
                         "unique_id": f"{rng.getrandbits(128):032x}", "import_id": None, "last_action": None,
                         "bulk_created": False, "task": k, "project": 1, "updated_by": None,
                         "parent_prediction": None, "parent_annotation": None, "last_created_by": None})
        tasks.append({"id": k, "annotations": anns, "drafts": [], "predictions": [],
                      "data": {"image": f"http://127.0.0.1:9/img/{k}.jpg", "text": TEXT, "items": ITEMS},
                      "meta": {}, "created_at": "2026-11-20T23:50:38.759656Z",
                      "updated_at": "2026-11-20T23:50:38.923877Z", "inner_id": k, "total_annotations": 3,
                      "cancelled_annotations": 0, "total_predictions": 0, "comment_count": 0,
                      "unresolved_comment_count": 0, "last_comment_updated_at": None, "project": 1,
                      "updated_by": 1, "comment_authors": []})
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(tasks, fh)
    return path.stat().st_size


def _best_of(fn, repeat: int, gc_on: bool) -> tuple[float, object]:
    """Best wall time of ``repeat`` runs. With ``gc_on=False`` the cyclic garbage collector
    is paused while timing: json.load of millions of objects otherwise triggers repeated
    full collections, which would flatter the ratio."""
    best, out = float("inf"), None
    for _ in range(repeat):
        out = None
        gc.collect()
        if not gc_on:
            gc.disable()
        try:
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
    return best, out


def main(n_tasks: int = 100_000, repeat: int = 1) -> None:
    config = parse_config(CONFIG)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.json"
        t0 = time.perf_counter()
        size = make_export(path, n_tasks)
        print(f"synthetic export: {n_tasks} tasks x 3 annotations, {size / 1e6:.0f} MB "
              f"(generated in {time.perf_counter() - t0:.1f} s)")

        def load():
            with open(path, "rb") as fh:
                return json.load(fh)

        rows = []
        for gc_on in (False, True):
            t_load, tasks = _best_of(load, repeat, gc_on)
            t_adapt, out = _best_of(lambda t=tasks: adapt(config, t), repeat, gc_on)
            rows.append((gc_on, t_load, t_adapt))
            del tasks
    n_values = sum(len(c.table) for c in out.controls.values())
    print(f"{'garbage collector':<20}{'json.load s':>12}{'adapt s':>10}{'ratio':>8}")
    for gc_on, t_load, t_adapt in rows:
        print(f"{'on' if gc_on else 'paused':<20}{t_load:>12.2f}{t_adapt:>10.2f}{t_adapt / t_load:>8.2f}")
    print(f"values: {n_values} in {len(out.controls)} controls; warnings: {len(out.warnings)}")
    worst = max(r[2] / r[1] for r in rows)
    print(f"worst ratio adapt / json.load = {worst:.2f} (target <= 2.0): {'PASS' if worst <= 2.0 else 'FAIL'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    main(a.tasks, a.repeat)
