"""Chance-corrected agreement on a long table (item, annotator, value).

Knows nothing of Label Studio: any table with one row per annotator per item works.
"""
from .errors import AgreementError, BadInput
from .model import Box, Keypoint, Polygon, Span
from .distances import Distance, available, candidates, get_distance, register
from .engine import AgreementResult, agreement
from .alpha import krippendorff_alpha
from .kappa import cohen_kappa, fleiss_kappa, landis_koch
from .distributional import ks_score, ks_statistic, sigma_threshold, sigma_score

__all__ = [
    "BadInput", "AgreementError",
    "Box", "Polygon", "Keypoint", "Span",
    "Distance", "register", "get_distance", "available", "candidates",
    "agreement", "AgreementResult",
    "krippendorff_alpha", "cohen_kappa", "fleiss_kappa", "landis_koch",
    "ks_score", "ks_statistic", "sigma_threshold", "sigma_score",
]
from .choose import DistanceChoice, choose_distance, infer_kind
__all__ += ["choose_distance", "DistanceChoice", "infer_kind"]

# The seed papers' own measures: paper 001 κx, paper 003 span F1, paper 004 CrowdTruth.
from .cross_kappa import CrossKappaResult, cross_kappa
from .span_f1 import SpanF1Result, SpanF1TableResult, char_spans_to_tokens, span_f1, span_f1_table
from .crowdtruth import CrowdTruthResult, crowdtruth

__all__ += ["cross_kappa", "CrossKappaResult", "span_f1", "span_f1_table", "SpanF1Result",
            "SpanF1TableResult", "char_spans_to_tokens", "crowdtruth", "CrowdTruthResult"]
# More coefficients for scalar and categorical controls: ICC (Shrout–Fleiss / McGraw–Wong), Gwet.
from .icc import IccResult, icc
from .gwet import bennett_s, gwet_ac1, gwet_ac2, per_annotator_bias, scott_pi

__all__ += ["icc", "IccResult", "gwet_ac1", "gwet_ac2", "scott_pi", "bennett_s", "per_annotator_bias"]
# One result convention for every measure (docs/design.md "Results"); kinds named like registry prefixes.
from .result import Result
from .gwet import CacResult
from .distances.registry import KINDS, canonical_kind

__all__ += ["Result", "CacResult", "KINDS", "canonical_kind"]
# Agreement with a reference (ground truth, humans for a model) and error types of regions (issue 13).
from .reference import ReferenceResult, agreement_with_reference
from .error_types import ErrorTypesResult, error_types

__all__ += ["agreement_with_reference", "ReferenceResult", "error_types", "ErrorTypesResult"]
# Annotator × annotator agreement and agreement per label (issue 13).
from .pair_matrix import PairwiseAgreementResult, combine_pairwise, pairwise_agreement
from .per_label import PerLabelResult, label_confusion, per_label_agreement

__all__ += ["pairwise_agreement", "PairwiseAgreementResult", "combine_pairwise", "per_label_agreement",
            "PerLabelResult", "label_confusion"]
