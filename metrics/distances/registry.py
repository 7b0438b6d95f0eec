"""Distances by name: the names reports and settings files refer to."""
from __future__ import annotations

from typing import Any, Callable

from .base import CallableDistance, Distance

__all__ = ["register", "get_distance", "available", "candidates", "fitting", "DistanceLike"]

DistanceLike = str | Distance | Callable[[Any, Any], float]

_REGISTRY: dict[str, Distance] = {}
# value kind -> candidate names for distance="auto", in report order
_CANDIDATES: dict[str, list[str]] = {}


def register(name: str, distance: Distance | Callable[[Any, Any], float], *,
             kind: str | None = None, candidate: bool = False, replace: bool = False) -> Distance:
    """Register a distance under ``name``.

    A plain callable ``D(a, b) -> float`` is wrapped in :class:`CallableDistance`.
    ``candidate=True`` adds it to the candidates ``distance="auto"`` tries for ``kind``.
    """
    if name in _REGISTRY and not replace:
        raise ValueError(f"a distance named {name!r} is already registered (pass replace=True)")
    if not isinstance(distance, Distance):
        if not callable(distance):
            raise TypeError(f"distance {name!r} must be a Distance or a callable D(a, b)")
        distance = CallableDistance(distance, name=name, kind=kind or "any")
    distance.name = name
    if kind is not None:
        distance.kind = kind
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
            raise ValueError(
                f"unknown distance {distance!r}; registered: {', '.join(sorted(_REGISTRY))}"
            ) from None
    if callable(distance):
        return CallableDistance(distance)
    raise TypeError(f"distance must be a name, a Distance or a callable, got {type(distance).__name__}")


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def candidates(kind: str) -> list[str]:
    """Names ``distance="auto"`` tries for a value kind."""
    _load_builtin()
    return list(_CANDIDATES.get(kind, []))


def fitting(kind: str) -> list[str]:
    """Registered names that compare values of ``kind`` (and kind-agnostic callables)."""
    _load_builtin()
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
