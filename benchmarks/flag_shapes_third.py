"""A third generator of the seven planted-problem shapes, for ``bench_flags`` (issue 22).

Written independently of ``benchmarks/flag_shapes.py`` and ``benchmarks/flag_shapes_apart.py``
(only their interface was read: :class:`~benchmarks.flag_shapes.ShapeProject` and the
``SHAPES`` / ``make_project`` pair), from the issue's text alone, as a probe of the flags on
projects nobody tuned them on: ``python -m benchmarks flags -- --shapes third``.

What every project shares:

* 260–370 tasks and a pool of 8–12 annotators (user ids 501, 502, …).
* An uneven workload: each annotator has an activity weight drawn from a log-normal
  (σ = 0.8), so some do several times as many tasks as others; each task draws how many
  annotators it gets — 2, 3, 4 or 5 with probabilities 0.25 / 0.40 / 0.23 / 0.12 — and
  picks them without replacement in proportion to their weights. The planted bad annotator
  is drawn among the pool's busier half (weight at or above the median).
* Choices controls over ordered classes (a sentiment scale, severity levels, topics
  listed so that neighbours are related) with a non-uniform prior: Zipf-like,
  ``p_k ∝ 1 / (rank + 1) ** s`` with ``s`` drawn in 0.7–1.3, the ranks shuffled over the
  classes so the most common class is anywhere in the list.
* Careful annotators' accuracies drawn per annotator from a Beta distribution around the
  shape's mean; when a careful annotator errs, they pick another class with weight
  ``0.2 ** (distance − 1)`` on the class order: mostly a neighbour.

The shapes (planted: the task ids the generator says should be flagged):

* ``spammer`` — ``sentiment``, 5 classes (very negative … very positive); careful accuracy
  Beta with mean 0.86 (concentration 30); the spammer always answers the most common class.
  Planted: the spammer's tasks whose truth is another class.
* ``random 30%`` — ``topic``, 4 classes; careful accuracy Beta mean 0.88 (concentration
  30); the bad annotator answers uniformly at random on exactly 30 % of their tasks (a
  random subset, rounded) and as a careful annotator (accuracy from the same Beta)
  elsewhere. Planted: their random tasks whose answer is not the truth.
* ``ambiguous 15%`` — ``stance``, 3 classes (against / neutral / favour), and a 5-point
  Rating ``confidence`` beside it. Exactly 15 % of the tasks (rounded) are ambiguous
  between their truth and a neighbouring class; their annotators split as evenly as their
  number allows (2: 1–1, 3: 2–1 or 1–2, 4: 2–2, 5: 3–2 or 2–3, the odd one out at random),
  with no slips. Elsewhere careful accuracy Beta mean 0.90 (concentration 40). The Rating
  is ordinary: a true rating from a skewed prior, each annotator exact with a Beta (mean
  0.75) probability, otherwise one point off (9 in 10) or two (1 in 10), kept in 1–5.
  No bad annotator. Planted: every ambiguous task.
* ``shifted boxes`` — RectangleLabels ``objects`` on images of 640×480, 1024×768 or
  1280×720; 1–6 objects per image (1 + Poisson(1.6)), labels car / truck / pedestrian /
  cyclist / traffic sign with their own aspect ratios, widths log-normal around 11 % of the
  image (2.5–45 %). Careful annotators move each box edge by a normal error of
  0.3 + 4 % of the box's extent (percent of the image), miss a small box (area under 40 %²)
  with probability 0.15 and any other with 0.01, and relabel a box to a similar class with
  probability 0.03. The bad annotator is careful, except on exactly 20 % of their tasks
  (rounded), where every box of theirs is displaced by half its width horizontally, half its
  height vertically, or both (the direction drawn per task, each of the eight equally; a box
  that would leave the image goes the other way). Planted: those tasks.
* ``missed entities`` — Labels ``ents`` on Text: sentences built from filler words and
  1–5 named entities (PER, ORG, LOC, DATE; one to three tokens each). Careful annotators
  put a boundary one token off (widen or narrow, start or end) with probability 0.05 per
  entity and mislabel it (PER→ORG, ORG→LOC, LOC→ORG; a DATE keeps its label) with
  probability 0.03; they do not miss entities. The bad annotator does the same but misses
  each entity with probability 0.4. Planted: the bad annotator's tasks with at least one
  entity missed.
* ``null`` — ``category``, 4 classes; careful accuracy Beta mean 0.85 (concentration 80,
  so about 0.81–0.89). Nothing planted, no bad annotator.
* ``hard + random`` — ``severity``, 3–5 classes (drawn); careful accuracy Beta with a mean
  drawn in 0.50–0.60 (concentration 40), errors mostly to neighbours; one annotator answers
  uniformly at random on every task. Planted: their tasks whose answer is not the truth.

The same seed gives the same project, ids included: one ``numpy.random.default_rng(7919 ×
(the shape's place in KEYS + 1) + seed)`` per shape and seed, its draws in a fixed order.
Task ids run from 30001, annotation ids from 60001, region ids are ``"t<task>a<annotation>r<k>"``.
The generator computes the generating model's own flags on its Choices shapes
(``ShapeProject.generating_flags``: the posterior of a planted problem under the parameters
it drew, flagged at ½), what a fitted model can reach at best; the benchmark prints them as
"truth P/R" ("–" on the boxes and entities).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .flag_shapes import ShapeProject

__all__ = ["ThirdShape", "SHAPES", "make_project"]

#: the shape keys, in order (the order seeds the generator)
KEYS: tuple[str, ...] = ("spammer", "random30", "ambiguous", "boxes", "entities", "null", "hard")
PER_TASK = (2, 3, 4, 5)
PER_TASK_P = (0.25, 0.40, 0.23, 0.12)
FIRST_USER, FIRST_TASK, FIRST_ANNOTATION = 501, 30001, 60001
NEIGHBOUR_DECAY = 0.2


@dataclass(frozen=True)
class ThirdShape:
    """A shape of this generator: its ``key`` (its place in :data:`KEYS` seeds it) and the
    ``name`` the benchmark prints."""

    key: str
    name: str


SHAPES: tuple[ThirdShape, ...] = (
    ThirdShape("spammer", "spammer"),
    ThirdShape("random30", "random 30%"),
    ThirdShape("ambiguous", "ambiguous 15%"),
    ThirdShape("boxes", "shifted boxes"),
    ThirdShape("entities", "missed entities"),
    ThirdShape("null", "null"),
    ThirdShape("hard", "hard + random"),
)


# --------------------------------------------------------------------------- layout


@dataclass
class _Layout:
    users: list[int]
    task_ids: list[int]
    workers: list[list[int]]    # per task, its annotators' user ids in answering order
    bad: int | None


def _layout(rng: np.random.Generator, with_bad: bool) -> _Layout:
    """Tasks, the pool, each task's annotators (uneven workloads) and the bad annotator."""
    n_tasks = int(rng.integers(260, 371))
    n_users = int(rng.integers(8, 13))
    users = [FIRST_USER + k for k in range(n_users)]
    weight = rng.lognormal(0.0, 0.8, n_users)
    busy = [u for u, w in zip(users, weight) if w >= np.median(weight)]
    bad = int(rng.choice(busy)) if with_bad else None
    p = weight / weight.sum()
    workers = []
    for _ in range(n_tasks):
        m = int(rng.choice(PER_TASK, p=PER_TASK_P))
        workers.append([users[i] for i in rng.choice(n_users, size=m, replace=False, p=p)])
    return _Layout(users, [FIRST_TASK + k for k in range(n_tasks)], workers, bad)


def _beta(rng: np.random.Generator, mean: float, concentration: float, n: int) -> np.ndarray:
    return np.clip(rng.beta(mean * concentration, (1.0 - mean) * concentration, n), 0.34, 0.995)


class _Tasks:
    """Label Studio export tasks; annotation ids numbered across the project."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.next_annotation = FIRST_ANNOTATION

    def annotation_id(self) -> int:
        self.next_annotation += 1
        return self.next_annotation - 1

    def add(self, tid: int, data: dict[str, Any], anns: list[tuple[int, int, list[dict[str, Any]]]]) -> None:
        """Task ``tid`` with one annotation per (annotation id, user id, results)."""
        out = []
        for aid, uid, result in anns:
            minute = aid - FIRST_ANNOTATION
            out.append({"id": aid, "completed_by": uid, "result": result, "was_cancelled": False,
                        "ground_truth": False,
                        "created_at": f"2025-03-{1 + minute // 1440 % 28:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z",
                        "lead_time": 5.0 + (aid * 37 % 90)})
        self.tasks.append({"id": tid, "data": data, "annotations": out, "predictions": []})


# --------------------------------------------------------------------------- Choices shapes


def _prior(rng: np.random.Generator, k: int) -> np.ndarray:
    """A Zipf-like prior over ``k`` classes, the ranks shuffled over the classes."""
    s = rng.uniform(0.7, 1.3)
    ranks = rng.permutation(k)
    p = 1.0 / (ranks + 1.0) ** s
    return p / p.sum()


def _careful(rng: np.random.Generator, truth: int, acc: float, k: int) -> int:
    """Right with probability ``acc``; otherwise mostly a neighbouring class."""
    if rng.random() < acc:
        return truth
    others = np.array([c for c in range(k) if c != truth])
    w = NEIGHBOUR_DECAY ** (np.abs(others - truth) - 1.0)
    return int(rng.choice(others, p=w / w.sum()))


def _choice(control: str, label: str) -> dict[str, Any]:
    return {"from_name": control, "to_name": "doc", "type": "choices", "value": {"choices": [label]}}


def _rating(control: str, value: int) -> dict[str, Any]:
    return {"from_name": control, "to_name": "doc", "type": "rating", "value": {"rating": int(value)}}


CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "spammer": ("sentiment", ("very negative", "negative", "neutral", "positive", "very positive")),
    "random30": ("topic", ("politics", "economy", "technology", "science")),
    "ambiguous": ("stance", ("against", "neutral", "favour")),
    "null": ("category", ("bug", "performance", "usability", "feature request")),
    "hard": ("severity", ("trivial", "minor", "moderate", "major", "critical")),
}
SNIPPETS = ("the update", "this release", "our new policy", "the last shipment", "the support team",
            "the mobile app", "the council's decision", "the quarterly figures", "the checkout page")
VERBS = ("changed", "broke", "improved", "delayed", "surprised", "worried", "helped", "confused")


def _choices_project(shape: ThirdShape, rng: np.random.Generator) -> ShapeProject:
    control, names = CHOICES[shape.key]
    if shape.key == "hard":
        k = int(rng.integers(3, 6))
        names = names[:k]
    k = len(names)
    lay = _layout(rng, with_bad=shape.key in ("spammer", "random30", "hard"))
    prior = _prior(rng, k)
    if shape.key == "hard":
        mean, conc = float(rng.uniform(0.5, 0.6)), 40.0
    else:
        mean, conc = {"spammer": (0.86, 30.0), "random30": (0.88, 30.0), "ambiguous": (0.90, 40.0),
                      "null": (0.85, 80.0)}[shape.key]
    acc = dict(zip(lay.users, _beta(rng, mean, conc, len(lay.users))))
    rating = shape.key == "ambiguous"
    extra = ""
    if rating:
        extra = '<Rating name="confidence" toName="doc" maxRating="5"/>'
        rating_prior = np.array([0.06, 0.14, 0.27, 0.33, 0.20])
        rating_acc = dict(zip(lay.users, _beta(rng, 0.75, 30.0, len(lay.users))))
    config = (f'<View><Text name="doc" value="$doc"/><Choices name="{control}" toName="doc" choice="single">'
              + "".join(f'<Choice value="{n}"/>' for n in names) + f"</Choices>{extra}</View>")
    truth_class = rng.choice(k, size=len(lay.task_ids), p=prior)
    n_tasks = len(lay.task_ids)

    ambiguous: dict[int, int] = {}     # task index -> its second label
    if shape.key == "ambiguous":
        for i in rng.choice(n_tasks, size=int(round(0.15 * n_tasks)), replace=False):
            t = int(truth_class[i])
            ambiguous[int(i)] = t + 1 if t == 0 else t - 1 if t == k - 1 else t + int(rng.choice([-1, 1]))
    random_tasks: set[int] = set()
    if shape.key == "random30":
        mine = [i for i, ws in enumerate(lay.workers) if lay.bad in ws]
        random_tasks = {int(i) for i in rng.choice(mine, size=int(round(0.3 * len(mine))), replace=False)}
    constant = int(np.argmax(prior)) if shape.key == "spammer" else None

    proj = ShapeProject(name=shape.name, config=config, tasks=[], categorical=control,
                        bad=str(lay.bad) if lay.bad is not None else None)
    out = _Tasks()
    for i, (tid, ws) in enumerate(zip(lay.task_ids, lay.workers)):
        t = int(truth_class[i])
        key = str(tid)
        split: list[int] = []
        if i in ambiguous:
            pair = [t, ambiguous[i]]
            half = [pair[0]] * (len(ws) // 2) + [pair[1]] * (len(ws) // 2)
            if len(ws) % 2:
                half.append(pair[int(rng.integers(2))])
            split = [int(c) for c in rng.permutation(half)]
            proj.truth[key] = {control: {names[c] for c in pair}}
            proj.planted.add(key)
        else:
            proj.truth[key] = {control: names[t]}
        if rating:
            r_true = int(rng.choice(5, p=rating_prior)) + 1
            proj.truth[key]["confidence"] = r_true
        anns = []
        for j, uid in enumerate(ws):
            if split:
                c = split[j]
            elif uid == lay.bad and constant is not None:
                c = constant
            elif uid == lay.bad and (shape.key == "hard" or i in random_tasks):
                c = int(rng.integers(k))
            else:
                c = _careful(rng, t, acc[uid], k)
            # the spammer's tasks whose truth is another class; the random annotator's
            # tasks answered at random (all of them on "hard") and wrong
            if uid == lay.bad and c != t and (constant is not None or shape.key == "hard" or i in random_tasks):
                proj.planted.add(key)
            result = [_choice(control, names[c])]
            if rating:
                r = r_true
                if rng.random() >= rating_acc[uid]:
                    step = 1 if rng.random() < 0.9 else 2
                    sign = int(rng.choice([-1, 1]))
                    r = r_true + sign * step
                    if not 1 <= r <= 5:
                        r = r_true - sign * step
                    r = min(max(r, 1), 5)
                result.append(_rating("confidence", r))
            anns.append((out.annotation_id(), uid, result))
        words = [SNIPPETS[int(rng.integers(len(SNIPPETS)))], VERBS[int(rng.integers(len(VERBS)))],
                 "things", "for", "item", str(tid)]
        out.add(tid, {"doc": " ".join(words)}, anns)
    proj.tasks = out.tasks
    proj.generating_flags = _generating_flags(shape.key, proj, control, names, prior, acc, lay.bad, constant)
    return proj


def _confusion(acc: float, k: int) -> np.ndarray:
    """A careful annotator's confusion (true class × label): ``acc`` on the diagonal, the
    rest spread as :func:`_careful` spreads its slips."""
    z = np.arange(k)
    w = np.where(z[:, None] == z[None, :], 0.0, NEIGHBOUR_DECAY ** (np.abs(z[:, None] - z[None, :]) - 1.0))
    return acc * np.eye(k) + (1.0 - acc) * w / w.sum(axis=1, keepdims=True)


def _even_split_p(counts: np.ndarray, pair: tuple[int, int], n: int) -> float:
    """P(the labels' ``counts`` | an ambiguous task between ``pair`` (its class first) split
    as this generator splits one: ⌊n/2⌋ answers each, the odd one either, shuffled)."""
    a, b = counts[pair[0]], counts[pair[1]]
    if a + b != n:
        return 0.0
    if n % 2 == 0:
        return 1.0 / math.comb(n, n // 2) if a == b else 0.0
    return 0.5 / math.comb(n, a) if abs(a - b) == 1 else 0.0


def _generating_flags(key: str, proj: ShapeProject, control: str, names: tuple[str, ...], prior: np.ndarray,
                      acc: dict[int, float], bad: int | None, constant: int | None) -> set[str]:
    """The tasks whose posterior of a planted problem, under the model and parameters this
    generator drew the project with, reaches ½: what a fitted model can reach at best.

    Per task, with ``L_z`` the prior of class ``z`` times every careful answer's
    probability: the spammer's tasks ``P(z ≠ their label)``; the random annotator's
    ``P(random and their label ≠ z)`` (their answer random with probability 0.3, else
    careful; on ``hard`` always random); an ambiguous task's posterior of the 15 % share
    against ``L`` (its class from the prior, the neighbour uniform, the split as drawn);
    nothing on the null shape."""
    k = len(names)
    conf = {u: _confusion(a, k) for u, a in acc.items()}
    flagged: set[str] = set()
    for task in proj.tasks:
        likes = prior.copy()
        counts = np.zeros(k, dtype=np.int64)
        theirs: int | None = None
        for ann in task["annotations"]:
            y = names.index(next(r for r in ann["result"] if r["from_name"] == control)["value"]["choices"][0])
            counts[y] += 1
            if ann["completed_by"] == bad:
                theirs = y
                continue
            likes = likes * conf[ann["completed_by"]][:, y]
        if key == "ambiguous":
            n = int(counts.sum())
            amb = 0.0
            for t in range(k):
                nbs = [c for c in (t - 1, t + 1) if 0 <= c < k]
                amb += sum(prior[t] / len(nbs) * _even_split_p(counts, (t, c), n) for c in nbs)
            p = 0.15 * amb / (0.15 * amb + 0.85 * likes.sum())
        elif theirs is None:
            continue
        elif key == "spammer":
            p = 1.0 - likes[constant] / likes.sum()
        elif key in ("random30", "hard"):
            share = 1.0 if key == "hard" else 0.3
            random_part = likes * share / k
            careful_part = likes * (1.0 - share) * conf[bad][:, theirs]
            p = float((random_part * (np.arange(k) != theirs)).sum() / (random_part + careful_part).sum())
        else:
            continue
        if p >= 0.5:
            flagged.add(str(task["id"]))
    return flagged


# --------------------------------------------------------------------------- boxes

BOX_CLASSES = ("car", "truck", "pedestrian", "cyclist", "traffic sign")
#: height / width in pixels by class
ASPECT = {"car": 0.7, "truck": 0.85, "pedestrian": 2.4, "cyclist": 1.5, "traffic sign": 1.0}
SIMILAR = {"car": "truck", "truck": "car", "pedestrian": "cyclist", "cyclist": "pedestrian",
           "traffic sign": "traffic sign"}
BOX_PRIOR = (0.42, 0.12, 0.26, 0.08, 0.12)
IMAGE_SIZES = ((640, 480), (1024, 768), (1280, 720))


def _boxes_project(shape: ThirdShape, rng: np.random.Generator) -> ShapeProject:
    lay = _layout(rng, with_bad=True)
    config = ('<View><Image name="image" value="$image"/><RectangleLabels name="objects" toName="image">'
              + "".join(f'<Label value="{c}"/>' for c in BOX_CLASSES) + "</RectangleLabels></View>")
    mine = [i for i, ws in enumerate(lay.workers) if lay.bad in ws]
    shifted = {int(i) for i in rng.choice(mine, size=int(round(0.2 * len(mine))), replace=False)}
    directions = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if (dx, dy) != (0, 0)]
    proj = ShapeProject(name=shape.name, config=config, tasks=[], bad=str(lay.bad))
    out = _Tasks()
    for i, (tid, ws) in enumerate(zip(lay.task_ids, lay.workers)):
        iw, ih = IMAGE_SIZES[int(rng.integers(len(IMAGE_SIZES)))]
        objects = []
        for _ in range(min(1 + int(rng.poisson(1.6)), 6)):
            cls = BOX_CLASSES[int(rng.choice(len(BOX_CLASSES), p=BOX_PRIOR))]
            w = float(np.clip(np.exp(rng.normal(np.log(11.0), 0.55)), 2.5, 45.0))
            h = float(np.clip(w * ASPECT[cls] * iw / ih, 2.0, 90.0))
            x = float(rng.uniform(0.0, 100.0 - w))
            y = float(rng.uniform(0.0, 100.0 - h))
            objects.append((cls, x, y, w, h))
        proj.truth[str(tid)] = {"objects": objects}
        direction = directions[int(rng.integers(len(directions)))] if i in shifted else None
        if direction is not None:
            proj.planted.add(str(tid))
        anns = []
        for uid in ws:
            aid = out.annotation_id()
            result = []
            for j, (cls, x, y, w, h) in enumerate(objects):
                if rng.random() < (0.15 if w * h < 40.0 else 0.01):
                    continue
                label = SIMILAR[cls] if rng.random() < 0.03 else cls
                if uid == lay.bad and direction is not None:
                    dx, dy = direction[0] * 0.5 * w, direction[1] * 0.5 * h
                    if not 0.0 <= x + dx <= 100.0 - w:
                        dx = -dx
                    if not 0.0 <= y + dy <= 100.0 - h:
                        dy = -dy
                    x, y = x + dx, y + dy
                sx, sy = 0.3 + 0.04 * w, 0.3 + 0.04 * h
                x1, x2 = x + rng.normal(0, sx), x + w + rng.normal(0, sx)
                y1, y2 = y + rng.normal(0, sy), y + h + rng.normal(0, sy)
                x1, y1 = max(x1, 0.0), max(y1, 0.0)
                x2, y2 = min(max(x2, x1 + 0.5), 100.0), min(max(y2, y1 + 0.5), 100.0)
                result.append({"id": f"t{tid}a{aid}r{j}", "from_name": "objects", "to_name": "image",
                               "type": "rectanglelabels", "original_width": iw, "original_height": ih,
                               "image_rotation": 0,
                               "value": {"x": x1, "y": y1, "width": x2 - x1, "height": y2 - y1, "rotation": 0,
                                         "rectanglelabels": [label]}})
            anns.append((aid, uid, result))
        out.add(tid, {"image": f"/data/third/street_{tid}.jpg"}, anns)
    proj.tasks = out.tasks
    return proj


# --------------------------------------------------------------------------- entities

ENTITY_TYPES = ("PER", "ORG", "LOC", "DATE")
ENTITY_NAMES: dict[str, tuple[str, ...]] = {
    "PER": ("Maria Lopez", "Kwame Mensah", "Yuki Tanaka", "Sven", "Priya Nair Iyer", "Tom Becker", "Aiko"),
    "ORG": ("Globex", "Northwind Traders", "World Health Organization", "Initech", "Bank of Canada"),
    "LOC": ("Lisbon", "Cape Town", "Rio de Janeiro", "Kyoto", "Lake Victoria", "Quebec"),
    "DATE": ("Tuesday", "March 2021", "last week", "12 June 2019", "yesterday"),
}
ENTITY_PRIOR = (0.35, 0.25, 0.25, 0.15)
MISLABEL = {"PER": "ORG", "ORG": "LOC", "LOC": "ORG", "DATE": "DATE"}
FILLER = ("officials said that", "according to", "a spokesperson for", "met with", "in", "on",
          "announced plans with", "traveled to", "before", "the talks in", "was seen near", "during")


def _entities_project(shape: ThirdShape, rng: np.random.Generator) -> ShapeProject:
    lay = _layout(rng, with_bad=True)
    config = ('<View><Labels name="ents" toName="doc">' + "".join(f'<Label value="{c}"/>' for c in ENTITY_TYPES)
              + '</Labels><Text name="doc" value="$doc"/></View>')
    proj = ShapeProject(name=shape.name, config=config, tasks=[], bad=str(lay.bad))
    out = _Tasks()
    for tid, ws in zip(lay.task_ids, lay.workers):
        # tokens with their character offsets; entities as (first token, last token, type)
        tokens: list[str] = []
        ents: list[tuple[int, int, str]] = []
        for _ in range(int(rng.integers(1, 6))):
            for word in FILLER[int(rng.integers(len(FILLER)))].split():
                tokens.append(word)
            typ = ENTITY_TYPES[int(rng.choice(len(ENTITY_TYPES), p=ENTITY_PRIOR))]
            name = ENTITY_NAMES[typ][int(rng.integers(len(ENTITY_NAMES[typ])))].split()
            ents.append((len(tokens), len(tokens) + len(name) - 1, typ))
            tokens.extend(name)
        tokens.extend(FILLER[int(rng.integers(len(FILLER)))].split() + ["."])
        starts, pos = [], 0
        for tok in tokens:
            starts.append(pos)
            pos += len(tok) + 1
        text = " ".join(tokens)
        taken = {k for a, b, _ in ents for k in range(a, b + 1)}
        proj.truth[str(tid)] = {"ents": [(starts[a], starts[b] + len(tokens[b]), typ) for a, b, typ in ents]}
        anns = []
        for uid in ws:
            aid = out.annotation_id()
            result = []
            for j, (a, b, typ) in enumerate(ents):
                if uid == lay.bad and rng.random() < 0.4:
                    proj.planted.add(str(tid))
                    continue
                if rng.random() < 0.05:     # a boundary one token off
                    moves = []
                    if a > 0 and a - 1 not in taken:
                        moves.append((a - 1, b))
                    if b + 1 < len(tokens) - 1 and b + 1 not in taken:
                        moves.append((a, b + 1))
                    if b > a:
                        moves += [(a + 1, b), (a, b - 1)]
                    if moves:
                        a, b = moves[int(rng.integers(len(moves)))]
                label = MISLABEL[typ] if rng.random() < 0.03 else typ
                s, e = starts[a], starts[b] + len(tokens[b])
                result.append({"id": f"t{tid}a{aid}r{j}", "from_name": "ents", "to_name": "doc", "type": "labels",
                               "value": {"start": s, "end": e, "text": text[s:e], "labels": [label]}})
            anns.append((aid, uid, result))
        out.add(tid, {"doc": text}, anns)
    proj.tasks = out.tasks
    return proj


def make_project(shape: ThirdShape, seed: int) -> ShapeProject:
    """The project of ``shape`` for ``seed`` (its generator is seeded with
    ``7919 × (the shape's place in KEYS + 1) + seed``).

    Parameters
    ----------
    shape
        One of :data:`SHAPES`.
    seed
        Any integer; the same seed gives the same project.

    Returns
    -------
    ShapeProject
        Tasks in Label Studio export form (task ids from 30001, annotation ids from 60001,
        user ids from 501), the config, the planted task ids (str), the bad annotator's user
        id (str; None on the null and ambiguous shapes), on the Choices shapes the truth of
        the Choices control named by ``categorical`` (a set of two labels on an ambiguous
        task) and, on the ambiguous shape, of the Rating ``confidence``; on the region shapes
        the true boxes or entity spans (informative only); no ``plan``: on the Choices
        shapes the generating model's own flags are ``generating_flags`` (None on the
        region shapes).
    """
    rng = np.random.default_rng(7919 * (KEYS.index(shape.key) + 1) + seed)
    if shape.key == "boxes":
        return _boxes_project(shape, rng)
    if shape.key == "entities":
        return _entities_project(shape, rng)
    return _choices_project(shape, rng)
