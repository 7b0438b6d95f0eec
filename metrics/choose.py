"""Choosing the distance function by KS (paper 000 §6.2).

A better distance separates observed (within-item) distances from chance (between-item)
distances more sharply; KS measures that separation, so among candidate distances the
one with the highest KS wins. :func:`choose_distance` computes α, KS and σ for every
candidate and returns them in the layout of paper 000's Table 1.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .distances import registry
from .model import Box, Keypoint, Polygon, Span

__all__ = ["infer_kind", "DistanceChoice", "choose_distance"]

_REGION_KINDS = {Box: "boxes", Polygon: "polygons", Keypoint: "keypoints", Span: "spans"}


def _is_number(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.bool_))


def infer_kind(values: Sequence[Any]) -> str:
    """The value kind of a column of annotation values.

    Rules (first match; ``None`` values are skipped):

    - sequences of Box / Polygon / Keypoint / Span -> "boxes" / "polygons" / "keypoints" /
      "spans" (empty sequences fit any of them; all empty -> error);
    - (frozen)sets -> "set";
    - numbers -> "scalar";
    - strings -> "text" when most are distinct and some contain whitespace (free text),
      else "scalar" (labels);
    - other sequences: of strings, or of distinct ids/buckets -> "ranking"; of numbers
      with a repeated element, or floats -> "vector". A numeric sequence of distinct
      integers is taken as a ranking — pass candidates explicitly when it is a vector.

    Parameters
    ----------
    values : sequence, shape (n_values,)

    Raises
    ------
    ValueError
        No value to look at, mixed kinds, or a type no distance compares.
    """
    vals = [v for v in values if v is not None]
    if not vals:
        raise ValueError("cannot infer the value kind: no values")
    kinds = {_kind_of(v, n) for n, v in enumerate(vals)}
    kinds.discard("empty")
    if not kinds:
        raise ValueError("cannot infer the value kind: every value is an empty sequence")
    if kinds == {"str"}:
        strs = [v for v in vals if isinstance(v, str)]
        free = any(any(c.isspace() for c in s.strip()) for s in strs) and len(set(strs)) > 0.5 * len(strs)
        return "text" if free else "scalar"
    if kinds <= {"vector", "ranking"} and kinds:
        return "vector" if "vector" in kinds else "ranking"
    if len(kinds) > 1:
        raise ValueError(f"cannot infer one value kind: values mix {sorted(kinds)}")
    return kinds.pop()


def _kind_of(v: Any, n: int) -> str:
    if isinstance(v, str):
        return "str"
    if _is_number(v):
        return "scalar"
    if isinstance(v, (set, frozenset)):
        return "set"
    if isinstance(v, dict):
        raise ValueError(f"value #{n} is a dict ({v!r:.60}): no distance compares dicts; "
                         "convert it to the common model (metrics.model) first")
    try:
        seq = list(v)
    except TypeError:
        raise ValueError(f"value #{n} ({v!r:.60}) has type {type(v).__name__}, which no distance compares") from None
    if not seq:
        return "empty"
    region = {_REGION_KINDS.get(type(x)) for x in seq}
    if len(region) == 1 and None not in region:
        return region.pop()
    if any(type(x) in _REGION_KINDS for x in seq):
        raise ValueError(f"value #{n} mixes region types: {sorted({type(x).__name__ for x in seq})}")
    if all(_is_number(x) for x in seq):
        floats = any(isinstance(x, (float, np.floating)) and not float(x).is_integer() for x in seq)
        return "vector" if floats or len(set(seq)) < len(seq) else "ranking"
    return "ranking"


@dataclass
class DistanceChoice:
    """Candidates ranked by KS.

    Attributes
    ----------
    table : DataFrame
        One row per candidate — ``distance, alpha, ks, sigma, ks_statistic, n_pairs`` —
        sorted by KS, best first (paper 000's Table 1 layout).
    winner : str
        Registry name of the candidate with the highest KS (ties: higher σ, then the
        earlier candidate); candidates without variation (every distance 0) rank last.
    results : dict[str, AgreementResult]
    errors : dict[str, str]
        Candidates that could not be computed on this table, with the reason.
    """

    table: pd.DataFrame
    winner: str
    results: dict[str, Any]
    errors: dict[str, str] = field(default_factory=dict)


def choose_distance(table: pd.DataFrame, candidates: Sequence[str] | None = None,
                    **agreement_kwargs: Any) -> DistanceChoice:
    """α, KS and σ for each candidate distance; the highest KS wins (paper 000 §6.2).

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value
    candidates : sequence of registered names, optional
        Default: ``registry.candidates(infer_kind(table["value"]))``.
    **agreement_kwargs
        Passed to :func:`~ls_agreement.metrics.agreement` for every candidate (the same
        seed, so every candidate sees the same expected pairs).

    Returns
    -------
    DistanceChoice

    Raises
    ------
    ValueError
        No candidate for the inferred kind, or none could be computed.
    """
    from .engine import agreement

    if "value" not in getattr(table, "columns", ()):
        raise ValueError("choose_distance needs a table with columns item, annotator, value")
    if candidates is None:
        kind = infer_kind(table["value"].tolist())
        candidates = registry.candidates(kind)
        if not candidates:
            raise ValueError(f"no candidate distances registered for value kind {kind!r}")
    names = [c if isinstance(c, str) else registry.get_distance(c).name for c in candidates]
    if not names:
        raise ValueError("choose_distance needs at least one candidate distance")
    results: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, cand in zip(names, candidates):
        try:
            results[name] = agreement(table, cand, **agreement_kwargs)
        except ValueError as exc:
            errors[name] = str(exc)
    if not results:
        detail = "; ".join(f"{k}: {v}" for k, v in errors.items())
        raise ValueError(f"no candidate distance could be computed on this table ({detail})")
    rows = [{"distance": n, "alpha": r.alpha, "ks": r.ks, "sigma": r.sigma,
             "ks_statistic": r.ks_statistic, "n_pairs": r.n_pairs} for n, r in results.items()]
    df = pd.DataFrame(rows, columns=["distance", "alpha", "ks", "sigma", "ks_statistic", "n_pairs"])
    # a candidate under which every distance is 0 (no variation) says nothing about agreement:
    # its KS of 0 must not tie with, or beat, a candidate that does separate
    flat = [not results[r["distance"]].d_e > 0 for r in rows]
    order = sorted(range(len(rows)), key=lambda k: (flat[k], -_key(rows[k]["ks"]), -_key(rows[k]["sigma"]), k))
    df = df.iloc[order].reset_index(drop=True)
    return DistanceChoice(table=df, winner=str(df["distance"].iloc[0]), results=results, errors=errors)


def _key(x: float) -> float:
    return -math.inf if x is None or not math.isfinite(x) else float(x)
