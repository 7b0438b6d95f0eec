"""Relations between regions: Label Studio's ``<Relations>`` with ``<Relation>`` labels.

Label Studio writes a relation as a result without ``from_name``, ``to_name`` or ``value``
(``RelationStore.serialize``)::

    {"from_id": "a-ubmF-dP2", "to_id": "dQ_pmsrWsm", "type": "relation",
     "direction": "right", "labels": ["org:founded_by"]}

``from_id`` / ``to_id`` are the ids of two regions of the same annotation (any region
control: boxes, polygons, spans, audio or time-series segments, ...); ``direction`` is
``right`` (from -> to, the default), ``left`` (to -> from) or ``bi``; ``labels`` (absent
when the config declares none) the relation's labels among the ``<Relation>`` values, possibly
empty. The adapter routes every ``type: "relation"`` result without ``from_name`` to the
config's ``Relations`` control, named by its ``name`` or, as Label Studio allows none,
``"relations"``.

An annotation's value is the tuple of :class:`~ls_agreement.metrics.model.Relation`, one per
(relation, label) — an unlabelled relation has label None —, ends resolved to the regions
the region controls built (:mod:`.region_links`), ``left`` stored reversed, ``bi``
undirected, in an order that does not depend on drawing order (kind ``relations``;
distances in ``metrics/distances/relations.py``). Multi-object kind: an annotation without
relations gives ``()`` ("nothing related"). A relation naming a region missing from its
annotation is skipped; the control's warnings count them.
"""
from __future__ import annotations

from typing import Any

from ls_agreement.metrics.model import Relation

from .config import ControlSpec
from .errors import BadValue, SuspectValue, show
from .fields import undeclared
from .region_links import Linked, RegionResolver, canonical_order, sort_key

__all__ = ["TYPES", "MULTI", "DIRECTIONS", "WHOLE_RESULT", "parse", "build"]

TYPES = {"relation"}
MULTI = True
# a relation has no ``value``: its parse reads the result itself
WHOLE_RESULT = True
DIRECTIONS = ("right", "left", "bi")


def _region_id(result: dict, key: str) -> Any:
    rid = result.get(key)
    if type(rid) not in (str, int) or rid == "":
        raise BadValue(key, f"missing or not a region id ({show(rid)})")
    return rid


def parse(result: dict, value: dict, spec: ControlSpec, data: Any) -> tuple:
    """One relation: ``(from id, to id, direction, labels)``.

    Raises
    ------
    BadValue
        Missing region ids, an unknown direction, labels that are not a list of strings.
    SuspectValue
        Labels the config does not declare (kept in lenient mode).
    """
    src, dst = _region_id(result, "from_id"), _region_id(result, "to_id")
    direction = result.get("direction", "right")
    if direction is None:
        direction = "right"
    if direction not in DIRECTIONS:
        raise BadValue("direction", f"expected one of {', '.join(DIRECTIONS)}, got {show(direction)}")
    labels = result.get("labels")
    if labels is None:
        labels = []
    if type(labels) is not list or any(type(x) is not str for x in labels):
        raise BadValue("labels", f"expected a list of strings, got {show(labels)}")
    part = (src, dst, direction, tuple(labels))
    unknown = undeclared(labels, spec)
    if unknown:
        raise SuspectValue("labels", f"relation label(s) {show(unknown)} not in the config", part)
    return part


def build(linked: Linked, spec: ControlSpec, resolver: RegionResolver) -> tuple:
    """The annotation's relations (see the module docstring)."""
    if not isinstance(linked, Linked):   # the empty value of an annotation without relations
        return ()
    out: set = set()
    for src, dst, direction, labels in linked.parts:
        a = resolver.region(linked, src, "relation from_id")
        b = resolver.region(linked, dst, "relation to_id")
        if a is None or b is None:
            continue
        if direction == "left":
            a, b = b, a
        for label in labels or (None,):
            out.add(Relation(a, b, label, direction != "bi"))
    return canonical_order(list(out), key=lambda r: (sort_key(r.source), sort_key(r.target), repr(r.label),
                                                     r.directed))
