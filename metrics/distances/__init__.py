"""Distance functions, one module per annotation kind, all reachable by name.

>>> from ls_agreement.metrics.distances import get_distance
>>> get_distance("nominal")("a", "b")
1.0
"""
from .base import CallableDistance, Distance
from .registry import KINDS, available, candidates, canonical_kind, get_distance, register
from . import scalars  # noqa: F401 - registers the four levels, always available

__all__ = ["Distance", "CallableDistance", "register", "get_distance", "available", "candidates",
           "KINDS", "canonical_kind"]
