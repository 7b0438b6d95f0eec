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
the id sequences); BLEU/GLEU reuse each sentence's n-gram counts, computed once, with the
exact arithmetic of nltk's code (tests check equality with nltk itself).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cpdist

from .base import Distance
from ._ragged import hashable_codes, unique_pair_apply
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
            prep["ngrams"] = [_ngram_counts(ids) for ids in prep["ids"]]
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
        grams, ids = prep["ngrams"], prep["ids"]
        out = np.empty(ka.size)
        if self.metric == "gleu":
            totals = [sum(sum(c.values()) for c in g) for g in grams]
            for n, (x, y) in enumerate(zip(ka.tolist(), kb.tolist())):
                n_all = max(totals[x], totals[y])
                tp = sum(_clipped(gx, gy) for gx, gy in zip(grams[x], grams[y]))
                out[n] = 1.0 - (tp / n_all if n_all > 0 else 0.0)
            return out
        # per sentence, its n-gram count per order (BLEU's denominators), computed once
        dens = [[max(1, sum(c.values())) for c in g] for g in grams]
        sm = self.smoothing
        for n, (x, y) in enumerate(zip(ka.tolist(), kb.tolist())):
            lx, ly = len(ids[x]), len(ids[y])
            # clipped matches are symmetric: one count serves both directions
            nums = [_clipped(gx, gy) for gx, gy in zip(grams[x], grams[y])]
            fwd = _bleu(nums, dens[y], ly, lx, sm)
            bwd = fwd if x == y else _bleu(nums, dens[x], lx, ly, sm)
            out[n] = 1.0 - (fwd + bwd) / 2.0
        return out


for _metric in METRICS:
    register("text.chars" if _metric == "chars" else f"text.{_metric}", TextDistance(_metric),
             kind="text", candidate=True)
