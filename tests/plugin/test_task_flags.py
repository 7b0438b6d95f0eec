"""The task-level flag rule (plugin/report/flags.py ``task_flag``, issue 22): a task is flagged
when the posterior that it holds a departing answer or is ambiguous reaches the flag level,
and its reasons name only annotators who stand against the consensus."""
from __future__ import annotations

import math

import pytest

from ls_agreement.plugin.report.flags import task_flag
from ls_agreement.plugin.report.model import ControlReport, ItemEntry

CONTROLS = {"sentiment": ControlReport(tag="Choices", kind="scalars"),
            "rating": ControlReport(tag="Rating", kind="scalars")}


def test_a_likely_departure_on_the_majority_side_flags_the_task_naming_nobody() -> None:
    """A spammer who sided with the majority while a careful annotator stood alone: the
    model's posterior is high, but no answer against the consensus departs (so no control
    reason): the task is flagged all the same, on the control that says most, naming nobody."""
    items = {"sentiment": ItemEntry(p_flag=0.45, consensus="Positive", departs={"303": 0.45}),
             "rating": ItemEntry(p_flag=0.1, consensus=3)}
    flag, reasons, posterior = task_flag(items, CONTROLS)
    assert posterior == pytest.approx(1 - 0.55 * 0.9)
    assert flag and list(reasons) == ["sentiment"]
    assert "consensus itself may be wrong" in reasons["sentiment"] and "303" not in reasons["sentiment"]
    assert f"{posterior:.2f}" in reasons["sentiment"]


def test_below_the_flag_level_nothing_is_flagged() -> None:
    items = {"sentiment": ItemEntry(p_flag=0.3, consensus="Positive"), "rating": ItemEntry(p_flag=0.1)}
    flag, reasons, posterior = task_flag(items, CONTROLS)
    assert not flag and reasons == {} and posterior == pytest.approx(1 - 0.7 * 0.9)
    # the level is the report's setting
    flag, reasons, _ = task_flag(items, CONTROLS, {"flag_posterior": 0.3})
    assert flag and list(reasons) == ["sentiment"]


def test_a_control_that_names_who_departs_gives_the_only_reason() -> None:
    named = "303: said 'Negative' where the consensus is 'Positive' (departs 0.90)"
    items = {"sentiment": ItemEntry(p_flag=0.9, consensus="Positive", departs={"303": 0.9}, reason=named),
             "rating": ItemEntry(p_flag=0.05)}
    flag, reasons, _ = task_flag(items, CONTROLS)
    assert flag and reasons == {"sentiment": named}


def test_one_split_is_not_counted_twice_as_ambiguity() -> None:
    """A lone control's 2–1 split read as ambiguous by the control's own model (0.37) and,
    the same ratio, by the reading over the task's controls (0.37): one piece of evidence,
    not two. Multiplied as if independent it reached 0.60 and flagged one task in eight of
    a spammer project whose careful annotators slip one answer in seven."""
    items = {"sentiment": ItemEntry(p_flag=0.37, p_ambiguous=0.37, ambiguity_lr=0.1, consensus="Positive")}
    controls = {"sentiment": CONTROLS["sentiment"]}
    rho_task = 1 / (1 + (1 - 0.37) / 0.37 * 1.1052)        # so that the pooled reading is 0.37 too
    flag, reasons, posterior = task_flag(items, controls, ambiguity=rho_task)
    assert posterior == pytest.approx(0.37, abs=1e-3)
    assert not flag and reasons == {}


def test_departures_multiply_and_ambiguity_takes_the_likelier_reading() -> None:
    """Departures on two controls are two chances (1 − 0.7 · 0.8); ambiguity read 0.3 on one
    control and 0.2 on the other stands at 0.3."""
    items = {"sentiment": ItemEntry(p_flag=0.6, p_ambiguous=0.3), "rating": ItemEntry(p_flag=0.4, p_ambiguous=0.2)}
    _, _, posterior = task_flag(items, CONTROLS)
    assert posterior == pytest.approx(1 - (1 - 0.3) * (1 - 0.3) * (1 - 0.2))


def _spammer_project(seed: int) -> tuple[str, list[dict]]:
    """A Choices project: careful annotators right 85 % of the time, one (user 100) always
    says 'Positive' — often on a raw majority's side with one careful annotator who slipped."""
    import random

    rng = random.Random(seed)
    labels = ("Positive", "Neutral", "Negative")
    config = ('<View><Text name="text" value="$text"/><Choices name="label" toName="text">'
              + "".join(f'<Choice value="{x}"/>' for x in labels) + "</Choices></View>")
    pool = list(range(100, 109))
    tasks = []
    for k in range(300):
        truth = rng.choices(labels, weights=(0.4, 0.3, 0.3))[0]
        anns = []
        for j, uid in enumerate(rng.sample(pool, rng.randint(2, 5))):
            y = "Positive" if uid == 100 else (truth if rng.random() < 0.85 else rng.choice([x for x in labels if x != truth]))
            anns.append({"id": 10 * k + j, "completed_by": uid, "result": [
                {"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [y]}}]})
        tasks.append({"id": k + 1, "data": {"text": f"t{k}"}, "annotations": anns})
    return config, tasks


def test_reasons_never_name_an_annotator_on_the_majority_side() -> None:
    """Issue 22: the reasons name who departs, never an annotator who sided with the task's
    majority — also where the consensus overrules that majority because the model gives its
    voters little weight (a spammer's answer in it): then the reason says so, naming nobody."""
    import re
    from collections import Counter

    from ls_agreement.plugin.report.build import build_report
    from ls_agreement.plugin.settings import ReportSettings

    named = overruled = 0
    for seed in (1, 2, 3):
        config, tasks = _spammer_project(seed)
        report = build_report(config, tasks, ReportSettings(bootstrap=0))
        answers = {str(t["id"]): {str(a["completed_by"]): a["result"][0]["value"]["choices"][0]
                                  for a in t["annotations"]} for t in tasks}
        for tid, task in report.tasks.items():
            given = answers[tid]
            top, n = Counter(given.values()).most_common(1)[0]
            majority = top if 2 * n > len(given) else None
            for why in task.reasons.values():
                for who in re.findall(r"(\d+): said", why):
                    named += 1
                    assert given[who] != majority, (seed, tid, why, given)
                if "the majority said" in why:
                    overruled += 1
                    assert majority is not None and report.controls["label"].items[tid].consensus != majority
                    assert not re.search(r"\d+: said", why.split("the majority said")[1])
    assert named > 30 and overruled >= 1, (named, overruled)


@pytest.mark.parametrize("shares", [None, {"a": 0.6, "c": 0.02}], ids=["controls' theta", "fitted shares"])
def test_coupled_departures_against_enumeration(shares) -> None:
    """One departure state per annotator and task over the controls of labels: the pooled
    reading against a brute-force sum over every annotator's departing or not; the prior
    of departing is the annotator's fitted share where given (``b`` has none: the largest
    of their controls' 1 − θ)."""
    import itertools
    import math

    from ls_agreement.plugin.report.flags import coupled_departures

    # per annotator and control: [log LR of departing, share that shows, prior 1 − θ]
    lrs = {"sentiment": {"a": [2.0, 0.9, 0.3], "b": [-1.5, 0.8, 1e-4], "c": [0.5, 0.2, 0.05]},
           "rating": {"a": [-1.6, 0.7, 0.25], "b": [0.3, 0.5, 1e-4]}}
    items = {n: ItemEntry(p_flag=0.5, departing_lr=v) for n, v in lrs.items()}
    got = coupled_departures(items, shares)
    people = ["a", "b", "c"]
    total = none = 0.0
    for states in itertools.product([0, 1], repeat=len(people)):
        weight, hidden = 1.0, 1.0
        for who, d in zip(people, states):
            rows = [lrs[c][who] for c in lrs if who in lrs[c]]
            prior = (shares or {}).get(who, max(r[2] for r in rows))
            # P(answers | departs) / P(answers | sound) is the product of the answers' ratios
            like = math.exp(sum(r[0] for r in rows)) if d else 1.0
            weight *= (prior if d else 1 - prior) * like
            if d:
                hidden *= math.prod(1 - r[1] for r in rows)
        total += weight
        none += weight * hidden
    assert got == pytest.approx(1 - none / total, rel=1e-9)
    # one control of labels: nothing to pool
    assert coupled_departures({"sentiment": items["sentiment"]}, shares) is None


def test_fitted_shares_find_the_careless_annotator_of_a_two_control_project() -> None:
    """The demo's careless annotator answers at random four times in five. Fitted over the
    tasks, their share of departing tasks is near 0.8 and the careful annotators' near 0;
    the report stores the shares, and the flags read them."""
    from ls_agreement.demo import data as demo_data
    from ls_agreement.plugin.report.build import build_report
    from ls_agreement.plugin.report.flags import fit_departing
    from ls_agreement.plugin.report.model import Report
    from ls_agreement.plugin.report.rollup import project_tasks
    from ls_agreement.plugin.settings import ReportSettings

    users = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
    sample = demo_data.generate(users, n_tasks=300, seed=4, controls=("sentiment", "rating"), accuracy=0.8,
                                per_task=(3, 3))
    tasks = [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)]
    report = build_report(sample.config, tasks, ReportSettings(bootstrap=0))
    careless = str(users[sample.careless_email])
    shares = fit_departing(report.controls)
    assert report.departing == shares
    assert 0.65 < shares[careless] < 0.95, shares
    assert all(d < 0.15 for a, d in shares.items() if a != careless), shares
    assert Report.from_dict(report.to_dict()).departing == shares
    # the flags are read with the shares: without them some task reads otherwise
    without = project_tasks(report.controls, report.settings, report.ambiguity)
    assert any(without[t].p_flag != report.tasks[t].p_flag for t in report.tasks)
    assert project_tasks(report.controls, report.settings, report.ambiguity, departing=shares) == report.tasks


def test_a_careful_answer_on_another_control_lowers_a_departure() -> None:
    """A label that departs while the same annotator's rating is exactly the consensus: the
    task's departure posterior falls below the label control's own; with the rating off
    too, it rises above it."""
    from ls_agreement.plugin.report.flags import task_flag

    label = ItemEntry(p_flag=0.7, p_ambiguous=0.0, departs={"303": 0.7},
                      departing_lr={"303": [math.log(0.7 / 0.3 * 0.75 / 0.25), 1.0, 0.25], "7": [-6.0, 1.0, 1e-4]})
    agree = ItemEntry(p_flag=0.001, p_ambiguous=0.0,
                      departing_lr={"303": [math.log(0.2 / 0.9), 1.0, 0.25], "7": [-6.0, 1.0, 1e-4]})
    off = ItemEntry(p_flag=0.6, p_ambiguous=0.0,
                    departing_lr={"303": [math.log(0.2 / 0.02), 1.0, 0.25], "7": [-6.0, 1.0, 1e-4]})
    _, _, alone = task_flag({"sentiment": label}, {"sentiment": CONTROLS["sentiment"]})
    _, _, with_agree = task_flag({"sentiment": label, "rating": agree}, CONTROLS)
    _, _, with_off = task_flag({"sentiment": label, "rating": off}, CONTROLS)
    assert alone == pytest.approx(0.7)
    assert with_agree < 0.5 < alone < with_off


def test_items_keep_departing_ratios_only_where_a_project_can_pool_them() -> None:
    """``departing_lr`` is a list per answer that only a task with two controls of labels
    reads: a project with one such control carries none (on 100,000 demo tasks they were
    about 80 MB of the report), one with two carries them on every label item."""
    from ls_agreement.demo import data as demo_data
    from ls_agreement.plugin.report.build import build_report
    from ls_agreement.plugin.report.flags import may_pool_departures, pools_departures
    from ls_agreement.plugin.settings import ReportSettings

    assert not may_pool_departures(["scalars", "boxes", "spans"])
    assert may_pool_departures(["scalars", "boxes", "pairwise"])
    users = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
    for controls, want in ((("sentiment", "summary"), False), (("sentiment", "rating"), True)):
        sample = demo_data.generate(users, n_tasks=40, seed=2, controls=controls)
        tasks = [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)]
        report = build_report(sample.config, tasks, ReportSettings(bootstrap=0))
        items = report.controls["sentiment"].items.values()
        assert all(e.p_flag is not None for e in items)
        assert all(bool(e.departing_lr) is want for e in items), controls
        assert pools_departures(report.controls) is want


def test_which_controls_are_read_as_grades_in_order() -> None:
    """A Rating's grades are in order whatever distance won; numbers under an ordinal or
    interval distance are; labels of a Choices, and words, are not."""
    from ls_agreement.plugin.report.flags import _ordered

    assert _ordered(ControlReport(tag="Rating", kind="scalars", distance="nominal"), [1, 2, 3, 4, 5])
    assert _ordered(ControlReport(tag="Number", kind="scalars", distance="interval"), [0, 2.5, 10])
    assert not _ordered(ControlReport(tag="Number", kind="scalars", distance="nominal"), [0, 2.5, 10])
    assert not _ordered(ControlReport(tag="Choices", kind="scalars", distance="nominal"), ["a", "b", "c"])
    assert not _ordered(ControlReport(tag="Choices", kind="scalars", distance="ordinal"), ["low", "mid", "high"])
    assert not _ordered(ControlReport(tag="Rating", kind="scalars", distance="ordinal"), [True, False])
