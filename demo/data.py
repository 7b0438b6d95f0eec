"""Synthetic, seeded sample project for ``ls-agreement demo``.

Every task has a hidden true answer for five control tags — rectangles on a (generated
SVG) image, entity spans in a sentence, a sentiment choice, a free-text summary and a
ranking of four candidate answers. Six annotators copy the truth with their own noise
level; one of them (``careless``) answers at random most of the time; about one task in
six is *ambiguous*: careful annotators split between two defensible answers. Each task is
annotated by 3-5 annotators. Nothing here talks to Label Studio: the output is the JSON
Label Studio imports (tasks with annotations, ``completed_by`` = user id).

For benchmarks (``benchmarks/bench_flags.py``) :func:`generate` also makes other projects
from the same annotators: a subset of the controls plus an optional 5-point ``rating``
(:data:`CONTROLS`), a fixed per-annotator ``accuracy``, another number of annotators per
task; and it says which tasks are *planted problems* (:attr:`DemoProject.planted`). The
default arguments give exactly the demo project.
"""
from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

DEMO_TITLE = "ls-agreement demo"
IMAGE_W, IMAGE_H = 640, 480

#: Control name -> config fragment (the object tags come with the first control using them).
CONTROLS: dict[str, str] = {
    "objects": """  <RectangleLabels name="objects" toName="image">
    <Label value="Vehicle" background="#1f77b4"/><Label value="Person" background="#d62728"/>
  </RectangleLabels>""",
    "entities": """  <Labels name="entities" toName="text">
    <Label value="PER"/><Label value="ORG"/><Label value="LOC"/>
  </Labels>""",
    "sentiment": """  <Choices name="sentiment" toName="text" choice="single" showInline="true">
    <Choice value="Positive"/><Choice value="Neutral"/><Choice value="Negative"/>
  </Choices>""",
    "summary": """  <TextArea name="summary" toName="text" rows="2" maxSubmissions="1"
            placeholder="One-line summary"/>""",
    "ranking": """  <Ranker name="ranking" toName="answers"/>""",
    "rating": """  <Rating name="rating" toName="text" maxRating="5"/>""",
}
DEMO_CONTROLS = ("objects", "entities", "sentiment", "summary", "ranking")
_OBJECT = {"objects": "image", "entities": "text", "sentiment": "text", "summary": "text",
           "ranking": "answers", "rating": "text"}
_OBJECT_TAGS = {"image": '  <Image name="image" value="$image"/>',
                "text": '  <Text name="text" value="$text"/>',
                "answers": '  <List name="answers" value="$answers" title="Candidate answers"/>'}


def config_for(controls: tuple[str, ...]) -> str:
    """A labeling config holding ``controls`` (names of :data:`CONTROLS`)."""
    unknown = [c for c in controls if c not in CONTROLS]
    if unknown or not controls:
        raise ValueError(f"unknown demo control(s) {unknown}; known: {list(CONTROLS)}")
    lines, seen = ["<View>"], set()
    for c in controls:
        obj = _OBJECT[c]
        if obj not in seen:
            seen.add(obj)
            lines.append(_OBJECT_TAGS[obj])
        lines.append(CONTROLS[c])
    return "\n".join(lines + ["</View>", ""])


DEMO_CONFIG = """<View>
  <Header value="Boxes: every vehicle and every person in the picture"/>
  <Image name="image" value="$image"/>
  <RectangleLabels name="objects" toName="image">
    <Label value="Vehicle" background="#1f77b4"/><Label value="Person" background="#d62728"/>
  </RectangleLabels>
  <Header value="Entities, sentiment and a one-line summary of the sentence"/>
  <Text name="text" value="$text"/>
  <Labels name="entities" toName="text">
    <Label value="PER"/><Label value="ORG"/><Label value="LOC"/>
  </Labels>
  <Choices name="sentiment" toName="text" choice="single" showInline="true">
    <Choice value="Positive"/><Choice value="Neutral"/><Choice value="Negative"/>
  </Choices>
  <TextArea name="summary" toName="text" rows="2" maxSubmissions="1"
            placeholder="One-line summary"/>
  <Header value="Rank the answers, best first"/>
  <List name="answers" value="$answers" title="Candidate answers"/>
  <Ranker name="ranking" toName="answers"/>
</View>
"""


@dataclass(frozen=True)
class DemoAnnotator:
    """A synthetic annotator: ``noise`` is the probability of each small mistake."""

    key: str
    email: str
    first_name: str
    last_name: str
    noise: float
    careless: bool = False


ANNOTATORS: tuple[DemoAnnotator, ...] = (
    DemoAnnotator("ada", "ada@demo.example.com", "Ada", "Careful", 0.04),
    DemoAnnotator("ben", "ben@demo.example.com", "Ben", "Steady", 0.07),
    DemoAnnotator("chloe", "chloe@demo.example.com", "Chloe", "Precise", 0.05),
    DemoAnnotator("dev", "dev@demo.example.com", "Dev", "Quick", 0.12),
    DemoAnnotator("emma", "emma@demo.example.com", "Emma", "Thorough", 0.08),
    DemoAnnotator("zed", "zed@demo.example.com", "Zed", "Careless", 0.9, careless=True),
)

PEOPLE = ["Alice Martin", "Bob Chen", "Carla Diaz", "Dmitri Ivanov", "Eva Novak", "Farid Haddad"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Labs", "Stark Industries"]
PLACES = ["Paris", "Nairobi", "Osaka", "Lima", "Toronto", "Oslo"]
MOODS = {
    "Positive": ["The deal went great.", "Everyone left delighted."],
    "Neutral": ["The meeting was routine.", "Minutes were filed."],
    "Negative": ["Talks collapsed badly.", "Nobody was happy."],
}
ANSWERS = ["Exact and sourced answer.", "Correct but vague answer.",
           "Partly wrong answer.", "Off-topic answer."]
FILLER = "lorem ipsum report signal widget harbor velvet quantum ledger orbit".split()


@dataclass
class DemoProject:
    """Tasks to import plus what the generator knows (not visible to the plugin)."""

    tasks: list[dict[str, Any]]
    ambiguous: set[str] = field(default_factory=set)   # sample ids of ambiguous tasks
    careless_email: str = ""
    #: Planted problems: tasks where a careless answer departs from the truth in some
    #: control (:func:`departs`), or ambiguous tasks whose careful annotators did not all
    #: pick the same reading (an ambiguous task where everyone picked one reading shows
    #: nothing to see: those are in :attr:`hidden` instead).
    planted: set[str] = field(default_factory=set)
    hidden: set[str] = field(default_factory=set)
    config: str = DEMO_CONFIG


def _svg(boxes: list[dict[str, Any]]) -> str:
    """A small SVG drawing the true objects, as a data URI (no file server needed)."""
    shapes = []
    for b in boxes:
        x, y = b["x"] * IMAGE_W / 100, b["y"] * IMAGE_H / 100
        w, h = b["width"] * IMAGE_W / 100, b["height"] * IMAGE_H / 100
        colour = "#8fb3d9" if b["label"] == "Vehicle" else "#e8a0a0"
        shapes.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{h:.0f}" '
                      f'fill="{colour}" stroke="#333"/>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{IMAGE_W}" height="{IMAGE_H}">'
           f'<rect width="100%" height="100%" fill="#f4f1e8"/>{"".join(shapes)}</svg>')
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def _true_boxes(rng: random.Random) -> list[dict[str, Any]]:
    boxes = []
    for col in rng.sample(range(3), rng.randint(1, 3)):  # one object per column: no overlap
        w, h = rng.uniform(14, 28), rng.uniform(20, 45)
        boxes.append({"x": col * 33.3 + rng.uniform(1, 32.3 - w),
                      "y": rng.uniform(5, 95 - h), "width": w, "height": h,
                      "label": rng.choice(["Vehicle", "Person"])})
    return boxes


def _sentence(rng: random.Random, mood: str) -> tuple[str, list[tuple[int, int, str]]]:
    per, per2 = rng.sample(PEOPLE, 2)
    org, loc = rng.choice(ORGS), rng.choice(PLACES)
    parts: list[tuple[str, str | None]] = [(per, "PER"), (" met ", None), (per2, "PER"),
                                           (" of ", None), (org, "ORG"), (" in ", None),
                                           (loc, "LOC"), (". " + rng.choice(MOODS[mood]), None)]
    text, spans = "", []
    for piece, label in parts:
        if label:
            spans.append((len(text), len(text) + len(piece), label))
        text += piece
    return text, spans


def _jitter_box(rng: random.Random, b: dict[str, Any], sd: float) -> dict[str, Any]:
    x = min(max(b["x"] + rng.gauss(0, sd), 0.0), 95.0)
    y = min(max(b["y"] + rng.gauss(0, sd), 0.0), 95.0)
    w = min(max(b["width"] + rng.gauss(0, sd), 2.0), 100.0 - x)
    h = min(max(b["height"] + rng.gauss(0, sd), 2.0), 100.0 - y)
    return {**b, "x": x, "y": y, "width": w, "height": h}


def _random_boxes(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.randint(1, 3)):
        w, h = rng.uniform(5, 40), rng.uniform(5, 40)
        out.append({"x": rng.uniform(0, 100 - w), "y": rng.uniform(0, 100 - h), "width": w,
                    "height": h, "label": rng.choice(["Vehicle", "Person"])})
    return out


def _word_bounds(text: str) -> list[tuple[int, int]]:
    bounds, start = [], None
    for i, ch in enumerate(text + " "):
        if ch.isalnum() and start is None:
            start = i
        elif not ch.isalnum() and start is not None:
            bounds.append((start, i))
            start = None
    return bounds


class _Truth:
    """The true (or, for ambiguous tasks, the two defensible) answers of one task."""

    def __init__(self, rng: random.Random, ambiguous: bool, rating: bool = False) -> None:
        self.boxes = _true_boxes(rng)
        self.mood = rng.choice(list(MOODS))
        self.text, self.spans = _sentence(rng, self.mood)
        per_a, per_b = (self.text[s:e] for s, e, lab in self.spans[:2])
        place = self.text[self.spans[3][0]:self.spans[3][1]]
        self.summary = f"{per_a} met {per_b} in {place}."
        self.order = rng.sample(range(4), 4)
        self.ambiguous = ambiguous
        if ambiguous:
            # The competing reading: bigger boxes, first name only, next mood, swapped top.
            self.alt_boxes = [{**b, "width": min(b["width"] * 1.5, 100 - b["x"]),
                               "height": min(b["height"] * 1.4, 100 - b["y"])}
                              for b in self.boxes]
            s, e, lab = self.spans[0]
            self.alt_spans = [(s, self.text.index(" ", s), lab)] + self.spans[1:]
            moods = list(MOODS)
            self.alt_mood = moods[(moods.index(self.mood) + 1) % 3]
            self.alt_summary = f"Meeting in {place} between {per_b} and {per_a}."
            self.alt_order = [self.order[1], self.order[0]] + self.order[2:]
        if rating:   # drawn last: the demo's own draws stay as they were
            self.rating = rng.randint(1, 5)
            self.alt_rating = self.rating + 2 if self.rating <= 3 else self.rating - 2

    def answer(self, rng: random.Random, who: DemoAnnotator, accuracy: float | None = None,
               rating: bool = False) -> dict[str, Any]:
        """One annotator's answers (common-model-like dicts, converted to LS below).

        ``accuracy``: when given, a careful annotator's sentiment is right with this
        probability (else another mood) and their rating is uniform within a point of the
        truth, instead of the noise of :data:`ANNOTATORS`."""
        if who.careless and rng.random() < 0.8:
            bounds = _word_bounds(self.text)
            spans = []
            for s, e in rng.sample(bounds, rng.randint(1, 4)):
                spans.append((s, e, rng.choice(["PER", "ORG", "LOC"])))
            out = {"boxes": _random_boxes(rng), "spans": sorted(set(spans)),
                   "mood": rng.choice(list(MOODS)),
                   "summary": " ".join(rng.sample(FILLER, rng.randint(2, 6))).capitalize(),
                   "order": rng.sample(range(4), 4), "alt": None}
            if rating:
                out["rating"] = rng.randint(1, 5)
            return out
        alt = self.ambiguous and rng.random() < 0.5
        eps = who.noise
        boxes = [_jitter_box(rng, b, 0.8 + 15 * eps)
                 for b in (self.alt_boxes if alt else self.boxes) if rng.random() > eps / 2]
        spans = []
        for s, e, lab in (self.alt_spans if alt else self.spans):
            if rng.random() < eps / 2:
                continue  # missed entity
            if rng.random() < eps / 2:
                lab = rng.choice(["PER", "ORG", "LOC"])
            spans.append((s, e, lab))
        mood = self.alt_mood if alt else self.mood
        if accuracy is not None:
            if rng.random() >= accuracy:
                mood = rng.choice([m for m in MOODS if m != mood])
        elif rng.random() < eps:
            mood = rng.choice(list(MOODS))
        summary = self.alt_summary if alt else self.summary
        if rng.random() < eps * 3:
            words = summary.split()
            del words[rng.randrange(len(words))]
            summary = " ".join(words)
        order = list(self.alt_order if alt else self.order)
        for k in range(3):
            if rng.random() < eps:
                order[k], order[k + 1] = order[k + 1], order[k]
        out = {"boxes": boxes, "spans": spans, "mood": mood, "summary": summary,
               "order": order, "alt": alt}
        if rating:
            score = self.alt_rating if alt else self.rating
            if accuracy is not None:
                score += rng.choice((-1, 0, 1))
            elif rng.random() < 3 * eps:
                score += rng.choice((-1, 1))
            out["rating"] = min(max(score, 1), 5)
        return out

    def departs(self, ans: dict[str, Any], controls: tuple[str, ...]) -> bool:
        """Whether an answer departs from the truth (either reading of an ambiguous task)
        in some control by more than a careful annotator's slip: another mood, a rating
        two points off, another order, a box or entity missed or misplaced, a summary
        keeping under half of its words."""
        readings = [False, True] if self.ambiguous else [False]
        return all(self._departs(ans, controls, alt) for alt in readings)

    def _departs(self, ans: dict[str, Any], controls: tuple[str, ...], alt: bool) -> bool:
        def pick(name: str) -> Any:
            return getattr(self, f"alt_{name}" if alt else name)

        if "sentiment" in controls and ans["mood"] != pick("mood"):
            return True
        if "rating" in controls and abs(ans["rating"] - pick("rating")) >= 2:
            return True
        if "ranking" in controls and list(ans["order"]) != list(pick("order")):
            return True
        if "entities" in controls and len(set(ans["spans"]) ^ set(pick("spans"))) >= 2:
            return True
        if "summary" in controls:
            truth = set(pick("summary").lower().split())
            words = ans["summary"].lower().split()
            if sum(w in truth for w in words) < len(truth) / 2:
                return True
        if "objects" in controls:
            truth_boxes = pick("boxes")
            if len(ans["boxes"]) != len(truth_boxes) or any(
                    max(_iou(b, t) for t in truth_boxes) < 0.5 for b in ans["boxes"]):
                return True
        return False


def _iou(a: dict[str, Any], b: dict[str, Any]) -> float:
    w = min(a["x"] + a["width"], b["x"] + b["width"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["height"], b["y"] + b["height"]) - max(a["y"], b["y"])
    inter = max(w, 0.0) * max(h, 0.0)
    union = a["width"] * a["height"] + b["width"] * b["height"] - inter
    return inter / union if union > 0 else 0.0


def _results(ans: dict[str, Any], text: str, rng: random.Random,
             controls: tuple[str, ...] = DEMO_CONTROLS) -> list[dict[str, Any]]:
    """Label Studio result items (the shapes of docs/label-studio.md §3) of ``controls``."""
    def rid() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))

    out: list[dict[str, Any]] = []
    for b in ans["boxes"] if "objects" in controls else ():
        out.append({"id": rid(), "from_name": "objects", "to_name": "image",
                    "type": "rectanglelabels", "origin": "manual",
                    "original_width": IMAGE_W, "original_height": IMAGE_H, "image_rotation": 0,
                    "value": {"x": round(b["x"], 3), "y": round(b["y"], 3),
                              "width": round(b["width"], 3), "height": round(b["height"], 3),
                              "rotation": 0, "rectanglelabels": [b["label"]]}})
    for s, e, lab in ans["spans"] if "entities" in controls else ():
        out.append({"id": rid(), "from_name": "entities", "to_name": "text", "type": "labels",
                    "origin": "manual",
                    "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}})
    if "sentiment" in controls:
        out.append({"id": rid(), "from_name": "sentiment", "to_name": "text", "type": "choices",
                    "origin": "manual", "value": {"choices": [ans["mood"]]}})
    if "summary" in controls:
        out.append({"id": rid(), "from_name": "summary", "to_name": "text", "type": "textarea",
                    "origin": "manual", "value": {"text": [ans["summary"]]}})
    if "ranking" in controls:
        out.append({"id": rid(), "from_name": "ranking", "to_name": "answers", "type": "ranker",
                    "origin": "manual",
                    "value": {"ranker": {"ranking": [f"a{k}" for k in ans["order"]]}}})
    if "rating" in controls:
        out.append({"id": rid(), "from_name": "rating", "to_name": "text", "type": "rating",
                    "origin": "manual", "value": {"rating": ans["rating"]}})
    return out


def generate(user_ids: Mapping[str, int], n_tasks: int = 60, seed: int = 7,
             ambiguous_rate: float = 0.17, controls: tuple[str, ...] = DEMO_CONTROLS,
             accuracy: float | None = None, per_task: tuple[int, int] = (3, 5)) -> DemoProject:
    """Tasks with annotations for the demo project.

    Parameters
    ----------
    user_ids : Mapping[str, int]
        Label Studio user id of each annotator in :data:`ANNOTATORS`, by email.
    n_tasks : int
        Number of tasks (each annotated by 3-5 of the annotators).
    seed : int
        Seed: the same seed gives the same project.
    ambiguous_rate : float
        Share of tasks where careful annotators split between two readings.
    controls : tuple of str
        Controls of the project (names of :data:`CONTROLS`; ``config`` holds its config).
    accuracy : float, optional
        Each careful annotator's chance of the right sentiment (ratings then within a point
        of the truth); default: their own noise.
    per_task : (int, int)
        Fewest and most annotators per task.

    Returns
    -------
    DemoProject
        ``tasks`` in Label Studio's import format (``data`` + ``annotations``).
    """
    missing = [a.email for a in ANNOTATORS if a.email not in user_ids]
    if missing:
        raise ValueError(f"no Label Studio user id for demo annotators {missing}")
    rng = random.Random(seed)
    n_amb = round(n_tasks * ambiguous_rate)
    ambiguous_idx = set(rng.sample(range(n_tasks), n_amb))
    controls = tuple(controls)
    project = DemoProject(tasks=[], careless_email=next(a.email for a in ANNOTATORS
                                                        if a.careless),
                          config=DEMO_CONFIG if controls == DEMO_CONTROLS else config_for(controls))
    rating = "rating" in controls
    for i in range(n_tasks):
        truth = _Truth(rng, i in ambiguous_idx, rating)
        sample_id = f"demo-{i + 1:03d}"
        if truth.ambiguous:
            project.ambiguous.add(sample_id)
        # The bodies follow the true order, so the ranking can actually be read off them.
        quality = {k: ANSWERS[pos] for pos, k in enumerate(truth.order)}
        answers = [{"id": f"a{k}", "title": f"Answer {chr(65 + k)}", "body": quality[k]}
                   for k in range(4)]
        who = rng.sample(ANNOTATORS, rng.randint(*per_task))
        annotations, readings = [], set()
        for a in who:
            lead_time = round(rng.uniform(20, 120), 1)
            ans = truth.answer(rng, a, accuracy, rating)
            if a.careless and truth.departs(ans, controls):
                project.planted.add(sample_id)
            if ans["alt"] is not None:
                readings.add(ans["alt"])
            annotations.append({"completed_by": int(user_ids[a.email]), "ground_truth": False,
                                "lead_time": lead_time,
                                "result": _results(ans, truth.text, rng, controls)})
        if truth.ambiguous:
            (project.planted if len(readings) > 1 else project.hidden).add(sample_id)
        project.hidden -= project.planted
        project.tasks.append({"data": {"sample_id": sample_id, "image": _svg(truth.boxes),
                                       "text": truth.text, "answers": answers},
                              "annotations": annotations})
    return project
