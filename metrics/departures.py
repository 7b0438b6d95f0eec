"""How an answer of regions departs from the consensus answer: a region missed, one extra,
another label, another place (the error classes of :mod:`.error_types`, read for one pair
at a time: the consensus and the answer)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .distances.registry import canonical_kind
from .error_types import error_types

__all__ = ["REGION_KINDS", "how_departs"]

#: The kinds whose departures are told apart region by region.
REGION_KINDS = ("boxes", "polygons", "spans", "intervals")
_NOUN = {"boxes": "box", "polygons": "polygon", "spans": "span", "intervals": "interval"}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 'es' if noun == 'box' else 's'}"


def _moved(n: int, noun: str, kind: str) -> str:
    return f"other boundaries on {_count(n, noun)}" if kind == "spans" else f"{_count(n, noun)} elsewhere"


def how_departs(kind: str, consensus: Sequence[Any], answers: Sequence[Any]) -> list[str]:
    """For each pair ``(consensus[k], answers[k])`` of region lists, what the answer does
    differently: ``"missed 1 box"``, ``"2 extra spans"``, ``"another label on 1 box"``,
    ``"1 box elsewhere"`` (IoU under the error types' threshold; for spans, other
    boundaries), joined by ``"; "``; empty where nothing differs region by region.

    Parameters
    ----------
    kind : str
        One of :data:`REGION_KINDS` (singular names accepted).
    consensus, answers : sequences of the same length n
        Region lists (the common model's values).

    Returns
    -------
    list of str, length n
    """
    kind = canonical_kind(kind)
    if kind not in REGION_KINDS:
        raise ValueError(f"how_departs reads regions ({', '.join(REGION_KINDS)}), not {kind!r}")
    n = len(answers)
    if n == 0:
        return []
    table = pd.DataFrame({"item": np.repeat(np.arange(n), 2),
                          "annotator": np.tile(["a consensus", "b answer"], n),
                          "value": [v for pair in zip(consensus, answers) for v in pair]})
    pairs = error_types(table, kind=kind).pairs.set_index("item").reindex(np.arange(n))
    noun = _NOUN[kind]
    out = []
    for row in pairs.itertuples():
        parts = []
        if row.unmatched_a:
            parts.append(f"missed {_count(int(row.unmatched_a), noun)}")
        if row.unmatched_b:
            parts.append(f"{_count(int(row.unmatched_b), 'extra ' + noun)}")
        if row.label:
            parts.append(f"another label on {_count(int(row.label), noun)}")
        if row.localization:
            parts.append(_moved(int(row.localization), noun, kind))
        if row.both:
            parts.append(_moved(int(row.both), noun, kind) + " with another label")
        out.append("; ".join(parts))
    return out
