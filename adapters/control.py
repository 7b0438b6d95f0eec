"""What an adapted control tag is: a long table in the common model plus its metadata.

Contract (``docs/report.md``): one :class:`ControlData` per control tag, table
columns ``item`` (task id), ``annotator`` (str: user id, or ``model:<version>`` for
predictions) and ``value`` (common model value, ``ls_agreement.metrics.model``); a control
whose answers come from each task's data (options loaded per task, a Ranker's List) adds
``options``: the answers the row's task offers (``adapters/offered.py``), from which the
metrics take chance (docs/formulas.md §1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ls_agreement.metrics.distances.registry import canonical_kind

from .config import ControlSpec

__all__ = ["ControlData", "DEFAULT_DISTANCE", "default_distance", "candidate_distances",
           "fitting_distances", "unread_note", "unread_warning", "UNREAD"]

#: How a control's warnings start when some of its results could not be read (the report
#: then does not call it "no variation" without saying so)
UNREAD = "results of this control could not be read"

# Default distance per value kind (docs/formulas.md §4); scalars depend on the tag.
DEFAULT_DISTANCE: dict[str, str] = {
    "boxes": "boxes.iou", "polygons": "polygons.iou", "keypoints": "keypoints.oks",
    "spans": "spans.lenient", "text": "text.levenshtein", "rankings": "rankings.kendall",
    "sets": "sets.masi", "pairwise": "nominal", "intervals": "intervals.overlap",
    "tracks": "tracks.iou",
    "masks": "masks.iou", "ellipses": "ellipses.iou", "curves": "curves.chamfer",
    "relations": "relations.jaccard",
}
_SCALAR_DEFAULT = {"choices": "nominal", "rating": "ordinal", "number": "interval",
                   "datetime": "interval"}
# Candidate distances that only make sense on numbers: never offered for string labels.
_NUMERIC_ONLY = {"ordinal", "interval", "ratio"}


@dataclass
class ControlData:
    """One control tag adapted to the common model (see the module docstring).

    ``kind`` is the value kind, named like the registry prefix of its distances
    (``"scalars"``, ``"sets"``, ``"rankings"``, ``"boxes"``, ...; ``metrics.distances.KINDS``);
    an old singular name (``"scalar"``) is read as its plural.
    """

    name: str
    tag: str
    object_name: str
    kind: str
    table: pd.DataFrame
    options: list[str] | None
    candidates: list[str]
    default_distance: str
    texts: dict[Any, str] = field(default_factory=dict)
    annotator_names: dict[str, str] = field(default_factory=dict)
    ground_truth: set[tuple[Any, str]] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.kind = canonical_kind(self.kind)

    @property
    def n_items(self) -> int:
        return int(self.table["item"].nunique()) if len(self.table) else 0

    def pairable(self) -> bool:
        """True when at least one item has values from two or more annotators."""
        if len(self.table) < 2:
            return False
        return bool((self.table.groupby("item", sort=False).size() >= 2).any())


def unread_note(unread: int, total: int) -> str:
    """The control warning for ``unread`` of its ``total`` results skipped as unreadable."""
    return (f"{unread} of {total} {UNREAD} and were skipped (the warnings name each); the answers left "
            "are measured")


def unread_warning(ctl: "ControlData") -> str | None:
    """The unread-results warning of a control, if any."""
    return next((w for w in ctl.warnings if UNREAD in w), None)


def default_distance(spec: ControlSpec) -> str:
    """Registry name of the distance used when the settings say neither a name nor auto."""
    kind = canonical_kind(spec.kind)
    if kind == "scalars":
        return _SCALAR_DEFAULT.get(spec.lower, "nominal")
    if kind == "attributes":   # per-region answers: the answer's own distance (per_region.py)
        from .per_region import default_attribute_distance
        return default_attribute_distance(spec)
    return DEFAULT_DISTANCE.get(kind, "nominal")


def fitting_distances(kind: str, tag: str) -> list[str]:
    """Every registered distance that can compare this control's values (``kind`` as in
    :class:`ControlData`; an old singular name is read as its plural)."""
    from ls_agreement.metrics.distances.registry import fitting

    kind = canonical_kind(kind)
    if kind == "attributes":   # per-region answers: the distances of the tag's answers
        from .per_region import fitting_attribute_distances
        return fitting_attribute_distances(tag)
    names = fitting("scalars" if kind == "pairwise" else kind)
    if tag.lower() in ("choices", "pairwise"):
        names = [n for n in names if n not in _NUMERIC_ONLY]
    return names


def candidate_distances(spec: ControlSpec) -> list[str]:
    """Distances ``auto`` tries: ``ls_agreement.metrics.candidates(kind)``, minus numeric
    levels for string-valued scalars (Choices, Pairwise), default first if missing."""
    default = default_distance(spec)
    kind = canonical_kind(spec.kind)
    if kind == "attributes":   # only the answer distances that fit the control's answers
        from .per_region import attribute_distances
        return attribute_distances(spec)
    try:
        from ls_agreement.metrics import candidates
        names = list(candidates(kind))
    except Exception:  # registry not importable: fall back to the default alone
        names = []
    if kind == "pairwise" and not names:
        names = ["nominal"]
    if kind in ("scalars", "pairwise") and spec.lower in ("choices", "pairwise"):
        names = [n for n in names if n not in _NUMERIC_ONLY]
    if default not in names:
        names.insert(0, default)
    return names
