"""Spans (paper 000's NER distances), sets (Jaccard, MASI vs nltk), vectors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.metrics import jaccard_distance, masi_distance

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.tokens import char_spans_to_tokens
from ls_agreement.metrics.model import Span as S


def test_span_modes_by_hand():
    a = (S(0, 4, "PER"), S(10, 12, "LOC"))
    b = (S(2, 6, "PER"), S(10, 12, "ORG"))
    # lenient: A's spans covered 2/4 and 2/2 -> P = .75; B's 2/4 and 2/2 -> R = .75
    assert get_distance("spans.lenient")(a, b) == pytest.approx(0.25)
    # tags must match: P = (2/4 + 0)/2 = .25 = R
    assert get_distance("spans.lenient_range")(a, b) == pytest.approx(0.75)
    # exact ranges, tags ignored: one shared of 2 + 2 -> F1 = .5
    assert get_distance("spans.lenient_tag")(a, b) == pytest.approx(0.5)
    assert get_distance("spans.strict")(a, b) == 1.0
    assert get_distance("spans.strict")(a, a) == 0.0
    assert get_distance("spans.count")(a, b[:1]) == 1.0


def test_overlapping_spans_of_b_count_each_unit_once():
    a = (S(0, 10, "X"),)
    b = (S(0, 6, "X"), S(4, 8, "X"))  # union covers 8 of A's 10 units
    p = 8 / 10
    r = 1.0  # both of B's spans lie inside A
    assert get_distance("spans.lenient")(a, b) == pytest.approx(1 - 2 * p * r / (p + r))


def test_span_empty_values():
    for m in ("lenient", "lenient_range", "lenient_tag", "strict"):
        d = get_distance(f"spans.{m}")
        assert d((), ()) == 0.0 and d((S(0, 1),), ()) == 1.0


def test_token_spans_from_characters():
    text = "John Smith lives in New-York."
    n, out = char_spans_to_tokens(text, [S(0, 10, "PER"), S(20, 28, "LOC"), S(2, 3, "X"), S(4, 5, "gap")],
                                  "wordpunct")
    assert n == 8  # John Smith lives in New - York .
    assert [(s.start, s.end) for s in out] == [(0, 2), (4, 7), (0, 1)]  # a span on no token is dropped


spans = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.sampled_from("AB"))
                 .map(lambda t: S(t[0], t[0] + t[1], t[2])), max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(spans, spans)
def test_span_bounds_symmetry_identity(a, b):
    for m in ("lenient", "lenient_range", "lenient_tag", "strict"):
        d = get_distance(f"spans.{m}")
        assert 0.0 <= d(a, b) <= 1.0
        assert d(a, b) == pytest.approx(d(b, a), abs=1e-12)
        assert d(a, a) == pytest.approx(0.0, abs=1e-12)


sets = st.frozensets(st.sampled_from("abcdefg"), max_size=5)


@settings(max_examples=100, deadline=None)
@given(st.lists(sets, min_size=2, max_size=8))
def test_sets_equal_nltk(values):
    n = len(values)
    i, j = np.triu_indices(n, 1)
    masi = get_distance("sets.masi").pairs(values, i, j)
    jac = get_distance("sets.jaccard").pairs(values, i, j)
    for k, (x, y) in enumerate(zip(i, j)):
        a, b = set(values[x]), set(values[y])
        if not a and not b:
            assert masi[k] == 0.0 and jac[k] == 0.0
            continue
        assert masi[k] == pytest.approx(masi_distance(a, b), abs=1e-15)
        assert jac[k] == pytest.approx(jaccard_distance(a, b), abs=1e-15)


def test_vectors():
    a, b = [1, 2, 3, 4], [1, 0, 3, 0]
    assert get_distance("vectors.binary")(a, b) == 0.5
    assert get_distance("vectors.rmse")(a, b) == pytest.approx(np.sqrt((4 + 16) / 4))
    with pytest.raises(ValueError, match="value #1 has 2 components"):
        get_distance("vectors.rmse").pairs([[1, 2, 3], [1, 2]], [0], [1])
