"""What a reader should make of each diagnostic code — the one place that explains them.

The engine emits codes (:mod:`ls_agreement.metrics.diagnostics`) with their figures and a
one-line statement; here is the advice the quality page shows under each.
"""
from __future__ import annotations

__all__ = ["ADVICE", "advice"]

ADVICE: dict[str, str] = {
    "no_variation": "Every answer is the same (or nobody used the control): chance agreement is perfect, so "
                    "agreement cannot be measured. This is not disagreement.",
    "expected_low_end": "Most chance pairs already agree (few possible values or one dominant answer), so d* sits "
                        "at the bottom of the scale and σ cannot rise above the share of exact matches; read α "
                        "and KS, and consider a finer-grained distance.",
    "observed_high_end": "Observed distances sit at the maximum: the distance only rewards exact matches. A lenient "
                         "distance (IoU instead of exact boxes, lenient spans, token edit distance) separates "
                         "near-agreement from chance better; try distance = auto.",
    "expected_multimodal": "The chance distances form several clusters (e.g. empty vs non-empty answers), so one "
                           "threshold d* summarises them poorly; look at the plot and the flagged tasks rather "
                           "than the headline σ alone.",
    "unpairable_items": "Tasks annotated by one person cannot be compared and do not count.",
    "sampled_expected": "The chance baseline comes from a random sample of between-task pairs (seeded): repeat "
                        "with another seed to see the sampling spread.",
    "chance_from_options": "Each task offers answers of its own (options read from task data, or the "
                           "messages of its conversation for answers given per chat message), so chance "
                           "agreement comes from what each task offers: options are matched by their place in "
                           "the task's list, between tasks offering as many. Answers chosen at random score "
                           "α ≈ 0.",
    "interval_undefined": "Too few tasks for the bootstrap to say anything; annotate more tasks twice or more.",
    "interval_flat": "Every resample gave the same value: with so few tasks the spread cannot be estimated.",
    "interval_misses": "The resampling distribution is too skewed for an honest interval here; trust the point "
                       "estimate less than usual.",
    "annotator_intervals_hidden": "Annotators with very few shared tasks get no interval rather than a "
                                  "misleading one.",
}


def advice(code: str) -> str:
    """The advice of a diagnostic code ("" for a code without advice)."""
    return ADVICE.get(code, "")
