"""Text distances against nltk; ranking distances against scipy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.metrics import edit_distance
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from scipy.stats import kendalltau, spearmanr

from ls_agreement.metrics.distances import get_distance
from ls_agreement.metrics.distances.rankings import RankingDistance, rank_vectors

SENTENCES = [
    "the cat sat on the mat", "a cat sat on the mat", "the cat is on the mat today",
    "dogs bark", "the the the the", "completely different words here now", "mat", "",
    "It is a guide to action which ensures that the military always obeys the commands of the party",
    "It is a guide to action that ensures that the military will forever heed Party commands",
    "cat the", "on the mat the cat sat",
]
M4 = SmoothingFunction().method4


def _all_pairs(n):
    return np.triu_indices(n, 1)


def test_bleu_equals_nltk_both_directions():
    i, j = _all_pairs(len(SENTENCES))
    got = get_distance("text.bleu").pairs(SENTENCES, i, j)
    for k, (x, y) in enumerate(zip(i, j)):
        a, b = SENTENCES[x].split(), SENTENCES[y].split()
        if not a or not b:
            continue  # nltk divides by zero on an empty reference
        ref = 1 - (sentence_bleu([a], b, smoothing_function=M4) + sentence_bleu([b], a, smoothing_function=M4)) / 2
        assert got[k] == pytest.approx(ref, abs=1e-12), (SENTENCES[x], SENTENCES[y])


def test_gleu_equals_nltk_and_is_symmetric():
    i, j = _all_pairs(len(SENTENCES))
    got = get_distance("text.gleu").pairs(SENTENCES, i, j)
    for k, (x, y) in enumerate(zip(i, j)):
        a, b = SENTENCES[x].split(), SENTENCES[y].split()
        ref = 1 - (sentence_gleu([a], b) + sentence_gleu([b], a)) / 2
        assert got[k] == pytest.approx(ref, abs=1e-12)


def test_edit_distances_equal_nltk_normalized():
    i, j = _all_pairs(len(SENTENCES))
    tok = get_distance("text.levenshtein").pairs(SENTENCES, i, j)
    chars = get_distance("text.chars").pairs(SENTENCES, i, j)
    for k, (x, y) in enumerate(zip(i, j)):
        a, b = SENTENCES[x], SENTENCES[y]
        ta, tb = a.split(), b.split()
        assert tok[k] == pytest.approx(edit_distance(ta, tb) / max(len(ta), len(tb), 1), abs=1e-12)
        assert chars[k] == pytest.approx(edit_distance(a, b) / max(len(a), len(b), 1), abs=1e-12)


def test_identity_and_bad_value():
    for name in ("text.levenshtein", "text.chars", "text.bleu", "text.gleu"):
        d = get_distance(name)
        assert d("to be", "to be") == 0.0  # BLEU alone would not give 0 for 2 tokens
        with pytest.raises(ValueError, match="value #1 is int"):
            d.pairs(["a", 3], [0], [1])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="ab c", max_size=12), min_size=2, max_size=6))
def test_text_bounds_and_symmetry(values):
    i, j = _all_pairs(len(values))
    for name in ("text.levenshtein", "text.chars", "text.bleu", "text.gleu"):
        d = get_distance(name)
        fwd, bwd = d.pairs(values, i, j), d.pairs(values, j, i)
        assert np.all((fwd >= 0) & (fwd <= 1))
        np.testing.assert_allclose(fwd, bwd, atol=1e-12)


RANKS = [["a", "b", "c", "d", "e"], ["b", "a", "c", "e", "d"], ["e", "d", "c", "b", "a"],
         ["a", "c", "f"], ["g"], ["a", "b", "c", "d", "e"]]


def test_rankings_equal_scipy():
    i, j = _all_pairs(len(RANKS))
    for method, corr in (("kendall", kendalltau), ("spearman", spearmanr)):
        got = get_distance(f"rankings.{method}").pairs(RANKS, i, j)
        for k, (x, y) in enumerate(zip(i, j)):
            # union of ids, missing ones ranked after everything shown (|U|)
            u = list(dict.fromkeys(RANKS[x] + RANKS[y]))
            ra = [RANKS[x].index(d) if d in RANKS[x] else len(u) for d in u]
            rb = [RANKS[y].index(d) if d in RANKS[y] else len(u) for d in u]
            r = corr(ra, rb)[0]
            assert got[k] == pytest.approx((1 - r) / 2, abs=1e-12)


def test_ranking_top_k_padding_and_buckets():
    a, b = ["a", "b", "c", "d", "e", "f"], ["b", "a", "x", "y", "e", "f"]
    va, vb = rank_vectors({x: n for n, x in enumerate(a)}, {x: n for n, x in enumerate(b)}, top_k=2, pad=3)
    np.testing.assert_array_equal(va, [0, 1, 2, 2, 2])
    np.testing.assert_array_equal(vb, [1, 0, 2, 2, 2])
    d = RankingDistance("kendall", top_k=2, pad=3)(a, b)
    assert d == pytest.approx((1 - kendalltau(va, vb)[0]) / 2)
    # a bucket ties its ids: [(a, b), c] vs [b, a, c] differ only in the a/b order
    tie = get_distance("rankings.kendall")([("a", "b"), "c"], ["a", "b", "c"])
    assert tie == pytest.approx((1 - kendalltau([0, 0, 1], [0, 1, 2])[0]) / 2)
    assert get_distance("rankings.kendall")(["a"], ["a"]) == 0.0
    assert get_distance("rankings.kendall")(["a"], ["b"]) == pytest.approx((1 - kendalltau([0, 2], [2, 0])[0]) / 2)
    assert get_distance("rankings.kendall_top10").name == "rankings.kendall_top10"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.permutations(list("abcdef")).map(lambda p: p[:4]), min_size=2, max_size=5))
def test_ranking_bounds_and_symmetry(values):
    i, j = _all_pairs(len(values))
    for name in ("rankings.kendall", "rankings.spearman", "rankings.kendall_top5"):
        d = get_distance(name)
        fwd, bwd = d.pairs(values, i, j), d.pairs(values, j, i)
        assert np.all((fwd >= 0) & (fwd <= 1))
        np.testing.assert_allclose(fwd, bwd, atol=1e-12)
