"""Results that point at regions by id: what ``Relations`` and ``perRegion`` controls need.

Label Studio gives every result of one region the region's id (``Result.serialize``: the
area's ``cleanId``): the region's own result (``rectanglelabels``, ``labels``, ...), and
each per-region answer given to it (``choices``, ``textarea``, ``rating`` with
``perRegion="true"``). A relation names its two regions by ``from_id`` / ``to_id``.

The adapter records, per annotation, which region control result holds each id
(:class:`Linked`); once every region control has planned its values (pixels or percent,
...), :class:`RegionResolver` turns an id into that control's common-model region, so
that a per-region answer or a relation compares the same geometry the region control
measures. An id that names no region of the annotation is skipped and counted; the
control's warnings say how many, with examples.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Linked", "RegionResolver", "canonical_order", "sort_key"]

_EXAMPLES = 3


@dataclass(frozen=True, slots=True)
class Linked:
    """The parsed results of one dependent control in one annotation, with what their ids
    can resolve to.

    Attributes
    ----------
    parts : list — the control's parsed results, in result order
    regions : dict — region id -> (region control name, that control's parsed results in
        this annotation, the position of the region's result among them). The list, not the
        result: a control's plan may replace its results in place (time-series dates
        shifted to the task's origin), and the region must be the one it measures. Once
        resolved, the entry also holds the built region(s), shared by every control that
        points at it.
    task_id, annotation_id : where the results come from (for warnings)
    """

    parts: list
    regions: dict
    task_id: Any
    annotation_id: Any


class RegionResolver:
    """Region id -> common-model region, through the region control that drew it.

    Parameters
    ----------
    build : callable (control name, [parsed result]) -> tuple of regions
        The region control's own ``build`` on one result, with its planned state.
    """

    def __init__(self, build: Callable[[str, list], tuple]) -> None:
        self._build = build
        self.missing = 0
        self.examples: list[str] = []
        self.duplicates = 0   # answers to a region that already had one (the last counts)
        self.pieces = 0       # regions built as several pieces: the first stands for them

    def region(self, linked: Linked, region_id: Any, what: str) -> Any | None:
        """The region ``region_id`` names in the annotation of ``linked``, or None (counted)."""
        hit = linked.regions.get(region_id)
        if hit is None:
            self.missing += 1
            if len(self.examples) < _EXAMPLES:
                self.examples.append(f"task {linked.task_id}, annotation {linked.annotation_id}: "
                                     f"{what} {region_id!r}")
            return None
        if len(hit) == 3:
            # built once per annotation for every control that points at it: memoized in the
            # annotation's own id map, which those controls share
            control, parts, index = hit
            hit = linked.regions[region_id] = (control, parts, index, self._build(control, [parts[index]]))
        built = hit[3]
        if len(built) > 1:   # a timeline region with several ranges
            self.pieces += 1
        return built[0] if built else None

    def warnings(self, control: str) -> list[str]:
        """A warning for the ids that named no region, and one for repeated answers, if any."""
        out = []
        if self.missing:
            out.append(f"control {control!r}: {self.missing} region id(s) name no region of their "
                       f"annotation (e.g. {'; '.join(self.examples)}); skipped")
        if self.pieces:
            out.append(f"control {control!r}: {self.pieces} region(s) made of several pieces (a "
                       "timeline region with several ranges); the first piece stands for each")
        if self.duplicates:
            out.append(f"control {control!r}: {self.duplicates} region(s) answered more than once "
                       "in one annotation; the last answer counts")
        return out


def canonical_order(items: list, key: Callable[[Any], Any]) -> tuple:
    """``items`` sorted by a key that does not depend on drawing order, as a tuple: equal
    answers drawn in another order become equal values."""
    return tuple(sorted(items, key=key)) if len(items) > 1 else tuple(items)


def sort_key(obj: Any) -> tuple:
    """An order on model objects (regions, answers) of any type: the type's name, then its
    fields, numbers as they are and anything else by its repr (None and a label never meet
    in a comparison)."""
    fields = getattr(obj, "__slots__", None)
    if not fields:
        return (type(obj).__name__, (repr(obj),))
    values = (getattr(obj, f) for f in fields)
    return (type(obj).__name__, tuple(v if type(v) in (int, float) else repr(v) for v in values))
