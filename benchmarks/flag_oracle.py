"""The true generative model's own flags on a Choices (and Rating) shape (issue 22).

The issue measured what is reachable by flagging the tasks whose posterior of a planted
problem, under the model that generated the project, reaches ½. Here that posterior is
computed exactly from ``benchmarks/flag_shapes.py``'s plan: per task, every true label,
true rating, ambiguous second label and order of the alternating readings (or each
careful reading a coin), and for the bad
annotator whether their answer was careful — with the generator's own parameters (careful
accuracy, label prior, share of ambiguous tasks, the bad annotator's behaviour). No fit:
it is the ceiling a model fitted on the answers works under.
"""
from __future__ import annotations

import itertools
from typing import Any

from .flag_shapes import LABELS, ShapeProject, careful_rating_p

__all__ = ["oracle_flags"]


def _answers(task: dict[str, Any], rating: bool) -> list[tuple[int, str, int | None]]:
    out = []
    for a in task["annotations"]:
        values = {r["from_name"]: r["value"] for r in a["result"]}
        out.append((int(a["completed_by"]), values["label"]["choices"][0],
                    int(values["rating"]["rating"]) if rating else None))
    return out


def oracle_flags(proj: ShapeProject) -> set[str] | None:
    """The task ids whose posterior of a planted problem is at least ½ (None: not a
    Choices shape)."""
    plan = proj.plan
    if plan is None:
        return None
    bad = int(proj.bad) if proj.bad is not None else None
    acc = plan.accuracy
    scores = range(1, 6)
    flagged = set()
    for task in proj.tasks:
        answers = _answers(task, plan.rating)
        seen = {y for _, y, _ in answers}
        total = planted = 0.0
        for (zi, z), s in itertools.product(enumerate(LABELS), scores):
            p_truth = plan.prior[zi] / len(scores)
            states: list[tuple[float, str | None, bool | None]] = [(1.0 - plan.ambiguous, None, False)]
            for alt in (x for x in LABELS if x != z):
                if plan.split == "coins":        # flip None: each careful reading a coin
                    states.append((plan.ambiguous / (len(LABELS) - 1), alt, None))
                    continue
                for flip in (False, True):
                    states.append((plan.ambiguous / (len(LABELS) - 1) / 2, alt, flip))
            for p_state, alt, flip in states:
                if p_state <= 0:
                    continue
                weight = p_truth * p_state
                bad_all, bad_departs = 1.0, 0.0     # the bad annotator's factor, and its departing part
                for pos, (uid, y, r) in enumerate(answers):
                    if alt is None:
                        readings = [z]
                    elif flip is None:
                        readings = [z, alt]
                    else:
                        readings = [alt if (pos % 2 == 1) != flip else z]
                    label_p = sum(acc if y == x else (1 - acc) / (len(LABELS) - 1) for x in readings) / len(readings)
                    careful = label_p * (careful_rating_p(r, s, acc) if r is not None else 1.0)
                    if uid == bad and plan.bad is not None:
                        other = plan.bad.not_careful(y, r, s)
                        bad_all = plan.bad.careful_share * careful + other
                        bad_departs = other if plan.bad.departs(y, r, z, s) else 0.0
                    else:
                        weight *= careful
                total += weight * bad_all
                # planted: the bad answer departs from the truth, or the task is ambiguous and
                # its answers show both labels
                planted += weight * (bad_all if alt is not None and {z, alt} <= seen else bad_departs)
        if total > 0 and planted / total >= 0.5:
            flagged.add(str(task["id"]))
    return flagged


def demo_oracle_flags(sample: Any, accuracy: float, ambiguous_rate: float, careless_id: int) -> set[str]:
    """The demo generator's own flags on a Choices + Rating project made with a fixed
    careful ``accuracy`` (``demo.data.generate(..., controls=("sentiment", "rating"),
    accuracy=...)``): the task ids (1-based positions) whose posterior of a planted problem
    is at least ½ (:func:`demo_oracle_posteriors`)."""
    return {t for t, p in demo_oracle_posteriors(sample, accuracy, ambiguous_rate, careless_id).items() if p >= 0.5}


def demo_oracle_posteriors(sample: Any, accuracy: float, ambiguous_rate: float,
                           careless_id: int) -> dict[str, float]:
    """Per task id (1-based position), the posterior of a planted problem under the demo
    generator's own model, for a Choices + Rating project made with a fixed careful
    ``accuracy``.

    The posterior follows ``demo/data.py``'s ``_Truth.answer`` and ``generate``: a uniform
    mood and rating; an ambiguous task (share ``ambiguous_rate``) reads the next mood and
    a rating two points away, each careful answer one reading or the other by a coin; a
    careful mood right with probability ``accuracy`` (else one of the other two), a careful
    rating its reading plus −1, 0 or +1 (clipped); the careless annotator random (mood and
    rating uniform) four times in five. Planted: the careless answer departs under every
    reading (another mood, a rating two or more away), or the task is ambiguous and the
    answers that read it (all but a random one) did not all read it alike.
    """
    moods = ("Positive", "Neutral", "Negative")

    def mood_p(y: str, m: str) -> float:
        return accuracy if y == m else (1 - accuracy) / 2

    def rating_p(q: int, r: int) -> float:
        return sum(min(max(r + step, 1), 5) == q for step in (-1, 0, 1)) / 3

    out = {}
    for pos, task in enumerate(sample.tasks):
        answers = []
        for a in task["annotations"]:
            values = {x["from_name"]: x["value"] for x in a["result"]}
            answers.append((int(a["completed_by"]) == careless_id, values["sentiment"]["choices"][0],
                            int(values["rating"]["rating"])))
        total = planted = 0.0
        for mi, m in enumerate(moods):
            for r in range(1, 6):
                readings = [(m, r), (moods[(mi + 1) % 3], r + 2 if r <= 3 else r - 2)]
                for amb in (False, True):
                    weight = (ambiguous_rate if amb else 1 - ambiguous_rate) / 15
                    own = readings if amb else readings[:1]
                    every, alike = weight, [weight] * len(own)    # P(answers), P(answers, one reading)
                    departs = False
                    for careless, y, q in answers:
                        care = [mood_p(y, mm) * rating_p(q, rr) for mm, rr in own]
                        if careless:
                            rand = 0.8 / 15
                            every *= rand + 0.2 * sum(care) / len(care)
                            alike = [w * (rand + 0.2 * c / len(care)) for w, c in zip(alike, care)]
                            departs = all(y != mm or abs(q - rr) >= 2 for mm, rr in own)
                        else:
                            every *= sum(care) / len(care)
                            alike = [w * c / len(care) for w, c in zip(alike, care)]
                    total += every
                    planted += every if departs else (every - sum(alike) if amb else 0.0)
        out[str(pos + 1)] = planted / total if total > 0 else 0.0
    return out
