"""How alike two regions are, whatever their type: the similarity behind region matching.

Controls whose answers hang on regions (``Relations``, ``perRegion`` Choices / TextArea /
Rating / Number / Taxonomy) compare two annotators only after deciding which region of
one is which region of the other. That decision needs a similarity in [0, 1] between any
two regions, label-agnostic (the region's label is the region control's business):

- ``Box``–``Box``: IoU, rotation honoured (:mod:`.boxes`);
- ``Polygon``–``Polygon`` and ``Box``–``Polygon``: IoU of the shapes (:mod:`.polygons`;
  a box becomes the polygon of its corners);
- ``Keypoint``–``Keypoint``: COCO's keypoint similarity ks (:mod:`.keypoints`);
- ``Span``–``Span``: IoU of the half-open ranges ``[start, end)``; two zero-length spans
  score 1 at the same offset, else 0;
- the region types other modules define, with those modules' own similarity, loaded on
  first use (:data:`PACKERS`): ``Interval`` (1-d IoU, instants by their gap, :mod:`.intervals`),
  ``Ellipse`` (IoU, :mod:`.ellipses`), ``Curve`` (chamfer closeness, :mod:`.curves`), ``Track``
  (mean IoU over the frames of either, :mod:`.tracks`) vectorized over all pairs, ``Mask``
  (pixel IoU) by :func:`~.masks.mask_similarity_matrix` once per value pair;
- ``Message``–``Message`` (a chat message): 1 when their keys (role, content, repetition;
  :attr:`~ls_agreement.metrics.model.Message.key`) are equal, else 0: the same message
  of the conversation or another one, never "nearly" the same (docs/formulas.md, "Chat
  messages", says why);
- regions of two different types (a span and a box): 0. A type no module compares
  falls back to equality (1 for equal regions, else 0), with a warning.

:func:`similarity_matrix` compares two lists of regions; :func:`pair_similarities`
compares many object pairs of many values at once (the distances' batch path), each
type's pairs in one vectorized call.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..model import Box, Keypoint, Message, Polygon, Span
from ._ragged import hashable_codes
from .multi_object import PackedObjects

__all__ = ["similarity_matrix", "pair_similarities", "RegionIndex", "PACKERS", "EXTERNAL", "match", "matched_pairs"]

#: Region type name -> (module of ``ls_agreement.metrics.distances``, function
#: ``f(a, b) -> ndarray (len(a), len(b))``): the types compared one value pair at a time.
#: Imported lazily: a module not there is skipped (its type then falls back to equality).
EXTERNAL: dict[str, tuple[str, str]] = {
    "Mask": ("masks", "mask_similarity_matrix"),
}

_warned: set[str] = set()
_NOISE = 1e-9


def similarity_matrix(a: Sequence[Any], b: Sequence[Any]) -> np.ndarray:
    """Label-agnostic similarity of every region of ``a`` with every region of ``b``.

    Parameters
    ----------
    a, b : sequence of regions (any mix of region types)

    Returns
    -------
    ndarray of float64, shape (len(a), len(b)), values in [0, 1]
    """
    na, nb = len(a), len(b)
    if na == 0 or nb == 0:
        return np.zeros((na, nb))
    objects = list(a) + list(b)
    value_of = np.repeat(np.array([0, 1], dtype=np.int64), [na, nb])
    ia = np.repeat(np.arange(na, dtype=np.int64), nb)
    ib = np.tile(np.arange(na, na + nb, dtype=np.int64), na)
    return pair_similarities(objects, value_of, ia, ib).reshape(na, nb)


def pair_similarities(objects: Sequence[Any], value_of: np.ndarray, a: np.ndarray,
                      b: np.ndarray) -> np.ndarray:
    """Similarity of the object pairs ``(objects[a[k]], objects[b[k]])``.

    Parameters
    ----------
    objects : sequence of regions, shape (n_objects,)
        The objects of every value, value after value (flat, as :class:`PackedObjects`).
    value_of : ndarray of int64, shape (n_objects,)
        The value each object belongs to, non-decreasing (a keypoint's scale is its
        value's extent; other types ignore it).
    a, b : ndarray of int64, shape (n_pairs,)

    Returns
    -------
    ndarray of float64, shape (n_pairs,), values in [0, 1]
    """
    return RegionIndex(objects, value_of).pairs(a, b)


class RegionIndex:
    """Regions of many values, flat, ready to be compared pair by pair.

    Built once per batch (a distance's ``prepare``); each region type is packed for its
    module on first use and reused by every later :meth:`pairs` call.

    Parameters
    ----------
    objects : sequence of regions, shape (n_objects,)
    value_of : ndarray of int64, shape (n_objects,), non-decreasing
    """

    def __init__(self, objects: Sequence[Any], value_of: np.ndarray) -> None:
        self.objects = list(objects)
        self.value_of = np.asarray(value_of, dtype=np.int64)
        names = np.array([type(o).__name__ for o in self.objects], dtype=object)
        if names.size:
            kinds, code = np.unique(names, return_inverse=True)
        else:
            kinds, code = np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
        self.kinds = [str(k) for k in kinds]
        self.code = np.asarray(code, dtype=np.int64).ravel()
        self._cache: dict[str, Any] = {}

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Similarity of the object pairs ``(objects[a[k]], objects[b[k]])``, shape (n_pairs,)."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(a.size)
        if a.size == 0:
            return out
        ca, cb = self.code[a], self.code[b]
        for k, name in enumerate(self.kinds):
            sel = np.flatnonzero((ca == k) & (cb == k))
            if sel.size:
                out[sel] = self._same_type(name, k, a[sel], b[sel])
        if "Box" in self.kinds and "Polygon" in self.kinds:
            kb, kp = self.kinds.index("Box"), self.kinds.index("Polygon")
            sel = np.flatnonzero(((ca == kb) & (cb == kp)) | ((ca == kp) & (cb == kb)))
            if sel.size:
                out[sel] = self._areal(a[sel], b[sel])
        # a shape's overlap with itself computed by GEOS can miss 1 by float noise: identical
        # annotations must give distance 0 exactly
        out[out > 1.0 - _NOISE] = 1.0
        return np.clip(out, 0.0, 1.0, out=out)

    def _same_type(self, name: str, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if name not in self._cache:
            packer = PACKERS.get(name)
            try:
                self._cache[name] = packer(self.objects, self.code == k, self.value_of) if packer else None
            except ImportError:   # the type's module is not there
                self._cache[name] = None
        sim = self._cache[name]
        if sim is not None:
            return sim(a, b)
        func = _external(name)
        if func is None:
            if name not in _warned:
                _warned.add(name)
                warnings.warn(f"no similarity for regions of type {name}: regions are matched only "
                              "when equal", RuntimeWarning, stacklevel=4)
            objs = self.objects
            return np.fromiter((objs[x] == objs[y] for x, y in zip(a.tolist(), b.tolist())),
                               dtype=np.float64, count=a.size)
        return _by_value_pair(func, self.objects, self.value_of, a, b)

    def _areal(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """IoU of boxes against polygons: every shape as a polygon."""
        if "areal" not in self._cache:
            from .polygons import PolygonDistance

            dist = PolygonDistance()
            mask = np.isin(self.code, [self.kinds.index("Box"), self.kinds.index("Polygon")])
            packed, local = _packed(self.objects, mask, self.value_of, _box_polygon)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # zero-area boxes: nothing to report
                dist.pack(packed)
            self._cache["areal"] = (dist, packed, local)
        dist, packed, local = self._cache["areal"]
        return dist.similarity(packed, local[a], local[b])


def _packed(objects: Sequence[Any], mask: np.ndarray, value_of: np.ndarray,
            convert: Callable[[Any], Any] | None = None) -> tuple[PackedObjects, np.ndarray]:
    """The objects under ``mask`` packed value by value, and each flat index's local index."""
    idx = np.flatnonzero(mask)
    objs = [objects[k] for k in idx]
    if convert is not None:
        objs = [convert(o) for o in objs]
    n_values = int(value_of.max()) + 1 if value_of.size else 0
    packed = PackedObjects(objs, np.bincount(value_of[idx], minlength=n_values).astype(np.int64))
    local = np.full(mask.size, -1, dtype=np.int64)
    local[idx] = np.arange(idx.size)
    return packed, local


def _box_polygon(o: Any) -> Polygon:
    return o if isinstance(o, Polygon) else Polygon(o.corners())


def _by_value_pair(func: Callable[[Sequence[Any], Sequence[Any]], np.ndarray], objects: Sequence[Any],
                   value_of: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A matrix function called once per value pair, its entries read back for ``(a, b)``."""
    out = np.empty(a.size)
    va, vb = value_of[a], value_of[b]
    key = va * (int(value_of.max()) + 1) + vb
    order = np.argsort(key, kind="stable")
    cut = np.flatnonzero(np.diff(key[order])) + 1
    for grp in np.split(order, cut):
        ga, gb = a[grp], b[grp]
        ua, ra = np.unique(ga, return_inverse=True)
        ub, rb = np.unique(gb, return_inverse=True)
        m = np.asarray(func([objects[k] for k in ua], [objects[k] for k in ub]), dtype=np.float64)
        out[grp] = m[ra.ravel(), rb.ravel()]
    return out


def _external(name: str) -> Callable | None:
    where = EXTERNAL.get(name)
    if where is None:
        return None
    try:
        module = importlib.import_module(f"{__package__}.{where[0]}")
    except ImportError:
        return None
    return getattr(module, where[1], None)


def _multi_object(module: str, cls: str, **kw: Any) -> Callable[..., Callable]:
    """Packs the objects of one region type for its module's set distance, labels ignored,
    and returns its object-pair similarity on global indices."""

    def pack(objects: Sequence[Any], mask: np.ndarray, value_of: np.ndarray) -> Callable:
        dist = getattr(importlib.import_module(f"{__package__}.{module}"), cls)(labels="ignore", **kw)
        packed, local = _packed(objects, mask, value_of)
        dist.pack(packed)
        return lambda a, b: dist.similarity(packed, local[a], local[b])

    return pack


def _pack_tracks(objects: Sequence[Any], mask: np.ndarray, value_of: np.ndarray) -> Callable:
    tracks = importlib.import_module(f"{__package__}.tracks")
    packed, local = _packed(objects, mask, value_of)
    values = [tuple(packed.objects[s: s + c]) for s, c in zip(packed.starts.tolist(), packed.counts.tolist())]
    p = tracks.pack_tracks(values, "region matching")
    return lambda a, b: tracks.track_pair_similarity(p, local[a], local[b])


def _pack_spans(objects: Sequence[Any], mask: np.ndarray, value_of: np.ndarray) -> Callable:
    se = np.zeros((len(objects), 2), dtype=np.float64)
    idx = np.flatnonzero(mask)
    se[idx] = [(objects[k].start, objects[k].end) for k in idx]
    return lambda a, b: _span_iou(se, a, b)


def _span_iou(se: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of half-open ranges; zero-length spans: 1 at the same offset, else 0."""
    sa, ea, sb, eb = se[a, 0], se[a, 1], se[b, 0], se[b, 1]
    inter = np.clip(np.minimum(ea, eb) - np.maximum(sa, sb), 0.0, None)
    union = (ea - sa) + (eb - sb) - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0),
                    ((sa == sb) & (ea == eb)).astype(np.float64))


def _pack_messages(objects: Sequence[Any], mask: np.ndarray, value_of: np.ndarray) -> Callable:
    """Chat messages: one int code per distinct key, the pair similarity their equality."""
    codes = np.full(len(objects), -1, dtype=np.int64)
    idx = np.flatnonzero(mask)
    codes[idx] = hashable_codes([objects[k].key for k in idx.tolist()])[0]
    return lambda a, b: (codes[a] == codes[b]).astype(np.float64)


#: Region type name -> packer ``(objects, mask, value_of) -> sim(a, b)``: the types whose
#: object pairs are compared in one vectorized call. An ``Interval``'s tolerance τ for
#: instants is its module's, derived from the regions of the whole batch (as
#: ``intervals.overlap`` derives it from the control's regions).
PACKERS: dict[str, Callable[..., Callable]] = {
    "Box": _multi_object("boxes", "BoxDistance", variant="iou"),
    "Polygon": _multi_object("polygons", "PolygonDistance"),
    "Keypoint": _multi_object("keypoints", "KeypointDistance"),
    "Span": _pack_spans,
    "Interval": _multi_object("intervals", "IntervalDistance"),
    "Ellipse": _multi_object("ellipses", "EllipseDistance"),
    "Curve": _multi_object("curves", "CurveDistance"),
    "Track": _pack_tracks,
    "Message": _pack_messages,
}
assert {t.__name__ for t in (Box, Polygon, Keypoint, Span, Message)} <= set(PACKERS)


def match(sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The one-to-one matching of rows to columns with the largest total similarity.

    Parameters
    ----------
    sim : ndarray, shape (n_a, n_b)

    Returns
    -------
    rows, cols : ndarray of int64, shape (min(n_a, n_b),)
    """
    from scipy.optimize import linear_sum_assignment

    if sim.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    r, c = linear_sum_assignment(sim, maximize=True)
    return r.astype(np.int64), c.astype(np.int64)


def matched_pairs(sim: np.ndarray, threshold: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`match`, keeping only the pairs whose similarity exceeds ``threshold`` (a pair
    of regions that do not overlap at all is no match)."""
    r, c = match(sim)
    keep = sim[r, c] > threshold
    return r[keep], c[keep]
