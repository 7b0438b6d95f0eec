"""CrowdTruth 2.0 by brute force: every pair of judgements, every answer, in plain Python.

Written from the paper's definitions (measures.md §8) with CrowdTruth-core's conventions
(its vectors count an answer each time a judgement holds it; 1e-8 floors). It is checked
against CrowdTruth-core's own outputs on the 66 reference files, then used as the
reference for what those files do not cover: repeated answers inside one judgement, and
many workers per unit.
"""
from __future__ import annotations

import math
from collections import Counter

SMALL = 1e-8


def _wcos(v1: dict, v2: dict, answers, aqs: dict) -> float:
    num = sum(aqs[a] * v1.get(a, 0) * v2.get(a, 0) for a in answers)
    d1 = sum(aqs[a] * v1.get(a, 0) ** 2 for a in answers)
    d2 = sum(aqs[a] * v2.get(a, 0) ** 2 for a in answers)
    return num / max(math.sqrt(d1 * d2), SMALL)


def brute_crowdtruth(rows, options=None, tol=1e-3, max_iter=1000):
    """rows: (unit, worker, list of answers, repeats counted). Returns (uqs, wqs, wua, wwa, aqs)."""
    vec: dict = {}
    for u, w, answers in rows:
        c = Counter(answers)
        if c:
            vec.setdefault(u, {})[w] = dict(c)
    vec = {u: ws for u, ws in vec.items() if len(ws) >= 2}
    by_worker: dict = {}
    for u, ws in vec.items():
        for w in ws:
            by_worker.setdefault(w, {})[u] = ws[w]
    unit_answers = {u: sorted({a for v in ws.values() for a in v}, key=str) for u, ws in vec.items()}
    closed = options is not None
    all_answers = list(options) if closed else sorted({a for s in unit_answers.values() for a in s}, key=str)
    uqs = dict.fromkeys(vec, 1.0)
    wqs = dict.fromkeys(by_worker, 1.0)
    wua, wwa = dict(wqs), dict(wqs)
    aqs = dict.fromkeys(all_answers, 1.0)
    for _ in range(max_iter):
        delta = 0.0
        new_u = {}
        for u, ws in vec.items():
            ids = list(ws)
            num = den = 0.0
            for i in range(len(ids)):
                for j in range(i + 1, len(ids)):
                    wt = wqs[ids[i]] * wqs[ids[j]]
                    num += _wcos(ws[ids[i]], ws[ids[j]], unit_answers[u], aqs) * wt
                    den += wt
            new_u[u] = num / max(den, SMALL)
        new_wwa, new_wua = {}, {}
        for w, units in by_worker.items():
            num = den = 0.0
            for u, v in units.items():
                for o, ov in vec[u].items():
                    if o != w:
                        wt = wqs[o] * uqs[u]
                        num += _wcos(v, ov, unit_answers[u], aqs) * wt
                        den += wt
            new_wwa[w] = num / max(den, SMALL)
            num = den = 0.0
            for u, v in units.items():
                x = {a: wqs[w] * v.get(a, 0) for a in unit_answers[u]}
                rest = {a: sum(wqs[o] * ov.get(a, 0) for o, ov in vec[u].items()) - x[a] for a in unit_answers[u]}
                n = sum(aqs[a] * x[a] * rest[a] for a in unit_answers[u])
                dd = math.sqrt(sum(aqs[a] * x[a] ** 2 for a in unit_answers[u]) *
                               sum(aqs[a] * rest[a] ** 2 for a in unit_answers[u]))
                num += (SMALL if dd < SMALL else n / dd) * uqs[u]
                den += uqs[u]
            new_wua[w] = num / max(den, SMALL)
        new_w = {w: new_wua[w] * new_wwa[w] for w in by_worker}
        new_a = dict(aqs)
        if closed:
            for a in all_answers:
                num = den = 0.0
                for wi, ui in by_worker.items():
                    for wj, uj in by_worker.items():
                        if wi == wj:
                            continue
                        shared = set(ui) & set(uj)
                        if not shared:
                            continue
                        pn = sum(uqs[u] * ui[u].get(a, 0) * uj[u].get(a, 0) for u in shared)
                        pd_ = sum(uqs[u] * uj[u].get(a, 0) for u in shared)
                        if pd_ > 0:
                            num += wqs[wi] * wqs[wj] * pn / pd_
                            den += wqs[wi] * wqs[wj]
                new_a[a] = max(num / den if den > SMALL else SMALL, SMALL)
            delta = max(abs(new_a[a] - aqs[a]) for a in all_answers)
        delta = max([delta] + [abs(new_u[u] - uqs[u]) for u in vec] + [abs(new_w[w] - wqs[w]) for w in wqs])
        uqs, wqs, wua, wwa, aqs = new_u, new_w, new_wua, new_wwa, new_a
        if delta < tol:
            break
    return uqs, wqs, wua, wwa, (aqs if closed else {})
