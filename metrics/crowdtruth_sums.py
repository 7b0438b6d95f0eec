"""The sums CrowdTruth 2.0 needs, written so that a unit costs its answers, not its pairs
of judgements, and keeps its digits (used by :mod:`.crowdtruth`).

* :class:`Grouped` — per group (a unit's answer, a unit), Σx, Σ_{i<j} x_i·x_j and each
  element's "sum of the others", for non-negative x;
* :func:`unchosen_mass` / :func:`self_free_mass` — per judgement, the unit's mass on the
  answers it did not choose (WUA's denominator);
* :class:`AnswerSums` — AQS through per-(unit set, worker, answer) sums, linear in the
  workers of a unit when they share their units.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SMALL", "Grouped", "AnswerSums", "unchosen_mass", "self_free_mass", "ragged"]

SMALL = 1e-8  # CrowdTruth-core's SMALL_NUMBER_CONST


def ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of the given sizes: group index and position inside the group, flattened."""
    grp = np.repeat(np.arange(counts.size), counts)
    pos = np.arange(grp.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return grp, pos


def unchosen_mass(mass_q: np.ndarray, q_unit: np.ndarray, q_sizes: np.ndarray, q_first: np.ndarray,
                   ch_q: np.ndarray, ch_j: np.ndarray, ju: np.ndarray, by_judgement: np.ndarray,
                   n_j: int) -> np.ndarray:
    """Per judgement, the unit's mass on the answers it did not choose: "unit total minus
    chosen" where that keeps its digits, :func:`self_free_mass` (exact, dearer) for the
    judgements whose chosen answers hold nearly all of their unit's mass."""
    total = np.bincount(q_unit, mass_q, minlength=q_sizes.size)[ju]
    fast = total - np.bincount(ch_j, mass_q[ch_q], minlength=n_j)
    risky = ~(fast > 1e-6 * total)
    if not risky.any():
        return fast
    units = np.zeros(q_sizes.size, dtype=bool)
    units[ju[risky]] = True
    q_keep = units[q_unit]
    new_q = np.cumsum(q_keep) - 1
    c_keep = risky[ch_j]
    new_j = np.cumsum(risky) - 1
    sub_q, sub_j = new_q[ch_q[c_keep]], new_j[ch_j[c_keep]]
    sub_sizes = q_sizes[units]
    exact = self_free_mass(mass_q[q_keep], sub_sizes, np.cumsum(sub_sizes) - sub_sizes, sub_q, sub_j,
                           np.lexsort((sub_q, sub_j)), int(risky.sum()))
    fast[risky] = exact
    return fast


def self_free_mass(mass_q: np.ndarray, q_sizes: np.ndarray, q_first: np.ndarray, ch_q: np.ndarray,
                   ch_j: np.ndarray, by_judgement: np.ndarray, n_j: int) -> np.ndarray:
    """Per judgement, the unit's mass on the answers the judgement did not choose.

    Summed gap by gap between the judgement's chosen answers, with the unit's answers in
    ascending order of mass: each gap is a difference of two prefix sums no larger than a
    few times the gap itself, so the result keeps its relative accuracy even when the
    chosen answers hold nearly all of the unit's mass (a plain "total minus chosen" does
    not). Costs the chosen answers plus the unit's answers, not their product.
    """
    q_unit = np.repeat(np.arange(q_sizes.size), q_sizes)
    order = np.lexsort((mass_q, q_unit))
    rank = np.empty(mass_q.size, dtype=np.int64)
    rank[order] = np.arange(mass_q.size) - q_first[q_unit[order]]
    prefix = np.concatenate(([0.0], _segment_prefix(mass_q[order], q_sizes)))

    def below(u_first: np.ndarray, r: np.ndarray) -> np.ndarray:   # Σ of the unit's r smallest
        return np.where(r > 0, prefix[u_first + r], 0.0)

    cells = by_judgement[np.argsort(rank[ch_q[by_judgement]], kind="stable")]
    cells = cells[np.argsort(ch_j[cells], kind="stable")]           # by judgement, then by rank
    j, r = ch_j[cells], rank[ch_q[cells]]
    u = q_unit[ch_q[cells]]
    first_of_j = np.r_[True, j[1:] != j[:-1]]
    prev = np.where(first_of_j, 0, np.r_[0, r[:-1] + 1])
    base = q_first[u]
    gaps = below(base, r) - below(base, prev)
    last = np.r_[j[1:] != j[:-1], True]
    tail = prefix[base[last] + q_sizes[u[last]]] - below(base[last], r[last] + 1)
    return np.bincount(j, gaps, minlength=n_j) + np.bincount(j[last], tail, minlength=n_j)


class Grouped:
    """Sums over the pairs of elements of each group, for non-negative values, with relative
    accuracy.

    ``Σ_{i<j} x_i·x_j = ½[(Σx)² − Σx²]`` loses every digit when one element carries nearly
    all of a group's sum, and CrowdTruth's ratios of small weights (P_a(i|j), a cosine
    between near-empty vectors) then change discontinuously. Splitting off each group's
    largest element ``m`` leaves ``m·S' + ½(S'² − Q')`` over the rest, whose rounding is at
    most ``n·ε`` of the result; likewise "the sum of the others" is ``S − x`` except for
    the largest element, which gets ``S'`` directly.
    """

    def __init__(self, group: np.ndarray, n_groups: int):
        self.group, self.n = group, n_groups
        self.order = np.argsort(group, kind="stable")
        sorted_g = group[self.order]
        self.starts = np.flatnonzero(np.r_[True, sorted_g[1:] != sorted_g[:-1]]) if group.size else group
        self.start_group = sorted_g[self.starts]
        self.sizes = np.bincount(group, minlength=n_groups)

    def sums(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per group Σx and Σ_{i<j} x_i·x_j; per element the sum of the others in its group."""
        total = np.bincount(self.group, x, minlength=self.n)
        if not x.size:
            return total, np.zeros(self.n), x
        # the plain forms first; the split only where they could have lost digits (a group
        # of one is exact either way: its pair sum and "others" are exactly 0)
        fast_pairs = 0.5 * (total * total - np.bincount(self.group, x * x, minlength=self.n))
        fast_others = total[self.group] - x
        shared = self.sizes >= 2
        if not (np.any(shared & ~(fast_pairs > 1e-6 * total * total))
                or np.any(shared[self.group] & ~(fast_others > 1e-6 * total[self.group]))):
            return total, fast_pairs, fast_others
        xs = x[self.order]
        top = np.zeros(self.n)
        top[self.start_group] = np.maximum.reduceat(xs, self.starts)
        is_top = xs == top[self.group[self.order]]
        # one largest element per group: the first of its ties
        first = np.flatnonzero(is_top)
        first = first[np.r_[True, self.group[self.order][first[1:]] != self.group[self.order][first[:-1]]]]
        mark = np.zeros(x.size, dtype=bool)
        mark[self.order[first]] = True
        g_rest, x_rest = self.group[~mark], x[~mark]
        s_rest = np.bincount(g_rest, x_rest, minlength=self.n)
        q_rest = np.bincount(g_rest, x_rest * x_rest, minlength=self.n)
        pairs = top * s_rest + 0.5 * np.maximum(s_rest * s_rest - q_rest, 0.0)
        others = np.where(mark, s_rest[self.group], total[self.group] - x)
        return total, pairs, others


def _segment_prefix(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Inclusive prefix sums inside consecutive segments of the given sizes, each summed on
    its own: a running sum across segments would make a small segment's sums carry the
    rounding of all earlier ones. Segments of similar size share one padded 2-D cumsum."""
    out = np.empty_like(values)
    starts = np.cumsum(sizes) - sizes
    width_class = np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)
    for k in np.unique(width_class[sizes > 0]):
        segs = np.flatnonzero((width_class == k) & (sizes > 0))
        row, col = ragged(sizes[segs])
        grid = np.zeros((segs.size, int(sizes[segs].max())))
        pos = starts[segs][row] + col
        grid[row, col] = values[pos]
        np.cumsum(grid, axis=1, out=grid)
        out[pos] = grid[row, col]
    return out


@dataclass
class AnswerSums:
    """AQS (docs/formulas.md §8) through sums over the workers of a *unit set*, not over
    worker pairs.

    ``AQS_a = Σ_{i≠j, D_ij>0} WQS_i·WQS_j·N_ij/D_ij / Σ_{i≠j, D_ij>0} WQS_i·WQS_j`` with
    ``N_ij = Σ_u UQS_u·c_iua·c_jua`` and ``D_ij = Σ_u UQS_u·c_jua`` over the units ``i`` and
    ``j`` share. ``D_ij`` depends on ``i`` only through ``i``'s set of units ``T``; so for a
    worker ``j`` and a set ``T`` (``D_Tj`` over ``T ∩ U_j``)

    ``Σ_{i∈T, i≠j} WQS_i·N_ij/D_ij = Σ_{u∈T∩U_j} UQS_u·c_jua·O_Tua(j) / D_Tj``,
    ``O_Tua(j) = Σ_{i∈T, i≠j} WQS_i·c_iua``, and the pair weights sum to
    ``WQS_j·Σ_{i∈T, i≠j} WQS_i``.

    A term is one (set containing the unit, chosen cell of ``j``): with many workers on the
    same units (a crowd project: a few sets) AQS costs the chosen answers, linear in the
    workers of a unit. Workers on ever different units make as many sets as workers, and
    the terms then are the pairs of workers sharing a unit, as the definition needs.
    "The others of ``T``" are taken with :class:`Grouped` (relative accuracy: never a
    small difference of large sums, which would lose the tiny weights AQS's ratios
    depend on).

    Attributes
    ----------
    cell_w, cell_u : ndarray of int64, shape (n_cells,) — worker and unit of each chosen cell
    cell_c : ndarray of float64, shape (n_cells,) — its count ``c_jua``
    by_cell : Grouped — cells by (unit set of their worker, unit, answer)
    set_of_w : ndarray of int64, shape (n_w,) — each worker's unit set
    by_set : Grouped — workers by unit set
    x_cell : ndarray of int64, shape (n_terms,) — per (set T containing the cell's unit, cell): the cell
    x_own : ndarray of bool, shape (n_terms,) — T is the set of the cell's own worker
    x_group : ndarray of int64, shape (n_terms,) — the (T, unit, answer) group of ``by_cell``, −1 if none
    x_triple : ndarray of int64, shape (n_terms,) — the term's (T, worker j, answer)
    t_set, t_w, t_a : ndarray of int64, shape (n_triples,) — each triple's set, worker, answer
    n_answers : int
    """

    cell_w: np.ndarray
    cell_u: np.ndarray
    cell_c: np.ndarray
    by_cell: Grouped
    set_of_w: np.ndarray
    by_set: Grouped
    x_cell: np.ndarray
    x_own: np.ndarray
    x_group: np.ndarray
    x_triple: np.ndarray
    t_set: np.ndarray
    t_w: np.ndarray
    t_a: np.ndarray
    n_answers: int

    @classmethod
    def build(cls, ju: np.ndarray, jw: np.ndarray, ch_j: np.ndarray, ch_a: np.ndarray, ch_c: np.ndarray,
              n_u: int, n_w: int, n_a: int) -> "AnswerSums":
        """From the judgements (unit ``ju``, worker ``jw``, shape (n_j,) each) and the chosen
        cells (judgement ``ch_j``, answer ``ch_a``, count ``ch_c``, shape (n_cells,) each)."""
        # each worker's set of units
        by_w = np.lexsort((ju, jw))
        w_sorted, u_sorted = jw[by_w], ju[by_w]
        bounds = np.flatnonzero(np.diff(w_sorted)) + 1
        set_index: dict[bytes, int] = {}
        set_of_w = np.full(n_w, -1, dtype=np.int64)    # −1: a worker without judgements
        set_units: list[np.ndarray] = []
        for w, units in zip(w_sorted[np.concatenate(([0], bounds))].tolist(), np.split(u_sorted, bounds)):
            k = set_index.setdefault(units.tobytes(), len(set_index))
            if k == len(set_units):
                set_units.append(units)
            set_of_w[w] = k
        n_sets = len(set_units)
        set_of_w[set_of_w < 0] = n_sets                # an extra set of no units: in no pair
        # the sets containing each unit
        set_of_entry = np.repeat(np.arange(n_sets, dtype=np.int64), [u.size for u in set_units])
        unit_of_entry = np.concatenate(set_units) if set_units else np.zeros(0, dtype=np.int64)
        sets_by_unit = set_of_entry[np.argsort(unit_of_entry, kind="stable")]
        sets_on_unit = np.bincount(unit_of_entry, minlength=n_u)
        sou_start = np.cumsum(sets_on_unit) - sets_on_unit

        cell_w, cell_u = jw[ch_j], ju[ch_j]
        cell_t = set_of_w[cell_w]
        # groups (T, unit, answer) of the chosen cells: O_Tua sums over one of them
        g_key, g_of_cell = np.unique((cell_t * n_u + cell_u) * n_a + ch_a, return_inverse=True)
        g_of_cell = g_of_cell.ravel()
        # terms: every chosen cell with every set containing its unit
        xi, xk = ragged(sets_on_unit[cell_u])
        x_t = sets_by_unit[sou_start[cell_u[xi]] + xk]
        want = (x_t * n_u + cell_u[xi]) * n_a + ch_a[xi]
        pos = np.minimum(np.searchsorted(g_key, want), max(g_key.size - 1, 0))
        x_group = np.where(g_key[pos] == want, pos, -1) if g_key.size else np.full(want.size, -1)
        t_key, x_triple = np.unique((x_t * n_w + cell_w[xi]) * n_a + ch_a[xi], return_inverse=True)
        return cls(cell_w=cell_w, cell_u=cell_u, cell_c=np.asarray(ch_c, dtype=np.float64),
                   by_cell=Grouped(g_of_cell, g_key.size), set_of_w=set_of_w, by_set=Grouped(set_of_w, n_sets + 1),
                   x_cell=xi, x_own=x_t == cell_t[xi], x_group=x_group, x_triple=x_triple.ravel(),
                   t_set=t_key // (n_w * n_a), t_w=(t_key // n_a) % n_w, t_a=t_key % n_a, n_answers=n_a)

    def aqs(self, uqs: np.ndarray, wqs: np.ndarray) -> np.ndarray:
        """AQS per answer from the previous iteration's UQS and WQS, shape (n_answers,)
        (docs/formulas.md §8; CrowdTruth-core's 1e-8 floors)."""
        x = wqs[self.cell_w] * self.cell_c                      # WQS_i·c_iua per chosen cell
        g_total, _, others = self.by_cell.sums(x)
        has = self.x_group >= 0
        o = np.where(self.x_own, others[self.x_cell], np.where(has, g_total[np.where(has, self.x_group, 0)], 0.0))
        qc = (uqs[self.cell_u] * self.cell_c)[self.x_cell]      # UQS_u·c_jua per term
        n_t = self.t_set.size
        num = np.bincount(self.x_triple, qc * o, minlength=n_t)
        den = np.bincount(self.x_triple, qc, minlength=n_t)
        w_total, _, w_others = self.by_set.sums(wqs)
        weight = np.where(self.t_set == self.set_of_w[self.t_w], w_others[self.t_w], w_total[self.t_set])
        ok = den > 0                                            # D_Tj > 0: the pairs that count
        w_j = wqs[self.t_w[ok]]
        an = np.bincount(self.t_a[ok], w_j * num[ok] / den[ok], minlength=self.n_answers)
        ad = np.bincount(self.t_a[ok], w_j * weight[ok], minlength=self.n_answers)
        return np.maximum(np.where(ad > SMALL, an / np.where(ad > SMALL, ad, 1.0), SMALL), SMALL)
