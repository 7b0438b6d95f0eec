"""Per-region answers: Choices, Taxonomy, TextArea, Rating, Number and DateTime with
``perRegion="true"``.

Such a control answers once per region (a transcription per ASR segment, a class per
outlier): each result carries the id of the region it describes (the same id as the
region's own result, :mod:`.region_links`) and, as every result of a region, a copy of the
region's geometry. The answer is parsed by the control's own family (:mod:`.choices`,
:mod:`.text`, :mod:`.scalars`), so it is checked exactly as a whole-task answer is.

An annotation's value is the tuple of :class:`~ls_agreement.metrics.model.Attributed`
``(region, answer)`` over its regions, in an order that does not depend on drawing order
(kind ``attributes``; distances in ``metrics/distances/attributes.py``). The region is the
one the region control built for that id, so both compare the same geometry. Multi-object
kind: an annotation without per-region answers gives ``()``. Two answers of one control to
one region: the last counts (a warning says how many).
"""
from __future__ import annotations

from typing import Any

from ls_agreement.metrics.model import Attributed

from . import choices, scalars, text
from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .region_links import Linked, RegionResolver, canonical_order, sort_key

__all__ = ["TYPES", "MULTI", "ANSWER_FAMILIES", "parse", "build", "attribute_distances",
           "default_attribute_distance", "fitting_attribute_distances"]

ANSWER_FAMILIES = {"choices": choices, "text": text, "scalars": scalars}
TYPES = set().union(*(m.TYPES for m in ANSWER_FAMILIES.values()))
MULTI = True


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple[Any, Any]:
    """One per-region answer: ``(region id, answer)``.

    Raises
    ------
    BadValue
        No region id, or an answer its own family refuses.
    """
    rid = result.get("id")
    if type(rid) not in (str, int) or rid == "":
        raise BadValue("id", f"a per-region answer needs the id of its region, got {show(rid)}")
    family = ANSWER_FAMILIES[spec.answer_family]
    try:
        answer = family.parse(result, value, spec, data)
    except SuspectValue as exc:
        raise SuspectValue(exc.field, exc.message, (rid, exc.keep)) from None
    if spec.answer_family == "text" and not isinstance(answer, str):
        raise BadValue("value.text", "missing or not a list of strings")
    return rid, answer


def build(linked: Linked, spec: ControlSpec, resolver: RegionResolver) -> tuple:
    """The annotation's ``(region, answer)`` pairs (see the module docstring)."""
    if not isinstance(linked, Linked):   # the empty value of an annotation without answers
        return ()
    per_region: dict[Any, Any] = {}
    for rid, answer in linked.parts:
        if rid in per_region:
            resolver.duplicates += 1
        per_region[rid] = answer
    out = []
    for rid, answer in per_region.items():
        region = resolver.region(linked, rid, "region id")
        if region is not None:
            out.append(Attributed(region, answer))
    return canonical_order(out, key=lambda x: (sort_key(x.region), repr(x.value)))


def attribute_distances(spec: ControlSpec) -> list[str]:
    """The answer distances that fit the control's answers, its default first."""
    low = spec.lower
    if spec.answer_family == "text":
        return ["attributes.levenshtein", "attributes.chars"]
    if spec.answer_family == "scalars":
        return ["attributes.interval", "attributes.nominal"]
    if low == "taxonomy" or spec.multiple:
        return ["attributes.jaccard", "attributes.masi"]
    return ["attributes.nominal"]


def default_attribute_distance(spec: ControlSpec) -> str:
    return attribute_distances(spec)[0]


# tag (lower case) -> every answer distance that can compare its answers (a forced one too)
_FITS = {"textarea": ("attributes.levenshtein", "attributes.chars", "attributes.nominal"),
         "choices": ("attributes.nominal", "attributes.jaccard", "attributes.masi"),
         "taxonomy": ("attributes.jaccard", "attributes.masi", "attributes.nominal"),
         "rating": ("attributes.interval", "attributes.nominal"),
         "number": ("attributes.interval", "attributes.nominal"),
         "datetime": ("attributes.interval", "attributes.nominal")}


def fitting_attribute_distances(tag: str) -> list[str]:
    """The answer distances that can compare a per-region ``tag``'s answers."""
    return list(_FITS.get(tag.lower(), ("attributes.nominal",)))
