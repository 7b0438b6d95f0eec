"""Paper 000's data: per-pair distances against the authors' arrays, and α/KS/σ against
the authors'-code means in reference.json (Braylan, Alonso & Lease 2022, Table 1)."""
from __future__ import annotations

import numpy as np
import pytest

from ls_agreement.metrics import agreement
from ls_agreement.metrics.distances.rankings import RankingDistance
from ls_agreement.metrics.distances.text import TextDistance
from ls_agreement.metrics.distances.vectors import VectorDistance

from .conftest import load_pairs, load_rows, load_table

# (dataset, reference.json name, file stem, our distance, our scale relative to theirs)
CASES = [
    ("vectors", "Binary", "Binary", VectorDistance("binary"), 1.0),
    ("vectors", "Euclidean", "Euclidean", VectorDistance("rmse"), 1.0),
    # their rankings distance is 1 - r; ours (1 - r) / 2 (same α, KS, σ)
    ("ranked_lists", "Kendall tau @5", "Kendall_tau_at5", RankingDistance("kendall", top_k=5, pad=50), 0.5),
    ("ranked_lists", "Kendall tau", "Kendall_tau", RankingDistance("kendall", top_k=25, pad=50), 0.5),
    ("ranked_lists", "Spearman rho", "Spearman_rho", RankingDistance("spearman", top_k=25, pad=50), 0.5),
    ("translations", "GLEU", "GLEU", TextDistance("gleu", tokenizer="space"), 1.0),
    ("translations", "BLEU (current nltk)", "BLEU_nltk_310_method4", TextDistance("bleu", tokenizer="space"), 1.0),
    ("translations", "BLEU", "BLEU", TextDistance("bleu", tokenizer="space", smoothing="nltk345"), 1.0),
]


@pytest.mark.parametrize("dataset,_ref,stem,dist,scale", CASES, ids=[c[2] for c in CASES])
def test_pair_distances_equal_the_authors(dataset, _ref, stem, dist, scale):
    rows = [r["annotation"] for r in load_rows(dataset)]
    ref = load_pairs(dataset, stem)
    for which in ("observed", "expected"):
        pairs = np.asarray(ref[f"{which}_pairs"][:1500])
        got = dist.pairs(rows, pairs[:, 0], pairs[:, 1])
        # the stored arrays are rounded to 12 decimals
        np.testing.assert_allclose(got, scale * np.asarray(ref[which][:1500]), rtol=0, atol=1e-9)


def _paper_agreement(dataset: str, dist, seed: int = 0):
    table = load_table(dataset)
    n_obs = int(sum(m * (m - 1) // 2 for m in table.groupby("item").size()))
    # paper 000's construction: every row its own coding, as many expected pairs as observed
    return agreement(table, dist, form="pairwise", duplicates="keep", ks_method="scipy", bootstrap=0,
                     expected_pairs=n_obs, seed=seed)


@pytest.mark.parametrize("dataset,refname,_stem,dist,_scale", CASES, ids=[c[2] for c in CASES])
def test_alpha_ks_sigma_reproduce_reference(braylan_reference, dataset, refname, _stem, dist, _scale):
    """reference.json's rule: the mean over 5 expected-pair seeds within the tolerance.

    One seed is not enough: σ is a step function of d*, and where observed distances pile
    up near d* (BLEU) a single expected sample can move σ by more than the tolerance. Our
    seeds draw other pairs than the authors' (another generator), so the mean of five is
    only an estimate of our own mean: on BLEU its seeds' σ spread 0.005 (the authors' 0.0005,
    their σ reads a smoothed curve), so 20 seeds are averaged there.
    """
    metrics = braylan_reference["datasets"][dataset]["distances"][refname]["metrics"]
    n_seeds = 20 if dataset == "translations" else 5
    runs = [_paper_agreement(dataset, dist, seed) for seed in range(n_seeds)]
    for key in ("alpha", "ks", "sigma"):
        ours = float(np.mean([getattr(r, key) for r in runs]))
        m = metrics[key]
        assert abs(ours - m["mean"]) <= m["tolerance"], (refname, key, ours, m["mean"], m["tolerance"])


def test_ks_orders_translation_distances_as_paper():
    ks = {name: _paper_agreement("translations", TextDistance(name, tokenizer="space")).ks
          for name in ("levenshtein", "bleu", "gleu")}
    assert ks["levenshtein"] < ks["bleu"] < ks["gleu"], ks
