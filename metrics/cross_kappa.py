"""Cross-replication reliability κx (paper 001: Wong, Paritosh & Aroyo 2021; docs/formulas.md §6).

Two replications X and Y — two annotator pools, crowd vs experts, humans vs a model —
rate the same items. With ``R(i)``, ``S(i)`` values on item ``i`` (paper 001, eqs. 9-11):

* ``d_o = sum_i (R(i)+S(i))/(R+S) * mean_{r,s} D(x_ri, y_si)`` — cross pairs on one item;
* ``d_e = 1/(R S) * sum_{i,j} sum_{r,s} D(x_ri, y_sj)`` — every cross pair;
* ``κx = 1 - d_o / d_e``; ``normalized κx = κx / sqrt(IRR_X IRR_Y)`` (eq. 13), IRR being
  Krippendorff's α of each replication alone.

Only items rated in both replications count (the others have no cross pair). For the
nominal, ordinal and interval distances everything follows from per-item sums and value
counts in linear time — the paper's ``n^2 R S`` loop is never run — and the item
bootstrap (paper 001 §5) is a matrix product of item multiplicities with those sums.
Any other distance uses the observed cross pairs plus a seeded sample of cross pairs
for ``d_e`` (every pair when there are few).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .bootstrap import iter_multiplicities, percentile_interval
from .distances.base import Distance, check_distances
from .distances.registry import DistanceLike, get_distance
from .result import Result, strict_json
from .table import Duplicates, long_table, tabular
from .errors import BadInput

__all__ = ["CrossKappaResult", "cross_kappa", "alpha_from_counts"]

_LINEAR = ("nominal", "ordinal", "interval")
_EXACT_EXPECTED_LIMIT = 250_000  # cross pairs enumerated exactly up to this many


@dataclass(frozen=True)
class CrossKappaResult(Result):
    """κx with its pieces; NaN where undefined (e.g. IRR of a one-rater replication).

    Attributes
    ----------
    kappa_x : float
        κx, the point estimate (also ``estimate``).
    normalized : float
        κx / sqrt(irr_x · irr_y); NaN when an IRR is undefined or <= 0.
    irr_x, irr_y : float
        Krippendorff's α of each replication alone, on the common items.
    d_o, d_e : float
        Observed (cross pairs on one item) and expected (every cross pair) mean distances.
    n_items : int
        Items rated in both replications.
    n_x, n_y : int
        Values of X and of Y on those items (R and S).
    distance : str
        Registry name of the distance.
    ci : dict[str, tuple[float, float]]
        Item-bootstrap ``(low, high)`` of ``kappa_x`` and ``normalized``; empty without bootstrap.
    bootstrap, seed : int
        Replicates drawn (0 = none) and the seed.
    n_expected_pairs : int or None
        Sampled cross pairs behind ``d_e``; None when exact from marginals.
    expected_exact : bool
        Whether ``d_e`` is exact.
    """

    ESTIMATE = "kappa_x"

    kappa_x: float
    normalized: float
    irr_x: float
    irr_y: float
    d_o: float
    d_e: float
    n_items: int
    n_x: int                       # R: values of X on the common items
    n_y: int                       # S
    distance: str
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    bootstrap: int = 0
    seed: int = 0
    n_expected_pairs: int | None = None   # None = exact from marginals
    expected_exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON dict (NaN/inf -> None; intervals as ``[low, high]`` lists)."""
        return strict_json(self)


def _py(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _concat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        return np.concatenate([a, b])
    out = np.empty(a.size + b.size, dtype=object)
    out[:a.size], out[a.size:] = a, b
    return out


def _counts(item: np.ndarray, codes: np.ndarray, n: int, n_codes: int) -> np.ndarray | sp.csr_matrix:
    """Item x code counts: dense when small (fast), sparse otherwise. Shape (n, n_codes)."""
    if n * n_codes <= 4_000_000:
        return np.bincount(item * n_codes + codes, minlength=n * n_codes).reshape(n, n_codes).astype(np.float64)
    return sp.csr_matrix((np.ones(item.size), (item, codes)), shape=(n, n_codes))


def _rowdot(a: np.ndarray | sp.csr_matrix, b: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """Row sums of the elementwise product, shape (n,)."""
    if sp.issparse(a):
        return np.asarray(a.multiply(b).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", a, b)


def _wsum(w: np.ndarray | None, col: np.ndarray | sp.spmatrix) -> np.ndarray:
    """Per-replicate weighted column sums: ``w @ col``; ``w is None`` = the data itself."""
    if w is None:
        return np.asarray(col.sum(axis=0), dtype=np.float64).reshape(1, -1)
    if sp.issparse(col):
        return np.asarray((col.T @ w.T).T, dtype=np.float64)
    return w @ col


def alpha_from_counts(item: np.ndarray, x: np.ndarray, level: str, n_items: int,
                      w: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's canonical α of one replication, from per-item sums (O(values)).

    Parameters
    ----------
    item : ndarray of int, shape (n_values,) — item code 0..n_items-1
    x : ndarray, shape (n_values,) — nominal codes (int) or numbers (interval; ordinal
        mid-ranks)
    level : "nominal" | "interval" | "ordinal"
    w : ndarray, shape (n_boot, n_items), optional — item multiplicities (bootstrap)

    Returns
    -------
    ndarray, shape (n_boot,) or (1,) — α per replicate (NaN when undefined).
    Reference: Krippendorff (2011) §C; canonical weighting 1/(m_u - 1).
    """
    m = np.bincount(item, minlength=n_items).astype(np.float64)
    pairable = m >= 2
    keep = pairable[item]
    it, xv = item[keep], x[keep]
    mp = np.where(pairable, m, 0.0)
    denom_m = np.where(pairable, m - 1.0, 1.0)
    if level == "nominal":
        codes = xv.astype(np.int64)
        n_codes = int(codes.max()) + 1 if codes.size else 1
        cnt = _counts(it, codes, n_items, n_codes)
        sq = _rowdot(cnt, cnt)
        within = np.where(pairable, (mp * mp - sq) / denom_m, 0.0)
        cols = np.column_stack([within, mp])
        tot = _wsum(w, cols)
        nc = _wsum(w, cnt)
        n = tot[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            d_e = (n * n - (nc * nc).sum(axis=1)) / (n * (n - 1.0))
    else:
        xc = xv - (xv.mean() if xv.size else 0.0)
        s1 = np.bincount(it, xc, minlength=n_items)
        s2 = np.bincount(it, xc * xc, minlength=n_items)
        ss = s2 - np.divide(s1 * s1, mp, out=np.zeros_like(s1), where=pairable)
        within = np.where(pairable, 2.0 * mp * ss / denom_m, 0.0)
        tot = _wsum(w, np.column_stack([within, mp, s1, s2]))
        n = tot[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            ss_tot = tot[:, 3] - tot[:, 2] ** 2 / n
            d_e = 2.0 * ss_tot / (n - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = tot[:, 0] / n
        return np.where(d_e > 0, 1.0 - d_o / d_e, np.nan)


def _prepared_numbers(dist: Distance, values: np.ndarray) -> np.ndarray:
    """Nominal codes, interval values or ordinal mid-ranks, as the scalar distance prepares them."""
    return np.asarray(dist.prepare(values), dtype=np.float64)


def _irr_numbers(dist: Distance, values: np.ndarray, item: np.ndarray, n: int) -> np.ndarray:
    """Prepared numbers of one replication; ordinal mid-ranks from its pairable values only
    (Krippendorff's coincidence-matrix marginals), unpairable values left at 0 (unused)."""
    pairable = np.bincount(item, minlength=n)[item] >= 2
    out = np.zeros(values.size)
    if pairable.any():
        out[pairable] = _prepared_numbers(dist, values[pairable])
    return out


def _cross_linear(level: str, item_x: np.ndarray, item_y: np.ndarray, xv: np.ndarray,
                  yv: np.ndarray, n: int, w: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(d_o, d_e)`` per replicate for nominal codes or squared differences."""
    r_i = np.bincount(item_x, minlength=n).astype(np.float64)
    s_i = np.bincount(item_y, minlength=n).astype(np.float64)
    if level == "nominal":
        cx, cy = xv.astype(np.int64), yv.astype(np.int64)
        n_codes = int(max(cx.max(), cy.max())) + 1
        nx, ny = _counts(item_x, cx, n, n_codes), _counts(item_y, cy, n, n_codes)
        agree = _rowdot(nx, ny)
        dis = r_i * s_i - agree
        tot = _wsum(w, np.column_stack([(r_i + s_i) * dis / (r_i * s_i), r_i + s_i, r_i, s_i]))
        px, py = _wsum(w, nx), _wsum(w, ny)
        d_e = 1.0 - (px * py).sum(axis=1) / (tot[:, 2] * tot[:, 3])
    else:
        c = np.concatenate([xv, yv]).mean()
        xc, yc = xv - c, yv - c   # centring keeps the sums-of-squares identity accurate
        sx, sxx = np.bincount(item_x, xc, minlength=n), np.bincount(item_x, xc * xc, minlength=n)
        sy, syy = np.bincount(item_y, yc, minlength=n), np.bincount(item_y, yc * yc, minlength=n)
        dis = s_i * sxx + r_i * syy - 2.0 * sx * sy
        tot = _wsum(w, np.column_stack([(r_i + s_i) * dis / (r_i * s_i), r_i + s_i, r_i, s_i,
                                        sx, sxx, sy, syy]))
        rr, ss_ = tot[:, 2], tot[:, 3]
        d_e = (ss_ * tot[:, 5] + rr * tot[:, 7] - 2.0 * tot[:, 4] * tot[:, 6]) / (rr * ss_)
    d_o = tot[:, 0] / tot[:, 1]
    return d_o, d_e


def _cross_pairs(item_x: np.ndarray, item_y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (x row, y row) pair on the same item, without a loop per item."""
    ox, oy = np.argsort(item_x, kind="stable"), np.argsort(item_y, kind="stable")
    r_i, s_i = np.bincount(item_x, minlength=n), np.bincount(item_y, minlength=n)
    start_x = np.concatenate(([0], np.cumsum(r_i)[:-1]))
    start_y = np.concatenate(([0], np.cumsum(s_i)[:-1]))
    per = r_i * s_i
    it = np.repeat(np.arange(n), per)
    k = np.arange(per.sum()) - np.repeat(np.cumsum(per) - per, per)
    sy = s_i[it]
    return ox[start_x[it] + k // sy], oy[start_y[it] + k % sy]


def _cross_generic(dist: Distance, values: np.ndarray, item_x: np.ndarray, item_y: np.ndarray,
                   n: int, n_expected: int | None, rng: np.random.Generator
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Observed per-item mean cross distance and (sampled) expected cross pairs."""
    n_x = item_x.size
    prepared = dist.prepare(values)
    pi, pj = _cross_pairs(item_x, item_y, n)
    d_obs = check_distances(dist.compute(prepared, pi, pj + n_x), dist.name)
    sums = np.bincount(item_x[pi], d_obs, minlength=n)
    n_all = n_x * item_y.size
    target = max(pi.size, 10_000) if n_expected is None else int(n_expected)
    if n_all <= max(target, _EXACT_EXPECTED_LIMIT if n_expected is None else 0):
        ei = np.repeat(np.arange(n_x), item_y.size)
        ej = np.tile(np.arange(item_y.size), n_x)
        exact = True
    else:
        ei = rng.integers(0, n_x, size=target)
        ej = rng.integers(0, item_y.size, size=target)
        exact = False
    d_exp = check_distances(dist.compute(prepared, ei, ej + n_x), dist.name)
    return sums, d_exp, item_x[ei], item_y[ej], d_obs, exact


def _generic_estimates(sums: np.ndarray, r_i: np.ndarray, s_i: np.ndarray, d_exp: np.ndarray,
                       ei: np.ndarray, ej: np.ndarray, w: np.ndarray | None
                       ) -> tuple[np.ndarray, np.ndarray]:
    obs = np.column_stack([(r_i + s_i) * sums / (r_i * s_i), r_i + s_i])
    tot = _wsum(w, obs)
    d_o = tot[:, 0] / tot[:, 1]
    if w is None:
        return d_o, np.array([d_exp.mean()])
    pw = w[:, ei].astype(np.float64) * w[:, ej]   # pair weight under item resampling
    return d_o, (pw @ d_exp) / pw.sum(axis=1)


@tabular("table_x", "table_y")
def cross_kappa(table_x: pd.DataFrame, table_y: pd.DataFrame, distance: DistanceLike = "nominal", *,
                bootstrap: int = 1000, seed: int = 0, expected_pairs: int | None = None,
                confidence: float = 0.95, duplicates: Duplicates = "error") -> CrossKappaResult:
    """Cross-replication reliability κx of two replications (paper 001, eqs. 6-13).

    Parameters
    ----------
    table_x, table_y : DataFrame with columns item, annotator, value
        One row per annotator per item (long format), shapes (R_rows, 3), (S_rows, 3).
        Only items present in both tables are used.
    distance : registered name, Distance or callable ``D(a, b)``
        ``nominal``/``ordinal``/``interval`` (squared difference, as in the paper) are
        computed exactly in linear time; others with sampled ``d_e``.
    bootstrap : int
        Item-bootstrap replicates for the intervals (0 = none).
    seed : int
    expected_pairs : int, optional
        Sample size of cross pairs for ``d_e`` (non-linear distances); default every
        pair up to 250,000, else ``max(#observed pairs, 10,000)``.
    confidence : float
        Confidence level of the intervals.
    duplicates : {"error", "keep", "first", "last"}
        Several rows for one (item, annotator) in a replication; see :func:`~.table.long_table`.

    Returns
    -------
    CrossKappaResult
        ``kappa_x``, ``normalized`` (NaN if an IRR is undefined or <= 0), ``irr_x``,
        ``irr_y`` (canonical Krippendorff α of each replication on the common items),
        ``d_o``, ``d_e``, ``ci`` = {"kappa_x": (lo, hi), "normalized": (lo, hi)} from the
        item bootstrap (normalized only for the linear-time distances).
    """
    table_x = long_table(table_x, duplicates=duplicates, name="table_x")
    table_y = long_table(table_y, duplicates=duplicates, name="table_y")
    dist = get_distance(distance)
    ix_raw, iy_raw = table_x["item"].to_numpy(), table_y["item"].to_numpy()
    codes, labels = pd.factorize(_concat(ix_raw, iy_raw), sort=False)
    cx_all, cy_all = codes[:ix_raw.size], codes[ix_raw.size:]
    n_lab = len(labels)
    common = (np.bincount(cx_all, minlength=n_lab) > 0) & (np.bincount(cy_all, minlength=n_lab) > 0)
    if not common.any():
        raise BadInput("the two replications share no item: κx needs items rated in both")
    recode = np.cumsum(common) - 1
    keep_x, keep_y = common[cx_all], common[cy_all]
    item_x, item_y = recode[cx_all[keep_x]], recode[cy_all[keep_y]]
    n = int(common.sum())
    vx = table_x["value"].to_numpy()[keep_x]
    vy = table_y["value"].to_numpy()[keep_y]
    values = _concat(vx, vy)
    rng = np.random.default_rng(seed)
    r_i = np.bincount(item_x, minlength=n).astype(np.float64)
    s_i = np.bincount(item_y, minlength=n).astype(np.float64)

    linear = getattr(dist, "level", None) in _LINEAR
    if linear:
        lvl = "nominal" if dist.level == "nominal" else "interval"
        num = _prepared_numbers(dist, values)
        xv, yv = num[:vx.size], num[vx.size:]
        d_o, d_e = _cross_linear(lvl, item_x, item_y, xv, yv, n, None)
        if dist.level == "ordinal":  # mid-ranks depend on each replication's own marginals
            irr_in = [(it, _irr_numbers(dist, v, it, n)) for it, v in ((item_x, vx), (item_y, vy))]
        else:  # nominal codes / interval values of the joint coding serve each replication
            irr_in = [(item_x, xv), (item_y, yv)]
        irr = [float(alpha_from_counts(it, x, lvl, n)[0]) for it, x in irr_in]
        n_exp, exact = None, True
    else:
        sums, d_exp, ei, ej, _, exact = _cross_generic(dist, values, item_x, item_y, n,
                                                       expected_pairs, rng)
        d_o, d_e = _generic_estimates(sums, r_i, s_i, d_exp, ei, ej, None)
        irr = [_irr_engine(tab, keep, dist, seed) for tab, keep in ((table_x, keep_x), (table_y, keep_y))]
        n_exp = int(d_exp.size)
    kx = float(1.0 - d_o[0] / d_e[0]) if d_e[0] > 0 else math.nan
    norm = _normalize(kx, irr[0], irr[1])

    ci: dict[str, tuple[float, float]] = {}
    if bootstrap and bootstrap > 0:
        kb, nb = [], []
        width = max(n, 1 if linear else int(d_exp.size))  # bound each chunk's (replicates x width) arrays
        for w in iter_multiplicities(n, bootstrap, rng, chunk=max(1, min(bootstrap, 4_000_000 // width))):
            wf = w.astype(np.float64)
            if linear:
                bo, be = _cross_linear(lvl, item_x, item_y, xv, yv, n, wf)
                ax, ay = (alpha_from_counts(it, x, lvl, n, wf) for it, x in irr_in)
            else:
                bo, be = _generic_estimates(sums, r_i, s_i, d_exp, ei, ej, wf)
                ax = ay = np.full(wf.shape[0], np.nan)
            with np.errstate(divide="ignore", invalid="ignore"):
                k = np.where(be > 0, 1.0 - bo / be, np.nan)
                kb.append(k)
                nb.append(np.where((ax > 0) & (ay > 0), k / np.sqrt(ax * ay), np.nan))
        ci["kappa_x"] = percentile_interval(np.concatenate(kb), confidence)
        ci["normalized"] = percentile_interval(np.concatenate(nb), confidence)
    return CrossKappaResult(kx, norm, irr[0], irr[1], float(d_o[0]), float(d_e[0]), n,
                            int(item_x.size), int(item_y.size), dist.name, ci, int(bootstrap or 0),
                            seed, n_exp, exact)


def _normalize(kx: float, irr_x: float, irr_y: float) -> float:
    if not (math.isfinite(kx) and math.isfinite(irr_x) and math.isfinite(irr_y)) or irr_x <= 0 or irr_y <= 0:
        return math.nan
    return kx / math.sqrt(irr_x * irr_y)


def _irr_engine(table: pd.DataFrame, keep: np.ndarray, dist: Distance, seed: int) -> float:
    """α of one replication with a non-linear distance, through the engine (NaN if undefined)."""
    from .alpha import krippendorff_alpha  # the engine's α: same conventions as the report
    sub = table.loc[keep, ["item", "annotator", "value"]]
    try:
        return float(krippendorff_alpha(sub, dist, expected_pairs=None, seed=seed))
    except ValueError:
        return math.nan
