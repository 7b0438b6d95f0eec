"""KS and σ: how the observed distances compare with the chance (expected) ones.

Reference: Braylan, Alonso & Lease (2022), "Measuring Annotator Agreement Generally
across Complex Structured, Multi-object, and Free-text Annotation Tasks", §4 (KS, σ);
docs/formulas.md §3.

Expected distances may come weighted (``weights``): an exact expected distribution from
value counts is a few distinct distances with pair counts as weights. Weights are
frequency weights — every formula equals the one on the expanded sample.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import erf, ndtr
from .errors import BadInput

__all__ = ["ExpectedDistribution", "ks_score", "ks_statistic", "kde_bandwidth", "sigma_threshold", "sigma_score",
           "kde_mass", "kernel_mass", "P_MIN", "P_STABLE", "KERNEL_WINDOW"]

# Beyond this many standard deviations ndtr() is exactly 0.0 or 1.0 in float64
# (Φ(9) = 1 - 1.1e-19), so kernel sums only need the points within the window.
KERNEL_WINDOW = 9.0
#: Below this p the KDE mass is summed kernel by kernel without cancellation (each
#: kernel's own mass on [0, d], far tails included): ``Φ(a) − Φ(b)`` loses about 1e-16
#: absolutely, which only matters when p itself is that small.
P_STABLE = 1e-8
#: The smallest significance level σ accepts: below it the KDE mass underflows float64.
P_MIN = 1e-300

_SQRT2 = math.sqrt(2.0)
_SQRT2PI = math.sqrt(2.0 * math.pi)
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)


def kernel_mass(d: np.ndarray | float, x: np.ndarray | float, h: float) -> np.ndarray:
    """Mass on ``[0, d]`` of a Gaussian kernel centred at ``x ≥ 0`` with bandwidth ``h > 0``.

    ``Φ((d − x)/h) − Φ(−x/h)`` for ``d ≥ 0``, evaluated without cancellation, so its
    relative accuracy holds down to float64 underflow (~1e-300): the difference of two
    nearly equal Φ values is replaced by the sum of two erf halves (``x < d``), by
    Gauss–Legendre quadrature of the density over ``[d − x, −x]/h`` when that interval is
    short against the density's scale, and by the plain difference otherwise (where the
    two Φ differ by a factor ≥ 1.6). ``d`` and ``x`` broadcast.
    """
    d, x = np.broadcast_arrays(np.asarray(d, dtype=np.float64), np.asarray(x, dtype=np.float64))
    a = (d - x) / h
    t = d / h
    out = np.empty(a.shape)
    right = a > 0  # −x/h ≤ 0 < a: the interval straddles the kernel's centre
    out[right] = 0.5 * (erf(a[right] / _SQRT2) + erf(x[right] / (h * _SQRT2)))
    left = ~right
    al, tl = a[left], t[left]
    res = np.empty(al.shape)
    short = tl * np.maximum(-al, 1.0) <= 0.5
    if short.any():
        # ∫_{a−t}^{a} φ = φ(a) ∫_0^t exp(a u − u²/2) du; the integrand varies by < e^0.625
        a_s, t_s = al[short], tl[short]
        u = 0.5 * t_s[:, None] * (1.0 + _GL_X[None, :])
        integral = 0.5 * t_s * (np.exp(a_s[:, None] * u - 0.5 * u * u) @ _GL_W)
        res[short] = np.exp(-0.5 * a_s * a_s) / _SQRT2PI * integral
    long_ = ~short
    res[long_] = ndtr(al[long_]) - ndtr(al[long_] - tl[long_])
    out[left] = res
    return out


class ExpectedDistribution:
    """Expected distances sorted once, with cumulative (frequency) weights.

    Parameters
    ----------
    expected : array, shape (n_expected,)
    weights : array, shape (n_expected,), optional — frequency weights (pair counts)
    """

    def __init__(self, expected: np.ndarray, weights: np.ndarray | None = None) -> None:
        e = np.asarray(expected, dtype=np.float64).ravel()
        if e.size == 0:
            raise BadInput("no expected distances: the chance baseline is empty")
        if weights is None:
            self.x = np.sort(e)
            self.w = None
            self.total = float(e.size)
        else:
            w = np.asarray(weights, dtype=np.float64).ravel()
            if w.shape != e.shape:
                raise BadInput(f"weights shape {w.shape} does not match expected distances {e.shape}")
            order = np.argsort(e, kind="stable")
            self.x, self.w = e[order], w[order]
            self.cum = np.concatenate(([0.0], np.cumsum(self.w)))
            self.total = float(self.cum[-1])

    def weight_upto(self, pos: np.ndarray | int) -> np.ndarray | float:
        """Total weight of the first ``pos`` sorted points."""
        return pos if self.w is None else self.cum[pos]

    def weight_above(self, d: np.ndarray) -> np.ndarray:
        """Weight of expected distances strictly greater than each ``d``."""
        # sorted queries keep searchsorted cache-friendly on millions of points
        return self.total - self.weight_upto(np.searchsorted(self.x, d, side="right"))

    def bandwidth(self) -> float:
        """Scott's bandwidth as scipy's ``gaussian_kde``: ``std(De, ddof=1) · n^(−1/5)``."""
        n = self.total
        if n <= 1:
            return 0.0
        if self.w is None:
            var = float(np.var(self.x, ddof=1))
        else:
            mean = np.dot(self.w, self.x) / n
            var = float(np.dot(self.w, (self.x - mean) ** 2) / (n - 1.0))
        return math.sqrt(max(var, 0.0)) * n ** (-0.2)


def _as_distribution(expected, weights) -> ExpectedDistribution:
    return expected if isinstance(expected, ExpectedDistribution) else ExpectedDistribution(expected, weights)


def ks_score(observed: np.ndarray, expected: np.ndarray | ExpectedDistribution, weights: np.ndarray | None = None,
             method: str = "exact", observed_weights: np.ndarray | None = None) -> float:
    """KS of paper 000's Table 1: mean over observed d of ``1 − p(d)``.

    ``p(d)`` is the one-sided KS p-value of the one-point sample ``{d}`` against the
    expected distances (alternative "greater"). Exactly, ``1 − p(d) = #{e > d}/(n + 1)``
    with ``n = |De|`` (docs/formulas.md §3).

    Parameters
    ----------
    observed : array, shape (n_observed,)
    expected : array, shape (n_expected,), or an ExpectedDistribution
    weights : array, shape (n_expected,), optional
        Frequency weights of the expected distances.
    method : {"exact", "scipy"}
        ``"exact"`` is the formula above. ``"scipy"`` replicates
        ``scipy.stats.ks_2samp(method="auto")`` as paper 000's code called it: above
        10,000 expected distances scipy switches to its asymptotic p-value, which is what
        Table 1 shows for the larger datasets.
    observed_weights : array, shape (n_observed,), optional
        Frequency weights (pair counts) of the observed distances: the mean is then over
        the expanded sample.

    Returns
    -------
    float in [0, 1]; 0.5 means indistinguishable from chance.
    """
    if method not in ("exact", "scipy"):
        raise BadInput(f"ks method must be 'exact' or 'scipy', got {method!r}")
    d, ow = _observed(observed, observed_weights)
    if d.size == 0:
        raise BadInput("KS needs at least one observed distance")
    dist = _as_distribution(expected, weights)
    n = dist.total
    above = dist.weight_above(d)
    if method == "exact" or n <= 10000:
        one_minus_p = above / (n + 1.0)
    else:
        z = math.sqrt(n / (n + 1.0)) * above / n
        one_minus_p = 1.0 - np.exp(-2.0 * z * z - 2.0 * z * (n + 2.0) / (3.0 * math.sqrt(n * (n + 1.0))))
    return float(np.mean(one_minus_p)) if ow is None else float(np.dot(ow, one_minus_p) / ow.sum())


def ks_statistic(observed: np.ndarray, expected: np.ndarray | ExpectedDistribution,
                 weights: np.ndarray | None = None, observed_weights: np.ndarray | None = None) -> float:
    """One-sided two-sample statistic ``D+ = max_x (F_Do(x) − F_De(x))``.

    The classic statistic of ``scipy.stats.ks_2samp(Do, De, alternative="greater")``.
    The supremum is reached at an observed point, where ``F_Do`` jumps.

    Parameters
    ----------
    observed : array, shape (n_observed,)
    expected : array, shape (n_expected,), or an ExpectedDistribution
    weights : array, shape (n_expected,), optional
    observed_weights : array, shape (n_observed,), optional — frequency weights of ``observed``
    """
    d, ow = _observed(observed, observed_weights)
    if d.size == 0:
        raise BadInput("KS statistic needs observed distances")
    dist = _as_distribution(expected, weights)
    if ow is None:
        f_do = np.searchsorted(d, d, side="right") / d.size
    else:
        cum = np.concatenate(([0.0], np.cumsum(ow)))
        f_do = cum[np.searchsorted(d, d, side="right")] / cum[-1]
    f_de = (dist.total - dist.weight_above(d)) / dist.total
    return float(max(0.0, np.max(f_do - f_de)))


def _observed(observed: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Observed distances sorted, with their frequency weights (None: one each); shape (n,) each."""
    d = np.asarray(observed, dtype=np.float64).ravel()
    if weights is None:
        return np.sort(d), None
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.shape != d.shape:
        raise BadInput(f"observed weights shape {w.shape} does not match observed distances {d.shape}")
    order = np.argsort(d, kind="stable")
    return d[order], w[order]


def kde_bandwidth(expected: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Scott's bandwidth as scipy's ``gaussian_kde``: ``std(De, ddof=1) · n^(−1/5)``."""
    return _as_distribution(expected, weights).bandwidth()


class _KdeMass:
    """``F(d) = ∫₀^d kde(x) dx`` for a (weighted) Gaussian KDE, windowed on sorted data.

    With ``stable=True`` every kernel's mass is summed as :func:`kernel_mass` (no
    subtraction of nearly equal totals, no truncated tail), for tiny ``p``.
    """

    def __init__(self, dist: ExpectedDistribution, bandwidth: float | None, stable: bool = False):
        self.dist = dist
        self.x = dist.x
        self.w = dist.w if dist.w is not None else None
        self.total = dist.total
        self.bw = dist.bandwidth() if bandwidth is None else float(bandwidth)
        if not math.isfinite(self.bw) or self.bw < 0:
            raise BadInput(f"bandwidth must be finite and >= 0, got {self.bw!r}")
        self.stable = stable and self.bw > 0
        if self.bw > 0:
            phi0 = ndtr(-self.x / self.bw)
            self.below_zero = float(phi0.sum() if self.w is None else np.dot(self.w, phi0)) / self.total
            if self.stable:  # Σ over kernels left of the window of their whole mass above 0
                full = ndtr(self.x / self.bw)
                self.cum_full = np.concatenate(([0.0], np.cumsum(full if self.w is None else self.w * full)))
        else:
            self.below_zero = float(dist.weight_upto(int(np.searchsorted(self.x, 0.0, side="left")))) / self.total

    def __call__(self, d: float) -> float:
        if self.stable:  # Φ(−39) underflows float64: farther kernels add exactly nothing
            lo = int(np.searchsorted(self.x, d - KERNEL_WINDOW * self.bw, side="left"))
            hi = int(np.searchsorted(self.x, d + 39.0 * self.bw, side="right"))
            k = kernel_mass(d, self.x[lo:hi], self.bw)
            inside = k.sum() if self.w is None else np.dot(self.w[lo:hi], k)
            return float((self.cum_full[lo] + inside) / self.total)
        if self.bw <= 0:
            # degenerate (all expected distances equal): the KDE is a point mass
            return float(self.dist.weight_upto(int(np.searchsorted(self.x, d, side="right")))) / self.total \
                - self.below_zero
        lo = int(np.searchsorted(self.x, d - KERNEL_WINDOW * self.bw, side="right"))
        hi = int(np.searchsorted(self.x, d + KERNEL_WINDOW * self.bw, side="left"))
        phi = ndtr((d - self.x[lo:hi]) / self.bw)
        inside = phi.sum() if self.w is None else np.dot(self.w[lo:hi], phi)
        return float((self.dist.weight_upto(lo) + inside) / self.total - self.below_zero)

    @property
    def sup(self) -> float:
        return float(self.cum_full[-1] / self.total) if self.stable else 1.0 - self.below_zero


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _from_bits(b: int) -> float:
    return float(np.int64(b).view(np.float64))


def _first_reaching(f, p: float, lo: float, hi: float) -> float:
    """The smallest float64 ``d`` in ``(lo, hi]`` with ``f(d) >= p``, given ``f(lo) < p <= f(hi)``.

    Bisection on the bit patterns of non-negative doubles (ordered like the values):
    at most 64 steps, and exact wherever ``f`` is monotone.
    """
    a, b = _bits(lo), _bits(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if f(_from_bits(mid)) >= p:
            b = mid
        else:
            a = mid
    return _from_bits(b)


def kde_mass(d: np.ndarray, expected: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """KDE mass of the expected distances on ``[0, d]``, per point (the slow direct form)."""
    f = _KdeMass(_as_distribution(expected, weights), None)
    return np.array([f(float(v)) for v in np.ravel(d)])


def sigma_threshold(expected: np.ndarray | ExpectedDistribution, p: float = 0.05,
                    weights: np.ndarray | None = None, bandwidth: float | None = None) -> float:
    """The distance ``d*`` with ``F(d*) = p``: observed distances below it are significant.

    ``F`` is the Gaussian-KDE mass of the expected distances on ``[0, d]`` (Scott's
    bandwidth), increasing in ``d``, so one root search replaces evaluating the KDE at
    every observed point (docs/formulas.md §3). Each evaluation costs O(points within 9
    bandwidths of ``d``); Brent's method narrows the root in a dozen, and a bisection on
    the bit patterns of doubles then returns the first double where ``F`` reaches ``p``,
    so ``d < d*`` is exactly ``F(d) < p``. Below ``p = 1e-8`` the mass is summed kernel by
    kernel without cancellation (:func:`kernel_mass`) and found by that bisection alone,
    which stays exact down to ``P_MIN = 1e-300``.

    Parameters
    ----------
    expected : array, shape (n_expected,), or an ExpectedDistribution
    p : float in [1e-300, 1)
    weights : array, shape (n_expected,), optional
    bandwidth : float, optional — override Scott's rule (bootstrap keeps it fixed).

    Returns
    -------
    float; ``inf`` if the KDE never reaches mass ``p`` above 0 (everything significant).

    Raises
    ------
    ValueError
        ``p`` outside ``(0, 1)`` or below ``P_MIN`` (its mass underflows double precision).
    """
    if not 0.0 < p < 1.0:
        raise BadInput(f"p must be in (0, 1), got {p}")
    if p < P_MIN:
        raise BadInput(f"p must be at least {P_MIN:g}, got {p:g}: a smaller kernel density mass "
                         "underflows double precision")
    dist = _as_distribution(expected, weights)
    f = _KdeMass(dist, bandwidth, stable=p < P_STABLE)
    if f.total <= 0:
        raise BadInput("sigma needs at least one expected distance")
    if f.sup < p:
        return math.inf
    if f.bw <= 0:
        # point masses: F jumps to >= p at the first expected value reaching it
        cum = np.arange(1, dist.x.size + 1) if dist.w is None else dist.cum[1:]
        reach = (cum / f.total - f.below_zero) >= p
        return float(dist.x[np.argmax(reach)])
    # bracket: F(0) = 0 < p; F at the upper end is within 1e-19 of sup >= p
    hi = float(dist.x[-1]) + KERNEL_WINDOW * f.bw
    if f(hi) < p:
        return math.inf
    if f(0.0) >= p:  # only rounding can put mass p on [0, 0]
        return 0.0
    lo = 0.0
    if not f.stable:
        # Brent narrows the bracket in a dozen evaluations; the bit bisection below makes
        # the threshold exact. (A tiny p is left to the bisection: Brent's tolerance is
        # relative to the bracket, not to a root near 1e-300.)
        root = brentq(lambda d: f(d) - p, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=200,
                      full_output=True, disp=False)[0]
        step = max(abs(root) * 1e-13, 1e-300)
        for _ in range(40):
            a, b = max(root - step, 0.0), min(root + step, hi)
            if (a == 0.0 or f(a) < p) and f(b) >= p:
                lo, hi = a, b
                break
            step *= 16.0
    # significance is F(d) < p: the threshold is the first double where F reaches p
    return _first_reaching(f, p, lo, hi)


def sigma_score(observed: np.ndarray, threshold: float, observed_weights: np.ndarray | None = None) -> float:
    """σ: the share of observed distances below ``d*`` (significantly better than chance).

    ``observed_weights`` (shape (n_observed,)): frequency weights (pair counts) of ``observed``.
    """
    d = np.asarray(observed, dtype=np.float64).ravel()
    if d.size == 0:
        raise BadInput("sigma needs at least one observed distance")
    if observed_weights is None:
        return float(np.mean(d < threshold))
    w = np.asarray(observed_weights, dtype=np.float64).ravel()
    return float(np.dot(w, d < threshold) / w.sum())
