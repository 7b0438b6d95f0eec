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


def test_micro_average_equals_sum_of_pairwise_label_results():
    table, n_tokens = _table()
    res = span_f1_table(table, n_tokens)
    tp = etp = lsum = 0.0
    for item, grp in table.groupby("item"):
        vals = dict(zip(grp["annotator"], grp["value"]))
        anns = list(vals)
        for x in range(len(anns)):
            for y in range(x + 1, len(anns)):
                a, b = vals[anns[x]], vals[anns[y]]
                for lab in {s.label for s in a} | {s.label for s in b}:
                    r = span_f1(_by_label(a, lab), _by_label(b, lab), n_tokens[item])
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
