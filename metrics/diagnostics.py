"""Conditions that make agreement numbers hard to read, as codes.

The engine reports a :class:`Diagnostic` per condition: a stable ``code``, the figures in
``detail``, and a one-line message built from :data:`MESSAGES`. What to do about each
code (the advice on the quality page) is written in one place,
:mod:`ls_agreement.plugin.report.explain`. A diagnostic is also a ``str`` (its message),
so it prints and compares as text.

Codes
-----
``no_variation``            every distance is 0: agreement undefined, not low
``expected_low_end``        chance distances piled at the low end (σ can only be small)
``observed_high_end``       observed distances piled at the maximum (a strict distance)
``expected_multimodal``     chance distances in several clusters: one d* summarises poorly
``unpairable_items``        items with a single value were skipped
``sampled_expected``        chance distances from a seeded sample of between-item pairs
``chance_from_options``     items offer their own answers: chance within strata (``strata``, ``unpaired``)
``interval_undefined``      no bootstrap replicate defined an interval (``measure``)
``interval_flat``           every replicate gave one value (``measure``, ``value``)
``interval_misses``         the interval did not contain its estimate (``measure``, ``low``, ``high``, ``estimate``)
``annotator_intervals_hidden``  per-annotator intervals not shown (``measure``, ``count``, ``problem``)
"""
from __future__ import annotations

from typing import Any

import numpy as np
from .errors import BadInput

__all__ = ["Diagnostic", "MESSAGES", "CODES", "expected_modes"]

MESSAGES: dict[str, str] = {
    "no_variation": "no variation: every distance between values is 0, so chance agreement is perfect "
                    "and α, KS and σ are undefined (not low)",
    "expected_low_end": "expected distances piled at the low end: few possible values, so chance agreement "
                        "is high and σ can only be small",
    "observed_high_end": "observed distances piled at the high end: a strict (exact-match) distance; "
                         "a lenient distance may separate agreement from chance better",
    "expected_multimodal": "expected distances are multi-modal ({modes} modes): one threshold d* "
                           "summarises them poorly",
    "unpairable_items": "{count} item(s) with a single value were skipped (not pairable)",
    "sampled_expected": "expected distances from a seeded sample of {pairs} between-item pairs",
    "chance_from_options": "chance from the answers each item offers: options matched by their position in "
                           "the item's list, chance pairs within {strata} group(s) of items offering as many "
                           "answers ({unpaired} group(s) of a single item have none)",
    "interval_undefined": "no interval for {measure}: no bootstrap replicate defined it",
    "interval_flat": "no interval for {measure}: every bootstrap replicate gave {value:.4g}, so the "
                     "resampling shows no uncertainty (too few items, or no variation)",
    "interval_misses": "no interval for {measure}: the bootstrap interval [{low:.4g}, {high:.4g}] does not "
                       "contain the estimate {estimate:.4g} (too few items, or a very skewed resampling "
                       "distribution)",
    "annotator_intervals_hidden": "{count} per-annotator {measure} interval(s) not shown: {why}",
}
CODES = tuple(MESSAGES)

_HIDDEN_WHY = {"interval_undefined": "no bootstrap replicate defined them",
               "interval_flat": "every bootstrap replicate gave one value (no uncertainty shown)",
               "interval_misses": "they did not contain their estimate"}


class Diagnostic(str):
    """A diagnostic: its message as text, with ``code`` and ``detail`` (the figures)."""

    code: str
    detail: dict[str, Any]

    def __new__(cls, code: str, **detail: Any) -> "Diagnostic":
        if code not in MESSAGES:
            raise BadInput(f"unknown diagnostic code {code!r}; known: {', '.join(CODES)}")
        fields = dict(detail)
        if code == "annotator_intervals_hidden":
            fields["why"] = _HIDDEN_WHY[detail["problem"]]
        obj = super().__new__(cls, MESSAGES[code].format(**fields))
        obj.code = code
        obj.detail = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in detail.items()}
        return obj

    def __reduce__(self):  # pickling (worker processes) keeps the code
        return (_rebuild, (self.code, self.detail))


def _rebuild(code: str, detail: dict[str, Any]) -> Diagnostic:
    return Diagnostic(code, **detail)


def expected_modes(counts: np.ndarray, min_pairs: int = 100) -> int:
    """Number of well-separated peaks of a histogram of chance distances (a valley below
    half the smaller peak separates two). Few distinct distances (nominal 0/1, short
    rating scales) are spikes by nature, and a handful of pairs is noise: neither is the
    multi-modality of paper 000 §6.1, so they count as one mode."""
    c = np.asarray(counts, dtype=float)
    if c.sum() < min_pairs or np.count_nonzero(c) <= 5 or c.size < 3:
        return 1 if c.sum() > 0 else 0
    sm = np.convolve(np.pad(c, 1, mode="edge"), [0.25, 0.5, 0.25], mode="valid")
    top = sm.max()
    peaks = [k for k in range(sm.size) if sm[k] >= 0.1 * top
             and (k == 0 or sm[k] > sm[k - 1]) and (k == sm.size - 1 or sm[k] >= sm[k + 1])]
    n = 1 if peaks else 0
    for a, b in zip(peaks, peaks[1:]):
        if sm[a:b + 1].min() < 0.5 * min(sm[a], sm[b]):
            n += 1
    return n
