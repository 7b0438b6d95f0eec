"""The span control's shortcuts (issue 24) against plain references: the batch mapping of
character spans to tokens against the one-text mapping, and span F1 in the overlapping model
(self overlaps, shared answers, one value object on texts of different lengths) against
span_f1 summed over every pair and label."""
import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.errors import BadInput
from ls_agreement.metrics.model import Span
from ls_agreement.metrics.span_f1 import span_f1, span_f1_table
from ls_agreement.metrics.tokens import char_spans_to_tokens, many_char_spans_to_tokens

WORDS = ["Alice", "works", "at", "Acme", "Corp.", "in", "Paris", ",", "doesn't", "she", "?", "\"Hi\"", "(x)", "  "]


def _text(rng) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(0, 12)))).strip() if rng.random() > 0.1 else "   "


def _spans(rng, text: str) -> tuple:
    out = []
    for _ in range(int(rng.integers(0, 5))):
        s = int(rng.integers(0, len(text) + 1))
        e = int(rng.integers(s, len(text) + 1))
        out.append(Span(s, e, str(rng.choice(["PER", "LOC"])), text[s:e]))
    return tuple(out)


@pytest.mark.parametrize("tokenizer", ["nltk", "wordpunct", "chars"])
def test_batch_mapping_equals_one_text_at_a_time(tokenizer):
    rng = np.random.default_rng(3)
    texts = [_text(rng) for _ in range(40)]
    texts += texts[:10]   # texts met again, in another order
    answers = [_spans(rng, t) for t in texts]
    n, tok = many_char_spans_to_tokens(texts, answers, tokenizer)
    for t, a, n_k, tok_k in zip(texts, answers, n, tok):
        n_ref, tok_ref = char_spans_to_tokens(t, a, tokenizer)
        assert n_k == n_ref
        assert [(s.start, s.end, s.label, s.text) for s in tok_k] == [(s.start, s.end, s.label, s.text) for s in tok_ref]


def test_batch_mapping_names_the_first_span_outside_its_text():
    texts = ["Alice works", "at Acme", "in Paris"]
    answers = [(Span(0, 5, "PER"),), (Span(3, 9, "ORG", "Acme!!"),), (Span(0, 99, "LOC"),)]
    with pytest.raises(BadInput) as got:
        many_char_spans_to_tokens(texts, answers)
    with pytest.raises(BadInput) as want:
        char_spans_to_tokens(texts[1], answers[1])
    assert str(got.value) == str(want.value)


def _overlapping_table(seed: int):
    rng = np.random.default_rng(seed)
    rows, n_tokens = [], {}
    shared = (Span(0, 3, "PER"), Span(1, 4, "PER"), Span(2, 3, "LOC"))   # one object on several items
    for item in range(6):
        n = int(rng.integers(5, 14))
        n_tokens[item] = n
        for a in range(int(rng.integers(2, 7))):
            if rng.random() < 0.3:
                rows.append((item, f"a{a}", shared))
                continue
            spans = []
            for _ in range(int(rng.integers(0, 4))):
                s = int(rng.integers(0, n - 1))
                e = int(rng.integers(s + 1, min(n, s + 5) + 1))
                spans.append(Span(s, e, str(rng.choice(["PER", "LOC"]))))
            rows.append((item, f"a{a}", tuple(spans)))
    return pd.DataFrame(rows, columns=["item", "annotator", "value"]), n_tokens


@pytest.mark.parametrize("seed", range(4))
def test_overlapping_model_equals_pairwise_span_f1(seed):
    table, n_tokens = _overlapping_table(seed)
    ref = {}
    for item, grp in table.groupby("item"):
        vals = list(zip(grp["annotator"], grp["value"]))
        for x in range(len(vals)):
            for y in range(x + 1, len(vals)):
                (ax, va), (ay, vb) = vals[x], vals[y]
                for lab in {s.label for s in va} | {s.label for s in vb}:
                    r = span_f1([s for s in va if s.label == lab], [s for s in vb if s.label == lab],
                                n_tokens[item], "overlapping")
                    v = np.array([r.tp, r.expected_tp, r.l1 + r.l2])
                    for key in ("all", ("ann", ax), ("ann", ay), ("item", item), ("pair", ax, ay)):
                        ref[key] = ref.get(key, np.zeros(3)) + v
    for max_pairs in (0, 200_000):
        res = span_f1_table(table, n_tokens, "overlapping", max_pairs=max_pairs)
        np.testing.assert_allclose([res.tp, res.expected_tp, res.l_sum], ref["all"], rtol=1e-12)
        for kind, df in (("ann", res.per_annotator), ("item", res.per_item)):
            for key, row in df.iterrows():
                np.testing.assert_allclose(row[["tp", "expected_tp", "l_sum"]].to_numpy(dtype=float),
                                           ref.get((kind, key), np.zeros(3)), rtol=1e-12, atol=1e-12)
    for _, row in res.pairs.iterrows():
        np.testing.assert_allclose(row[["tp", "expected_tp", "l_sum"]].to_numpy(dtype=float),
                                   ref.get(("pair", row["annotator_a"], row["annotator_b"]), np.zeros(3)),
                                   rtol=1e-12, atol=1e-12)
