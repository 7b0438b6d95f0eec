"""Per-item agreement against a fixed project baseline (docs/formulas.md §3, docs/design.md
"Live path").

An item's σ and α read two project-level quantities: σ counts its pairs closer than d*,
α is ``1 − mean(Do_item) / D̂e``. Both move with every value added anywhere in the
project. Freezing them in a :class:`Baseline` lets a service rescore only the items an
event touched, with exactly the numbers a full computation with that baseline's d* and
D̂e gives (:func:`item_scores` on the whole table equals the engine's ``per_item``).

Every distance compares two values on their own, except Krippendorff's ordinal level,
whose mid-ranks come from the project's value counts: the baseline keeps those counts, so
a value never seen at the baseline ranks as a category of count zero at its place.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .distances.base import Distance, check_distances
from .distances.registry import get_distance
from .distances.scalars import ordinal_midranks, scalar_codes
from .groups import per_item_table
from .table import code_table, observed_pairs

__all__ = ["Baseline", "baseline_of", "item_scores", "ITEM_COLUMNS"]

#: Columns of :func:`item_scores` (those of the engine's ``per_item``).
ITEM_COLUMNS = ("sigma", "alpha", "mean_distance", "n_pairs", "n_annotators", "flag")


@dataclass(frozen=True)
class Baseline:
    """The project-level quantities an item's scores depend on.

    Attributes
    ----------
    distance : str
        Resolved distance name (``auto`` already decided).
    d_e : float
        Expected distance D̂e of the chosen form.
    threshold : float
        d*, the σ cut (pairs with distance below it agree).
    flag_below : float
        An item is flagged when its σ is below this.
    ordinal_domain, ordinal_counts : ndarray or None, shape (n_categories,)
        Ordinal level only: the sorted categories and their counts at the baseline.
    """

    distance: str
    d_e: float
    threshold: float
    flag_below: float
    ordinal_domain: np.ndarray | None = None
    ordinal_counts: np.ndarray | None = None


def baseline_of(table: pd.DataFrame, distance: str, d_e: float, threshold: float,
                flag_below: float) -> Baseline:
    """The :class:`Baseline` of a long table whose D̂e and d* were computed by the engine.

    Parameters
    ----------
    table : DataFrame (item, annotator, value), shape (n_values, 3)
        The table the engine scored. Its value counts rank ordinal categories; like the
        engine, only items with two or more values count.
    distance : str
    d_e, threshold, flag_below : float
    """
    dist = get_distance(distance)
    if dist.level != "ordinal" or not len(table):
        return Baseline(distance, float(d_e), float(threshold), float(flag_below))
    pairable = table.groupby("item", sort=False)["item"].transform("size").to_numpy() >= 2
    domain, codes = scalar_codes(table["value"].to_numpy()[pairable])
    return Baseline(distance, float(d_e), float(threshold), float(flag_below),
                    domain, np.bincount(codes, minlength=domain.size))


def _prepared(dist: Distance, values: np.ndarray, base: Baseline) -> object:
    if base.ordinal_domain is None:
        return dist.prepare(values)
    arr = np.asarray(values)
    if arr.dtype == object:
        try:
            arr = arr.astype(base.ordinal_domain.dtype)
        except (TypeError, ValueError):
            arr = arr.astype(str)
    counts = base.ordinal_counts.astype(np.float64)
    pos = np.searchsorted(base.ordinal_domain, arr)
    inside = pos < base.ordinal_domain.size
    seen = np.zeros(arr.shape, dtype=bool)
    seen[inside] = base.ordinal_domain[pos[inside]] == arr[inside]
    below = np.concatenate(([0.0], np.cumsum(counts)))[pos]
    # a known category sits at its mid-rank; an unseen one has count 0 at its sorted place
    return np.where(seen, ordinal_midranks(counts)[np.minimum(pos, counts.size - 1)], below)


def item_scores(table: pd.DataFrame, baseline: Baseline) -> pd.DataFrame:
    """σ, α, mean distance, pairs and flag of every pairable item, against ``baseline``.

    Parameters
    ----------
    table : DataFrame (item, annotator, value), shape (n_values, 3)
        Any subset of a project's items (one task, or all of them).
    baseline : Baseline

    Returns
    -------
    DataFrame indexed by item, columns :data:`ITEM_COLUMNS`
        One row per item with two or more values; empty when there is none.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 1], "annotator": ["a", "b", "c"], "value": [1, 1, 2]})
    >>> item_scores(t, Baseline("nominal", d_e=0.5, threshold=0.5, flag_below=0.5))["sigma"].round(3).tolist()
    [0.333]
    """
    empty = pd.DataFrame({c: [] for c in ITEM_COLUMNS}, index=pd.Index([], name="item"))
    if len(table) < 2:
        return empty
    # pandas' factorize, not a groupby: the live path calls this for one task's few rows
    items = pd.factorize(table["item"].to_numpy())[0]
    if np.bincount(items[items >= 0]).max(initial=0) < 2 or len(pd.unique(table["annotator"].to_numpy())) < 2:
        return empty
    dist = get_distance(baseline.distance)
    ct = code_table(table)
    oi, oj = observed_pairs(ct)
    prepared = _prepared(dist, ct.values, baseline)
    d = check_distances(dist.compute(prepared, oi, oj), dist.name)
    return per_item_table(ct, ct.item[oi], d, baseline.threshold, baseline.d_e, baseline.flag_below)
