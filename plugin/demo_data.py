"""Synthetic, seeded sample project for ``ls-agreement demo``.

Every task has a hidden true answer for five control tags — rectangles on a (generated
SVG) image, entity spans in a sentence, a sentiment choice, a free-text summary and a
ranking of four candidate answers. Six annotators copy the truth with their own noise
level; one of them (``careless``) answers at random most of the time; about one task in
six is *ambiguous*: careful annotators split between two defensible answers. Each task is
annotated by 3-5 annotators. Nothing here talks to Label Studio: the output is the JSON
Label Studio imports (tasks with annotations, ``completed_by`` = user id).
"""
from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Any, Mapping

DEMO_TITLE = "ls-agreement demo"
IMAGE_W, IMAGE_H = 640, 480

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

    def __init__(self, rng: random.Random, ambiguous: bool) -> None:
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

    def answer(self, rng: random.Random, who: DemoAnnotator) -> dict[str, Any]:
        """One annotator's answers (common-model-like dicts, converted to LS below)."""
        if who.careless and rng.random() < 0.8:
            bounds = _word_bounds(self.text)
            spans = []
            for s, e in rng.sample(bounds, rng.randint(1, 4)):
                spans.append((s, e, rng.choice(["PER", "ORG", "LOC"])))
            return {"boxes": _random_boxes(rng), "spans": sorted(set(spans)),
                    "mood": rng.choice(list(MOODS)),
                    "summary": " ".join(rng.sample(FILLER, rng.randint(2, 6))).capitalize(),
                    "order": rng.sample(range(4), 4)}
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
        if rng.random() < eps:
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
        return {"boxes": boxes, "spans": spans, "mood": mood, "summary": summary,
                "order": order}


def _results(ans: dict[str, Any], text: str, rng: random.Random) -> list[dict[str, Any]]:
    """Label Studio result items (the shapes of docs/label-studio.md §3)."""
    def rid() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))

    out: list[dict[str, Any]] = []
    for b in ans["boxes"]:
        out.append({"id": rid(), "from_name": "objects", "to_name": "image",
                    "type": "rectanglelabels", "origin": "manual",
                    "original_width": IMAGE_W, "original_height": IMAGE_H, "image_rotation": 0,
                    "value": {"x": round(b["x"], 3), "y": round(b["y"], 3),
                              "width": round(b["width"], 3), "height": round(b["height"], 3),
                              "rotation": 0, "rectanglelabels": [b["label"]]}})
    for s, e, lab in ans["spans"]:
        out.append({"id": rid(), "from_name": "entities", "to_name": "text", "type": "labels",
                    "origin": "manual",
                    "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}})
    out.append({"id": rid(), "from_name": "sentiment", "to_name": "text", "type": "choices",
                "origin": "manual", "value": {"choices": [ans["mood"]]}})
    out.append({"id": rid(), "from_name": "summary", "to_name": "text", "type": "textarea",
                "origin": "manual", "value": {"text": [ans["summary"]]}})
    out.append({"id": rid(), "from_name": "ranking", "to_name": "answers", "type": "ranker",
                "origin": "manual",
                "value": {"ranker": {"ranking": [f"a{k}" for k in ans["order"]]}}})
    return out


def generate(user_ids: Mapping[str, int], n_tasks: int = 60, seed: int = 7,
             ambiguous_rate: float = 0.17) -> DemoProject:
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
    project = DemoProject(tasks=[], careless_email=next(a.email for a in ANNOTATORS
                                                        if a.careless))
    for i in range(n_tasks):
        truth = _Truth(rng, i in ambiguous_idx)
        sample_id = f"demo-{i + 1:03d}"
        if truth.ambiguous:
            project.ambiguous.add(sample_id)
        # The bodies follow the true order, so the ranking can actually be read off them.
        quality = {k: ANSWERS[pos] for pos, k in enumerate(truth.order)}
        answers = [{"id": f"a{k}", "title": f"Answer {chr(65 + k)}", "body": quality[k]}
                   for k in range(4)]
        who = rng.sample(ANNOTATORS, rng.randint(3, 5))
        annotations = [{"completed_by": int(user_ids[a.email]), "ground_truth": False,
                        "lead_time": round(rng.uniform(20, 120), 1),
                        "result": _results(truth.answer(rng, a), truth.text, rng)}
                       for a in who]
        project.tasks.append({"data": {"sample_id": sample_id, "image": _svg(truth.boxes),
                                       "text": truth.text, "answers": answers},
                              "annotations": annotations})
    return project
