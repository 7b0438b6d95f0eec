"""Span chance model (paper 003): exact coverage vs brute force, closed forms, paper tables."""
import itertools

import numpy as np
import pytest

from ls_agreement.metrics.model import Span
from ls_agreement.metrics.span_chance import (coverage_nonoverlapping, coverage_overlapping,
                                              subset_length_distribution, uniform_gap)
from ls_agreement.metrics.span_f1 import char_spans_to_tokens, span_f1


def brute(n, lengths, overlapping=False):
    """Average coverage over every placement of the segments (all equally likely)."""
    if not lengths:
        return np.zeros(n)
    starts = np.array(list(itertools.product(*[range(n - l + 1) for l in lengths])))  # (P, k)
    t = np.arange(n)
    occ = sum(((t >= starts[:, [m]]) & (t < starts[:, [m]] + l)).astype(float)
              for m, l in enumerate(lengths))  # (P, n)
    if not overlapping:
        occ = occ[occ.max(axis=1) <= 1]
    return occ.mean(axis=0)


def test_nonoverlapping_equals_brute_force():
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 120:
        n = int(rng.integers(1, 15))
        lengths = rng.integers(1, 5, size=int(rng.integers(0, 5))).tolist()
        if sum(lengths) > n:
            continue
        np.testing.assert_allclose(coverage_nonoverlapping(n, lengths), brute(n, lengths), atol=1e-12, rtol=0)
        checked += 1


def test_expected_tp_equals_brute_force_over_both_annotators():
    rng = np.random.default_rng(3)
    for _ in range(25):
        n = int(rng.integers(4, 11))
        la = rng.integers(1, 4, size=int(rng.integers(1, 4))).tolist()
        lb = rng.integers(1, 4, size=int(rng.integers(1, 3))).tolist()
        if sum(la) > n or sum(lb) > n:
            continue
        # brute force E[TP] over the joint placements of both annotators
        place = lambda ls: [s for s in itertools.product(*[range(n - l + 1) for l in ls])
                            if np.bincount(np.concatenate([np.arange(a, a + l) for a, l in zip(s, ls)]),
                                           minlength=n).max() <= 1]
        pa, pb = place(la), place(lb)
        cover = lambda s, ls: np.isin(np.arange(n), np.concatenate([np.arange(a, a + l) for a, l in zip(s, ls)]))
        ca = np.mean([cover(s, la) for s in pa], axis=0)
        cb = np.mean([cover(s, lb) for s in pb], axis=0)
        etp = float(ca @ cb)
        got = span_f1(_layout(la), _layout(lb), n).expected_tp
        assert got == pytest.approx(etp, abs=1e-12)


def _layout(lengths):
    out, pos = [], 0
    for l in lengths:
        out.append(Span(pos, pos + l))
        pos += l
    return out


def test_overlapping_closed_form_and_brute_force():
    for n, lengths in [(10, [3]), (9, [2, 4]), (7, [1, 1, 3]), (12, [5, 5])]:
        t = np.arange(n)
        closed = sum((np.minimum(t, n - l) - np.maximum(0, t - l + 1) + 1) / (n - l + 1) for l in lengths)
        np.testing.assert_allclose(coverage_overlapping(n, lengths), closed, atol=1e-15)
        np.testing.assert_allclose(coverage_overlapping(n, lengths), brute(n, lengths, True), atol=1e-12)


def test_subset_length_distribution_by_enumeration():
    lengths = [1, 3, 3, 4, 6]
    p = subset_length_distribution(lengths)
    for j in range(len(lengths) + 1):
        sums = [sum(c) for c in itertools.combinations(lengths, j)]
        expect = np.bincount(sums, minlength=p.shape[1]) / len(sums)
        np.testing.assert_allclose(p[j], expect, atol=1e-15)


def test_coverage_sums_to_marked_length_on_long_text():
    lengths = np.random.default_rng(0).integers(1, 6, 200).tolist()
    cov = coverage_nonoverlapping(10_000, lengths)
    assert cov.sum() == pytest.approx(sum(lengths), rel=1e-9)
    assert cov.min() >= 0 and cov.max() <= 1


@pytest.mark.parametrize("seed", range(3))
def test_uniform_approximation_within_stated_tolerance(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(20, 400))
        la = rng.integers(1, 12, size=int(rng.integers(1, 8))).tolist()
        lb = rng.integers(1, 12, size=int(rng.integers(1, 8))).tolist()
        if sum(la) > n or sum(lb) > n:
            continue
        eps = max(uniform_gap(n, la), uniform_gap(n, lb))
        exact = span_f1(_layout(la), _layout(lb), n).expected_tp
        approx = span_f1(_layout(la), _layout(lb), n, approx_tol=np.inf).expected_tp
        assert abs(approx - exact) <= eps * exact + 1e-12


# paper 003, Tables 3, 5, 7, 9: token vectors and published ObsF1 / ChanceF1 / CorrF1 (4 decimals, truncated)
def _runs(bits):
    b = [int(x) for x in bits.split()]
    spans, i = [], 0
    while i < len(b):
        if b[i]:
            j = i
            while j < len(b) and b[j]:
                j += 1
            spans.append(Span(i, j))
            i = j
        else:
            i += 1
    return len(b), spans


A1 = "0 0 0 1 1 0 0 0 1 1 1 0 0 0 1 1 1 1 0 0"
A2 = "0 0 1 1 1 0 0 0 1 1 1 1 0 0 1 1 1 1 1 0"
GOLD = "1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"
PAPER = [
    (A1, A2, (0.8571, 0.5335, 0.6938)),
    (A1 + " 0" * 10, A2 + " 0" * 10, (0.8571, 0.3544, 0.7787)),
    ("0 0 0 0 0 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0", "0 0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 0 0 0 0", (0.8571, 0.6455, 0.5970)),
    ("0 0 0 0 0 0 0 0 1 1 1 0 0 0 0 0 0 0 0 0", "0 0 0 0 0 0 0 0 1 1 1 1 0 0 0 0 0 0 0 0", (0.8571, 0.1830, 0.8251)),
    (GOLD, "1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", (0.6522, 0.5013, 0.3026)),
    (GOLD, "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1", (0.6808, 0.5437, 0.3005)),
]


@pytest.mark.parametrize("a,b,expected", PAPER)
def test_paper_003_tables(a, b, expected):
    n, sa = _runs(a)
    _, sb = _runs(b)
    r = span_f1(sa, sb, n)
    assert (r.observed, r.chance, r.corrected) == pytest.approx(expected, abs=1.5e-4)


def test_overlap_rejected_in_non_overlapping_model():
    with pytest.raises(ValueError, match="overlap"):
        span_f1([Span(0, 3), Span(2, 4)], [Span(0, 1)], 10)
    with pytest.raises(ValueError, match="outside"):
        span_f1([Span(0, 11)], [Span(0, 1)], 10)


def test_char_spans_to_tokens():
    text = "Barack Obama visited New York City, today."
    n, toks = char_spans_to_tokens(text, [Span(0, 12, "PER"), Span(21, 34, "LOC"), Span(12, 13, "X"), Span(2, 4, "P")])
    assert n == 9  # Barack Obama visited New York City , today .
    assert toks == (Span(0, 2, "PER"), Span(3, 6, "LOC"), Span(0, 1, "P"))
    n, toks = char_spans_to_tokens(text, [Span(0, 6, "PER")], "chars")
    assert n == len(text) and toks[0] == Span(0, 6, "PER")
    with pytest.raises(ValueError, match="outside"):
        char_spans_to_tokens(text, [Span(0, 99)])
