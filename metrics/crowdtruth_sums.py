"""The sums CrowdTruth 2.0 needs, written so that a unit costs its answers, not its pairs
of judgements, and keeps its digits (used by :mod:`.crowdtruth`).

* :class:`Grouped` — per group (a unit's answer, a unit), Σx, Σ_{i<j} x_i·x_j and each
  element's "sum of the others", for non-negative x;
* :func:`unchosen_mass` / :func:`self_free_mass` — per judgement, the unit's mass on the
  answers it did not choose (WUA's denominator);
* :class:`AnswerPairs` — the (worker, worker, answer) terms of AQS, grouped by identical
  answer patterns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SMALL", "Grouped", "AnswerPairs", "unchosen_mass", "self_free_mass", "ragged"]

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
class AnswerPairs:
    """The (worker i, worker j, answer a) terms of AQS, grouped so that a term is computed
    once for every set of workers it is the same for.

    ``P_a(i|j) = Σ_u UQS_u·c_iua·c_jua / Σ_u UQS_u·c_jua`` over the units i and j share
    depends on i only through i's units and i's counts of ``a`` on them. Workers alike in
    both form one *group*; a pair of groups (R, S) stands for all its worker pairs, weighted
    ``W_R·W_S`` (minus ``Σ WQS²`` when R = S, as a worker is never paired with itself).
    For answer ``a``: the workers who chose ``a`` are grouped by (units, counts) — the
    *choosers* — and the others by their units alone — the *non-choosers*, who add to
    the denominator only. With many workers on few units, this makes AQS cost the
    distinct answer patterns rather than the worker pairs.
    """

    t_pair: np.ndarray        # per (R, S, unit) term: its group pair
    t_unit: np.ndarray
    t_num: np.ndarray         # c_R·c_S on the unit
    t_den: np.ndarray         # c_S on the unit
    pair_r: np.ndarray        # per group pair: R, S, the answer
    pair_s: np.ndarray
    pair_a: np.ndarray
    member_w: np.ndarray      # group members: worker, group (choosers first, then the others)
    member_g: np.ndarray
    n_groups: int
    n_answers: int

    @classmethod
    def build(cls, ju: np.ndarray, jw: np.ndarray, ch_j: np.ndarray, ch_a: np.ndarray, ch_c: np.ndarray,
              q_key: np.ndarray, n_u: int, n_w: int, n_a: int) -> "AnswerPairs":
        # each worker's set of units
        by_w = np.lexsort((ju, jw))
        w_sorted, u_sorted = jw[by_w], ju[by_w]
        bounds = np.flatnonzero(np.diff(w_sorted)) + 1
        unit_lists = np.split(u_sorted, bounds)
        set_index: dict[bytes, int] = {}
        unitset_of_w = np.empty(n_w, dtype=np.int64)
        set_units: list[np.ndarray] = []
        for w, units in zip(w_sorted[np.concatenate(([0], bounds))].tolist(), unit_lists):
            k = set_index.setdefault(units.tobytes(), len(set_index))
            if k == len(set_units):
                set_units.append(units)
            unitset_of_w[w] = k
        n_sets = len(set_units)
        set_size = np.bincount(unitset_of_w, minlength=n_sets)

        # chooser groups: (answer, units, counts of the answer per unit)
        ch_w, ch_u = jw[ch_j], ju[ch_j]
        by_aw = np.lexsort((ch_u, ch_w, ch_a))
        a_s, w_s, u_s, c_s = ch_a[by_aw], ch_w[by_aw], ch_u[by_aw], ch_c[by_aw]
        cut = np.flatnonzero((np.diff(a_s) != 0) | (np.diff(w_s) != 0)) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [a_s.size]))
        group_index: dict[tuple, int] = {}
        member_g = np.empty(starts.size, dtype=np.int64)
        g_answer: list[int] = []
        g_set: list[int] = []
        g_cells: list[tuple[np.ndarray, np.ndarray]] = []
        for m, (s, e) in enumerate(zip(starts.tolist(), ends.tolist())):
            a, w = int(a_s[s]), int(w_s[s])
            key = (a, int(unitset_of_w[w]), u_s[s:e].tobytes(), c_s[s:e].tobytes())
            g = group_index.setdefault(key, len(group_index))
            if g == len(g_answer):
                g_answer.append(a)
                g_set.append(int(unitset_of_w[w]))
                g_cells.append((u_s[s:e], c_s[s:e]))
            member_g[m] = g
        member_w = w_s[starts]
        n_g = len(g_answer)
        g_answer_a, g_set_a = np.asarray(g_answer, dtype=np.int64), np.asarray(g_set, dtype=np.int64)
        g_members = np.bincount(member_g, minlength=n_g)

        # (answer, unit) pairs where someone chose the answer: only there can a term be non-zero
        q_unit, q_ans = q_key // n_a, q_key % n_a
        # units -> the sets of units containing them
        set_of_cell = np.repeat(np.arange(n_sets), [u.size for u in set_units])
        unit_of_cell = np.concatenate(set_units)
        by_unit = np.argsort(unit_of_cell, kind="stable")
        sets_on_unit = np.bincount(unit_of_cell, minlength=n_u)
        sou_start = np.concatenate(([0], np.cumsum(sets_on_unit)[:-1]))
        sets_sorted = set_of_cell[by_unit]
        # non-chooser groups: (answer, set of units) with a worker who did not choose the answer
        qi, qk = ragged(sets_on_unit[q_unit])
        cand_a, cand_set, cand_u = q_ans[qi], sets_sorted[sou_start[q_unit[qi]] + qk], q_unit[qi]
        as_key = cand_a * n_sets + cand_set
        g_key = g_answer_a * n_sets + g_set_a
        uniq_keys = np.unique(np.concatenate([as_key, g_key]))
        chooser_count = np.bincount(np.searchsorted(uniq_keys, g_key), g_members, minlength=uniq_keys.size)
        rest_n = set_size[uniq_keys % n_sets] - chooser_count
        has_rest = rest_n > 0
        rest_id = np.full(uniq_keys.size, -1, dtype=np.int64)
        rest_id[has_rest] = n_g + np.arange(int(has_rest.sum()))
        rest_unitset, rest_answer = (uniq_keys % n_sets)[has_rest], (uniq_keys // n_sets)[has_rest]
        # the non-choosers' members, listed (not a set's weight minus the choosers': a small
        # difference of large sums loses the tiny weights AQS's ratios depend on)
        w_by_set = np.argsort(unitset_of_w, kind="stable")
        set_start = np.concatenate(([0], np.cumsum(set_size)[:-1]))
        ri, rk = ragged(set_size[rest_unitset])
        rest_w = w_by_set[set_start[rest_unitset[ri]] + rk]
        not_chooser = ~np.isin(rest_w * n_a + rest_answer[ri], member_w * n_a + g_answer_a[member_g])
        member_w = np.concatenate([member_w, rest_w[not_chooser]])
        member_g = np.concatenate([member_g, n_g + ri[not_chooser]])

        # R side: every group present on a unit where its answer was chosen, with its count there
        # every (group, unit of its set); its count there from the group's cells (0 elsewhere)
        units_per_set = np.asarray([u.size for u in set_units], dtype=np.int64)
        set_start = np.concatenate(([0], np.cumsum(units_per_set)[:-1]))
        gi, gk = ragged(units_per_set[g_set_a])
        g_units = np.concatenate(set_units)[set_start[g_set_a[gi]] + gk]
        cell_g = np.repeat(np.arange(n_g), [cu.size for cu, _ in g_cells])
        cell_u = np.concatenate([cu for cu, _ in g_cells]) if n_g else np.zeros(0, dtype=np.int64)
        cell_c = np.concatenate([cc for _, cc in g_cells]) if n_g else np.zeros(0)
        cell_key = cell_g * n_u + cell_u
        key_order = np.argsort(cell_key, kind="stable")
        want = gi * n_u + g_units
        pos = np.clip(np.searchsorted(cell_key[key_order], want), 0, max(cell_key.size - 1, 0))
        hit = cell_key[key_order][pos] == want if cell_key.size else np.zeros(want.size, dtype=bool)
        r_g = [gi.astype(np.int64)]
        r_u = [g_units]
        r_c = [np.where(hit, cell_c[key_order][pos] if cell_key.size else 0.0, 0.0)]
        cand_rest = rest_id[np.searchsorted(uniq_keys, as_key)]
        keep = cand_rest >= 0
        r_g.append(cand_rest[keep])
        r_u.append(cand_u[keep])
        r_c.append(np.zeros(int(keep.sum())))
        rg, ru, rc = np.concatenate(r_g), np.concatenate(r_u), np.concatenate(r_c)
        ra = np.where(rg < n_g, g_answer_a[np.minimum(rg, max(n_g - 1, 0))], 0)
        ra[rg >= n_g] = cand_a[keep]
        r_key = ra * n_u + ru
        live = np.isin(r_key, q_ans * n_u + q_unit)
        rg, rc, r_key = rg[live], rc[live], r_key[live]
        by_key = np.argsort(r_key, kind="stable")
        rg, rc, r_key = rg[by_key], rc[by_key], r_key[by_key]

        # S side: the chooser groups' cells, each joined with every R group on its (answer, unit)
        s_g = np.concatenate([np.full(cu.size, g, dtype=np.int64) for g, (cu, _) in enumerate(g_cells)])
        s_u = np.concatenate([cu for cu, _ in g_cells])
        s_c = np.concatenate([cc for _, cc in g_cells])
        s_key = g_answer_a[s_g] * n_u + s_u
        lo = np.searchsorted(r_key, s_key, side="left")
        hi = np.searchsorted(r_key, s_key, side="right")
        ti, tk = ragged(hi - lo)
        t_r, t_s = rg[lo[ti] + tk], s_g[ti]
        pair_key, t_pair = np.unique(t_r * (n_g + rest_unitset.size) + t_s, return_inverse=True)
        pair_r, pair_s = pair_key // (n_g + rest_unitset.size), pair_key % (n_g + rest_unitset.size)
        return cls(t_pair=t_pair, t_unit=s_u[ti], t_num=rc[lo[ti] + tk] * s_c[ti], t_den=s_c[ti],
                   pair_r=pair_r, pair_s=pair_s, pair_a=g_answer_a[pair_s], member_w=member_w,
                   member_g=member_g, n_groups=n_g + rest_unitset.size, n_answers=n_a)

    def aqs(self, uqs: np.ndarray, wqs: np.ndarray) -> np.ndarray:
        """AQS per answer from the previous iteration's UQS and WQS (docs/formulas.md §8)."""
        w_m = wqs[self.member_w]
        w_all = np.bincount(self.member_g, w_m, minlength=self.n_groups)
        w2_all = np.bincount(self.member_g, w_m * w_m, minlength=self.n_groups)
        n_pairs = self.pair_r.size
        num = np.bincount(self.t_pair, uqs[self.t_unit] * self.t_num, minlength=n_pairs)
        den = np.bincount(self.t_pair, uqs[self.t_unit] * self.t_den, minlength=n_pairs)
        ok = den > 0
        pw = w_all[self.pair_r] * w_all[self.pair_s] - np.where(self.pair_r == self.pair_s,
                                                                 w2_all[self.pair_s], 0.0)
        pw, a = pw[ok], self.pair_a[ok]
        an = np.bincount(a, pw * num[ok] / den[ok], minlength=self.n_answers)
        ad = np.bincount(a, pw, minlength=self.n_answers)
        return np.maximum(np.where(ad > SMALL, an / np.where(ad > SMALL, ad, 1.0), SMALL), SMALL)
