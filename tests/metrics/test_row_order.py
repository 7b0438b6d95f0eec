"""The same data in another row order gives the same numbers.

Label Studio returns a project's tasks in no guaranteed order (PostgreSQL returns rows as
they lie on disk, which an update changes), and a user's long table comes in any order.
Everything seeded downstream of the table (the chance-pair sample, the bootstrap
resamples) is drawn over coded rows, so the coding must not follow the row order. Found
on Label Studio on PostgreSQL: a second sync with nothing changed rewrote half of a
2,000-task project because the export came back in another order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics import agreement
from ls_agreement.metrics.table import factorize


def _table(rng: np.random.Generator, n_items: int = 400, ids: str = "str") -> pd.DataFrame:
    rows = []
    for i in range(n_items):
        truth = rng.integers(0, 4)
        for a in rng.choice(8, size=int(rng.integers(2, 5)), replace=False):
            v = truth if rng.random() < 0.7 else rng.integers(0, 4)
            item = f"task-{i}" if ids == "str" else i * 7 + 3
            rows.append({"item": item, "annotator": f"ann{a}", "value": float(v)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("distance", ["nominal", "interval"])
@pytest.mark.parametrize("ids", ["str", "int"])
def test_agreement_ignores_row_order(distance: str, ids: str) -> None:
    table = _table(np.random.default_rng(3), ids=ids)
    # few chance pairs, so that they are a sample (seeded) rather than all of them
    kw = dict(distance=distance, bootstrap=200, seed=1, expected_pairs=500)
    a = agreement(table, **kw)
    for k in range(3):
        b = agreement(table.sample(frac=1.0, random_state=k), **kw)
        assert (a.alpha, a.ks, a.sigma, a.threshold) == (b.alpha, b.ks, b.sigma, b.threshold)
        assert a.ci == b.ci
        pa = a.per_item.sort_index()
        pb = b.per_item.loc[pa.index]
        assert np.array_equal(pa["sigma"].to_numpy(), pb["sigma"].to_numpy(), equal_nan=True)


def test_factorize_codes_follow_the_labels_not_the_rows() -> None:
    codes, labels = factorize(np.array(["b", "a", "c", "a"], dtype=object))
    assert list(labels) == ["a", "b", "c"] and list(codes) == [1, 0, 2, 0]
    # mixed types cannot be compared: by type name, then text, still independent of order
    x = np.array([3, "x", 1, "a", 3], dtype=object)
    c1, l1 = factorize(x)
    c2, l2 = factorize(x[::-1])
    assert list(l1) == list(l2) == [1, 3, "a", "x"]
    assert list(l1[c1]) == list(x) and list(l2[c2]) == list(x[::-1])


def test_report_of_a_shuffled_export_is_the_same() -> None:
    from ls_agreement.demo import data as demo_data
    from ls_agreement.plugin.report.build import build_report
    from ls_agreement.plugin.settings import ReportSettings

    ids = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
    tasks = demo_data.generate(ids, n_tasks=120, seed=5).tasks
    for i, task in enumerate(tasks, start=1):
        task["id"] = i
        for j, ann in enumerate(task["annotations"]):
            ann["id"] = 1000 * i + j
    settings = ReportSettings(bootstrap=50)
    a = build_report(demo_data.DEMO_CONFIG, tasks, settings)
    shuffled = list(tasks)
    np.random.default_rng(0).shuffle(shuffled)
    b = build_report(demo_data.DEMO_CONFIG, shuffled, settings)
    # equal, up to the last bits of sums taken in another order (CrowdTruth's)
    assert _diff(a.to_dict(), b.to_dict()) == []


def _diff(x: object, y: object, path: str = "") -> list[str]:
    if isinstance(x, dict) and isinstance(y, dict):
        return [d for k in sorted(set(x) | set(y), key=str) for d in _diff(x.get(k), y.get(k), f"{path}.{k}")]
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [d for k, (u, v) in enumerate(zip(x, y)) for d in _diff(u, v, f"{path}[{k}]")]
    if isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-12 * max(1.0, abs(x)):
        return []
    return [] if x == y else [f"{path}: {x!r} != {y!r}"[:200]]
