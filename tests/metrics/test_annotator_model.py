"""The categorical annotator model (metrics/annotator_model.py) against independent
references: its task posteriors against an enumeration of every latent state of small
tasks, its consensus and annotator reliabilities against crowd-kit's Dawid–Skene and MACE
on simulated projects, and its behaviour on simulated projects whose truth is known.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from ls_agreement.metrics.annotator_model import CAREFUL, LabelModel, fit_label_model, read_labels


def _random_model(rng: np.random.Generator, k: int, annotators: list[str]) -> LabelModel:
    """A model with arbitrary (random) parameters: the enumeration must match whatever they are."""
    n = len(annotators)
    pa, pb = np.triu_indices(k, 1)

    def simplex(*shape: int) -> np.ndarray:
        x = rng.gamma(1.0, size=shape + (k,))
        return x / x.sum(axis=-1, keepdims=True)

    conf = simplex(k) * 0.3 + np.eye(k) * 0.7
    accuracy = np.where(rng.random(n) < 0.3, np.nan, rng.uniform(0.5, 0.99, n))   # NaN: C itself
    pairs = rng.gamma(1.0, size=pa.size)
    theta = rng.uniform(0.3, 1.0, n)
    return LabelModel(classes=tuple(f"c{z}" for z in range(k)), prior=simplex(), confusion=conf,
                      accuracy=accuracy, annotators=tuple(annotators), sound=theta, sound_best=theta,
                      sound_ci=np.zeros((n, 2)), departing=simplex(n), ambiguity=float(rng.uniform(0.05, 0.4)),
                      pair_a=pa.astype(np.int64), pair_b=pb.astype(np.int64), pairs=pairs / pairs.sum(),
                      n_answers=np.ones(n, dtype=np.int64), even_share=float(rng.uniform(0.1, 0.9)))


def _readings(n: int, classes: tuple[int, ...], even: float) -> list[tuple[tuple[int, ...], float]]:
    """Who reads which class, with its probability: an ordinary task's one class; on an
    ambiguous task, with probability ``even`` an even split — m of the n answers read the
    first class, m = ⌊n/2⌋ or ⌈n/2⌉ with probability ½ each, every such set of answers
    alike —, else a coin per answer."""
    if len(classes) == 1:
        return [(classes * n, 1.0)]
    counts = sorted({n // 2, (n + 1) // 2})
    out = []
    for m in counts:
        for first in itertools.combinations(range(n), m):
            out.append((tuple(classes[0] if i in first else classes[1] for i in range(n)),
                        even / len(counts) / math.comb(n, m)))
    for readings in itertools.product(classes, repeat=n):
        out.append((readings, (1 - even) / 2 ** n))
    return out


def _enumerate(model: LabelModel, who: list[int], labels: list[int]) -> dict[str, object]:
    """Every latent configuration of one task, with its joint probability written out
    from the generative story (task kind, class or pair, on an ambiguous task who reads
    which of its classes, each answer sound or departing)."""
    k = len(model.classes)
    states = [("ord", (z,), (1 - model.ambiguity) * model.prior[z]) for z in range(k)]
    states += [("amb", (int(a), int(b)), model.ambiguity * model.pairs[q])
               for q, (a, b) in enumerate(zip(model.pair_a, model.pair_b))]
    total = amb = clean = 0.0
    departs = np.zeros(len(who))
    marginal = np.zeros(k)
    as_one = np.zeros(k)
    for kind, classes, p_state in states:
        mass = 0.0
        for readings, p_reading in _readings(len(who), classes, model.even_share):
            # per answer: the (component, probability) options
            options = []
            for a, y, r in zip(who, labels, readings):
                th, xi = model.sound[a], model.departing[a]
                acc = model.accuracy[a]
                # C_a: the annotator's accuracy on the diagonal, slips spread as C's; C itself for NaN
                slips = model.confusion * (1 - np.eye(k))
                slips = slips / slips.sum(axis=1, keepdims=True)
                c = model.confusion if np.isnan(acc) else acc * np.eye(k) + (1 - acc) * slips
                options.append([("dep", (1 - th) * xi[y]), ("sound", th * c[r, y])])
            for combo in itertools.product(*options):
                p = p_state * p_reading * math.prod(o[1] for o in combo)
                total += p
                mass += p
                amb += p if kind == "amb" else 0.0
                # a departing answer shows when its label is not the task's class (neither of an
                # ambiguous task's two)
                shows = [float(o[0] == "dep" and y not in classes) for o, y in zip(combo, labels)]
                if kind == "ord":
                    clean += p * math.prod(1 - v for v in shows)
                departs += p * np.array(shows, dtype=float)
        # the consensus takes each class of an ambiguous state in proportion to its mass as an
        # ordinary task's one class (the ordinary states come first)
        if kind == "ord":
            as_one[classes[0]] = mass
        for z in classes:
            marginal[z] += mass * (as_one[z] / sum(as_one[r] for r in classes) if kind == "amb" else 1.0)
    return {"amb": amb / total, "flag": 1 - clean / total, "departs": departs / total, "marginal": marginal / total}


@pytest.mark.parametrize("k,m", [(2, 3), (3, 3), (3, 4), (4, 2), (3, 5), (2, 1)])
def test_task_posteriors_match_enumeration(k: int, m: int) -> None:
    rng = np.random.default_rng(100 * k + m)
    names = [f"a{i}" for i in range(5)]
    model = _random_model(rng, k, names)
    for trial in range(6):
        who = list(rng.choice(5, m, replace=False))
        labels = list(rng.integers(0, k, m))
        read = read_labels(model, ["t"] * m, [names[a] for a in who], [model.classes[y] for y in labels])
        ref = _enumerate(model, who, labels)
        assert read.p_ambiguous[0] == pytest.approx(ref["amb"], rel=1e-9, abs=1e-12)
        assert read.p_flag[0] == pytest.approx(ref["flag"], rel=1e-9, abs=1e-12)
        assert read.p_departs == pytest.approx(ref["departs"], rel=1e-9, abs=1e-12)
        assert read.consensus_p[0] == pytest.approx(ref["marginal"].max(), rel=1e-9)
        assert read.consensus[0] == int(np.argmax(ref["marginal"]))


def test_unknown_annotator_and_label_are_read_with_defaults() -> None:
    rng = np.random.default_rng(3)
    model = _random_model(rng, 3, ["a0", "a1"])
    read = read_labels(model, ["t", "t", "t"], ["a0", "new", "a1"], ["c0", "c1", "not a class"])
    assert read.p_departs[2] == 0.0 and read.task_of[2] == -1    # left out: not readable
    theta, xi, own = model.parameters(["new"])
    assert theta[0] == pytest.approx(model.default_sound) and np.allclose(own[0], model.confusion)


def _simulate(rng: np.random.Generator, n_tasks: int, accuracy: dict[str, float], spam: dict[str, float],
              k: int = 3, per_task: tuple[int, int] = (2, 5), constant: str | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """Answers of careful annotators (right with their accuracy, else another class) and
    of annotators who answer at random on a share of their tasks (``spam``), or always
    give class 0 (``constant``). Returns the crowd-kit table (task, worker, label), truth."""
    names = list(accuracy) + list(spam) + ([constant] if constant else [])
    truth = rng.integers(0, k, n_tasks)
    rows = []
    for t in range(n_tasks):
        for w in rng.choice(names, rng.integers(per_task[0], per_task[1] + 1), replace=False):
            if w == constant:
                y = 0
            elif w in spam and rng.random() < spam[w]:
                y = int(rng.integers(0, k))
            else:
                acc = accuracy.get(w, 0.95)
                y = int(truth[t]) if rng.random() < acc else int((truth[t] + rng.integers(1, k)) % k)
            rows.append((t, str(w), y))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), truth


def _fit(df: pd.DataFrame, **kw) -> tuple[LabelModel, np.ndarray]:
    model = fit_label_model(df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy(), **kw)
    read = read_labels(model, df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy())
    cons = pd.Series(np.array(model.classes)[read.consensus], index=read.items.astype(int)).sort_index()
    return model, cons.to_numpy()


def test_consensus_against_crowdkit_dawid_skene_and_mace() -> None:
    ca = pytest.importorskip("crowdkit.aggregation")
    rng = np.random.default_rng(11)
    acc = {f"c{i}": a for i, a in enumerate([0.95, 0.9, 0.85, 0.92, 0.8, 0.88])}
    df, truth = _simulate(rng, 500, acc, spam={"r": 0.5}, constant="s")
    model, ours = _fit(df)
    ds = ca.DawidSkene(n_iter=100).fit_predict(df).sort_index().to_numpy()
    mace = ca.MACE(random_state=0).fit_predict(df).sort_index().to_numpy()
    # Dawid–Skene's answer nearly everywhere (the few differences are near-ties; MACE, whose
    # careful annotators are never wrong, reads these 80–95 % annotators differently)
    assert np.mean(ours == ds) >= 0.97
    # and at least as accurate as the better of the two, within one task in a hundred
    assert np.mean(ours == truth) >= max(np.mean(ds == truth), np.mean(mace == truth)) - 0.01


def test_reliability_against_crowdkit_mace() -> None:
    """With careful annotators who are always right, our model is MACE's: an annotator's
    share of sound answers is MACE's probability that they are not spamming."""
    ca = pytest.importorskip("crowdkit.aggregation")
    rng = np.random.default_rng(5)
    acc = {f"c{i}": 1.0 for i in range(6)}
    df, _ = _simulate(rng, 600, acc, spam={"r3": 0.3, "r6": 0.6}, k=4, per_task=(3, 5))
    model, _ = _fit(df, ambiguity=False)
    mace = ca.MACE(random_state=0, n_restarts=3).fit(df)
    names = list(pd.factorize(df["worker"])[1])
    knowing = dict(zip(names, mace.spamming_[:, 1]))
    ours = dict(zip(model.annotators, model.sound))
    for w in ("r3", "r6"):
        assert ours[w] == pytest.approx(knowing[w], abs=0.05)
    assert ours["r6"] < ours["r3"] < min(ours[f"c{i}"] for i in range(6))


def test_careful_annotators_are_not_read_as_departing() -> None:
    """Null projects: annotators at 80–90 % whose slips are alike raise no flags and keep
    θ = CAREFUL (sampling noise in their accuracies is not read as departures)."""
    flagged = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        acc = {f"c{i}": 0.85 for i in range(10)}
        df, _ = _simulate(rng, 300, acc, spam={})
        model, _ = _fit(df)
        read = read_labels(model, df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy())
        assert np.all(model.sound == CAREFUL)
        flagged.append(np.mean(read.p_flag >= 0.5))
    assert max(flagged) <= 0.03


def test_spammer_is_found_and_its_departures_flagged() -> None:
    rng = np.random.default_rng(2)
    acc = {f"c{i}": 0.92 for i in range(8)}
    df, truth = _simulate(rng, 400, acc, spam={}, constant="s")
    model, _ = _fit(df)
    read = read_labels(model, df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy())
    rel = dict(zip(model.annotators, model.sound))
    assert rel["s"] < 0.05 and min(rel, key=rel.get) == "s"
    lo, hi = model.sound_ci[model.annotators.index("s")]
    assert lo <= rel["s"] <= hi < 0.2
    # the spammer's answers that are not the truth are flagged; where they gave the true
    # class nothing of theirs departs
    spam = df["worker"].to_numpy() == "s"
    wrong = spam & (df["label"].to_numpy() != truth[df["task"].to_numpy()])
    assert np.mean(read.p_departs[wrong] >= 0.5) >= 0.9
    assert np.mean(read.p_departs[spam & ~wrong] >= 0.5) <= 0.05


def _ambiguous_project(seed: int, accuracy: float, per_task: int | tuple[int, int], even: bool,
                       n: int = 400, share: float = 0.2) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """``n`` tasks, a ``share`` of them ambiguous; careful annotators (``per_task`` per
    task, or between its two numbers) take one of an ambiguous task's two classes — half
    and half (``even``, in a random order) or each by a coin — and slip to another class
    with probability 1 − ``accuracy``. Returns the answers, which tasks are ambiguous, and
    which show both classes in the readings."""
    rng = np.random.default_rng(seed)
    k = 3
    truth = rng.integers(0, k, n)
    alt = (truth + rng.integers(1, k, n)) % k
    amb = rng.random(n) < share
    rows, both = [], np.zeros(n, dtype=bool)
    sizes = (rng.integers(per_task[0], per_task[1] + 1, n) if isinstance(per_task, tuple)
             else np.full(n, per_task))
    for t in range(n):
        per_task = int(sizes[t])
        readings = np.full(per_task, truth[t])
        if amb[t]:
            readings = (rng.permutation(np.arange(per_task) % 2 == 1) if even
                        else rng.random(per_task) < 0.5)
            readings = np.where(readings, alt[t], truth[t])
        both[t] = len(set(readings.tolist())) == 2
        for w, y in zip(rng.choice(10, per_task, replace=False), readings):
            y = y if rng.random() < accuracy else (y + rng.integers(1, k)) % k
            rows.append((t, f"w{w}", int(y)))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), amb, both


def _ambiguity_read(df: pd.DataFrame) -> tuple[LabelModel, np.ndarray]:
    model, _ = _fit(df)
    read = read_labels(model, df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy())
    return model, pd.Series(read.p_ambiguous, index=read.items.astype(int)).sort_index().to_numpy()


def test_ambiguous_tasks_are_found() -> None:
    """Tasks whose careful annotators each take one of two classes by a coin read as
    ambiguous when they split two and two (a 3–1 split is as likely a slip); the others do
    not. How many of the 3–1 and 4–0 ones are ambiguous the answers cannot say (the
    likelihood is flat between coins and even splits there), so the fitted share lies
    between the tasks that split two and two and those planted."""
    df, amb, _ = _ambiguous_project(4, 0.97, 4, even=False)
    model, p_amb = _ambiguity_read(df)
    shown = np.array([sorted(g.value_counts().tolist()) == [2, 2] for _, g in df.groupby("task")["label"]])
    assert np.mean(p_amb[shown & amb] >= 0.5) >= 0.9 and np.mean(p_amb[~amb] >= 0.5) <= 0.05
    assert (shown & amb).mean() - 0.02 <= model.ambiguity <= amb.mean() + 0.05


def test_coin_splits_alone_are_found() -> None:
    """Ambiguous tasks whose careful annotators each toss a coin (no even splits at all),
    2 to 5 answers a task, slips one in a hundred, eight projects of 340 tasks. The
    reading with both kinds of split and their share λ fell short of its bar (BIC) at
    seeds 4 and 5, and the ambiguity was read as slips there (ρ = 0, no task flagged;
    over the eight, 39 % of the tasks that show a split were flagged). Coins alone, the
    same ambiguity at one number less, are read where λ is not paid for. Whether a 1–1
    split of two answers is ambiguous or a slip the answers barely say, so not every split
    is asked for."""
    recall = []
    for seed in range(1, 9):
        df, amb, both = _ambiguous_project(seed, 0.99, (2, 5), even=False, n=340, share=0.15)
        model, p_amb = _ambiguity_read(df)
        assert model.ambiguity >= 0.5 * (amb & both).mean(), seed
        flagged = p_amb >= 0.5
        assert np.mean(flagged[~amb]) <= 0.03, seed
        recall.append(np.mean(flagged[amb & both]))
    assert np.mean(recall) >= 0.45


@pytest.mark.parametrize("seed", [1, 8])
def test_coin_splits_of_a_small_project_are_read(seed: int) -> None:
    """200 tasks, 15 % of them split by coins, careful annotators 99 % right, 2 to 5 answers
    a task: at these seeds neither the mixed reading nor coins with fitted pairs paid for
    their numbers, and every split read as a slip (ρ = 0, nothing flagged). Coins between
    any two nominal classes alike pay for ρ alone."""
    df, amb, both = _ambiguous_project(seed, 0.99, (2, 5), even=False, n=200, share=0.15)
    model, p_amb = _ambiguity_read(df)
    assert model.ambiguity >= 0.5 * (amb & both).mean()
    flagged = p_amb >= 0.5
    assert np.mean(flagged[amb & both]) >= 0.2
    assert np.mean(flagged[~amb]) <= 0.02


@pytest.mark.parametrize("accuracy", [0.99, 0.85, 0.75])
def test_no_ambiguity_where_none_is_planted(accuracy: float) -> None:
    """Nothing ambiguous, careful annotators' slips spread evenly: no reading of ambiguity
    pays for its numbers, the cheapest (ρ alone) included, on projects of 150 to 340 tasks."""
    for n in (150, 340):
        for seed in range(1, 5):
            df, _, _ = _ambiguous_project(seed, accuracy, (2, 5), even=False, n=n, share=0.0)
            model, p_amb = _ambiguity_read(df)
            assert model.ambiguity < 1e-3 and not (p_amb >= 0.5).any(), (n, seed)


@pytest.mark.parametrize("seed", [5, 6])
def test_even_splits_are_told_from_slips(seed: int) -> None:
    """Careful annotators who split an ambiguous task half and half, and slip one answer in
    twenty elsewhere: a 4–1 split of five answers is then a slip, a 3–2 split ambiguity.
    With coins alone (the model before even splits) the 4–1 splits were read as ambiguity
    too: the share came out at 0.34 and 0.29 for 0.23 and 0.21 planted, precision 0.74 and
    0.80. Which share of ambiguous tasks splits evenly the answers barely tell (λ is not
    asserted)."""
    df, amb, both = _ambiguous_project(seed, 0.95, 5, even=True)
    model, p_amb = _ambiguity_read(df)
    assert model.ambiguity == pytest.approx(amb.mean(), abs=0.05)
    flagged = p_amb >= 0.5
    assert np.mean(flagged[amb & both]) >= 0.85
    assert (flagged & amb).sum() / max(flagged.sum(), 1) >= 0.85


def test_graded_slips_are_the_maximum_likelihood_spread_by_distance() -> None:
    """The graded spread keeps each row's slips and spreads them by distance with one
    weight per distance: its weights against a numerical maximum of the same likelihood
    (scipy), on arbitrary counts."""
    from scipy.optimize import minimize

    from ls_agreement.metrics.annotator_model import _graded

    rng = np.random.default_rng(4)
    k = 5
    counts = rng.gamma(2.0, 3.0, size=(k, k)) + np.eye(k) * 80
    dist = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :])
    slip = dist > 0

    def neg_log_lik(log_w: np.ndarray) -> float:
        w = np.r_[0.0, np.exp(log_w)]
        spread = w[dist] / (w[dist] * slip).sum(axis=1, keepdims=True)
        return -float((counts[slip] * np.log(spread[slip])).sum())

    best = minimize(neg_log_lik, np.zeros(k - 1), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                                  "maxiter": 20000})
    w = np.r_[0.0, np.exp(best.x - best.x.max())]
    got = _graded(counts)
    assert got.sum(axis=1) == pytest.approx(counts.sum(axis=1))              # each row's total kept
    assert np.diag(got) == pytest.approx(np.diag(counts))                   # and its careful answers
    want = w[dist] / (w[dist] * slip).sum(axis=1, keepdims=True) * np.where(slip, counts, 0).sum(axis=1)[:, None]
    assert got[slip] == pytest.approx(want[slip], rel=1e-4)


def test_ratings_slips_to_neighbours_are_read_as_such() -> None:
    """Careful raters a point off one time in ten, on five grades: the fitted C of an
    ordered control puts those slips beside the grade (an even spread puts a quarter of them
    there and as much three grades away)."""
    rng = np.random.default_rng(8)
    rows = []
    for t in range(400):
        truth = int(rng.integers(1, 6))
        for a in rng.choice(8, size=3, replace=False):
            r = truth if rng.random() < 0.9 else truth + int(rng.choice((-1, 1)))
            rows.append((t, f"a{a}", min(max(r, 1), 5)))
    item, who, label = zip(*rows)
    graded = fit_label_model(item, who, label, ordered=True)
    assert graded.classes == (1, 2, 3, 4, 5)
    c = graded.confusion
    # middle grades: a slip lands beside it far more often than two or more grades away
    for z in (1, 2, 3):
        assert c[z, z - 1] > 5 * c[z, (z + 2) % 5] and c[z, z + 1] > 5 * c[z, (z + 3) % 5]
    assert c[2, 1] == pytest.approx(0.05, abs=0.025) and c[2, 3] == pytest.approx(0.05, abs=0.025)


def test_random_clicks_are_read_against_every_class_alike() -> None:
    """Random clicks land on rare classes as often as on common ones. Read against the
    labels' frequencies (which follow the true classes: a skewed prior here) an annotator
    random on 30 % of their tasks, and more careful than the others elsewhere, showed
    little excess over careful work; read as clicks, every class alike, they are let depart
    in most projects, their departures stay spread evenly, and their wrong clicks are read
    as departures. Careful annotators are never let depart."""
    freed, recall = 0, []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        k = 6
        prior = np.sort(rng.dirichlet(np.full(k, 2.0)))[::-1]
        names = [f"c{i}" for i in range(8)] + ["r"]
        truth = rng.choice(k, 300, p=prior)
        rows, clicked = [], []
        for t in range(300):
            for w in rng.choice(names, rng.integers(2, 6), replace=False):
                click = w == "r" and rng.random() < 0.3
                acc = 0.95 if w == "r" else 0.88
                y = int(rng.integers(0, k)) if click else (
                    int(truth[t]) if rng.random() < acc else int((truth[t] + rng.integers(1, k)) % k))
                rows.append((t, str(w), y))
                clicked.append(click)
        df = pd.DataFrame(rows, columns=["task", "worker", "label"])
        model, _ = _fit(df)
        read = read_labels(model, df["task"].to_numpy(), df["worker"].to_numpy(), df["label"].to_numpy())
        r = model.annotators.index("r")
        assert all(model.sound[i] == CAREFUL for i in range(len(model.annotators)) if i != r)
        if model.sound[r] < CAREFUL:
            freed += 1
            np.testing.assert_allclose(model.departing[r], 1.0 / k)
        wrong = np.asarray(clicked) & (df["label"].to_numpy() != truth[df["task"].to_numpy()])
        recall.append(np.mean(read.p_departs[wrong] >= 0.5))
    # read against the labels' frequencies alone: 9 of 12 let depart, mean recall 0.64
    assert freed >= 10 and np.mean(recall) >= 0.7
