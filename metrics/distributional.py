"""KS and σ: how the observed distances compare with the chance (expected) ones.

Reference: Braylan, Alonso & Lease (2022), "Measuring Annotator Agreement Generally
across Complex Structured, Multi-object, and Free-text Annotation Tasks", §4 (KS, σ);
our measures.md §3.

Expected distances may come weighted (``weights``): an exact expected distribution from
value counts is a few distinct distances with pair counts as weights. Weights are
frequency weights — every formula equals the one on the expanded sample.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

__all__ = ["ks_score", "ks_statistic", "kde_bandwidth", "sigma_threshold", "sigma_score", "kde_mass"]

# Beyond this many standard deviations ndtr() is exactly 0.0 or 1.0 in float64
# (Φ(9) = 1 - 1.1e-19), so kernel sums only need the points within the window.
_WINDOW = 9.0


def _weights(x: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    if weights is None:
        return np.ones(x.shape[0])
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != x.shape:
        raise ValueError(f"weights shape {w.shape} does not match expected distances {x.shape}")
    return w


def _sorted_with_weights(expected: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    e = np.asarray(expected, dtype=np.float64).ravel()
    w = _weights(e, weights)
    order = np.argsort(e, kind="stable")
    return e[order], w[order]


def ks_score(observed: np.ndarray, expected: np.ndarray, weights: np.ndarray | None = None,
             method: str = "exact") -> float:
    """KS of paper 000's Table 1: mean over observed d of ``1 − p(d)``.

    ``p(d)`` is the one-sided KS p-value of the one-point sample ``{d}`` against the
    expected distances (alternative "greater"). Exactly, ``1 − p(d) = #{e > d}/(n + 1)``
    with ``n = |De|`` (measures.md §3).

    Parameters
    ----------
    observed : array, shape (n_observed,)
    expected : array, shape (n_expected,)
    weights : array, shape (n_expected,), optional
        Frequency weights of the expected distances.
    method : {"exact", "scipy"}
        ``"exact"`` is the formula above. ``"scipy"`` replicates
        ``scipy.stats.ks_2samp(method="auto")`` as paper 000's code called it: above
        10,000 expected distances scipy switches to its asymptotic p-value, which is what
        Table 1 shows for the larger datasets.

    Returns
    -------
    float in [0, 1]; 0.5 means indistinguishable from chance.
    """
    d = np.asarray(observed, dtype=np.float64).ravel()
    if d.size == 0:
        raise ValueError("KS needs at least one observed distance")
    e, w = _sorted_with_weights(expected, weights)
    if e.size == 0:
        raise ValueError("KS needs at least one expected distance")
    cum = np.concatenate(([0.0], np.cumsum(w)))
    n = cum[-1]
    above = n - cum[np.searchsorted(e, d, side="right")]  # weight of e > d
    if method == "exact" or n <= 10000:
        one_minus_p = above / (n + 1.0)
    elif method == "scipy":
        z = math.sqrt(n / (n + 1.0)) * above / n
        one_minus_p = 1.0 - np.exp(-2.0 * z * z - 2.0 * z * (n + 2.0) / (3.0 * math.sqrt(n * (n + 1.0))))
    else:
        raise ValueError(f"ks method must be 'exact' or 'scipy', got {method!r}")
    return float(np.mean(one_minus_p))


def ks_statistic(observed: np.ndarray, expected: np.ndarray, weights: np.ndarray | None = None) -> float:
    """One-sided two-sample statistic ``D+ = max_x (F_Do(x) − F_De(x))``.

    The classic statistic of ``scipy.stats.ks_2samp(Do, De, alternative="greater")``.
    The supremum is reached at an observed point, where ``F_Do`` jumps.

    Parameters
    ----------
    observed : array, shape (n_observed,)
    expected : array, shape (n_expected,)
    weights : array, shape (n_expected,), optional
    """
    d = np.sort(np.asarray(observed, dtype=np.float64).ravel())
    e, w = _sorted_with_weights(expected, weights)
    if d.size == 0 or e.size == 0:
        raise ValueError("KS statistic needs observed and expected distances")
    cum = np.concatenate(([0.0], np.cumsum(w)))
    f_do = np.searchsorted(d, d, side="right") / d.size
    f_de = cum[np.searchsorted(e, d, side="right")] / cum[-1]
    return float(max(0.0, np.max(f_do - f_de)))


def kde_bandwidth(expected: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Scott's bandwidth as scipy's ``gaussian_kde``: ``std(De, ddof=1) · n^(−1/5)``."""
    e = np.asarray(expected, dtype=np.float64).ravel()
    w = _weights(e, weights)
    n = w.sum()
    if n <= 1:
        return 0.0
    mean = np.dot(w, e) / n
    var = np.dot(w, (e - mean) ** 2) / (n - 1.0)
    return float(math.sqrt(max(var, 0.0)) * n ** (-0.2))


class _KdeMass:
    """``F(d) = ∫₀^d kde(x) dx`` for a (weighted) Gaussian KDE, windowed on sorted data."""

    def __init__(self, expected: np.ndarray, weights: np.ndarray | None, bandwidth: float | None):
        self.x, self.w = _sorted_with_weights(expected, weights)
        self.cum = np.concatenate(([0.0], np.cumsum(self.w)))
        self.total = self.cum[-1]
        self.bw = kde_bandwidth(self.x, self.w) if bandwidth is None else float(bandwidth)
        if self.bw > 0:
            self.below_zero = float(np.dot(self.w, ndtr(-self.x / self.bw))) / self.total
        else:
            self.below_zero = float(self.cum[np.searchsorted(self.x, 0.0, side="left")]) / self.total

    def __call__(self, d: float) -> float:
        if self.bw <= 0:
            # degenerate (all expected distances equal): the KDE is a point mass
            return float(self.cum[np.searchsorted(self.x, d, side="right")]) / self.total - self.below_zero
        lo = np.searchsorted(self.x, d - _WINDOW * self.bw, side="right")
        hi = np.searchsorted(self.x, d + _WINDOW * self.bw, side="left")
        inside = np.dot(self.w[lo:hi], ndtr((d - self.x[lo:hi]) / self.bw))
        return float((self.cum[lo] + inside) / self.total - self.below_zero)

    @property
    def sup(self) -> float:
        return 1.0 - self.below_zero


def kde_mass(d: np.ndarray, expected: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """KDE mass of the expected distances on ``[0, d]``, per point (the slow direct form)."""
    f = _KdeMass(expected, weights, None)
    return np.array([f(float(v)) for v in np.ravel(d)])


def sigma_threshold(expected: np.ndarray, p: float = 0.05, weights: np.ndarray | None = None,
                    bandwidth: float | None = None) -> float:
    """The distance ``d*`` with ``F(d*) = p``: observed distances below it are significant.

    ``F`` is the Gaussian-KDE mass of the expected distances on ``[0, d]`` (Scott's
    bandwidth), increasing in ``d``, so one bisection replaces evaluating the KDE at every
    observed point (measures.md §3). Each step costs O(points within 9 bandwidths).

    Parameters
    ----------
    expected : array, shape (n_expected,)
    p : float in (0, 1)
    weights : array, shape (n_expected,), optional
    bandwidth : float, optional — override Scott's rule (bootstrap keeps it fixed).

    Returns
    -------
    float; ``inf`` if the KDE never reaches mass ``p`` above 0 (everything significant).
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    f = _KdeMass(expected, weights, bandwidth)
    if f.total <= 0:
        raise ValueError("sigma needs at least one expected distance")
    if f.sup < p:
        return math.inf
    if f.bw <= 0:
        # point masses: F jumps to >= p at the first expected value reaching it
        reach = (f.cum[1:] / f.total - f.below_zero) >= p
        return float(f.x[np.argmax(reach)])
    lo, hi = 0.0, float(f.x[-1]) + _WINDOW * f.bw + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) < p:
            lo = mid
        else:
            hi = mid
    return hi


def sigma_score(observed: np.ndarray, threshold: float) -> float:
    """σ: the share of observed distances below ``d*`` (significantly better than chance)."""
    d = np.asarray(observed, dtype=np.float64).ravel()
    if d.size == 0:
        raise ValueError("sigma needs at least one observed distance")
    return float(np.mean(d < threshold))
