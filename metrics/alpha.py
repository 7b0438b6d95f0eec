"""Krippendorff's α on its own, with the Landis–Koch band next to it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .coefficient import Coefficient
from .distances.registry import DistanceLike, get_distance
from .core import alpha_core
from .engine import Form, agreement
from .table import Duplicates, code_table, tabular

__all__ = ["krippendorff_alpha"]


@tabular()
def krippendorff_alpha(table: pd.DataFrame, distance: DistanceLike = "nominal", *, form: Form = "canonical",
                       expected_pairs: int | str | None = None, seed: int = 0,
                       duplicates: Duplicates = "error", bootstrap: int = 0,
                       confidence: float = 0.95) -> Coefficient:
    """Krippendorff's α of a long table (item, annotator, value).

    Reference: K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011).
    Missing data are simply absent rows; items with a single value are not pairable.
    For ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"`` the expected disagreement
    comes exactly from value counts in O(values), and α equals the ``krippendorff``
    package's. Any other distance (a registered name or ``D(a, b)``) is accepted; its
    between-item mean is then estimated from a seeded sample of ``expected_pairs`` pairs
    (None: as many as observed pairs, at least 10,000; ``"all"`` enumerates them).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value; shape (n_rows, ≥3)
    distance : "nominal" | "ordinal" | "interval" | "ratio" | distance name | callable
        The metric (Krippendorff's "level of measurement" for the first four).
    bootstrap, seed, confidence
        Item-bootstrap replicates (0: no interval), the seed (also of the chance sample),
        the level: the BCa interval of :func:`~.engine.agreement`, in ``result.ci["alpha"]``.

    Returns
    -------
    Coefficient — a float with ``.band`` (Landis & Koch) and ``.details``.
    """
    dist = get_distance(distance)
    ct = code_table(table, duplicates)
    core = alpha_core(ct, dist, form, expected_pairs, np.random.default_rng(seed))
    ci = None
    if bootstrap:   # the engine's intervals, on the same table, distance, form and chance sample
        full = agreement(table, dist, form=form, expected_pairs=expected_pairs, seed=seed,
                         bootstrap=bootstrap, duplicates=duplicates, confidence=confidence)
        ci = full.ci.get("alpha", (float("nan"), float("nan")))
    return Coefficient(core.alpha, name="alpha", ci=ci, level=dist.name, form=form, n_items=ct.n_items,
                       n_values=ct.n_values, d_o=core.d_o, d_e=core.d_e)
