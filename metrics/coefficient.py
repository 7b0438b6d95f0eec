"""A coefficient that carries its interpretation band next to the value."""
from __future__ import annotations

import math

from .result import finite_or_none, strict_json

__all__ = ["Coefficient", "landis_koch"]

_BANDS = ((0.0, "poor"), (0.20, "slight"), (0.40, "fair"), (0.60, "moderate"),
          (0.80, "substantial"), (1.0, "almost perfect"))


def landis_koch(value: float) -> str:
    """Landis & Koch (1977) band of an agreement coefficient.

    Reference: J. R. Landis, G. G. Koch, "The measurement of observer agreement for
    categorical data", Biometrics 33 (1977): <0 poor, 0–.20 slight, .21–.40 fair,
    .41–.60 moderate, .61–.80 substantial, .81–1 almost perfect.
    Shown next to a coefficient, never instead of it.
    """
    if value is None or not math.isfinite(value):
        return "undefined"
    if value < 0:
        return "poor"
    for upper, name in _BANDS[1:]:
        if value <= upper:
            return name
    return "almost perfect"


class Coefficient(float):
    """A float (use it as the number) with ``band`` and details as attributes: what a
    measure of one number returns (:func:`~.alpha.krippendorff_alpha`, Cohen's and Fleiss' κ).

    Attributes
    ----------
    name : str
        The measure (``"alpha"``, ``"cohen_kappa"``, ``"fleiss_kappa"``).
    band : str
        Landis & Koch band (:func:`landis_koch`); ``"undefined"`` for NaN.
    details : dict
        The pieces behind the number (``d_o``, ``d_e``, ``p_observed``, ``n_items``, ...).
    estimate : float
        The number itself as a plain float (the result convention's point estimate).
    ci : dict[str, tuple[float, float]]
        ``{name: (low, high)}``, the item-bootstrap interval when one was asked for
        (``bootstrap=``), else empty.
    """

    band: str
    name: str

    def __new__(cls, value: float, name: str = "coefficient",
                ci: tuple[float, float] | None = None, **details: object) -> "Coefficient":
        obj = super().__new__(cls, value)
        obj.name = name
        obj.band = landis_koch(float(value))
        obj.details = dict(details)
        obj.ci = {} if ci is None else {name: (float(ci[0]), float(ci[1]))}
        return obj

    def __repr__(self) -> str:
        return f"{self.name}={float(self):.4f} ({self.band})"

    @property
    def estimate(self) -> float:
        return float(self)

    def to_dict(self) -> dict:
        """Strict-JSON dict: ``value`` (None when undefined), ``name``, ``band`` and the details."""
        return {"value": finite_or_none(float(self)), "name": self.name, "band": self.band,
                "ci": strict_json(self.ci), **strict_json(self.details)}
