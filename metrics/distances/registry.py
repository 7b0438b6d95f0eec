"""Distances by name: the names reports and settings files refer to."""
from __future__ import annotations

from typing import Any, Callable

from .base import CallableDistance, Distance
from ..errors import BadInput

__all__ = ["register", "get_distance", "available", "candidates", "fitting", "DistanceLike",
           "KINDS", "SINGULAR_KINDS", "canonical_kind"]

DistanceLike = str | Distance | Callable[[Any, Any], float]

#: The value kinds of the built-in distances, each named like the registry prefix of its
#: distances (``"sets"`` -> ``sets.jaccard``). Scalars use the bare level names
#: (``nominal``, ``ordinal``, ``interval``, ``ratio``); Pairwise preferences the scalar ones.
KINDS: tuple[str, ...] = ("scalars", "sets", "rankings", "vectors", "text", "spans", "boxes", "polygons",
                          "keypoints", "pairwise", "intervals",
                          # answers that hang on regions: one kind each for relations and
                          # per-region answers; the answer's own distance is in the name
                          # (attributes.nominal, attributes.levenshtein, ...), as for scalars
                          "relations", "attributes",
                          "tracks",   # video tracks (VideoRectangle): sets of keyframed boxes
                          "masks", "ellipses", "curves")   # brush/bitmask masks, ellipses, vectors
#: The singular kind names used before they matched the registry prefixes; still accepted
#: wherever a kind is passed in, and read as the plural.
SINGULAR_KINDS: dict[str, str] = {"scalar": "scalars", "set": "sets", "ranking": "rankings",
                                  "vector": "vectors", "span": "spans", "box": "boxes",
                                  "polygon": "polygons", "keypoint": "keypoints", "track": "tracks"}


def canonical_kind(kind: str) -> str:
    """The kind name in use for ``kind``: an old singular name (``"set"``) becomes its
    plural (``"sets"``, see :data:`SINGULAR_KINDS`); any other name — a built-in kind, a
    kind of the user's own, ``"any"`` — is returned unchanged."""
    return SINGULAR_KINDS.get(kind, kind)

_REGISTRY: dict[str, Distance] = {}
# value kind -> candidate names for distance="auto", in report order
_CANDIDATES: dict[str, list[str]] = {}


def register(name: str, distance: Distance | Callable[[Any, Any], float], *,
             kind: str | None = None, candidate: bool = False, replace: bool = False) -> Distance:
    """Register a distance under ``name``.

    A plain callable ``D(a, b) -> float`` is wrapped in :class:`CallableDistance`.
    ``candidate=True`` adds it to the candidates ``distance="auto"`` tries for ``kind``.
    ``kind`` is one of :data:`KINDS` or a name of your own; an old singular name
    (``"set"``, ``"scalar"``, ...) is read as its plural (:func:`canonical_kind`), also when
    it comes from the distance's own ``kind`` attribute.
    """
    if name in _REGISTRY and not replace:
        raise BadInput(f"a distance named {name!r} is already registered (pass replace=True)")
    if not isinstance(distance, Distance):
        if not callable(distance):
            raise TypeError(f"distance {name!r} must be a Distance or a callable D(a, b)")
        distance = CallableDistance(distance, name=name, kind=kind or "any")
    distance.name = name
    if kind is not None:
        distance.kind = canonical_kind(kind)
    elif distance.kind != canonical_kind(distance.kind):
        distance.kind = canonical_kind(distance.kind)
    _REGISTRY[name] = distance
    if candidate:
        lst = _CANDIDATES.setdefault(distance.kind, [])
        if name not in lst:
            lst.append(name)
    return distance


def get_distance(distance: DistanceLike) -> Distance:
    """Resolve a registered name, a Distance, or a plain callable."""
    if isinstance(distance, Distance):
        return distance
    if isinstance(distance, str):
        if distance not in _REGISTRY:
            _load_builtin()
        try:
            return _REGISTRY[distance]
        except KeyError:
            raise BadInput(
                f"unknown distance {distance!r}; registered: {', '.join(sorted(_REGISTRY))}"
            ) from None
    if callable(distance):
        return CallableDistance(distance)
    raise TypeError(f"distance must be a name, a Distance or a callable, got {type(distance).__name__}")


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def candidates(kind: str) -> list[str]:
    """Names ``distance="auto"`` tries for a value kind (an old singular name is read as
    its plural, :func:`canonical_kind`)."""
    _load_builtin()
    return list(_CANDIDATES.get(canonical_kind(kind), []))


def fitting(kind: str) -> list[str]:
    """Registered names that compare values of ``kind`` (and kind-agnostic callables)."""
    _load_builtin()
    kind = canonical_kind(kind)
    return sorted(n for n, d in _REGISTRY.items() if d.kind in (kind, "any"))


_loaded = False


def _load_builtin() -> None:
    # Kind modules register themselves on import; importing lazily keeps
    # `import ls_agreement.metrics` cheap and free of import cycles.
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    from . import __path__ as pkg_path

    for mod in pkgutil.iter_modules(pkg_path):
        if mod.name not in {"base", "registry"}:
            importlib.import_module(f"{__package__}.{mod.name}")
