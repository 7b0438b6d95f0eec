"""Free text (TextArea): token Levenshtein, character edit distance, BLEU and GLEU.

References: paper 000 appendix ("Translations"); docs/formulas.md §4; Papineni et al. 2002
(BLEU) with Chen & Cherry's smoothing method 4 as nltk implements it; Wu et al. 2016
(GLEU) as nltk's ``sentence_gleu``.

- ``text.levenshtein``: edit distance on token sequences / the longer length, in [0, 1].
- ``text.chars``: edit distance on characters / the longer length.
- ``text.bleu``: ``1 − (bleu(a, b) + bleu(b, a)) / 2``, nltk ``sentence_bleu`` (weights
  0.25 × 4, ``SmoothingFunction().method4``). ``smoothing="nltk345"`` gives the older
  method 4 of nltk 3.4.5 that paper 000's Table 1 used.
- ``text.gleu``: ``1 − gleu(a, b)`` (nltk's GLEU is symmetric: matches / max of the two
  n-gram counts, n = 1..4).

Speed: each distinct string is tokenized once, tokens become int ids, and only distinct
unordered string pairs are computed. Edit distances run in C (rapidfuzz ``cpdist`` on
the id sequences); BLEU/GLEU count the clipped n-gram matches of all pairs at once
(shared n-gram occurrences, a sparse product) and keep the exact arithmetic of nltk's
code for the rest, once per distinct (matches, lengths) (tests check equality with nltk
itself).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

from .base import Distance
from ._ragged import hashable_codes, intersection_sizes, membership_matrix, unique_pair_apply
from .registry import register
from ..errors import BadInput

__all__ = ["TextDistance", "TOKENIZERS", "bleu_from_counts"]

_WORDPUNCT = re.compile(r"\w+|[^\w\s]+")
TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "whitespace": str.split,                      # runs of whitespace
    "space": lambda s: s.split(" "),              # paper 000's code: one space, empty tokens kept
    "wordpunct": _WORDPUNCT.findall,              # nltk WordPunctTokenizer's pattern
}
METRICS = ("levenshtein", "chars", "bleu", "gleu")
BLEU_K = 5  # nltk SmoothingFunction's default k


def _ngram_counts(ids: tuple[int, ...], n_max: int = 4) -> list[Counter]:
    """Per order n = 1..n_max, the Counter of the sequence's n-grams (index n - 1)."""
    return [Counter(zip(*(ids[k:] for k in range(n)))) for n in range(1, n_max + 1)]


def _clipped(hyp: Counter, ref: Counter) -> int:
    """Clipped n-gram matches, ``sum(min(hyp[g], ref[g]))`` over the shared n-grams: the
    same in both directions, so BLEU's two directions share one count."""
    return sum(min(c, ref[g]) for g, c in hyp.items() if g in ref)


def bleu_from_counts(hyp: list[Counter], hyp_len: int, ref: list[Counter], ref_len: int,
                     smoothing: str = "method4") -> float:
    """Sentence BLEU of a hypothesis against one reference, as nltk's ``sentence_bleu``.

    Same steps and float operations as nltk 3.10's ``corpus_bleu`` with
    ``modified_precision`` and ``SmoothingFunction().method4`` (uniform 4-gram weights),
    so the values are identical.
    """
    nums = [_clipped(h, r) for h, r in zip(hyp, ref)]
    return _bleu(nums, [max(1, sum(h.values())) for h in hyp], hyp_len, ref_len, smoothing)


def _bleu(nums: list[int], dens: list[int], hyp_len: int, ref_len: int, smoothing: str) -> float:
    """BLEU's float part from the clipped matches and the hypothesis' n-gram counts per
    order (:func:`bleu_from_counts`; split out so both directions reuse ``nums``)."""
    if nums[0] == 0:
        return 0.0
    p: list[float] = []
    inc = 1
    for n, (num, den) in enumerate(zip(nums, dens)):
        if num == 0 and hyp_len > 1:
            if smoothing == "nltk345":
                p.append(1.0 / (n + 1 * BLEU_K / math.log(hyp_len)))
            else:
                p.append((1 / (2 ** inc * BLEU_K / math.log(hyp_len))) / den)
                inc += 1
        else:
            p.append(num / den)
    if hyp_len > ref_len:
        bp = 1.0
    elif hyp_len == 0:
        bp = 0.0
    else:
        bp = math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(math.fsum(0.25 * math.log(x) for x in p if x > 0))


class TextDistance(Distance):
    """Distance between two texts.

    Parameters
    ----------
    variant : {"levenshtein", "chars", "bleu", "gleu"}
    tokenizer : {"whitespace", "space", "wordpunct"} or callable str -> list[str]
        "space" splits on single spaces exactly as paper 000's code did.
    smoothing : {"method4", "nltk345"}
        BLEU only: today's nltk method 4, or nltk 3.4.5's (paper 000's Table 1).
    """

    kind = "text"

    def __init__(self, variant: str = "levenshtein",
                 tokenizer: str | Callable[[str], list[str]] = "whitespace",
                 smoothing: str = "method4") -> None:
        if variant not in METRICS:
            raise BadInput(f"text variant must be one of {METRICS}, got {variant!r}")
        if isinstance(tokenizer, str) and tokenizer not in TOKENIZERS:
            raise BadInput(f"tokenizer must be one of {sorted(TOKENIZERS)} or a callable")
        if smoothing not in ("method4", "nltk345"):
            raise BadInput(f"smoothing must be 'method4' or 'nltk345', got {smoothing!r}")
        self.metric = variant
        self.tokenize = TOKENIZERS[tokenizer] if isinstance(tokenizer, str) else tokenizer
        self.smoothing = smoothing
        self.name = "text.chars" if variant == "chars" else f"text.{variant}"

    def prepare(self, values: Sequence[Any]) -> dict:
        for v, x in enumerate(values):
            if not isinstance(x, str):
                raise BadInput(f"{self.name}: value #{v} is {type(x).__name__} ({x!r:.60}), expected text")
        keys, texts = hashable_codes(values)
        prep: dict = {"keys": keys, "texts": texts}
        if self.metric == "chars":
            return prep
        vocab: dict[str, int] = {}
        prep["ids"] = [tuple(vocab.setdefault(t, len(vocab)) for t in self.tokenize(s)) for s in texts]
        if self.metric in ("bleu", "gleu"):
            prep["occurrences"] = _occurrence_matrices(prep["ids"])
        return prep

    def compute(self, prep: dict, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        return unique_pair_apply(prep["keys"], i, j, lambda ka, kb: self._batch(prep, ka, kb))

    def _batch(self, prep: dict, ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
        """Distances of distinct text pairs ``(ka[k], kb[k])``, shape (n_unique,).

        Identical texts get 0 (a distance's identity), which smoothed BLEU alone would
        not give for sentences shorter than 4 tokens.
        """
        out = self._scores(prep, ka, kb)
        out[ka == kb] = 0.0
        return out

    def _scores(self, prep: dict, ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
        if self.metric in ("levenshtein", "chars"):
            seqs = prep["texts"] if self.metric == "chars" else prep["ids"]
            a = [seqs[k] for k in ka]
            b = [seqs[k] for k in kb]
            raw = cpdist(a, b, scorer=Levenshtein.distance, dtype=np.int64, workers=1)
            longest = np.maximum([len(x) for x in a], [len(x) for x in b]) if a else np.zeros(0)
            return np.where(longest > 0, raw / np.maximum(longest, 1), 0.0).astype(np.float64)
        ids = prep["ids"]
        # clipped matches of every pair per order, shape (n_unique, 4): the shared
        # occurrences of the two sentences' n-grams (symmetric: one count serves both
        # directions of BLEU)
        matches = np.stack([intersection_sizes(m, ka, kb) for m in prep["occurrences"]], axis=1).astype(np.int64)
        if self.metric == "gleu":
            # each sentence's n-grams of every order: max(0, L − n + 1) for n = 1..4
            lengths = np.array([len(x) for x in ids], dtype=np.int64)
            totals = sum(np.maximum(lengths - n + 1, 0) for n in range(1, 5))
            n_all = np.maximum(totals[ka], totals[kb])
            tp = matches.sum(axis=1)
            # integers well under 2**53: numpy's division is Python's int / int
            return 1.0 - np.where(n_all > 0, tp / np.maximum(n_all, 1), 0.0)
        out = np.empty(ka.size)
        # per sentence, its n-gram count per order (BLEU's denominators): max(1, L − n + 1)
        lens = [len(x) for x in ids]
        dens = [[max(1, length - n + 1) for n in range(1, 5)] for length in lens]
        sm = self.smoothing
        # BLEU of one direction depends on the matches, the hypothesis' denominators and the
        # two lengths only, and a sentence's denominators on its length alone: pairs of
        # sentences of the same lengths and matches share the float work
        done: dict[tuple, float] = {}
        for n, (x, y, nums) in enumerate(zip(ka.tolist(), kb.tolist(), matches.tolist())):
            lx, ly = lens[x], lens[y]
            key = (*nums, lx, ly)
            fwd_bwd = done.get(key)
            if fwd_bwd is None:
                fwd = _bleu(nums, dens[y], ly, lx, sm)
                bwd = fwd if lx == ly else _bleu(nums, dens[x], lx, ly, sm)
                fwd_bwd = done[key] = 1.0 - (fwd + bwd) / 2.0
            out[n] = fwd_bwd
        return out


def _occurrence_matrices(ids: Sequence[tuple[int, ...]], n_max: int = 4) -> list[sp.csr_matrix]:
    """Per n-gram order n = 1..n_max, a binary matrix with a row per sentence and a column
    per (n-gram, k-th occurrence in the sentence): two rows share ``min(count_a, count_b)``
    columns of an n-gram, so their intersection size is the clipped match count
    (:func:`_clipped` of the two sentences' :func:`_ngram_counts`). Built with numpy on all
    sentences at once: n-grams are coded order by order (an n-gram is an (n−1)-gram and
    one more token), occurrences are ranked within each (sentence, n-gram).

    Parameters
    ----------
    ids : sequence of tuple of int, shape (n_sentences,)
        Token ids of each sentence.

    Returns
    -------
    list of csr_matrix, length n_max, each of shape (n_sentences, n_columns)
    """
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(lengths.sum()))
    if not flat.size:               # no tokens anywhere: nothing matches
        return [sp.csr_matrix((lengths.size, 1)) for _ in range(n_max)]
    sentence = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    position = np.arange(flat.size, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out = []
    code = flat                      # code[p]: the n-gram starting at p (valid while it fits)
    for n in range(1, n_max + 1):
        if n > 1:
            nxt = np.zeros_like(flat)              # the n-th token of the n-gram at each position
            nxt[:max(flat.size - n + 1, 0)] = flat[n - 1:]
            _, code = np.unique(code * (int(flat.max()) + 1) + nxt, return_inverse=True)
            code = code.ravel().astype(np.int64)
        fits = position + n <= lengths[sentence]
        s_, g_ = sentence[fits], code[fits]
        n_grams = int(g_.max()) + 1 if g_.size else 1
        key = s_ * n_grams + g_
        order = np.argsort(key, kind="stable")
        k_sorted = key[order]
        run_start = np.flatnonzero(np.r_[True, k_sorted[1:] != k_sorted[:-1]]) if k_sorted.size else np.zeros(0, np.int64)
        run = np.repeat(run_start, np.diff(np.r_[run_start, k_sorted.size]))
        occurrence = np.empty_like(order)
        occurrence[order] = np.arange(order.size) - run
        _, column = np.unique(g_ * (int(occurrence.max()) + 1 if occurrence.size else 1) + occurrence,
                              return_inverse=True)
        column = column.ravel()
        out.append(sp.csr_matrix((np.ones(column.size), (s_, column)),
                                 shape=(lengths.size, max(int(column.max()) + 1 if column.size else 0, 1))))
    return out


for _metric in METRICS:
    register("text.chars" if _metric == "chars" else f"text.{_metric}", TextDistance(_metric),
             kind="text", candidate=True)
