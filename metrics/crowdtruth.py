"""CrowdTruth 2.0 quality scores (paper 004; docs/formulas.md §8), vectorized.

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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from .crowdtruth_sums import SMALL, AnswerSums, Grouped, unchosen_mass
from .result import Result
from .table import Duplicates, long_table, tabular
from .errors import BadInput

__all__ = ["CrowdTruthResult", "crowdtruth"]



@dataclass(frozen=True)
class CrowdTruthResult(Result):
    """CrowdTruth 2.0 scores. No single point estimate (``estimate`` is undefined): the
    scores are per unit, worker and answer.

    Attributes
    ----------
    units : DataFrame
        Indexed by item — ``uqs``, ``uas`` (dict answer -> score; every option for closed
        tasks, the answers given on the unit for open ones), ``n_workers``.
    workers : DataFrame
        Indexed by annotator — ``wqs``, ``wua``, ``wwa``, ``n_units``.
    annotations : DataFrame
        Indexed by answer — ``aqs`` (closed tasks; empty when open).
    n_iter : int
        Iterations run.
    converged : bool
        Whether the last change was below ``tol``.
    max_delta : float
        The last change.
    dropped_rows : int
        Rows without an answer.
    dropped_units : list
        Units left with one judgement.
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
        """Strict-JSON dict: WQS/WUA/WWA per worker, UQS per unit, AQS per answer (NaN -> None)."""
        def f(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "workers": {str(k): {"wqs": f(r.wqs), "wua": f(r.wua), "wwa": f(r.wwa)}
                        for k, r in self.workers.iterrows()},
            "units": {str(k): {"uqs": f(r.uqs)} for k, r in self.units.iterrows()},
            "annotations": {str(k): f(v) for k, v in self.annotations["aqs"].items()},
            "n_iter": int(self.n_iter), "converged": bool(self.converged),
        }


def _answers(value: Any, item: Any, ann: Any) -> dict[Any, float]:
    """An annotator's answers on a unit as counts: CrowdTruth-core's judgement vectors
    count an answer each time a judgement holds it."""
    if isinstance(value, (set, frozenset)):  # a fixed order: sums must not follow the hash seed
        try:
            return dict.fromkeys(sorted(value), 1.0)
        except TypeError:  # answers of mixed types
            return dict.fromkeys(sorted(value, key=repr), 1.0)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {}
    if isinstance(value, (str, bytes, int, np.integer)):
        return {value: 1.0}
    if isinstance(value, Mapping):
        out: dict[Any, float] = {}
        for a, c in value.items():
            n = float(c) if isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool) else math.nan
            if not (math.isfinite(n) and n >= 0):
                raise BadInput(f"item {item!r}, annotator {ann!r}: count {c!r} of answer {a!r} "
                                 "is not a non-negative number")
            if n > 0:
                out[a] = n
        return out
    if isinstance(value, Iterable):
        return {a: float(c) for a, c in Counter(value).items()}
    raise BadInput(f"item {item!r}, annotator {ann!r}: value {value!r} is not a collection of answers")


@tabular(missing="keep")   # None: a judgement that chose nothing
def crowdtruth(table: pd.DataFrame, options: Sequence[Any] | None = None, *, tol: float = 1e-3,
               max_iter: int = 1000, none_token: Any = None, duplicates: Duplicates = "error") -> CrowdTruthResult:
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
    duplicates : {"error", "keep", "first", "last"}
        Several judgements of one worker on one unit (:func:`.table.long_table`).

    Returns
    -------
    CrowdTruthResult
        Reference: Dumitrache et al., "CrowdTruth 2.0" (paper 004), §3 (UQS, WUA, WWA,
        WQS, AQS, UAS); CrowdTruth-core ``Metrics.run``.
    """
    table = long_table(table, duplicates=duplicates, missing="keep")
    items, anns = table["item"].tolist(), table["annotator"].tolist()
    # a crowd control repeats a few answers thousands of times: each distinct plain one is read
    # once (its answers do not depend on the row; the returned dicts are only read)
    seen: dict[Any, dict[Any, float]] = {}
    vals = []
    for v, i, a in zip(table["value"].tolist(), items, anns):
        got = None
        if type(v) is str or type(v) is frozenset or type(v) is tuple:
            try:
                got = seen.get(v)
                if got is None:
                    got = seen[v] = _answers(v, i, a)
            except TypeError:       # a tuple holding something unhashable: read on its own
                got = None
        vals.append(got if got is not None else _answers(v, i, a))
    if none_token is not None:
        vals = [v if v else {none_token: 1.0} for v in vals]
    nonempty = np.fromiter((len(v) > 0 for v in vals), dtype=bool, count=len(vals))
    dropped_rows = int((~nonempty).sum())
    unit_codes, unit_labels = pd.factorize(pd.Series(items, dtype=object))
    sizes = np.bincount(unit_codes[nonempty], minlength=len(unit_labels))
    keep = nonempty & (sizes[unit_codes] >= 2)
    dropped_units = [unit_labels[u] for u in np.flatnonzero(sizes == 1)]
    if not keep.any():
        raise BadInput("no unit has answers from two annotators: CrowdTruth needs at least two per unit")

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
                    raise BadInput(f"item {items[r]!r}, annotator {anns[r]!r}: answer {a!r} is not "
                                     f"among the options {opt_list[:10]}")
    else:
        index = {}
        for r in row_list:
            for a in vals[r]:
                index.setdefault(a, len(index))
        opt_list = list(index)
    n_a = len(opt_list)

    # chosen cells (judgement, answer, count); every other cell of a vector is 0
    cnt = np.fromiter((len(vals[r]) for r in row_list), dtype=np.int64, count=n_j)
    n_cells = int(cnt.sum())
    ch_j = np.repeat(np.arange(n_j), cnt)
    ch_a = np.fromiter((index[a] for r in row_list for a in vals[r]), dtype=np.int64, count=n_cells)
    ch_c = np.fromiter((c for r in row_list for c in vals[r].values()), dtype=np.float64, count=n_cells)
    # unit-local answers: q = (unit, answer) chosen by someone on the unit
    q_key, ch_q = np.unique(ju[ch_j] * n_a + ch_a, return_inverse=True)
    q_unit, q_ans = q_key // n_a, q_key % n_a
    n_q = q_key.size
    m_u = np.bincount(ju, minlength=n_u)
    answer_sums = AnswerSums.build(ju, jw, ch_j, ch_a, ch_c, n_u, n_w, n_a) if closed else None

    by_q, by_unit = Grouped(ch_q, n_q), Grouped(ju, n_u)
    q_sizes = np.bincount(q_unit, minlength=n_u)
    q_first = np.cumsum(q_sizes) - q_sizes
    by_judgement = np.lexsort((ch_q, ch_j))  # q_key sorts by unit: a unit's answers are contiguous

    uqs, wqs, aqs = np.ones(n_u), np.ones(n_w), np.ones(n_a)
    wua, wwa = np.ones(n_w), np.ones(n_w)
    n_iter, max_delta = 0, math.inf
    while n_iter < max_iter:
        # Sums over pairs of judgements on a unit are written through per-unit sums, so a
        # unit costs its answers, not its pairs. A judgement's weighted norm is at least
        # min AQS ≥ 1e-8, so a cosine's 1e-8 floor on the norm product never binds and each
        # pairwise cosine splits into two normalised vectors.
        aq_c, aq_q = aqs[ch_a], aqs[q_ans]
        w_j = wqs[jw]
        rnorm = 1.0 / np.sqrt(np.bincount(ch_j, aq_c * ch_c * ch_c, minlength=n_j))
        unit_c = ch_c * rnorm[ch_j]
        z = w_j[ch_j] * unit_c
        _, z_pairs, z_others = by_q.sums(z)
        w_u, w_pairs, w_others = by_unit.sums(w_j)
        uqs_new = np.bincount(q_unit, aq_q * z_pairs, minlength=n_u) / np.maximum(w_pairs, SMALL)
        # WWA: Σ_{j≠i} WQS_j·cos(i, j) = Σ_a AQS_a·v̂_ia·Σ_{j≠i} WQS_j·v̂_ja
        others_cos = np.bincount(ch_j, aq_c * unit_c * z_others, minlength=n_j)
        wwa_new = np.bincount(jw, uqs[ju] * others_cos, minlength=n_w) / \
            np.maximum(np.bincount(jw, uqs[ju] * w_others, minlength=n_w), SMALL)
        # WUA: the worker's WQS-scaled vector x against the unit vector minus it
        x = w_j[ch_j] * ch_c
        u_q, _, rest_c = by_q.sums(x)
        unchosen = unchosen_mass(aq_q * u_q * u_q, q_unit, q_sizes, q_first, ch_q, ch_j, ju, by_judgement, n_j)
        wn = np.bincount(ch_j, aq_c * x * rest_c, minlength=n_j)
        dw = np.bincount(ch_j, aq_c * x * x, minlength=n_j)
        ds = unchosen + np.bincount(ch_j, aq_c * rest_c * rest_c, minlength=n_j)
        d = np.sqrt(dw * ds)
        cos_u = np.where(d < SMALL, SMALL, wn / np.where(d < SMALL, 1.0, d))
        wua_new = np.bincount(jw, cos_u * uqs[ju], minlength=n_w) / \
            np.maximum(np.bincount(jw, uqs[ju], minlength=n_w), SMALL)
        wqs_new = wua_new * wwa_new
        delta = max(np.abs(uqs_new - uqs).max(), np.abs(wqs_new - wqs).max())
        if answer_sums is not None:
            aqs_new = answer_sums.aqs(uqs, wqs)
            delta = max(delta, np.abs(aqs_new - aqs).max())
            aqs = aqs_new
        uqs, wqs, wua, wwa = uqs_new, wqs_new, wua_new, wwa_new
        n_iter += 1
        max_delta = float(delta)
        if max_delta < tol:
            break

    # unit-annotation scores with the final worker qualities (counts weigh as in the vectors)
    w_tot = np.maximum(np.bincount(ju, wqs[jw], minlength=n_u), SMALL)
    uas_q = np.bincount(ch_q, wqs[jw[ch_j]] * ch_c, minlength=n_q) / w_tot[q_unit]
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

