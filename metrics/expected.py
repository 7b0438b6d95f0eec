"""Expected (chance) distances: exact from value counts for scalars, sampled otherwise.

Reference: docs/formulas.md §1–2; Krippendorff (2011), "Computing Krippendorff's
Alpha-Reliability", the coincidence-matrix form of D̂e.
"""
from __future__ import annotations

import numpy as np

from .cells import ObservedCells
from .distances.base import Distance, check_distances, compute_distinct, value_keys
from .distances.scalars import ScalarDistance
from .chance_distances import Expected
from .stratified_chance import stratified_expected
from .table import CodedTable, all_between_pairs, between_pair_count, sample_between_pairs
from .errors import BadInput

__all__ = ["Expected", "expected_distances"]

# Up to this many distinct scalar values the between-item distance distribution is
# tabulated exactly (V² value pairs); beyond it KS and σ use a seeded sample while α
# stays exact.
MAX_EXACT_DOMAIN = 2000
# ratio has no sum decomposition: its exact D̂e costs V² distance evaluations.
MAX_RATIO_DOMAIN = 20000
# expected_pairs="all" refuses beyond this many between-item pairs (memory ~ 40 bytes each)
MAX_ALL_PAIRS = 20_000_000


def _target_size(n_observed: int, expected_pairs: int | str | None) -> int | None:
    if expected_pairs == "all":
        return None
    if expected_pairs is None:
        return max(n_observed, 10_000)
    if isinstance(expected_pairs, (int, np.integer)) and expected_pairs > 0:
        return int(expected_pairs)
    raise BadInput(f"expected_pairs must be a positive int, 'all' or None, got {expected_pairs!r}")


def _sampled(ct: CodedTable, dist: Distance, prepared: object, expected_pairs: int | str | None,
             n_observed: int, rng: np.random.Generator, keys: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, tuple[np.ndarray, np.ndarray] | None]:
    n_between = between_pair_count(ct)
    if n_between == 0:
        raise BadInput("every value is on the same item: no between-item pairs for the chance baseline")
    target = _target_size(n_observed, expected_pairs)
    if target is None and n_between > MAX_ALL_PAIRS:
        raise BadInput(f"expected_pairs='all' would compute {n_between:,} between-item distances "
                         f"(limit {MAX_ALL_PAIRS:,}); pass a sample size instead")
    if target is None or n_between <= target:
        i, j = all_between_pairs(ct)
        exact = True
    else:
        i, j = sample_between_pairs(ct, target, rng)
        exact = False
    d = check_distances(compute_distinct(dist, prepared, keys, i, j), dist.name)
    return d, i, j, exact, _pool(d, keys, i, j)


def _pool(d: np.ndarray, keys: np.ndarray | None, i: np.ndarray, j: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray] | None:
    """Distinct distances of pairs ``(i, j)`` and their counts, when few value pairs make them
    (found by a table over key pairs: O(pairs), no sort of the pairs); else None.

    Returns
    -------
    values, counts : ndarray of float64, shape (u,) each
    """
    if keys is None or i.size < 1024:
        return None
    n_keys = int(keys.max()) + 1
    if n_keys * n_keys > 4 * i.size:
        return None
    code = keys[i] * n_keys + keys[j]
    count = np.bincount(code, minlength=n_keys * n_keys)
    present = np.flatnonzero(count)
    if present.size > i.size // 4:
        return None
    slot = np.zeros(n_keys * n_keys, dtype=np.int64)
    slot[code] = np.arange(i.size)                              # any pair holding each key pair
    values, where = np.unique(d[slot[present]], return_inverse=True)
    return values, np.bincount(where.ravel(), weights=count[present].astype(np.float64), minlength=values.size)


def expected_distances(ct: CodedTable, dist: Distance, prepared: object, cells: ObservedCells, *,
                       expected_pairs: int | str | None, rng: np.random.Generator) -> Expected:
    """Between-item chance distances and the pair sums α needs.

    Parameters
    ----------
    ct : the coded table; ``prepared`` = ``dist.prepare(ct.values)``
    cells : the observed (within-item) pairs and their distances, pooled with counts
    expected_pairs : None (as many as observed, at least 10,000), an int, or "all"

    When the table's items offer their own answers (``ct.options``), chance pairs compare
    the values' chance view and, with several strata, only join items of one stratum
    (:mod:`.stratified_chance`).
    """
    keys = cells.keys
    if ct.options is not None:
        # items offer their own answers: chance compares the values' chance view (options as
        # positions), within strata of items that offer as many (docs/formulas.md §1)
        prepared = dist.prepare(ct.options.chance_values)
        keys = value_keys(ct.options.chance_values) if keys is not None else None
        if ct.options.n_strata > 1:
            return stratified_expected(ct, dist, prepared, keys, cells,
                                       _target_size(cells.n_pairs, expected_pairs), MAX_ALL_PAIRS, rng)
    ex = _pooled_expected(ct, dist, prepared, keys, cells, expected_pairs, rng)
    if ct.options is not None:
        ex.chance_prepared = prepared
    return ex


def _pooled_expected(ct: CodedTable, dist: Distance, prepared: object, keys: np.ndarray | None,
                     cells: ObservedCells, expected_pairs: int | str | None, rng: np.random.Generator) -> Expected:
    """Chance pooled over every pair of items (one stratum)."""
    n = ct.n_values
    n_all = n * (n - 1) // 2
    n_between = n_all - cells.n_pairs
    within_sum = cells.total
    if isinstance(dist, ScalarDistance):
        return _scalar_expected(ct, dist, np.asarray(prepared, dtype=np.float64), cells,
                                n_between, within_sum, expected_pairs, rng)
    d, i, j, exact, pooled = _sampled(ct, dist, prepared, expected_pairs, cells.n_pairs, rng, keys)
    between_mean = float(d.mean())
    return Expected(d, None, i, j, within_sum + between_mean * n_between, n_between, between_mean,
                    exact, exact, int(d.size), pooled)


def _scalar_expected(ct: CodedTable, dist: ScalarDistance, x: np.ndarray, cells: ObservedCells,
                     n_between: int, within_sum: float,
                     expected_pairs: int | str | None, rng: np.random.Generator) -> Expected:
    n = x.size
    if dist.level == "nominal":  # prepared values are already category codes 0..V-1
        code = x.astype(np.int64)
        domain = np.arange(int(code.max()) + 1, dtype=np.float64)
    else:
        domain, code = np.unique(x, return_inverse=True)
        code = code.ravel()
    counts = np.bincount(code, minlength=domain.size).astype(np.float64)
    v = domain.size
    if n_between == 0:
        raise BadInput("every value is on the same item: no between-item pairs for the chance baseline")

    # Σ over all unordered pairs, in O(values) (Krippendorff's coincidence form)
    exact_mean = True
    if dist.level == "nominal":
        total = (n * n - float(np.dot(counts, counts))) / 2.0
    elif dist.level in ("ordinal", "interval"):
        centred = x - x.mean()
        total = n * float(np.dot(centred, centred))
    elif v <= MAX_RATIO_DOMAIN:
        total = 0.0
        for lo in range(0, v, 1024):  # V² in row blocks: memory O(V · 1024)
            block = dist.delta(domain[lo:lo + 1024, None], domain[None, :])
            total += float(np.einsum("i,ij,j->", counts[lo:lo + 1024], block, counts))
        total /= 2.0
    else:
        total = None
        exact_mean = False

    if v <= MAX_EXACT_DOMAIN:
        # exact between-item distribution: all pairs per value pair minus within-item ones
        pair_counts = np.outer(counts, counts)
        np.fill_diagonal(pair_counts, counts * (counts - 1) / 2.0)
        a, b = code[cells.a], code[cells.b]
        lo_, hi_ = np.minimum(a, b), np.maximum(a, b)
        within = np.bincount(lo_ * v + hi_, weights=cells.weight, minlength=v * v).reshape(v, v)
        iu, ju = np.triu_indices(v)
        w = pair_counts[iu, ju] - within[iu, ju]
        keep = w > 0
        dists = dist.delta(domain[iu[keep]], domain[ju[keep]])
        weights = w[keep]
        between_mean = float(np.dot(dists, weights) / weights.sum())
        if total is None:  # unreachable: MAX_EXACT_DOMAIN < MAX_RATIO_DOMAIN
            total = within_sum + between_mean * n_between
        return Expected(dists, weights, None, None, float(total), n_between,
                        (float(total) - within_sum) / n_between, True, True, int(round(weights.sum())))

    # α stays exact; only KS/σ's distribution is sampled, so "all" is not worth V² pairs here
    d, i, j, exact, pooled = _sampled(ct, dist, x, None if expected_pairs == "all" else expected_pairs,
                                      cells.n_pairs, rng)
    if total is None:
        between_mean = float(d.mean())
        total = within_sum + between_mean * n_between
        exact_mean = exact
    return Expected(d, None, i, j, float(total), n_between, (float(total) - within_sum) / n_between,
                    exact_mean, exact, int(d.size), pooled)
