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
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd

from .distances import registry
from .distances.registry import DistanceLike
from .engine import AgreementResult, Duplicates, Form, KsMethod, Scored, agreement, score
from .model import Attributed, Box, Curve, Ellipse, Interval, Keypoint, Mask, Polygon, Relation, Span, Track
from .result import Result, strict_json
from .table import code_table, tabular
from .errors import BadInput

__all__ = ["infer_kind", "DistanceChoice", "choose_distance"]

_REGION_KINDS = {Box: "boxes", Polygon: "polygons", Keypoint: "keypoints", Span: "spans", Interval: "intervals",
                 Track: "tracks", Mask: "masks", Ellipse: "ellipses", Curve: "curves",
                 Relation: "relations", Attributed: "attributes"}


def _is_number(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.bool_))


def infer_kind(values: Sequence[Any]) -> str:
    """The value kind of a column of annotation values.

    Rules (first match; ``None`` values are skipped):

    - sequences of Box / Polygon / Keypoint / Span / Interval -> "boxes" / "polygons" /
      "keypoints" / "spans" / "intervals" (empty sequences fit any of them; all empty -> error);
      sequences of Track -> "tracks"; of Relation / Attributed -> "relations" / "attributes";
    - (frozen)sets -> "sets";
    - numbers -> "scalars";
    - strings -> "text" when most are distinct and some contain whitespace (free text),
      else "scalars" (labels);
    - other sequences: of strings, or of distinct ids/buckets -> "rankings"; of numbers
      with a repeated element, or floats -> "vectors". A numeric sequence of distinct
      integers is taken as a ranking — pass candidates explicitly when it is a vector.

    Kinds are named like the registry prefixes of their distances (``"sets"`` ->
    ``sets.jaccard``; ``registry.KINDS``).

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
        raise BadInput("cannot infer the value kind: no values")
    kinds = {_kind_of(v, n) for n, v in enumerate(vals)}
    kinds.discard("empty")
    if not kinds:
        raise BadInput("cannot infer the value kind: every value is an empty sequence")
    if kinds == {"str"}:
        strs = [v for v in vals if isinstance(v, str)]
        free = any(any(c.isspace() for c in s.strip()) for s in strs) and len(set(strs)) > 0.5 * len(strs)
        return "text" if free else "scalars"
    if kinds <= {"vectors", "rankings"} and kinds:
        return "vectors" if "vectors" in kinds else "rankings"
    if len(kinds) > 1:
        raise BadInput(f"cannot infer one value kind: values mix {sorted(kinds)}")
    return kinds.pop()


def _kind_of(v: Any, n: int) -> str:
    if isinstance(v, str):
        return "str"
    if _is_number(v):
        return "scalars"
    if isinstance(v, (set, frozenset)):
        return "sets"
    if isinstance(v, dict):
        raise BadInput(f"value #{n} is a dict ({v!r:.60}): no distance compares dicts; "
                         "convert it to the common model (metrics.model) first")
    try:
        seq = list(v)
    except TypeError:
        raise BadInput(f"value #{n} ({v!r:.60}) has type {type(v).__name__}, which no distance compares") from None
    if not seq:
        return "empty"
    region = {_REGION_KINDS.get(type(x)) for x in seq}
    if len(region) == 1 and None not in region:
        return region.pop()
    if any(type(x) in _REGION_KINDS for x in seq):
        raise BadInput(f"value #{n} mixes region types: {sorted({type(x).__name__ for x in seq})}")
    if all(_is_number(x) for x in seq):
        floats = any(isinstance(x, (float, np.floating)) and not float(x).is_integer() for x in seq)
        return "vectors" if floats or len(set(seq)) < len(seq) else "rankings"
    return "rankings"


@dataclass(frozen=True)
class DistanceChoice(Result):
    """Candidates ranked by KS, and the winner's agreement: ``estimate`` and ``ci`` are the
    winner's α and intervals (``result.estimate``, ``result.ci``).

    Attributes
    ----------
    table : DataFrame
        One row per candidate — ``distance, alpha, ks, sigma, ks_statistic, n_pairs,
        status`` — sorted by KS, best first (paper 000's Table 1 layout). ``status`` is
        ``"no_variation"`` for a candidate under which every distance is 0 (its α, KS and
        σ are undefined and it ranks last), else ``"ok"``.
    winner : str
        Registry name of the candidate with the highest KS (ties: higher σ, then the
        earlier candidate).
    result : AgreementResult
        The winner's full agreement, with ``bootstrap`` intervals; its pairs and chance
        distances are those the ranking computed.
    scores : dict[str, Scored]
        Every computed candidate, without intervals; the losers keep their numbers only
        (:meth:`~.engine.Scored.numbers_only`: not their pairs or chance sample).
    errors : dict[str, str]
        Candidates that could not be computed on this table, with the reason.
    """

    table: pd.DataFrame
    winner: str
    result: AgreementResult
    scores: dict[str, Scored]
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def estimate(self) -> float:
        """The winner's α."""
        return self.result.estimate

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        """The winner's intervals (``ci["alpha"]``, ``ci["ks"]``, ``ci["sigma"]``)."""
        return self.result.ci

    def to_dict(self, *, items: bool = False, annotators: bool = True) -> dict[str, Any]:
        """Strict-JSON dict: ``winner``, the ranked ``candidates`` (rows of ``table``), the
        winner's ``result`` (:meth:`AgreementResult.to_dict`) and ``errors``."""
        return {"winner": self.winner, "candidates": strict_json(self.table.to_dict("records")),
                "result": self.result.to_dict(items=items, annotators=annotators),
                "errors": dict(self.errors)}


@tabular()
def choose_distance(table: pd.DataFrame, candidates: Sequence[DistanceLike] | None = None, *,
                    p: float = 0.05, form: Form = "canonical",
                    expected_pairs: int | Literal["all"] | None = None, seed: int = 0,
                    bootstrap: int = 1000, duplicates: Duplicates = "error", flag_below: float = 0.0,
                    ks_method: KsMethod = "exact", confidence: float = 0.95) -> DistanceChoice:
    """α, KS and σ for each candidate distance; the highest KS wins (paper 000 §6.2).

    The one ``auto`` path: every candidate is scored without intervals on one coding of the
    table, and only the winner gets the full :func:`~.engine.agreement` (per item, per
    annotator, ``bootstrap`` intervals), continuing from its score.

    Parameters
    ----------
    table : DataFrame with columns item, annotator, value
    candidates : sequence of registered names or distances, optional
        Default: ``registry.candidates(infer_kind(table["value"]))``.
    p, form, expected_pairs, seed, bootstrap, duplicates, flag_below, ks_method, confidence
        As in :func:`~.engine.agreement`; every candidate gets the same seed, so every
        candidate sees the same expected pairs.

    Returns
    -------
    DistanceChoice

    Raises
    ------
    ValueError
        No candidate for the inferred kind, or none could be computed.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "annotator": list("ababab"),
    ...                   "value": [1, 1, 4, 5, 2, 3]})
    >>> choose_distance(t, ["nominal", "interval"], bootstrap=0).winner
    'interval'
    """
    if "value" not in getattr(table, "columns", ()):
        raise BadInput("choose_distance needs a table with columns item, annotator, value")
    if candidates is None:
        kind = infer_kind(table["value"].tolist())
        candidates = registry.candidates(kind)
        if not candidates:
            raise BadInput(f"no candidate distances registered for value kind {kind!r}")
    names = [c if isinstance(c, str) else registry.get_distance(c).name for c in candidates]
    if not names:
        raise BadInput("choose_distance needs at least one candidate distance")
    ct = code_table(table, duplicates)
    scores: dict[str, Scored] = {}
    errors: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    best: str | None = None
    best_at = -1
    for name, cand in zip(names, candidates):
        try:
            r = score(ct, cand, p=p, form=form, expected_pairs=expected_pairs, seed=seed, ks_method=ks_method)
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        rows.append({"distance": name, "alpha": r.alpha, "ks": r.ks, "sigma": r.sigma,
                     "ks_statistic": r.ks_statistic, "n_pairs": int(r.core.n_pairs),
                     "status": "ok" if r.d_e > 0 else "no_variation"})
        scores[name] = r
        # only the best so far keeps its arrays: the winner's agreement continues from them,
        # and a large table's pairs, chance sample and prepared values are held for one
        # candidate at a time (issue 24)
        if best is None or _rank(rows[-1], len(rows) - 1) < _rank(rows[best_at], best_at):
            if best is not None:
                scores[best] = scores[best].numbers_only()
            best, best_at = name, len(rows) - 1
        else:
            scores[name] = r.numbers_only()
        del r    # the last candidate's arrays must not outlive the loop (the winner's agreement runs next)
    if not scores:
        detail = "; ".join(f"{k}: {v}" for k, v in errors.items())
        raise BadInput(f"no candidate distance could be computed on this table ({detail})")
    df = pd.DataFrame(rows, columns=["distance", "alpha", "ks", "sigma", "ks_statistic", "n_pairs", "status"])
    order = sorted(range(len(rows)), key=lambda k: _rank(rows[k], k))
    df = df.iloc[order].reset_index(drop=True)
    winner = str(df["distance"].iloc[0])     # == best
    result = agreement(table, scores[winner], bootstrap=bootstrap, flag_below=flag_below, confidence=confidence)
    return DistanceChoice(table=df, winner=winner, result=result, scores=scores, errors=errors)


def _rank(row: dict[str, Any], at: int) -> tuple[bool, float, float, int]:
    """Sort key of a candidate's row (lower ranks first): a candidate under which every
    distance is 0 (no variation) says nothing about agreement, so its KS of 0 must not tie
    with, or beat, one that does separate; then KS, then σ, then the earlier candidate."""
    return (row["status"] != "ok", -_key(row["ks"]), -_key(row["sigma"]), at)


def _key(x: float) -> float:
    return -math.inf if x is None or not math.isfinite(x) else float(x)
