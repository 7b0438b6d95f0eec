"""The task-level flag rule (plugin/report/flags.py ``task_flag``, issue 22): a task is flagged
when the posterior that it holds a departing answer or is ambiguous reaches the flag level,
and its reasons name only annotators who stand against the consensus."""
from __future__ import annotations

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
