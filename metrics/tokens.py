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

from .model import Span
from .errors import BadInput

__all__ = ["TOKENIZERS", "char_spans_to_tokens", "token_bounds"]


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


