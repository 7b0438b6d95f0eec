"""CrowdTruth 2.0 quality scores (paper 004; measures.md §8), vectorized.

Each judgement (an annotator's answers on a unit) is a binary vector over the answer
set; a unit vector is the (worker-quality weighted) sum of its judgements. Unit quality
(UQS), worker quality (WQS = WUA * WWA) and annotation quality (AQS, closed tasks only)
are updated together from their previous values until the largest change is below
``tol``. Conventions follow the reference implementation, CrowdTruth-core
(``crowdtruth/models/metrics.py``), so that results match it:

* a cosine whose norm product is below ``1e-8`` uses ``1e-8`` as denominator (UQS,
  WWA), and WUA's cosine is then ``1e-8`` itself; every weighted-mean denominator is
  floored at ``1e-8``; AQS below ``1e-8`` (or undefined: an answer nobody chose) is
  ``1e-8``;
* WUA compares the worker's vector scaled by its WQS with the WQS-weighted unit vector
  minus it; all updates of one iteration use the previous iteration's scores;
* rows with no answer are dropped, then units with a single judgement (CrowdTruth-core's
  ``remove_empty_rows`` and ``remove_single_judgment_units``);
* open tasks keep AQS = 1 (their answer set differs per unit).

Only answers chosen on a unit enter its computations (the others are zeros in every
vector), so a closed task with a large option set costs no more than its answers.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from ls_agreement.metrics.table import require_unique_long_table

__all__ = ["CrowdTruthResult", "crowdtruth"]

SMALL = 1e-8  # CrowdTruth-core's SMALL_NUMBER_CONST


@dataclass
class CrowdTruthResult:
    """CrowdTruth 2.0 scores.

    Attributes
    ----------
    units : DataFrame indexed by item — ``uqs``, ``uas`` (dict answer -> score; every
        option for closed tasks, the answers given on the unit for open ones), ``n_workers``
    workers : DataFrame indexed by annotator — ``wqs``, ``wua``, ``wwa``, ``n_units``
    annotations : DataFrame indexed by answer — ``aqs`` (closed tasks; empty when open)
    n_iter, converged, max_delta : iterations run, whether the last change was < tol
    dropped_rows, dropped_units : rows without an answer, units with one judgement left
    """

    units: pd.DataFrame
    workers: pd.DataFrame
    annotations: pd.DataFrame
    n_iter: int
    converged: bool
    max_delta: float
    dropped_rows: int
    dropped_units: list

    def to_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "workers": {str(k): {"wqs": f(r.wqs), "wua": f(r.wua), "wwa": f(r.wwa)}
                        for k, r in self.workers.iterrows()},
            "units": {str(k): {"uqs": f(r.uqs)} for k, r in self.units.iterrows()},
            "annotations": {str(k): f(v) for k, v in self.annotations["aqs"].items()},
            "n_iter": int(self.n_iter), "converged": bool(self.converged),
        }


def _answers(value: Any, item: Any, ann: Any) -> frozenset:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return frozenset()
    if isinstance(value, (str, bytes, int, np.integer)):
        return frozenset([value])
    if isinstance(value, Iterable):
        return frozenset(value)
    raise ValueError(f"item {item!r}, annotator {ann!r}: value {value!r} is not a collection of answers")


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of the given sizes: group index and position inside the group, flattened."""
    grp = np.repeat(np.arange(counts.size), counts)
    pos = np.arange(grp.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return grp, pos


def crowdtruth(table: pd.DataFrame, options: Sequence[Any] | None = None, *, tol: float = 1e-3,
               max_iter: int = 1000, none_token: Any = None) -> CrowdTruthResult:
    """CrowdTruth 2.0 unit, worker and annotation quality scores (paper 004).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value
        ``value`` is the collection of answers the annotator chose on the unit (a bare
        string counts as one answer), shape (n_rows, 3).
    options : sequence, optional
        The full answer set of a closed task; ``None`` for an open task (the answer set of
        a unit is whatever was given on it; AQS stays 1).
    tol : float
        Stop when the largest change of any UQS, WQS or AQS is below this. The default is
        CrowdTruth-core's own criterion (0.001), so results equal the reference
        implementation's; pass a smaller value for a tighter fixed point.
    max_iter : int
        Iteration cap (``converged`` is False if reached first). ``max_iter=1`` gives
        CrowdTruth-core's ``*_initial`` scores.
    none_token : optional
        If given, an empty answer collection becomes ``{none_token}`` instead of being
        dropped.

    Returns
    -------
    CrowdTruthResult
        Reference: Dumitrache et al., "CrowdTruth 2.0" (paper 004), §3 (UQS, WUA, WWA,
        WQS, AQS, UAS); CrowdTruth-core ``Metrics.run``.
    """
    require_unique_long_table(table)
    items, anns = table["item"].tolist(), table["annotator"].tolist()
    vals = [_answers(v, i, a) for v, i, a in zip(table["value"].tolist(), items, anns)]
    if none_token is not None:
        vals = [v if v else frozenset([none_token]) for v in vals]
    nonempty = np.fromiter((len(v) > 0 for v in vals), dtype=bool, count=len(vals))
    dropped_rows = int((~nonempty).sum())
    unit_codes, unit_labels = pd.factorize(pd.Series(items, dtype=object))
    sizes = np.bincount(unit_codes[nonempty], minlength=len(unit_labels))
    keep = nonempty & (sizes[unit_codes] >= 2)
    dropped_units = [unit_labels[u] for u in np.flatnonzero(sizes == 1)]
    if not keep.any():
        raise ValueError("no unit has answers from two annotators: CrowdTruth needs at least two per unit")

    rows = np.flatnonzero(keep)
    u_codes, u_first = pd.factorize(unit_codes[rows])
    u_labels = unit_labels[u_first]
    w_codes, w_labels = pd.factorize(table["annotator"].to_numpy()[rows])
    order = np.argsort(u_codes, kind="stable")  # judgements grouped by unit
    rows, ju, jw = rows[order], u_codes[order].astype(np.int64), w_codes[order].astype(np.int64)
    n_j, n_u, n_w = rows.size, len(u_labels), len(w_labels)
    row_list = rows.tolist()
    closed = options is not None
    if closed:
        opt_list = list(options)
        index = {o: k for k, o in enumerate(opt_list)}
        for r in row_list:
            for a in vals[r]:
                if a not in index:
                    raise ValueError(f"item {items[r]!r}, annotator {anns[r]!r}: answer {a!r} is not "
                                     f"among the options {opt_list[:10]}")
    else:
        index = {}
        for r in row_list:
            for a in vals[r]:
                index.setdefault(a, len(index))
        opt_list = list(index)
    n_a = len(opt_list)

    # chosen cells (judgement, answer), sorted by judgement
    cnt = np.fromiter((len(vals[r]) for r in row_list), dtype=np.int64, count=n_j)
    ch_j = np.repeat(np.arange(n_j), cnt)
    ch_a = np.fromiter((index[a] for r in row_list for a in vals[r]), dtype=np.int64,
                       count=int(cnt.sum()))
    chosen_key = np.sort(ch_j * n_a + ch_a)

    # unit-local answer sets: q = (unit, answer) chosen by someone on the unit
    q_key, ch_q = np.unique(ju[ch_j] * n_a + ch_a, return_inverse=True)
    q_unit, q_ans = q_key // n_a, q_key % n_a
    q_per_unit = np.bincount(q_unit, minlength=n_u)
    q_start = np.concatenate(([0], np.cumsum(q_per_unit)[:-1]))
    # cells (judgement, q) for every answer of the judgement's unit
    cell_j, cell_t = _ragged(q_per_unit[ju])
    cell_q = q_start[ju[cell_j]] + cell_t
    cell_a = q_ans[cell_q]
    cell_v = np.isin(cell_j * n_a + cell_a, chosen_key).astype(np.float64)
    cell_start = np.concatenate(([0], np.cumsum(q_per_unit[ju])[:-1]))

    # unordered judgement pairs on a unit, and their co-chosen answers
    m_u = np.bincount(ju, minlength=n_u)
    j_start = np.concatenate(([0], np.cumsum(m_u)[:-1]))
    pu, k = _ragged(m_u * m_u)
    pr, ps = j_start[pu] + k // m_u[pu], j_start[pu] + k % m_u[pu]
    sel = pr < ps
    pu, pr, ps = pu[sel], pr[sel], ps[sel]
    pc_p, pc_t = _ragged(q_per_unit[pu])
    both = cell_v[cell_start[pr[pc_p]] + pc_t] * cell_v[cell_start[ps[pc_p]] + pc_t]
    co_p, co_a = pc_p[both > 0], cell_a[cell_start[pr[pc_p]] + pc_t][both > 0]

    if closed:
        # AQS triples: ordered pair (r, s) on a unit and an answer s chose
        o_r, o_s = np.concatenate([pr, ps]), np.concatenate([ps, pr])
        ch_start = np.concatenate(([0], np.cumsum(cnt)[:-1]))
        t_p, t_k = _ragged(cnt[o_s])
        t_a = ch_a[ch_start[o_s[t_p]] + t_k]
        t_r, t_u = o_r[t_p], ju[o_r[t_p]]
        t_v = np.isin(t_r * n_a + t_a, chosen_key).astype(np.float64)
        g_key, t_g = np.unique((jw[t_r] * n_w + jw[o_s[t_p]]) * n_a + t_a, return_inverse=True)
        g_wi, g_wj, g_a = g_key // (n_w * n_a), (g_key // n_a) % n_w, g_key % n_a

    uqs, wqs, aqs = np.ones(n_u), np.ones(n_w), np.ones(n_a)
    wua, wwa = np.ones(n_w), np.ones(n_w)
    n_iter, max_delta = 0, math.inf
    while n_iter < max_iter:
        aqs_c = aqs[cell_a]
        norm = np.bincount(cell_j, aqs_c * cell_v, minlength=n_j)
        # pairwise weighted cosines (UQS, WWA)
        num = np.bincount(co_p, aqs[co_a], minlength=pr.size)
        den = np.maximum(np.sqrt(norm[pr] * norm[ps]), SMALL)
        cos = num / den
        wp = wqs[jw[pr]] * wqs[jw[ps]]
        uqs_new = np.bincount(pu, cos * wp, minlength=n_u) / np.maximum(np.bincount(pu, wp, minlength=n_u), SMALL)
        a_w = np.concatenate([jw[pr], jw[ps]])
        a_wt = np.concatenate([wqs[jw[ps]], wqs[jw[pr]]]) * np.tile(uqs[pu], 2)
        wwa_new = np.bincount(a_w, np.tile(cos, 2) * a_wt, minlength=n_w) / \
            np.maximum(np.bincount(a_w, a_wt, minlength=n_w), SMALL)
        # worker vs rest of the unit (WUA)
        x = wqs[jw[cell_j]] * cell_v
        y = np.bincount(cell_q, x, minlength=q_key.size)[cell_q] - x
        wn = np.bincount(cell_j, aqs_c * x * y, minlength=n_j)
        dw = np.bincount(cell_j, aqs_c * x * x, minlength=n_j)
        ds = np.bincount(cell_j, aqs_c * y * y, minlength=n_j)
        d = np.sqrt(dw * ds)
        cos_u = np.where(d < SMALL, SMALL, wn / np.where(d < SMALL, 1.0, d))
        wua_new = np.bincount(jw, cos_u * uqs[ju], minlength=n_w) / \
            np.maximum(np.bincount(jw, uqs[ju], minlength=n_w), SMALL)
        wqs_new = wua_new * wwa_new
        delta = max(np.abs(uqs_new - uqs).max(), np.abs(wqs_new - wqs).max())
        if closed:
            gn = np.bincount(t_g, uqs[t_u] * t_v, minlength=g_key.size)
            gd = np.bincount(t_g, uqs[t_u], minlength=g_key.size)
            ok = gd > 0
            pw = wqs[g_wi[ok]] * wqs[g_wj[ok]]
            an = np.bincount(g_a[ok], pw * gn[ok] / gd[ok], minlength=n_a)
            ad = np.bincount(g_a[ok], pw, minlength=n_a)
            aqs_new = np.where(ad > SMALL, an / np.where(ad > SMALL, ad, 1.0), SMALL)
            aqs_new = np.maximum(aqs_new, SMALL)
            delta = max(delta, np.abs(aqs_new - aqs).max())
            aqs = aqs_new
        uqs, wqs, wua, wwa = uqs_new, wqs_new, wua_new, wwa_new
        n_iter += 1
        max_delta = float(delta)
        if max_delta < tol:
            break

    # unit-annotation scores with the final worker qualities
    w_tot = np.maximum(np.bincount(ju, wqs[jw], minlength=n_u), SMALL)
    uas_q = np.bincount(ch_q, wqs[jw[ch_j]], minlength=q_key.size) / w_tot[q_unit]
    uas: list[dict[Any, float]] = [dict.fromkeys(opt_list, 0.0) if closed else {} for _ in range(n_u)]
    for u, a, s in zip(q_unit.tolist(), q_ans.tolist(), uas_q.tolist()):
        uas[u][opt_list[a]] = s
    units = pd.DataFrame({"uqs": uqs, "uas": uas, "n_workers": m_u}, index=pd.Index(u_labels, name="item"))
    workers = pd.DataFrame({"wqs": wqs, "wua": wua, "wwa": wwa, "n_units": np.bincount(jw, minlength=n_w)},
                           index=pd.Index(w_labels, name="annotator"))
    annotations = pd.DataFrame({"aqs": aqs if closed else np.zeros(0)},
                               index=pd.Index(opt_list if closed else [], name="answer", dtype=object))
    return CrowdTruthResult(units, workers, annotations, n_iter, max_delta < tol, max_delta,
                            dropped_rows, dropped_units)
