"""How an answer of regions departs from the consensus answer: a region missed, one extra,
another label, another place (the error classes of :mod:`.error_types`, read for one pair
at a time: the consensus and the answer)."""
from __future__ import annotations

from typing import Any, Sequence

from .distances.registry import canonical_kind
from .error_types import pair_error_counts

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
    if len(answers) == 0:
        return []
    counts, missed, extra = pair_error_counts(consensus, answers, kind=kind)
    noun = _NOUN[kind]
    out = []
    for (_, moved, label, both), a_only, b_only in zip(counts.tolist(), missed.tolist(), extra.tolist()):
        parts = []
        if a_only:
            parts.append(f"missed {_count(a_only, noun)}")
        if b_only:
            parts.append(f"{_count(b_only, 'extra ' + noun)}")
        if label:
            parts.append(f"another label on {_count(label, noun)}")
        if moved:
            parts.append(_moved(moved, noun, kind))
        if both:
            parts.append(_moved(both, noun, kind) + " with another label")
        out.append("; ".join(parts))
    return out
