"""The live path's parts without a server: rescoring against a baseline equals the full
report, and webhook payloads (the captured ones) update the mirror as a re-read would."""
from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from ls_agreement.metrics.baseline import Baseline, item_scores
from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
from ls_agreement.plugin.live.baseline import apply_scores, make_baseline, score_tasks
from ls_agreement.plugin.live.events import apply_event
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.report.build import build_report
from ls_agreement.plugin.report.model import to_jsonable
from ls_agreement.plugin.settings import ReportSettings
from tests.shared_data import DATA

RATING_CONFIG = """<View><Text name="t" value="$t"/>
  <Rating name="r" toName="t" maxRating="5"/><Number name="n" toName="t"/>
  <Choices name="c" toName="t" choice="multiple"><Choice value="a"/><Choice value="b"/><Choice value="c"/></Choices>
</View>"""


def with_ids(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Import-format tasks → export shape (task and annotation ids, times)."""
    out, aid = [], 1
    for k, t in enumerate(tasks, start=1):
        anns = []
        for a in t["annotations"]:
            anns.append({**a, "id": aid, "updated_at": f"2026-01-01T00:{aid // 60 % 60:02d}:{aid % 60:02d}Z"})
            aid += 1
        out.append({"id": k, "data": t["data"], "annotations": anns})
    return out


def rating_tasks(n: int, seed: int) -> list[dict[str, Any]]:
    """Ratings, numbers and multi-choices; some tasks with 0 or 1 annotation (unpairable),
    which must not count in the ordinal ranks."""
    rng = random.Random(seed)
    tasks = []
    for _ in range(n):
        truth = rng.randint(1, 5)
        who = rng.sample(range(1, 8), rng.choice([0, 1, 2, 3, 3, 4]))
        tasks.append({"data": {"t": "x"}, "annotations": [{"completed_by": a, "result": [
            {"from_name": "r", "to_name": "t", "type": "rating",
             "value": {"rating": max(1, min(5, truth + rng.choice([-1, 0, 0, 1])))}},
            {"from_name": "n", "to_name": "t", "type": "number", "value": {"number": truth * 2.5 + rng.gauss(0, 1)}},
            {"from_name": "c", "to_name": "t", "type": "choices",
             "value": {"choices": rng.sample("abc", rng.randint(1, 2))}}]} for a in who]})
    return with_ids(tasks)


def demo_tasks(n: int, seed: int) -> list[dict[str, Any]]:
    users = {a.email: i + 1 for i, a in enumerate(ANNOTATORS)}
    return with_ids(generate(users, n_tasks=n, seed=seed).tasks)


def _rounded(entry: Any) -> dict[str, Any] | None:
    """An entry with its numbers to 12 digits (pair sums may differ in the last bit)."""
    if entry is None:
        return None
    return {k: round(v, 12) if isinstance(v, float) else v for k, v in to_jsonable(entry).items()}


def _mismatches(config: str, tasks: list[dict[str, Any]], settings: ReportSettings) -> list[str]:
    mirror = ProjectMirror()
    mirror.fill(tasks)
    base = make_baseline(config, mirror, settings)
    scores = score_tasks(base, mirror, mirror.tasks)
    rescored = copy.deepcopy(base.report)
    apply_scores(rescored, scores)
    bad = []
    for name, ctl in base.report.controls.items():
        for tid, entry in ctl.items.items():
            got = rescored.controls[name].items.get(tid)
            if got is None or _rounded(got) != _rounded(entry):
                bad.append(f"{name} task {tid}: report {to_jsonable(entry)} rescored {got and to_jsonable(got)}")
        bad += [f"{name} task {t}: rescored but not in the report"
                for t, per in scores.items() if per.get(name) is not None and t not in ctl.items]
    bad += [f"task {t}: report {_rounded(e)} rescored {_rounded(rescored.tasks.get(t))}"
            for t, e in base.report.tasks.items() if _rounded(e) != _rounded(rescored.tasks.get(t))]
    return bad


@pytest.mark.parametrize("distances", [{}, {"r": "ordinal", "n": "interval", "c": "sets.jaccard"},
                                       {"r": "interval", "n": "ratio"}])
def test_rescoring_at_the_baseline_equals_the_full_report_scalars(distances: dict[str, str]) -> None:
    settings = ReportSettings(bootstrap=0, distances=distances)
    assert _mismatches(RATING_CONFIG, rating_tasks(150, seed=4), settings) == []


def test_rescoring_at_the_baseline_equals_the_full_report_demo() -> None:
    # boxes, spans (token units), choices, text, rankings; auto picks every distance
    assert _mismatches(DEMO_CONFIG, demo_tasks(120, seed=5), ReportSettings(bootstrap=0)) == []


def test_ordinal_baseline_ranks_an_unseen_category_at_its_place() -> None:
    import pandas as pd

    base = Baseline("ordinal", d_e=1.0, threshold=1.0, flag_below=0.5,
                    ordinal_domain=__import__("numpy").array([1.0, 2.0, 4.0]),
                    ordinal_counts=__import__("numpy").array([2, 2, 2]))
    # mid-ranks: 1 → 1, 2 → 3, 4 → 5; an unseen 3 has count 0 between 2 and 4 → rank 4
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [3.0, 4.0]})
    assert item_scores(t, base)["mean_distance"].tolist() == [1.0]   # (5 − 4)²
    t = pd.DataFrame({"item": [1, 1], "annotator": ["a", "b"], "value": [1.0, 2.0]})
    assert item_scores(t, base)["mean_distance"].tolist() == [4.0]   # (3 − 1)²


def test_events_then_rescoring_equals_a_new_full_report_at_that_baseline() -> None:
    """Random edits applied as payloads; the live report equals a from-scratch rescoring
    of the edited export at the same baseline, and rescoring touched only edited tasks."""
    rng = random.Random(3)
    tasks = rating_tasks(60, seed=9)
    settings = ReportSettings(bootstrap=0)
    mirror = ProjectMirror()
    mirror.fill(tasks)
    base = make_baseline(RATING_CONFIG, mirror, settings)
    truth = {t["id"]: copy.deepcopy(t) for t in tasks}
    next_id = 10_000
    for step in range(40):
        tid = rng.choice(sorted(truth))
        anns = truth[tid]["annotations"]
        kind = rng.choice(["create", "update", "delete", "task", "drop"])
        if kind == "create" or (kind in ("update", "delete") and not anns):
            next_id += 1
            ann = {"id": next_id, "completed_by": 100 + step, "updated_at": f"x{step}",
                   "result": rating_tasks(1, seed=step)[0]["annotations"][0]["result"]
                   if rating_tasks(1, seed=step)[0]["annotations"] else []}
            anns.append(ann)
            payload = {"action": "ANNOTATION_CREATED", "annotation": {**ann, "task": tid},
                       "task": {"id": tid, "data": truth[tid]["data"]}}
        elif kind == "update":
            ann = rng.choice(anns)
            ann["result"] = [r for r in ann["result"] if r["from_name"] != "r"]
            ann["updated_at"] = f"u{step}"
            payload = {"action": "ANNOTATION_UPDATED", "annotation": {**ann, "task": tid},
                       "task": {"id": tid, "data": truth[tid]["data"]}}
        elif kind == "delete":
            ann = anns.pop(rng.randrange(len(anns)))
            payload = {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": ann["id"]}]}
        elif kind == "task":
            new = max(truth) + 1
            truth[new] = {"id": new, "data": {"t": "y"}, "annotations": []}
            payload = {"action": "TASKS_CREATED", "tasks": [{"id": new, "data": {"t": "y"}}]}
        else:
            del truth[tid]
            payload = {"action": "TASKS_DELETED", "tasks": [{"id": tid}]}
        applied = apply_event(mirror, payload)
        assert applied.reset is None and not applied.fetch
        touched = applied.touched | applied.deleted
        before = copy.deepcopy(base.report)
        apply_scores(base.report, score_tasks(base, mirror, applied.touched), applied.deleted)
        # only the touched tasks' entries moved
        for name, ctl in base.report.controls.items():
            for t in set(ctl.items) | set(before.controls[name].items):
                if int(t) not in touched:
                    assert to_jsonable(ctl.items.get(t)) == to_jsonable(before.controls[name].items.get(t))
    assert mirror.diff(truth.values()).n == 0
    fresh = ProjectMirror()
    fresh.fill(truth.values())
    scratch = copy.deepcopy(base.report)
    stale = {int(t) for c in scratch.controls.values() for t in c.items} | {int(t) for t in scratch.tasks}
    apply_scores(scratch, score_tasks(base, fresh, fresh.tasks), stale - set(fresh.tasks))
    for name, ctl in base.report.controls.items():
        assert set(scratch.controls[name].items) == set(ctl.items)
        diff = [t for t in ctl.items if _rounded(scratch.controls[name].items[t]) != _rounded(ctl.items[t])]
        assert diff == [], [(t, to_jsonable(scratch.controls[name].items[t]), to_jsonable(ctl.items[t])) for t in diff[:3]]
    assert {t: _rounded(e) for t, e in scratch.tasks.items()} == {t: _rounded(e) for t, e in base.report.tasks.items()}


def test_captured_payloads_update_the_mirror() -> None:
    files = sorted((DATA / "label-studio" / "webhooks").glob("*.json"))
    mirror = ProjectMirror()
    seen = []
    for f in files:
        payload = json.loads(f.read_text())["payload"]
        applied = apply_event(mirror, payload)
        seen.append((payload["action"], applied))
    actions = {a for a, _ in seen}
    assert {"ANNOTATION_CREATED", "ANNOTATION_UPDATED", "TASKS_CREATED", "TASKS_DELETED",
            "ANNOTATIONS_DELETED", "PROJECT_UPDATED"} <= actions
    created = next(ap for a, ap in seen if a == "ANNOTATION_CREATED")
    assert created.touched and created.reset is None       # the payload carries task and annotation
    assert next(ap for a, ap in seen if a == "PROJECT_UPDATED").reset


def test_incomplete_payload_asks_for_the_task() -> None:
    mirror = ProjectMirror()
    mirror.fill([{"id": 5, "data": {}, "annotations": []}])
    applied = apply_event(mirror, {"action": "ANNOTATION_UPDATED", "annotation": {"id": 9, "task": 5}})
    assert applied.fetch == {5} and not applied.touched
    applied = apply_event(mirror, {"action": "ANNOTATIONS_DELETED", "annotations": [{"id": 77}]})
    assert applied.reset and "77" in applied.reset


def test_build_report_and_baseline_agree_on_demo_size() -> None:
    tasks = demo_tasks(30, seed=2)
    report = build_report(DEMO_CONFIG, tasks, ReportSettings(bootstrap=0))
    mirror = ProjectMirror()
    mirror.fill(tasks)
    base = make_baseline(DEMO_CONFIG, mirror, ReportSettings(bootstrap=0))
    assert to_jsonable(base.report.controls) == to_jsonable(report.controls)
    assert set(base.controls) == {n for n, c in report.controls.items() if c.distance}


def test_packed_mirror_reads_back_what_it_was_given_and_snapshots_stay_put() -> None:
    """The mirror holds tasks packed: reading them back gives the export's tasks (normalised
    annotations), smaller than their parsed objects; a copy (a background baseline's
    snapshot) keeps what it saw while events change the original."""
    import sys

    from ls_agreement.plugin.pushback import fingerprint

    tasks = demo_tasks(40, seed=3)
    mirror = ProjectMirror()
    mirror.fill(tasks)
    back = mirror.export()
    assert [t["id"] for t in back] == sorted(t["id"] for t in tasks)
    by_id = {t["id"]: t for t in tasks}
    for t in back:
        src = by_id[t["id"]]
        assert t["data"] == src["data"]
        assert [a["result"] for a in t["annotations"]] == [a["result"] for a in sorted(src["annotations"],
                                                                                        key=lambda a: a["id"])]
        assert mirror.tasks[t["id"]].fingerprint() == fingerprint(src)
    assert list(mirror.iter_tasks()) == back

    def parsed_size(o: Any, seen: set[int]) -> int:          # the objects json.load would hold
        if id(o) in seen:
            return 0
        seen.add(id(o))
        n = sys.getsizeof(o)
        if isinstance(o, dict):
            n += sum(parsed_size(k, seen) + parsed_size(v, seen) for k, v in o.items())
        elif isinstance(o, list):
            n += sum(parsed_size(v, seen) for v in o)
        return n

    assert mirror.packed_bytes() < 0.5 * parsed_size(back, set())

    snap = mirror.copy()
    first = min(mirror.tasks)
    before = snap.tasks[first].as_task()
    ann = dict(before["annotations"][0], result=[])
    apply_event(mirror, {"action": "ANNOTATION_UPDATED", "annotation": {**ann, "task": first},
                         "task": {"id": first, "data": {**before["data"], "text": "changed"}}})
    assert mirror.tasks[first].as_task()["annotations"][0]["result"] == []
    assert mirror.tasks[first].data["text"] == "changed"
    assert snap.tasks[first].as_task() == before                      # the snapshot did not move
    assert snap.export() == back
