"""span_f1_table: micro-averaging over tasks, labels and pairs equals summing pair results."""
import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.model import Span
from ls_agreement.metrics.span_f1 import span_f1, span_f1_table


def _table():
    rows = [
        (1, "a", (Span(0, 2, "PER"), Span(4, 6, "LOC"))),
        (1, "b", (Span(0, 2, "PER"), Span(3, 6, "LOC"))),
        (1, "c", (Span(1, 2, "PER"),)),
        (2, "a", (Span(2, 5, "ORG"),)),
        (2, "b", ()),
    ]
    return pd.DataFrame(rows, columns=["item", "annotator", "value"]), {1: 9, 2: 7}


def _by_label(value, label):
    return [s for s in value if s.label == label]


def _every_pair_and_label(table, n_tokens):
    """(item, annotator a, annotator b, label, span_f1 result) for every pair and label: the
    brute-force reference the micro-averages must equal."""
    for item, grp in table.groupby("item"):
        vals = dict(zip(grp["annotator"], grp["value"]))
        anns = list(vals)
        for x in range(len(anns)):
            for y in range(x + 1, len(anns)):
                a, b = vals[anns[x]], vals[anns[y]]
                for lab in {s.label for s in a} | {s.label for s in b}:
                    yield item, anns[x], anns[y], lab, span_f1(_by_label(a, lab), _by_label(b, lab), n_tokens[item])


def test_micro_average_equals_sum_of_pairwise_label_results():
    table, n_tokens = _table()
    res = span_f1_table(table, n_tokens)
    tp = etp = lsum = 0.0
    for _, _, _, _, r in _every_pair_and_label(table, n_tokens):
        tp, etp, lsum = tp + r.tp, etp + r.expected_tp, lsum + r.l1 + r.l2
    assert res.tp == pytest.approx(tp) and res.expected_tp == pytest.approx(etp) and res.l_sum == lsum
    assert res.observed == pytest.approx(2 * tp / lsum)
    chance = 2 * etp / lsum
    assert res.corrected == pytest.approx((2 * tp / lsum - chance) / (1 - chance))
    assert res.per_item.loc[1, "difficulty"] == pytest.approx(1 - res.per_item.loc[1, "chance"])
    assert set(res.per_annotator.index) == {"a", "b", "c"}
    d = res.to_dict()
    assert set(d["tasks"]) == {"1", "2"} and d["annotators"]["c"]["observed"] is not None


def test_reference_pairs_only_and_merge():
    table, n_tokens = _table()
    res = span_f1_table(table, n_tokens, reference="a")
    assert set(map(tuple, res.pairs[["annotator_a", "annotator_b"]].to_numpy())) == {("a", "b"), ("a", "c")}
    bad = pd.DataFrame([(1, "a", (Span(0, 3, "X"), Span(2, 5, "X"))), (1, "b", (Span(0, 5, "X"),))],
                       columns=["item", "annotator", "value"])
    with pytest.raises(ValueError, match="item 1, annotator 'a'"):
        span_f1_table(bad, {1: 8})
    merged = span_f1_table(bad, {1: 8}, on_overlap="merge")
    assert merged.observed == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no token count"):
        span_f1_table(table, {1: 9})


@pytest.mark.parametrize("seed", range(5))
def test_linear_sums_equal_pairwise_span_f1(seed):
    """Totals, per annotator, item and label from per-item sums (no pair table) equal the
    sums of span_f1 over every pair and label — many annotators, some marking nothing."""
    rng = np.random.default_rng(seed)
    rows, n_tokens = [], {}
    for item in range(4):
        n = int(rng.integers(8, 20))
        n_tokens[item] = n
        for a in range(int(rng.integers(2, 9))):
            spans, pos = [], 0
            while pos < n - 1 and rng.random() < 0.7:
                s = int(rng.integers(pos, n - 1))
                e = int(rng.integers(s + 1, min(n, s + 4) + 1))
                spans.append(Span(s, e, str(rng.choice(["PER", "ORG", "LOC"]))))
                pos = e
            rows.append((item, f"a{a}", tuple(spans)))
    table = pd.DataFrame(rows, columns=["item", "annotator", "value"])
    res = span_f1_table(table, n_tokens, max_pairs=0)
    assert res.pairs.empty  # nothing pairwise was built
    tot = {"all": np.zeros(3)}
    for item, ax, ay, lab, r in _every_pair_and_label(table, n_tokens):
        v = np.array([r.tp, r.expected_tp, r.l1 + r.l2])
        for key in ("all", ("ann", ax), ("ann", ay), ("item", item), ("label", lab)):
            tot[key] = tot.get(key, np.zeros(3)) + v
    cols = ["tp", "expected_tp", "l_sum"]
    np.testing.assert_allclose([res.tp, res.expected_tp, res.l_sum], tot["all"], rtol=1e-12)
    for kind, df in (("ann", res.per_annotator), ("item", res.per_item), ("label", res.per_label)):
        for key, row in df.iterrows():
            want = tot.get((kind, key), np.zeros(3))
            np.testing.assert_allclose(row[cols].to_numpy(dtype=float), want, rtol=1e-12, atol=1e-12)
    full = span_f1_table(table, n_tokens)
    assert not full.pairs.empty and full.corrected == pytest.approx(res.corrected, rel=1e-12)
