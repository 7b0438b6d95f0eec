"""Seven Label Studio projects with planted problems, for ``bench_flags`` (issue 22).

Each project has a pool of 8–12 annotators, 2–5 of them on each task and 260–370 tasks
(drawn from the seed), and a truth the generator keeps: per task and control the true
answer, which tasks hold a planted problem, and who the planted bad annotator is. The
shapes:

* ``spammer`` — a Choices control whose labels are skewed (60/25/15 %); careful annotators
  right 92 % of the time; one annotator always gives the most common label. Planted: their
  tasks whose truth is another label.
* ``random 30%`` — a Choices and a 5-point Rating control; careful annotators right 97 %
  of the time (a rating a point off otherwise); one annotator answers at random on 30 % of
  their tasks and carefully elsewhere. Planted: those tasks where a random answer departs
  from the truth (another label or another rating).
* ``ambiguous 15%`` — 15 % of the tasks have two defensible labels on the Choices control
  and careful annotators split 50/50 between them (alternately); careful annotators right
  99 % of the time elsewhere; a Rating control beside it. Planted: ambiguous tasks whose
  answers hold both labels.
* ``shifted boxes`` — RectangleLabels, 1–3 objects per image; careful boxes jitter by about
  1 % of the image; on 20 % of their tasks one annotator's boxes are shifted by half a box
  width. Planted: those tasks.
* ``missed entities`` — Labels on Text, 3–5 entities per text; careful annotators mark them
  exactly (a boundary off by a character now and then); one annotator misses each entity
  with probability 0.35. Planted: their tasks with an entity missed.
* ``null`` — a Choices and a Rating control, careful annotators right 85 % of the time,
  nothing planted.
* ``hard + random`` — a Choices control where careful annotators are right only 75 % of
  the time (disagreement everywhere), plus one annotator who always answers at random.
  Planted: their tasks where the random answer is not the truth.
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

__all__ = ["Bad", "LabelsPlan", "RegionNoise", "Shape", "ShapeProject", "SHAPES", "make_project", "careful_rating_p"]

LABELS = ("Positive", "Neutral", "Negative")
ENTITY_LABELS = ("PER", "ORG", "LOC")
BOX_LABELS = ("Vehicle", "Person")
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()

CHOICE_XML = """  <Choices name="label" toName="text" choice="single">
    <Choice value="Positive"/><Choice value="Neutral"/><Choice value="Negative"/>
  </Choices>"""
RATING_XML = '  <Rating name="rating" toName="text" maxRating="5"/>'
TEXT_XML = '  <Text name="text" value="$text"/>'
BOX_XML = """  <Image name="image" value="$image"/>
  <RectangleLabels name="objects" toName="image">
    <Label value="Vehicle"/><Label value="Person"/>
  </RectangleLabels>"""
ENTITY_XML = """  <Labels name="entities" toName="text">
    <Label value="PER"/><Label value="ORG"/><Label value="LOC"/>
  </Labels>"""


@dataclass(frozen=True)
class Bad:
    """The planted bad annotator of a Choices (and Rating) project: a ``constant`` label
    (a spammer; their rating is the true one), or a random label on a ``random_share`` of
    their tasks (careful elsewhere), with a random rating too if ``random_rating``."""

    constant: str | None = None
    random_share: float = 1.0
    random_rating: bool = False

    def draw(self, rng: random.Random, label: str, score: int) -> tuple[str, int] | None:
        """Their answer on a task of true ``label`` and ``score``; None: a careful one."""
        if self.constant is not None:
            return self.constant, score
        if self.random_share < 1.0 and rng.random() >= self.random_share:
            return None
        return rng.choice(LABELS), (rng.randint(1, 5) if self.random_rating else score)

    def departs(self, y: str, r: int | None, label: str, score: int) -> bool:
        """Whether their answer departs from the truth (the planted problem); ``r`` None:
        the project has no Rating control."""
        return y != label or (self.random_rating and r is not None and r != score)

    def not_careful(self, y: str, r: int | None, score: int) -> float:
        """P(their answer, and it is not a careful one | the truth): the constant label, or
        a random answer; ``r`` None: no Rating control."""
        same_rating = r is None or r == score
        if self.constant is not None:
            return float(y == self.constant and same_rating)
        rating_p = 1.0 if r is None else (1 / 5 if self.random_rating else float(same_rating))
        return self.random_share / len(LABELS) * rating_p

    @property
    def careful_share(self) -> float:
        """The share of their tasks answered as a careful annotator would."""
        return 0.0 if self.constant is not None else 1.0 - self.random_share


@dataclass(frozen=True)
class LabelsPlan:
    """How a Choices (and Rating) project is made (:func:`_labels_project`), and what the
    true generative model (``benchmarks/flag_oracle.py``) reads it with."""

    accuracy: float
    prior: tuple[float, ...] = (1 / 3,) * 3
    rating: bool = False
    ambiguous: float = 0.0
    bad: Bad | None = None
    #: how an ambiguous task's careful annotators read its two labels: alternately (an even
    #: split) or each by a coin
    split: Literal["even", "coins"] = "even"


@dataclass
class ShapeProject:
    """One generated project and what the generator knows about it.

    ``truth``: per task id and control, the true answer (labels and ratings; for an
    ambiguous task, both labels); ``planted``: the task ids holding a planted problem;
    ``bad``: the planted bad annotator's user id (None for the null project);
    ``categorical``: the control whose consensus is compared with crowd-kit's;
    ``generating_flags``: the task ids the generating model's own posterior of a planted
    problem flags at ½, where the generator computes it itself (else ``plan`` lets
    ``benchmarks/flag_oracle.py`` do so, or neither: None)."""

    name: str
    config: str
    tasks: list[dict[str, Any]]
    planted: set[str] = field(default_factory=set)
    truth: dict[str, dict[str, Any]] = field(default_factory=dict)
    bad: str | None = None
    categorical: str | None = None
    plan: LabelsPlan | None = None
    generating_flags: set[str] | None = None


@dataclass(frozen=True)
class RegionNoise:
    """How careful annotators of the region shapes err: ``misses``, the share of boxes or
    entities they leave out; ``jitter``, the standard deviation of a box's x, y, width and
    height in percent of the image (the shifted annotator's boxes are jittered alike)."""

    misses: float = 0.0
    jitter: float = 0.8


@dataclass(frozen=True)
class Shape:
    """A shape: a Choices (and Rating) project made by its ``plan``, or any other by ``make``."""

    name: str
    make: Callable[..., ShapeProject] | None = None
    plan: LabelsPlan | None = None


def _layout(rng: random.Random) -> tuple[int, list[int], list[list[int]]]:
    """Tasks, the pool's user ids and each task's annotators."""
    n_tasks = rng.randint(260, 370)
    pool = [100 + k for k in range(rng.randint(8, 12))]
    return n_tasks, pool, [rng.sample(pool, rng.randint(2, 5)) for _ in range(n_tasks)]


def _choice(label: str) -> dict[str, Any]:
    return {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [label]}}


def _rating(r: int) -> dict[str, Any]:
    return {"from_name": "rating", "to_name": "text", "type": "rating", "value": {"rating": int(r)}}


def _slip(rng: random.Random, label: str) -> str:
    return rng.choice([x for x in LABELS if x != label])


def _careful_rating(rng: random.Random, truth: int, accuracy: float) -> int:
    if rng.random() < accuracy:
        return truth
    return min(max(truth + rng.choice((-1, 1)), 1), 5)


def careful_rating_p(r: int, truth: int, accuracy: float) -> float:
    """P(a careful annotator rates ``r`` | the true rating): :func:`_careful_rating`'s law."""
    p = accuracy if r == truth else 0.0
    for step in (-1, 1):
        if min(max(truth + step, 1), 5) == r:
            p += (1 - accuracy) / 2
    return p


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14)))


def _task(k: int, data: dict[str, Any], answers: list[tuple[int, list[dict[str, Any]]]]) -> dict[str, Any]:
    return {"id": k + 1, "data": {"sample": k, **data},
            "annotations": [{"completed_by": uid, "result": res, "ground_truth": False} for uid, res in answers]}


def _config(*parts: str) -> str:
    return "\n".join(["<View>", *parts, "</View>", ""])


def _labels_project(rng: random.Random, name: str, plan: LabelsPlan) -> ShapeProject:
    """A Choices (and Rating) project made by ``plan``: careful annotators right with
    probability ``accuracy`` (a slip to another label, a rating a point off); on an ambiguous
    task they read its two labels alternately (or each by a coin: ``plan.split``); the bad
    annotator answers by ``plan.bad``."""
    n_tasks, pool, who = _layout(rng)
    bad_id = pool[0] if plan.bad is not None else None
    proj = ShapeProject(name=name, config=_config(TEXT_XML, CHOICE_XML, *([RATING_XML] if plan.rating else [])),
                        tasks=[], bad=None if bad_id is None else str(bad_id), categorical="label", plan=plan)
    for k in range(n_tasks):
        tid = str(k + 1)
        label = rng.choices(LABELS, weights=plan.prior)[0]
        score = rng.randint(1, 5)
        alt = _slip(rng, label) if rng.random() < plan.ambiguous else None
        proj.truth[tid] = {"label": label if alt is None else {label, alt}, "rating": score}
        answers, seen = [], set()
        flip = rng.random() < 0.5
        for pos, uid in enumerate(who[k]):
            given = plan.bad.draw(rng, label, score) if uid == bad_id and plan.bad is not None else None
            if given is not None:
                y, r = given
                if plan.bad is not None and plan.bad.departs(y, r if plan.rating else None, label, score):
                    proj.planted.add(tid)
            else:
                if alt is None:
                    reading = label
                elif plan.split == "coins":
                    reading = alt if rng.random() < 0.5 else label
                else:
                    reading = alt if (pos % 2 == 1) != flip else label
                y = reading if rng.random() < plan.accuracy else _slip(rng, reading)
                r = _careful_rating(rng, score, plan.accuracy)
            seen.add(y)
            answers.append((uid, [_choice(y)] + ([_rating(r)] if plan.rating else [])))
        if alt is not None and {label, alt} <= seen:
            proj.planted.add(tid)
        proj.tasks.append(_task(k, {"text": _text(rng)}, answers))
    return proj


def _boxes(rng: random.Random, noise: RegionNoise = RegionNoise()) -> ShapeProject:
    n_tasks, pool, who = _layout(rng)
    bad_id = pool[0]
    proj = ShapeProject(name="shifted boxes", config=_config(BOX_XML), tasks=[], bad=str(bad_id))
    for k in range(n_tasks):
        tid = str(k + 1)
        truth = []
        for col in rng.sample(range(3), rng.randint(1, 3)):       # one object per column: no overlap
            w, h = rng.uniform(12, 26), rng.uniform(20, 45)
            truth.append((col * 33.3 + rng.uniform(1, 32.3 - w), rng.uniform(5, 95 - h), w, h, rng.choice(BOX_LABELS)))
        answers = []
        for uid in who[k]:
            shift = uid == bad_id and rng.random() < 0.2
            if shift:
                proj.planted.add(tid)
            res = []
            for x, y, w, h, lab in truth:
                if noise.misses and uid != bad_id and rng.random() < noise.misses:   # a careful annotator misses it
                    continue
                jx, jy, jw, jh = (rng.gauss(0, noise.jitter) for _ in range(4))
                bx = x + jx + (0.5 * w if shift else 0.0)
                bw = max(w + jw, 2.0)
                res.append({"from_name": "objects", "to_name": "image", "type": "rectanglelabels",
                            "original_width": 640, "original_height": 480,
                            "value": {"x": min(max(bx, 0.0), 100 - bw), "y": min(max(y + jy, 0.0), 95.0),
                                      "width": bw, "height": max(h + jh, 2.0), "rotation": 0,
                                      "rectanglelabels": [lab]}})
            answers.append((uid, res))
        proj.tasks.append(_task(k, {"image": f"/data/img{k}.png"}, answers))
    return proj


def _entities(rng: random.Random, noise: RegionNoise = RegionNoise()) -> ShapeProject:
    n_tasks, pool, who = _layout(rng)
    bad_id = pool[0]
    proj = ShapeProject(name="missed entities", config=_config(TEXT_XML, ENTITY_XML), tasks=[], bad=str(bad_id))
    for k in range(n_tasks):
        tid = str(k + 1)
        words = [rng.choice(WORDS) for _ in range(rng.randint(12, 20))]
        starts, pos = [], 0
        for wd in words:
            starts.append(pos)
            pos += len(wd) + 1
        text = " ".join(words)
        picked = sorted(rng.sample(range(len(words)), rng.randint(3, 5)))
        spans = [(starts[i], starts[i] + len(words[i]), rng.choice(ENTITY_LABELS)) for i in picked]
        answers = []
        for uid in who[k]:
            res = []
            for s, e, lab in spans:
                if uid == bad_id and rng.random() < 0.35:
                    proj.planted.add(tid)
                    continue
                if noise.misses and uid != bad_id and rng.random() < noise.misses:   # a careful annotator misses it
                    continue
                if rng.random() < 0.03:                           # a boundary off by a character
                    e = max(e - 1, s + 1)
                res.append({"from_name": "entities", "to_name": "text", "type": "labels",
                            "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}})
            answers.append((uid, res))
        proj.tasks.append(_task(k, {"text": text}, answers))
    return proj


SHAPES: tuple[Shape, ...] = (
    Shape("spammer", plan=LabelsPlan(accuracy=0.92, prior=(0.6, 0.25, 0.15), bad=Bad(constant=LABELS[0]))),
    Shape("random 30%", plan=LabelsPlan(accuracy=0.97, rating=True,
                                        bad=Bad(random_share=0.3, random_rating=True))),
    Shape("ambiguous 15%", plan=LabelsPlan(accuracy=0.99, rating=True, ambiguous=0.15)),
    Shape("shifted boxes", make=_boxes), Shape("missed entities", make=_entities),
    Shape("null (85% careful)", plan=LabelsPlan(accuracy=0.85, rating=True)),
    Shape("hard + random", plan=LabelsPlan(accuracy=0.75, bad=Bad())),
)


def make_project(shape: Shape, seed: int, careful: float | None = None,
                 split: Literal["even", "coins"] | None = None, noise: RegionNoise = RegionNoise()) -> ShapeProject:
    """The project of ``shape`` for ``seed`` (the same seed gives the same project);
    ``careful``: another accuracy for the careful annotators of a Choices project;
    ``split``: how they read an ambiguous task's two labels; ``noise``: how the careful
    annotators of the region shapes err (each applies to its own shapes; the others ignore
    it)."""
    rng = random.Random(f"{shape.name}/{seed}")
    if shape.plan is not None:
        plan = shape.plan if careful is None else dataclasses.replace(shape.plan, accuracy=careful)
        plan = plan if split is None else dataclasses.replace(plan, split=split)
        return _labels_project(rng, shape.name, plan)
    assert shape.make is not None
    return shape.make(rng, noise)
