"""Answers loaded from task data (``value="$options"``, a Ranker's List): each task's
options reach the metrics, so chance comes from what each task offers.

Exports are written here in Label Studio's result format (``web/libs/editor/src/tags/
control/Choices.jsx``, ``Choice.jsx``: a dynamic option's result is its ``alias`` or
``value``; with ``allowNested`` each chosen answer is its path, a list of values from the
topmost option down; ``Ranker.jsx``: ``value.ranker = {name: [ids]}``).
"""
from __future__ import annotations

import numpy as np
import pytest

from ls_agreement.adapters import adapt
from ls_agreement.adapters.offered import offered_answers
from ls_agreement.metrics import agreement

ASR = ("<View><Audio name='audio' value='$audio'/>"
       "<Choices name='transcriptions' toName='audio' value='$transcriptions'/></View>")
IMAGES = ("<View><Text name='prompt' value='$prompt'/>"
          "<Choices name='images' toName='prompt' value='$images' choice='multiple'/></View>")
SERP = ("<View><Text name='text' value='$text'/>"
        "<Choices name='dynamic_choices' toName='text' value='$options' choice='multiple' allownested='true'/></View>")
RANKER = ("<View><Text name='prompt' value='$prompt'/><List name='generated_images' value='$images'/>"
          "<Ranker name='rank' toName='generated_images'/></View>")


def _task(tid: int, data: dict, answers: list[list[dict]]) -> dict:
    return {"id": tid, "data": data,
            "annotations": [{"id": tid * 100 + a, "completed_by": a + 1, "result": res}
                            for a, res in enumerate(answers)]}


def _choices(name: str, to: str, chosen: list) -> list[dict]:
    return [{"id": "c", "from_name": name, "to_name": to, "type": "choices", "value": {"choices": chosen}}]


def _random_project(kind: str, rng: np.random.Generator, n_tasks: int = 30, n_ann: int = 4) -> tuple[str, list]:
    """Every annotator answers at random among the task's own options (2 to 6 of them)."""
    tasks = []
    for t in range(1, n_tasks + 1):
        k = int(rng.integers(2, 7))
        if kind == "asr":
            opts = [{"value": f"hypothesis {q} of task {t}"} for q in range(k)]
            answers = [_choices("transcriptions", "audio", [opts[int(rng.integers(k))]["value"]]) for _ in range(n_ann)]
            tasks.append(_task(t, {"audio": f"/a/{t}.wav", "transcriptions": opts}, answers))
        elif kind == "images":
            opts = [{"value": f"id{t}#{q}", "html": "<img/>"} for q in range(k)]
            answers = [_choices("images", "prompt", [o["value"] for o in opts if rng.random() < 0.5])
                       for _ in range(n_ann)]
            tasks.append(_task(t, {"prompt": "p", "images": opts}, [a if a[0]["value"]["choices"] else []
                                                                  for a in answers]))
        elif kind == "serp":
            top = f"t{t}_result0"
            opts = [{"value": top, "children": [{"value": f"{top}{c}"} for c in range(2)]}
                    if q == 0 else {"value": f"t{t}_result{q}"} for q in range(k)]
            paths = [[top, f"{top}0"], [top, f"{top}1"]] + [[o["value"]] for o in opts[1:]]
            answers = [_choices("dynamic_choices", "text", [p for p in paths if rng.random() < 0.4] or [paths[0]])
                       for _ in range(n_ann)]
            tasks.append(_task(t, {"text": "q", "options": opts}, answers))
        else:
            ids = [f"chair_{t}_{q}" for q in range(k)]
            answers = [[{"id": "r", "from_name": "rank", "to_name": "generated_images", "type": "ranker",
                         "value": {"ranker": {"rank": [ids[q] for q in rng.permutation(k)]}}}] for _ in range(n_ann)]
            tasks.append(_task(t, {"prompt": "p", "images": [{"id": i, "html": "<img/>"} for i in ids]}, answers))
    config = {"asr": ASR, "images": IMAGES, "serp": SERP, "ranker": RANKER}[kind]
    return config, tasks


@pytest.mark.parametrize("kind,control,distance", [("asr", "transcriptions", "nominal"),
                                                   ("images", "images", "sets.masi"),
                                                   ("serp", "dynamic_choices", "sets.masi"),
                                                   ("ranker", "rank", "rankings.kendall")])
def test_random_annotators_on_task_options_are_at_chance(kind, control, distance):
    """30 tasks x 4 random annotators: |α| < 0.15 and an interval around 0; before, chance
    pooled across tasks whose options never match put α at 0.25-0.44."""
    config, tasks = _random_project(kind, np.random.default_rng(7))
    ctl = adapt(config, tasks).controls[control]
    assert "options" in ctl.table.columns
    res = agreement(ctl.table, distance, bootstrap=400, seed=3)
    assert abs(res.alpha) < 0.15
    lo, hi = res.ci["alpha"]
    assert lo < 0.0 < hi
    assert agreement(ctl.table.drop(columns="options"), distance, bootstrap=0).alpha > 0.15


def test_identical_annotators_on_task_options_agree_fully():
    config, tasks = _random_project("asr", np.random.default_rng(1))
    for t in tasks:   # everyone copies the first annotator
        for ann in t["annotations"]:
            ann["result"] = t["annotations"][0]["result"]
    ctl = adapt(config, tasks).controls["transcriptions"]
    assert agreement(ctl.table, "nominal", bootstrap=0).alpha == pytest.approx(1.0)


def test_nested_choices_are_paths_not_dropped():
    """serp-ranking (allowNested): each answer is a path list; it is read as a joined path,
    so the control varies (it was dropped and called "no variation")."""
    data = {"text": "q", "options": [{"value": "result1", "children": [{"value": "result11"}, {"value": "result12"}]},
                                     {"value": "result2"}]}
    tasks = [_task(1, data, [_choices("dynamic_choices", "text", [["result1", "result11"], ["result2"]]),
                             _choices("dynamic_choices", "text", [["result1", "result12"]])])]
    out = adapt(SERP, tasks, strict=True)
    values = dict(zip(out.controls["dynamic_choices"].table["annotator"], out.controls["dynamic_choices"].table["value"]))
    assert values == {"1": frozenset({"result1/result11", "result2"}), "2": frozenset({"result1/result12"})}
    assert offered_answers(out_spec(SERP, "dynamic_choices"), data) == (
        "result1", "result1/result11", "result1/result12", "result2")


def out_spec(config: str, name: str):
    from ls_agreement.adapters.config import parse_config
    return parse_config(config).controls[name]


def test_offered_answers_follow_label_studio_option_objects():
    spec = out_spec(ASR, "transcriptions")
    data = {"transcriptions": [{"value": "a"}, {"value": "b", "alias": "B"}, "not an option", {"html": "<b/>"},
                               {"value": "a"}]}
    # alias wins over value; non-objects and options without a value are not choices; once each
    assert offered_answers(spec, data) == ("a", "B")
    assert offered_answers(spec, {"transcriptions": "not a list"}) is None
    # without allowNested, children are not choices (Choice.jsx isSkipped)
    nested = {"transcriptions": [{"value": "p", "children": [{"value": "c"}]}]}
    assert offered_answers(spec, nested) == ("p",)


def test_ranker_options_are_the_list_ids():
    spec = out_spec(RANKER, "rank")
    assert offered_answers(spec, {"images": [{"id": "x"}, {"id": 3}, {"title": "no id"}]}) == ("x", "3")


def test_same_options_on_every_task_change_nothing():
    """Options loaded from data but equal on every task: their own identity, pooled chance as before."""
    rng = np.random.default_rng(4)
    opts = [{"value": v} for v in ("yes", "no", "maybe")]
    tasks = [_task(t, {"audio": "a", "transcriptions": opts},
                   [_choices("transcriptions", "audio", [opts[int(rng.integers(3))]["value"]]) for _ in range(3)])
             for t in range(1, 21)]
    table = adapt(ASR, tasks).controls["transcriptions"].table
    a = agreement(table, "nominal", bootstrap=0).alpha
    b = agreement(table.drop(columns="options"), "nominal", bootstrap=0).alpha
    assert a == pytest.approx(b, abs=1e-12)
