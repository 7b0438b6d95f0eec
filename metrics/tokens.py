"""Character offsets (Label Studio's) -> token offsets, with tokenizers that need no data.

Paper 000's span distances and paper 003's span F1 both count tokens (docs/formulas.md §4, §7);
this is the one place that maps Label Studio's character spans onto them.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from types import ModuleType
from typing import Sequence

import numpy as np

from .model import Span, unchecked_span
from .errors import BadInput

__all__ = ["TOKENIZERS", "char_spans_to_tokens", "many_char_spans_to_tokens", "token_bounds"]


TOKENIZERS = ("nltk", "wordpunct", "chars")


def _nltk_tokenize() -> ModuleType:
    """``nltk.tokenize``, imported on first use.

    nltk's package init imports all of nltk (and, where scikit-learn is installed, two of
    its modules import that too), so only a measure that tokenizes pays for it: importing
    ``ls_agreement.metrics`` or reporting a project without spans on text never loads nltk.
    """
    return importlib.import_module("nltk.tokenize")


@lru_cache(maxsize=4096)
def token_bounds(text: str, tokenizer: str) -> tuple[np.ndarray, np.ndarray]:
    if tokenizer == "nltk":
        bounds = list(_nltk_tokenize().NLTKWordTokenizer().span_tokenize(text))
    elif tokenizer == "wordpunct":
        bounds = list(_nltk_tokenize().WordPunctTokenizer().span_tokenize(text))
    else:
        raise BadInput(f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}")
    arr = np.asarray(bounds, dtype=np.int64).reshape(-1, 2)
    return arr[:, 0].copy(), arr[:, 1].copy()


def char_spans_to_tokens(text: str, spans: Sequence[Span], tokenizer: str = "nltk",
                         bounds: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
                         ) -> tuple[int, tuple[Span, ...]]:
    """Map character-offset spans (Label Studio) to token offsets.

    Parameters
    ----------
    text : str
        The object's text.
    spans : sequence of Span, shape (k,)
        Character offsets ``[start, end)``.
    tokenizer : {"nltk", "wordpunct", "chars"}
        ``nltk``: ``NLTKWordTokenizer().span_tokenize`` (Treebank rules, no data
        download); ``wordpunct``: ``WordPunctTokenizer``; ``chars``: every character
        is a token.
    bounds : dict text -> token bounds, optional
        The caller's memo of tokenized texts (``token_bounds``' own cache holds 4,096
        texts: a project with more distinct texts, read task by task, would tokenize
        most of them again and again; the caller keeps its memo as long as it reads).

    Returns
    -------
    n_tokens : int
    token_spans : tuple of Span
        A span covers every token its characters touch; a span touching no token
        (only whitespace) is dropped. Labels and text are kept. Reference: docs/formulas.md
        §7 (paper 003 counts tokens).
    """
    n_chars = len(text)
    for sp in spans:
        if not 0 <= int(sp.start) <= int(sp.end) <= n_chars:
            raise BadInput(f"span [{sp.start}, {sp.end}) ({sp.text!r}) lies outside the "
                             f"text of {n_chars} characters")
    if tokenizer == "chars":
        return n_chars, tuple(sp for sp in spans if sp.end > sp.start)
    if bounds is None:
        tok_start, tok_end = token_bounds(text, tokenizer)
    else:
        got = bounds.get(text)
        if got is None:
            got = bounds[text] = token_bounds(text, tokenizer)
        tok_start, tok_end = got
    if not spans:
        return int(tok_start.size), ()
    cs = np.fromiter((sp.start for sp in spans), dtype=np.int64, count=len(spans))
    ce = np.fromiter((sp.end for sp in spans), dtype=np.int64, count=len(spans))
    first = np.searchsorted(tok_end, cs, side="right")   # first token ending after start
    stop = np.searchsorted(tok_start, ce, side="left")   # tokens starting before end
    out = tuple(Span(int(a), int(b), sp.label, sp.text)
                for sp, a, b in zip(spans, first.tolist(), stop.tolist()) if b > a)
    return int(tok_start.size), out


def many_char_spans_to_tokens(texts: Sequence[str], spans: Sequence[Sequence[Span]], tokenizer: str = "nltk",
                              bounds: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
                              ) -> tuple[list[int], list[tuple[Span, ...]]]:
    """:func:`char_spans_to_tokens` of many ``(text, spans)`` at once, with the same results.

    A crowd project maps tens of thousands of annotations: one pair of ``searchsorted``
    over every text's token bounds laid end to end (text ``d`` shifted past all before it,
    so no search crosses into another text) instead of two per annotation.

    Parameters
    ----------
    texts : sequence of str, shape (k,)
    spans : sequence of sequences of Span, shape (k,)
        Character offsets ``[start, end)`` on ``texts[i]``.
    tokenizer, bounds
        As :func:`char_spans_to_tokens`.

    Returns
    -------
    n_tokens : list of int, shape (k,)
    token_spans : list of tuples of Span, shape (k,)

    Raises
    ------
    ValueError
        The first span (in order) outside its text, as :func:`char_spans_to_tokens` says it.
    """
    if tokenizer == "chars" or len(texts) == 0:
        pairs = [char_spans_to_tokens(t, s, tokenizer, bounds) for t, s in zip(texts, spans)]
        return [n for n, _ in pairs], [tok for _, tok in pairs]
    if bounds is None:
        bounds = {}
    # each distinct text once, in order of first use
    slot: dict[str, int] = {}
    text_of = np.fromiter((slot.setdefault(t, len(slot)) for t in texts), dtype=np.int64, count=len(texts))
    distinct = list(slot)
    tok = []
    for t in distinct:
        got = bounds.get(t)
        if got is None:
            got = bounds[t] = token_bounds(t, tokenizer)
        tok.append(got)
    n_chars = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    n_tok = np.fromiter((s.size for s, _ in tok), dtype=np.int64, count=len(tok))
    shift = np.cumsum(n_chars + 1) - (n_chars + 1)      # text d's characters at shift[d] + [0, len]
    before = np.cumsum(n_tok) - n_tok                    # tokens of the texts before d
    tok_start = np.concatenate([s for s, _ in tok] + [np.zeros(0, np.int64)]) + np.repeat(shift, n_tok)
    tok_end = np.concatenate([e for _, e in tok] + [np.zeros(0, np.int64)]) + np.repeat(shift, n_tok)

    counts = np.fromiter(map(len, spans), dtype=np.int64, count=len(spans))
    flat = [sp for group in spans for sp in group]
    cs = np.fromiter((sp.start for sp in flat), dtype=np.int64, count=len(flat))
    ce = np.fromiter((sp.end for sp in flat), dtype=np.int64, count=len(flat))
    d = np.repeat(text_of, counts)
    bad = np.flatnonzero((cs < 0) | (cs > ce) | (ce > n_chars[d]))
    if bad.size:
        sp = flat[int(bad[0])]
        raise BadInput(f"span [{sp.start}, {sp.end}) ({sp.text!r}) lies outside the "
                       f"text of {int(n_chars[d[bad[0]]])} characters")
    first = (np.searchsorted(tok_end, shift[d] + cs, side="right") - before[d]).tolist()
    stop = (np.searchsorted(tok_start, shift[d] + ce, side="left") - before[d]).tolist()
    # a project's answers hold a few hundred distinct token spans: one object each, shared
    made: dict[tuple, Span] = {}

    def token_span(sp: Span, a: int, b: int) -> Span:
        key = (a, b, sp.label, sp.text)
        try:
            got = made.get(key)
        except TypeError:  # an unhashable label
            return unchecked_span(a, b, sp.label, sp.text)
        if got is None:
            got = made[key] = unchecked_span(a, b, sp.label, sp.text)
        return got

    # ... and equal token answers (on different texts) one tuple: the same spans, by identity
    answers: dict[tuple[int, ...], tuple[Span, ...]] = {}
    out: list[tuple[Span, ...]] = []
    k = 0
    for c in counts.tolist():
        toks = tuple(token_span(sp, a, b) for sp, a, b in zip(flat[k:k + c], first[k:k + c], stop[k:k + c]) if b > a)
        out.append(answers.setdefault(tuple(map(id, toks)), toks))
        k += c
    return n_tok[text_of].tolist(), out
