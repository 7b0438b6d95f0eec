"""Crowd-sized paths (issue 9 item 8) against their brute-force forms.

The report of a crowd project must not list its pairs or loop over its annotators more than
once per task: the observed histogram is read off the pooled (item, value pair) cells, the
chance pairs drawn for one coded table are shared by its candidate distances, the span
coverage is merged for every value at once. Each is checked here against the plain
computation it replaces, exactly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement
from ls_agreement.metrics.distances.registry import get_distance
from ls_agreement.metrics.model import Span
from ls_agreement.metrics.table import code_table, sample_between_pairs
from ls_agreement.plugin.report.build import build_report

CONFIG = """<View><Text name="text" value="$text"/>
  <Choices name="label" toName="text"><Choice value="a"/><Choice value="b"/><Choice value="c"/></Choices>
</View>"""


def _crowd_export(n_annotators: int, n_tasks: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    tasks, ann_id = [], 0
    for t in range(n_tasks):
        anns = []
        for a in range(n_annotators):
            ann_id += 1
            label = "a" if rng.random() < 0.7 else str(rng.choice(["b", "c"]))
            anns.append({"id": ann_id, "completed_by": a + 1, "result": [
                {"id": f"r{ann_id}", "from_name": "label", "to_name": "text", "type": "choices",
                 "value": {"choices": [label]}}]})
        tasks.append({"id": t + 1, "data": {"text": "x"}, "annotations": anns})
    return tasks


def test_report_histogram_from_cells_equals_pairs() -> None:
    """The report's observed histogram (pooled cells, weighted) counts every pair as listing them does."""
    tasks = _crowd_export(60, 3)
    entry = build_report(CONFIG, tasks).controls["label"]
    # brute force: every within-task pair of labels, nominal distance
    d = []
    for t in tasks:
        labels = [a["result"][0]["value"]["choices"][0] for a in t["annotations"]]
        d += [float(x != y) for k, x in enumerate(labels) for y in labels[k + 1:]]
    edges = np.asarray(entry.histogram.edges)
    assert entry.histogram.observed == np.histogram(np.asarray(d), bins=edges)[0].tolist()
    assert sum(entry.histogram.observed) == entry.n_pairs == len(d)


def test_observed_distribution_weighs_cells_as_pairs() -> None:
    rng = np.random.default_rng(3)
    table = pd.DataFrame({"item": np.repeat(np.arange(4), 50), "annotator": np.tile(np.arange(50), 4),
                          "value": rng.integers(1, 6, size=200)})
    res = agreement(table, "interval", bootstrap=0)
    d, w = res.observed_distribution()
    assert w is not None and d.size < res.n_pairs  # pooled
    edges = np.linspace(0.0, 1.0, 31)
    assert np.array_equal(np.histogram(d, edges, weights=w)[0], np.histogram(res.observed, edges)[0])
    assert float(np.dot(d, w)) == pytest.approx(float(res.observed.sum()), rel=1e-12)


def test_repeated_between_draw_equals_a_fresh_one() -> None:
    """A draw repeated from the same generator state returns the pairs and the state a real draw gives."""
    table = pd.DataFrame({"item": np.repeat(np.arange(3), 40), "annotator": np.tile(np.arange(40), 3),
                          "value": np.arange(120) % 5})
    ct = code_table(table)
    first = sample_between_pairs(ct, 5000, np.random.default_rng(7))
    rng = np.random.default_rng(7)
    again = sample_between_pairs(ct, 5000, rng)           # from the table's last draw
    fresh_rng = np.random.default_rng(7)
    fresh = sample_between_pairs(code_table(table), 5000, fresh_rng)  # a new table: drawn for real
    for a, b, c in zip(first, again, fresh):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert rng.integers(0, 1 << 30, 8).tolist() == fresh_rng.integers(0, 1 << 30, 8).tolist()
    other = sample_between_pairs(ct, 5000, np.random.default_rng(8))  # another state: drawn anew
    assert not np.array_equal(other[0], first[0])
    assert np.all(ct.item[first[0]] != ct.item[first[1]])


def _coverage_by_loop(values: list[tuple[Span, ...]], tagged: bool) -> tuple[list, list, list, list]:
    """Disjoint coverage per value and label, one value and label at a time (the plain form)."""
    names = list(dict.fromkeys(sp.label for v in values for sp in v))  # label codes: first appearance
    ms, me, ml, count = [], [], [], []
    for v in values:
        n = 0
        for lab in (sorted({names.index(sp.label) for sp in v}) if tagged else ([0] if v else [])):
            iv = sorted((sp.start, sp.end) for sp in v if not tagged or names.index(sp.label) == lab)
            runs: list[list[int]] = []
            for s, e in iv:
                if runs and s <= runs[-1][1]:
                    runs[-1][1] = max(runs[-1][1], e)
                else:
                    runs.append([s, e])
            for s, e in runs:
                ms.append(s), me.append(e), ml.append(lab)
            n += len(runs)
        count.append(n)
    return ms, me, ml, count


@pytest.mark.parametrize("variant", ["lenient", "lenient_range"])
def test_span_coverage_merged_at_once_equals_per_value(variant: str) -> None:
    rng = np.random.default_rng(11)
    values = []
    for _ in range(300):
        spans = []
        for _ in range(int(rng.integers(0, 5))):
            s = int(rng.integers(0, 40))
            spans.append(Span(s, s + int(rng.integers(1, 9)), str(rng.choice(["PER", "ORG"])), None))
        values.append(tuple(sorted(spans, key=lambda x: (x.start, x.end))))
    prep = get_distance(f"spans.{variant}").prepare(values)
    ms, me, ml, count = _coverage_by_loop(values, variant == "lenient_range")
    assert prep["mstart"].tolist() == ms and prep["mend"].tolist() == me
    assert prep["mcounts"].tolist() == count
    if variant == "lenient_range":
        assert prep["mlabel"].tolist() == ml
