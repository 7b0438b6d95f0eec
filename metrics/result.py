"""The one shape of a measure's result (docs/design.md, "Results").

Every public measure that returns more than one number returns a dataclass deriving from
:class:`Result`:

* the point estimate under its own name (``alpha``, ``kappa_x``, ``corrected``,
  ``coefficient``) and also as :attr:`Result.estimate`, where the measure has one headline
  number (:attr:`Result.ESTIMATE` names the attribute; None when it has none, as for the
  six ICC forms or CrowdTruth's per-unit scores);
* intervals, where the measure has them, as ``ci: dict[str, tuple[float, float]]`` —
  ``(low, high)`` keyed by the name of the attribute they bound, empty when none was
  computed; tables with one row per annotator, item or form use ``ci_low``/``ci_high``
  (or ``<name>_ci_low``/``<name>_ci_high``) columns instead;
* frozen: a result is not modified after it is returned;
* ``to_dict()``: strict JSON — plain Python values, NaN and ±inf as None, tuples as lists.

A measure of one number (:func:`~.alpha.krippendorff_alpha`, Cohen's and Fleiss' κ)
returns a :class:`~.coefficient.Coefficient`: a float with the same ``estimate`` and
``to_dict()``.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Mapping

import numpy as np

__all__ = ["Result", "finite_or_none", "strict_json"]


def finite_or_none(x: Any) -> float | None:
    """``x`` as a float when it is a finite number, else None (NaN, ±inf, None)."""
    if x is None or isinstance(x, (bool, np.bool_)):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


# public field names of each dataclass met, in declaration order: ``dataclasses.fields`` per
# object is most of the cost of serialising a crowd report (thousands of small dataclasses)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def strict_json(obj: Any) -> Any:
    """Strict-JSON form of a value: dataclasses and mappings -> dicts with str keys,
    tuples, lists, sets and arrays -> lists, numpy scalars -> Python numbers, NaN/±inf ->
    None. Other objects become their ``str``. Fields whose name starts with ``_`` and
    properties are not serialized.

    The one serializer of the package: metric results here, the report's typed parts in
    ``ls_agreement.plugin.report``.
    """
    t = type(obj)
    # the plain types results and reports are made of first, by exact type
    if t is str or t is int or t is bool or obj is None:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else None
    names = _FIELD_NAMES.get(t)
    if names is not None:
        return {k: strict_json(getattr(obj, k)) for k in names}
    if t is dict:
        return {str(k): strict_json(v) for k, v in obj.items()}
    if t is list:
        return [strict_json(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _FIELD_NAMES[t] = tuple(f.name for f in dataclasses.fields(obj) if not f.name.startswith("_"))
        return {k: strict_json(getattr(obj, k)) for k in names}
    if isinstance(obj, Mapping):
        return {str(k): strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [strict_json(v) for v in sorted(obj, key=str)]
    if isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return finite_or_none(obj)
    if isinstance(obj, np.ndarray):
        return [strict_json(v) for v in obj.tolist()]
    return str(obj)


class Result:
    """Base of the metric result dataclasses (the convention is in the module docstring).

    Attributes
    ----------
    ESTIMATE : str or None
        Class attribute: the name of the attribute holding the point estimate.
    estimate : float
        The point estimate (NaN where undefined); ``AttributeError`` for a result without
        one headline number.
    """

    ESTIMATE: ClassVar[str | None] = None

    @property
    def estimate(self) -> float:
        if self.ESTIMATE is None:
            raise AttributeError(f"{type(self).__name__} has no single point estimate")
        return float(getattr(self, self.ESTIMATE))

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict of the public fields (subclasses choose what tables become)."""
        return strict_json(self)
