"""Agreement of each annotator with a reference: ground truth, or the humans for a model.

Reference: docs/formulas.md §10. For an annotator ``a`` and the items ``U_a`` where both
``a`` and the reference have a value (the reference's own author excluded: a ground-truth
annotation is not compared with itself):

* ``d̄_au`` = mean distance of ``a``'s value on item ``u`` to the reference value(s) on ``u``
  (one value for ground truth; every human's value when the reference is the humans);
* ``D_o(a)`` = mean of ``d̄_au`` over ``U_a`` (each item counts once);
* ``similarity(a) = 1 − D_o(a)`` for distances bounded by 1 (IoU, F1, MASI, nominal, ...;
  NaN for the unbounded ones: ordinal, interval, ratio, counts, RMSE);
* ``alpha(a) = 1 − D_o(a) / D_e``, with ``chance``:

  - ``"table"`` (default): ``D_e`` is the expected distance of the whole table (the
    control's D̂e, Krippendorff's canonical form; pass ``d_e`` to reuse it). Every
    annotator is read against the same chance level, the one their inter-annotator α uses.
  - ``"pair"``: ``D_e`` of the annotator's own two-rater table (their values and the
    reference values on ``U_a``, pooled): with one reference value per item this is
    Krippendorff's α of that table, what the ``krippendorff`` package gives.

Intervals: item bootstrap (items with a reference resampled, each annotator's numbers
recomputed on the replicate's items), BCa with the expanded level of §9, replicates as
matrix products of (replicates × items) weights with per-item sums — no loop over
annotators for ``chance="table"``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .bootstrap import bca_intervals, iter_multiplicities, jackknife_weights
from .distances.base import Distance
from .distances.registry import get_distance
from .result import Result, finite_or_none
from .table import Duplicates, factorize, long_table, tabular
from .errors import BadInput

__all__ = ["ReferenceResult", "agreement_with_reference", "is_bounded", "Chance"]

Chance = Literal["table", "pair"]

# Distances not bounded by 1: 1 − mean distance is no similarity there.
_UNBOUNDED_LEVELS = {"ordinal", "interval", "ratio"}
_UNBOUNDED_NAMES = {"vectors.rmse"}
# Replicates evaluated per block: bounds the (replicates × pairs) products of chance="pair".
_BLOCK_CELLS = 2_000_000


def is_bounded(distance: Distance) -> bool:
    """Whether ``distance`` lies in [0, 1], so that ``1 − distance`` is a similarity."""
    name = str(getattr(distance, "name", ""))
    return not (getattr(distance, "level", None) in _UNBOUNDED_LEVELS or name in _UNBOUNDED_NAMES
                or name.endswith(".count"))


@dataclass(frozen=True)
class ReferenceResult(Result):
    """Agreement of every annotator with a reference (:func:`agreement_with_reference`).

    Attributes
    ----------
    annotators : DataFrame, one row per annotator with a reference item (index: annotator)
        ``similarity``, ``similarity_ci_low``, ``similarity_ci_high``, ``alpha``,
        ``alpha_ci_low``, ``alpha_ci_high``, ``mean_distance``, ``d_e`` (the chance level
        this annotator's α is read against) and ``n_items``.
    distance : str
    chance : {"table", "pair"}
    d_e : float
        The table's expected distance (``chance="table"``; NaN under ``"pair"``).
    n_items : int
        Items with a reference and at least one compared annotator.
    bounded : bool
        Whether the distance is bounded by 1 (else ``similarity`` is NaN).
    bootstrap, seed : int
    confidence : float
    """

    ESTIMATE: ClassVar[str | None] = None

    annotators: pd.DataFrame
    distance: str
    chance: str
    d_e: float
    n_items: int
    bounded: bool
    bootstrap: int
    seed: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict: ``{"annotators": {id: {column: value}}, ...}``."""
        rows = {str(a): {c: (int(v) if c == "n_items" else finite_or_none(v)) for c, v in rec.items()}
                for a, rec in self.annotators.to_dict("index").items()}
        return {"annotators": rows, "distance": self.distance, "chance": self.chance,
                "d_e": finite_or_none(self.d_e), "n_items": int(self.n_items), "bounded": bool(self.bounded),
                "bootstrap": int(self.bootstrap), "seed": int(self.seed), "confidence": float(self.confidence)}


COLUMNS = ["similarity", "similarity_ci_low", "similarity_ci_high", "alpha", "alpha_ci_low", "alpha_ci_high",
           "mean_distance", "d_e", "n_items"]


@tabular("table", "reference", optional={"reference": ("annotator",)})
def agreement_with_reference(table: pd.DataFrame, reference: pd.DataFrame, *,
                             distance: str | Distance = "nominal", chance: Chance = "table",
                             d_e: float | None = None, bootstrap: int = 0, seed: int = 0,
                             confidence: float = 0.95, duplicates: Duplicates = "error") -> ReferenceResult:
    """Each annotator's agreement with a reference, mean similarity and chance-corrected.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value, shape (n_rows, 3)
        One row per annotator per item (the annotators to score).
    reference : DataFrame with columns item, value and optionally annotator, shape (n_ref, 2 or 3)
        Reference values; several on one item are averaged over. ``annotator`` names the
        author of each reference value: that annotator's own row on that item is not
        compared with it (a ground-truth annotation is also its author's annotation).
    distance : str or Distance
        A registered distance name or object.
    chance : {"table", "pair"}
        Chance level of α (module docstring): the whole table's expected distance, or each
        annotator's two-rater table's.
    d_e : float, optional
        The table's expected distance, when already known (``chance="table"``); else
        computed (Krippendorff's canonical D̂e of ``table``, the engine's).
    bootstrap : int
        Item-bootstrap replicates (0 = no intervals).
    seed : int
    confidence : float
        Level of the intervals, in (0, 1).
    duplicates : {"error", "keep", "first", "last"}
        Several values of one annotator on one item in ``table`` (:func:`.table.long_table`).

    Returns
    -------
    ReferenceResult

    Raises
    ------
    ValueError
        A malformed table or reference, an unknown ``chance``, a negative ``bootstrap``.
    """
    if chance not in ("table", "pair"):
        raise BadInput(f"chance must be 'table' or 'pair', got {chance!r}")
    if bootstrap < 0:
        raise BadInput(f"bootstrap must be >= 0, got {bootstrap}")
    if not 0.0 < confidence < 1.0:
        raise BadInput(f"confidence must be in (0, 1), got {confidence!r}")
    dist = get_distance(distance) if isinstance(distance, str) else distance
    df = long_table(table, duplicates=duplicates)
    ref = _reference_table(reference)
    bounded = is_bounded(dist)
    if chance == "table" and d_e is None:
        from .engine import agreement
        d_e = float(agreement(df, dist, bootstrap=0, seed=seed).d_e)

    # ---- every (annotator row, reference row) pair on a shared item, self excluded ------
    item_codes, item_labels = factorize(pd.concat([df["item"], ref["item"]], ignore_index=True).to_numpy())
    t_item, r_item = item_codes[:len(df)], item_codes[len(df):]
    t_ann = df["annotator"].to_numpy()
    r_ann = ref["annotator"].to_numpy()
    order = np.argsort(r_item, kind="stable")
    r_count = np.bincount(r_item, minlength=len(item_labels))
    r_start = np.cumsum(r_count) - r_count
    n_per_row = r_count[t_item]
    ti = np.repeat(np.arange(len(df)), n_per_row)
    local = np.arange(ti.size) - np.repeat(np.cumsum(n_per_row) - n_per_row, n_per_row)
    rj = order[r_start[t_item][ti] + local]
    keep = pd.isna(r_ann[rj]) | (r_ann[rj] != t_ann[ti])
    ti, rj = ti[keep], rj[keep]
    # one value array (numeric when both are), so the distance prepares every value once
    values = pd.concat([df["value"], ref["value"]], ignore_index=True).to_numpy()
    d = dist.pairs(values, ti, len(df) + rj) if ti.size else np.zeros(0)

    # ---- cells (annotator, item): the mean distance to the item's reference values -------
    ann_codes, ann_labels = factorize(t_ann)
    cell_key, cell_inv = np.unique(ann_codes[ti] * len(item_labels) + t_item[ti], return_inverse=True)
    cell_n = np.bincount(cell_inv)
    cell_d = np.bincount(cell_inv, weights=d) / np.maximum(cell_n, 1)
    cell_ann, cell_item = np.divmod(cell_key, len(item_labels))
    used_items, cell_item = np.unique(cell_item, return_inverse=True)
    used_ann, cell_ann = np.unique(cell_ann, return_inverse=True)
    n_items, n_ann = used_items.size, used_ann.size
    # per-item sums by annotator: S[u, a] = d̄_au, C[u, a] = 1 where a has a cell on u
    s_mat = sp.csc_matrix((cell_d, (cell_item, cell_ann)), shape=(n_items, n_ann))
    c_mat = sp.csc_matrix((np.ones(cell_d.size), (cell_item, cell_ann)), shape=(n_items, n_ann))

    pair_part = None
    if chance == "pair" and n_ann:
        pair_part = _pooled_pairs(dist, values, ti, len(df) + rj, cell_inv, cell_ann, cell_item, t_item,
                                  r_item, n_items, n_ann, used_items)

    def stats(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean distance, similarity and D_e per annotator, each shape (r, n_ann), under item
        weights ``w`` of shape (r, n_items)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            # (items × annotators) sums against (replicates × items) weights: one product each
            mean = np.asarray((s_mat.T @ w.T).T) / np.asarray((c_mat.T @ w.T).T)
        de = _pooled_de(pair_part, w) if pair_part is not None else np.full_like(mean, np.nan if d_e is None else d_e)
        return mean, (1.0 - mean) if bounded else np.full_like(mean, np.nan), de

    mean, sim, de = stats(np.ones((1, n_items)))
    alpha = _alpha((mean, sim, de))
    out = pd.DataFrame(index=pd.Index(np.asarray(ann_labels)[used_ann], name="annotator"), columns=COLUMNS,
                       dtype=float)
    out["similarity"], out["alpha"], out["mean_distance"], out["d_e"] = sim[0], alpha[0], mean[0], de[0]
    out["n_items"] = np.asarray(c_mat.sum(axis=0)).ravel().astype(np.int64)
    if bootstrap and n_items >= 2 and n_ann:
        _intervals(out, stats, n_items, bootstrap, seed, confidence)
    return ReferenceResult(annotators=out, distance=str(getattr(dist, "name", dist)), chance=chance,
                           d_e=float(d_e) if chance == "table" else float("nan"), n_items=int(n_items),
                           bounded=bounded, bootstrap=int(bootstrap), seed=int(seed), confidence=float(confidence))


def _reference_table(reference: pd.DataFrame) -> pd.DataFrame:
    """The reference as columns item, annotator (author, None when unknown), value."""
    if not isinstance(reference, pd.DataFrame):
        raise BadInput(f"reference: expected a pandas DataFrame, got {type(reference).__name__}")
    if "annotator" not in reference.columns:
        reference = reference.assign(annotator=None)
    # several reference values per item are allowed (the humans, as a model's reference)
    return long_table(reference, duplicates="keep", name="reference").reset_index(drop=True)


@dataclass
class _PooledPairs:
    """Every unordered pair of pooled values (annotator's and reference's) per annotator."""

    item_u: np.ndarray      # item (column of the weights) of each pair's two values, shape (n_pairs,)
    item_v: np.ndarray
    d: np.ndarray           # their distance, shape (n_pairs,)
    group: sp.csc_matrix    # (n_pairs, n_ann): which annotator's pool a pair belongs to
    counts: sp.csc_matrix   # (n_items, n_ann): pooled values per item and annotator


def _pooled_pairs(dist: Distance, values: np.ndarray, ti: np.ndarray, rj: np.ndarray, cell_inv: np.ndarray,
                  cell_ann: np.ndarray, cell_item: np.ndarray, t_item: np.ndarray, r_item: np.ndarray,
                  n_items: int, n_ann: int, used_items: np.ndarray) -> _PooledPairs:
    """The pairs behind each annotator's two-rater D_e: their value on each shared item and
    the reference values compared with it, pooled; all pairs in one distance call."""
    # pooled instances per annotator: their own value once per cell, each compared reference value
    pair_ann = cell_ann[cell_inv]
    own_first = np.unique(cell_inv, return_index=True)[1]
    inst_ann = np.concatenate([pair_ann[own_first], pair_ann])
    inst_val = np.concatenate([ti[own_first], rj])
    item_col = np.searchsorted(used_items, np.concatenate([t_item[ti[own_first]], r_item[rj - t_item.size]]))
    order = np.argsort(inst_ann, kind="stable")
    inst_ann, inst_val, item_col = inst_ann[order], inst_val[order], item_col[order]
    size = np.bincount(inst_ann, minlength=n_ann)
    start = np.cumsum(size) - size
    iu, iv = [], []
    for m in np.unique(size[size >= 2]):  # one triangle per pool size, not per annotator
        a, b = np.triu_indices(int(m), k=1)
        st = start[size == m]
        iu.append((st[:, None] + a).ravel())
        iv.append((st[:, None] + b).ravel())
    iu = np.concatenate(iu) if iu else np.zeros(0, np.int64)
    iv = np.concatenate(iv) if iv else np.zeros(0, np.int64)
    d = dist.pairs(values, inst_val[iu], inst_val[iv]) if iu.size else np.zeros(0)
    group = sp.csc_matrix((np.ones(iu.size), (np.arange(iu.size), inst_ann[iu])), shape=(iu.size, n_ann))
    counts = sp.csc_matrix((np.ones(inst_ann.size), (item_col, inst_ann)), shape=(n_items, n_ann))
    return _PooledPairs(item_col[iu], item_col[iv], d, group, counts)


def _pooled_de(pp: _PooledPairs, w: np.ndarray) -> np.ndarray:
    """Two-rater D_e per annotator under item weights ``w`` (r, n_items): Σ_{u≠v} w_u w_v d /
    (n_w (n_w − 1)) — copies of one value drawn twice are pairs at distance 0."""
    n_w = np.asarray((pp.counts.T @ w.T).T)
    num = np.empty_like(n_w)
    step = max(1, _BLOCK_CELLS // max(pp.d.size, 1))
    for k in range(0, w.shape[0], step):
        blk = w[k:k + step]
        num[k:k + step] = np.asarray(pp.group.T @ (blk[:, pp.item_u] * blk[:, pp.item_v] * pp.d).T).T
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_w >= 2, 2.0 * num / (n_w * (n_w - 1.0)), np.nan)


def _intervals(out: pd.DataFrame, stats: Any, n_items: int, bootstrap: int, seed: int, confidence: float) -> None:
    """BCa intervals (docs/formulas.md §9) of similarity and α, nulled when flat or not
    containing their estimate."""
    reps = [stats(w.astype(np.float64)) for w in iter_multiplicities(n_items, bootstrap, seed)]
    jack = [stats(w) for w in jackknife_weights(n_items)]
    units = out["n_items"].to_numpy()
    for k, col in ((1, "similarity"), (2, "alpha")):
        if k == 2:
            samples = np.concatenate([_alpha(r) for r in reps])
            jk = np.concatenate([_alpha(r) for r in jack])
        else:
            samples = np.concatenate([r[1] for r in reps])
            jk = np.concatenate([r[1] for r in jack])
        est = out[col].to_numpy(dtype=float)
        ci = bca_intervals(samples, jk, est, confidence, n_units=units)
        lo, hi = ci[:, 0], ci[:, 1]
        # a flat interval or one missing its estimate would mislead (§9): not shown
        bad = ~np.isfinite(est) | ~(hi > lo) | (lo > est + 1e-9) | (hi < est - 1e-9)
        out[f"{col}_ci_low"] = np.where(bad, np.nan, np.fmin(lo, est))
        out[f"{col}_ci_high"] = np.where(bad, np.nan, np.fmax(hi, est))


def _alpha(r: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    mean, _, de = r
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(de > 0, 1.0 - mean / de, np.nan)
