"""A second generator of the seven planted-problem shapes, for ``bench_flags`` (issue 22).

It was written apart from ``benchmarks/flag_shapes.py``, from the issue's text alone, and
makes its projects its own way: 260–370 tasks, a pool of 8–12 annotators and 2–5 of them on
each task (so the bad annotator is on about a third of the tasks); Choices controls over
3–6 classes with a skewed prior (a Dirichlet draw, the most common class first); careful
annotators whose accuracy varies by ±0.05 around the shape's own, one annotator to
another; careful box and entity annotators who miss 3 % of the boxes or entities and
mislabel 4 % of them. It exists because flags tuned on one generator may not hold on
shapes nobody tuned them on: ``python -m benchmarks flags -- --shapes apart`` scores the
same flags on these projects.

The shapes (planted: the task ids the generator says should be flagged):

* ``spammer`` — 4 classes, careful accuracy 0.88; the bad annotator always gives the most
  common class. Planted: their tasks whose truth is another class.
* ``random 30%`` — 6 classes, careful accuracy 0.90; the bad annotator answers at random on
  30 % of the tasks (a draw per task) and carefully elsewhere. Planted: their tasks whose
  answer is not the truth (a careful slip included).
* ``ambiguous 15% (coins)`` — 3 classes, careful accuracy 0.90; 15 % of the tasks have a
  second label and each careful annotator reads one of the two by a coin (then slips as
  usual); a second, clean 5-point Rating control beside it. Planted: every ambiguous task,
  whatever its answers show — so a task whose coins all fell alike is planted but shows
  nothing, and even the generating model recalls only 0.17–0.40 of the ambiguous tasks:
  the recall target is out of reach here by construction.
* ``shifted boxes`` — RectangleLabels, 1–4 objects of varied sizes per image, careful boxes
  jittered by 3 % of their size; on 20 % of the tasks the bad annotator's boxes are moved
  by half a box width. Planted: those tasks that the bad annotator is on.
* ``missed entities`` — Labels on Text, 2–6 named entities per text, a boundary off by a
  character 4 % of the time; the bad annotator misses each entity with probability 0.35.
  Planted: their tasks with an entity missed.
* ``null (85% careful)`` — 5 classes, careful accuracy 0.85, nothing planted.
* ``hard + random`` — 4 classes, careful accuracy 0.55, and one annotator who always
  answers at random. Planted: their tasks whose answer is not the truth.

The same seed gives the same project, task and user ids included (one numpy generator per
shape and seed, its draws in a fixed order). There is no model of this generator in
``benchmarks/flag_oracle.py``: its projects carry no ``plan``, and the benchmark prints "–"
for the generating model's flags.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .flag_shapes import ShapeProject

__all__ = ["ApartShape", "SHAPES", "make_project"]

#: the generator's own shape keys, in its order (the order seeds the generator)
KEYS: tuple[str, ...] = ("spam", "random30", "ambiguous", "boxshift", "missent", "null", "hard")
CAREFUL: dict[str, float] = {"spam": 0.88, "random30": 0.90, "ambiguous": 0.90, "null": 0.85, "hard": 0.55}
CLASSES: dict[str, int] = {"spam": 4, "random30": 6, "ambiguous": 3, "null": 5, "hard": 4}
RATING_PRIOR = (0.1, 0.15, 0.3, 0.3, 0.15)
BOX_LABELS = ("Car", "Person", "Sign")
WORDS = "the a report said that on monday in of from with met visited near after before while and".split()
NAMES: dict[str, list[str]] = {
    "PER": ["Anna Berg", "Rui Costa", "Li Wei", "Omar Haddad", "Jane Doe", "Piet Smit"],
    "ORG": ["Acme Corp", "United Nations", "Tesla", "Red Cross", "Siemens AG"],
    "LOC": ["Paris", "New York", "Lake Como", "Nairobi", "Oslo", "Mount Fuji"],
    "MISC": ["Olympics", "Python", "Nobel Prize", "Euro"],
}


@dataclass(frozen=True)
class ApartShape:
    """A shape of this generator: its ``key`` (its place in :data:`KEYS` seeds it) and the
    ``name`` the benchmark prints."""

    key: str
    name: str


SHAPES: tuple[ApartShape, ...] = (
    ApartShape("spam", "spammer"),
    ApartShape("random30", "random 30%"),
    ApartShape("ambiguous", "ambiguous 15% (coins)"),
    ApartShape("boxshift", "shifted boxes"),
    ApartShape("missent", "missed entities"),
    ApartShape("null", "null (85% careful)"),
    ApartShape("hard", "hard + random"),
)


class _Builder:
    """Label Studio export tasks, with annotation ids numbered from 1 across the project."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.ann_id = 1

    def task(self, tid: int, data: dict[str, Any], per_ann: list[tuple[int, list[dict[str, Any]]]]) -> None:
        """Append task ``tid`` with one annotation per (user id, results) of ``per_ann``."""
        anns = []
        for worker, results in per_ann:
            anns.append({"id": self.ann_id, "completed_by": int(worker), "result": results,
                         "was_cancelled": False, "ground_truth": False,
                         "created_at": "2024-01-01T00:00:00Z", "lead_time": 10.0})
            self.ann_id += 1
        self.tasks.append({"id": int(tid), "data": data, "annotations": anns, "predictions": []})


def _header(rng: np.random.Generator, first_id: int) -> tuple[int, np.ndarray]:
    """The number of tasks and the annotator pool's user ids (from ``first_id`` on)."""
    n_tasks = int(rng.integers(260, 371))
    n_pool = int(rng.integers(8, 13))
    return n_tasks, np.arange(first_id, first_id + n_pool)


def _regions_start(shape: ApartShape, rng: np.random.Generator, first_id: int,
                   config: str) -> tuple[int, np.ndarray, int, ShapeProject]:
    """A region shape's tasks, pool, bad annotator (always one) and empty project."""
    n_tasks, ids = _header(rng, first_id)
    bad = int(rng.choice(ids))
    return n_tasks, ids, bad, ShapeProject(name=shape.name, tasks=[], bad=str(bad), config=config)


def _assign(rng: np.random.Generator, ids: np.ndarray) -> list[int]:
    """Two to five distinct annotators of the pool ``ids`` for one task."""
    k = int(rng.integers(2, 6))
    return [int(a) for a in rng.choice(ids, size=k, replace=False)]


def _careful_class(rng: np.random.Generator, truth: int, acc: float, k: int) -> int:
    """A careful answer among ``k`` classes: ``truth`` with probability ``acc``, else
    another class uniformly (a uniform draw is spent even when ``acc`` is 0)."""
    if rng.random() < acc:
        return truth
    return int(rng.choice([c for c in range(k) if c != truth]))


def _careful_rating(rng: np.random.Generator, truth: int, acc: float) -> int:
    """A careful 1–5 rating: ``truth`` with probability ``acc``, else a point off (within 1–5)."""
    if rng.random() < acc:
        return truth
    opts = [v for v in (truth - 1, truth + 1) if 1 <= v <= 5]
    return int(rng.choice(opts))


def _choices_result(name: str, label: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "text", "type": "choices", "value": {"choices": [label]}}


def _rating_result(name: str, v: int) -> dict[str, Any]:
    return {"from_name": name, "to_name": "text", "type": "rating", "value": {"rating": int(v)}}


def _choices_xml(name: str, labels: list[str], extra: str = "") -> str:
    ch = "".join(f'<Choice value="{lab}"/>' for lab in labels)
    return (f'<View><Text name="text" value="$text"/>'
            f'<Choices name="{name}" toName="text" choice="single">{ch}</Choices>{extra}</View>')


def _categorical(shape: ApartShape, rng: np.random.Generator) -> ShapeProject:
    """A Choices project (spam, random30, ambiguous, null, hard); the ambiguous one has a
    Rating control ``quality`` beside it."""
    key = shape.key
    n_tasks, ids = _header(rng, 101)
    k = CLASSES[key]
    labels = [f"c{i}" for i in range(k)]
    prior = np.sort(rng.dirichlet(np.full(k, 2.0)))[::-1]      # skewed; c0 the most common
    acc = {int(a): float(np.clip(CAREFUL[key] + rng.uniform(-0.05, 0.05), 0.3, 0.98)) for a in ids}
    bad = int(rng.choice(ids)) if key in ("spam", "random30", "hard") else None
    spam_label = 0                                               # the spammer's: the most common class
    rating = key == "ambiguous"
    extra = '<Rating name="quality" toName="text" maxRating="5"/>' if rating else ""
    proj = ShapeProject(name=shape.name, config=_choices_xml("label", labels, extra), tasks=[],
                        bad=None if bad is None else str(bad), categorical="label")
    b = _Builder()
    for t in range(n_tasks):
        tid = 1000 + t
        y = int(rng.choice(k, p=prior))
        workers = _assign(rng, ids)
        is_amb = key == "ambiguous" and rng.random() < 0.15
        alt = int(rng.choice([c for c in range(k) if c != y])) if is_amb else None
        ry = int(rng.choice([1, 2, 3, 4, 5], p=list(RATING_PRIOR)))
        random_here = rng.random() < 0.30
        per: list[tuple[int, list[dict[str, Any]]]] = []
        depart = False
        for w in workers:
            if w == bad and key == "spam":
                lab = spam_label
            elif w == bad and key == "random30" and random_here:
                lab = int(rng.integers(k))
            elif w == bad and key == "hard":
                lab = int(rng.integers(k))
            elif alt is not None:
                lab = y if rng.random() < 0.5 else alt               # the coin: which reading
                if rng.random() > acc[w]:                            # a careful slip on top
                    lab = _careful_class(rng, lab, 0.0, k)
            else:
                lab = _careful_class(rng, y, acc[w], k)
            if w == bad and lab != y:
                depart = True
            res = [_choices_result("label", labels[lab])]
            if rating:
                res.append(_rating_result("quality", _careful_rating(rng, ry, acc[w])))
            per.append((w, res))
        if alt is not None or depart:
            proj.planted.add(str(tid))
        # an ambiguous task's two labels both count as right (as in flag_shapes.py)
        proj.truth[str(tid)] = {"label": labels[y] if alt is None else {labels[y], labels[alt]},
                                **({"quality": ry} if rating else {})}
        b.task(tid, {"text": f"item {tid}: some text to classify"}, per)
    proj.tasks = b.tasks
    return proj


def _boxes(shape: ApartShape, rng: np.random.Generator) -> ShapeProject:
    """RectangleLabels on 800 × 600 images; the bad annotator shifts their boxes on 20 % of the tasks."""
    width, height = 800, 600
    lab_xml = "".join(f'<Label value="{lab}"/>' for lab in BOX_LABELS)
    n_tasks, ids, bad, proj = _regions_start(
        shape, rng, 201, f'<View><Image name="image" value="$image"/><RectangleLabels name="box" '
                         f'toName="image">{lab_xml}</RectangleLabels></View>')
    b = _Builder()
    for t in range(n_tasks):
        tid = 2000 + t
        n_obj = int(rng.integers(1, 5))
        objs = []
        for _ in range(n_obj):
            w = float(rng.uniform(4, 30))                          # percent of the image: varied sizes
            h = float(rng.uniform(4, 30))
            x = float(rng.uniform(0, 100 - w))
            y = float(rng.uniform(0, 100 - h))
            objs.append((x, y, w, h, int(rng.choice(3, p=[0.55, 0.3, 0.15]))))
        workers = _assign(rng, ids)
        shift_here = rng.random() < 0.20
        per = []
        for uid in workers:
            res = []
            for j, (x, y, w, h, lab) in enumerate(objs):
                if rng.random() < 0.03:                            # an ordinary miss
                    continue
                xx = x + float(rng.normal(0, 0.03 * w))
                yy = y + float(rng.normal(0, 0.03 * h))
                ww, hh = w * (1 + rng.normal(0, 0.03)), h * (1 + rng.normal(0, 0.03))
                if uid == bad and shift_here:
                    xx = x + 0.5 * w * (1 if rng.random() < 0.5 else -1)
                    xx = min(max(xx, 0.0), 100 - ww)
                ll = lab if rng.random() > 0.04 else int(rng.choice([c for c in range(3) if c != lab]))
                res.append({"id": f"r{tid}_{uid}_{j}", "from_name": "box", "to_name": "image",
                            "type": "rectanglelabels", "original_width": width, "original_height": height,
                            "image_rotation": 0,
                            "value": {"x": xx, "y": yy, "width": ww, "height": hh, "rotation": 0,
                                      "rectanglelabels": [BOX_LABELS[ll]]}})
            per.append((uid, res))
        if shift_here and bad in workers:
            proj.planted.add(str(tid))
        b.task(tid, {"image": f"/data/img{tid}.jpg"}, per)
    proj.tasks = b.tasks
    return proj


def _entities(shape: ApartShape, rng: np.random.Generator) -> ShapeProject:
    """Labels on Text with named entities; the bad annotator misses each with probability 0.35."""
    kinds = list(NAMES)
    lab_xml = "".join(f'<Label value="{lab}"/>' for lab in kinds)
    n_tasks, ids, bad, proj = _regions_start(
        shape, rng, 301, f'<View><Labels name="ner" toName="text">{lab_xml}</Labels>'
                         f'<Text name="text" value="$text"/></View>')
    b = _Builder()
    for t in range(n_tasks):
        tid = 3000 + t
        n_ent = int(rng.integers(2, 7))
        parts: list[str] = []
        ents: list[tuple[int, int, str]] = []
        pos = 0
        for _ in range(n_ent):
            n_words = int(rng.integers(2, 7))
            filler = " ".join(rng.choice(WORDS, size=n_words)) + " "
            parts.append(filler)
            pos += len(filler)
            kind = str(rng.choice(kinds, p=[0.35, 0.25, 0.3, 0.1]))
            name = str(rng.choice(NAMES[kind]))
            parts.append(name)
            ents.append((pos, pos + len(name), kind))
            pos += len(name)
            parts.append(" ")
            pos += 1
        parts.append("end.")
        text = "".join(parts)
        workers = _assign(rng, ids)
        per = []
        missed_any = False
        for uid in workers:
            res = []
            for j, (s, e, kind) in enumerate(ents):
                if uid == bad and rng.random() < 0.35:
                    missed_any = True
                    continue
                if uid != bad and rng.random() < 0.03:             # an ordinary miss
                    continue
                ss, ee = s, e
                if rng.random() < 0.04:                            # a boundary a character off
                    ee = e - 1 if rng.random() < 0.5 else min(e + 1, len(text))
                kk = kind if rng.random() > 0.04 else str(rng.choice([x for x in kinds if x != kind]))
                res.append({"id": f"s{tid}_{uid}_{j}", "from_name": "ner", "to_name": "text", "type": "labels",
                            "value": {"start": ss, "end": ee, "text": text[ss:ee], "labels": [kk]}})
            per.append((uid, res))
        if missed_any and bad in workers:
            proj.planted.add(str(tid))
        b.task(tid, {"text": text}, per)
    proj.tasks = b.tasks
    return proj


def make_project(shape: ApartShape, seed: int) -> ShapeProject:
    """The project of ``shape`` for ``seed`` (its generator is seeded with
    ``1000 × (the shape's place in KEYS + 1) + seed``).

    Parameters
    ----------
    shape
        One of :data:`SHAPES`.
    seed
        Any integer; the same seed gives the same project.

    Returns
    -------
    ShapeProject
        Tasks in Label Studio export form (task ids from 1000, 2000 or 3000 by kind), the
        config, the planted task ids (str), the bad annotator's user id (str; None on the
        null shape), the truth of the Choices control ``label`` (a set of two labels on an
        ambiguous task) and, on the ambiguous shape, of the Rating ``quality``; no ``plan``
        (so no generating-model flags).
    """
    rng = np.random.default_rng(1000 * (KEYS.index(shape.key) + 1) + seed)
    if shape.key == "boxshift":
        return _boxes(shape, rng)
    if shape.key == "missent":
        return _entities(shape, rng)
    return _categorical(shape, rng)
