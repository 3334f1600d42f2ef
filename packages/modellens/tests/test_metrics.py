import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from modellens import leep, logme, nce, ranking_metrics
from modellens.lens import listwise_loss, pairwise_loss
from modellens.metrics import hit_at_k, ndcg_at_k, plackett_luce_nll, recall_at_k, weighted_tau
from scipy import stats

finite = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=2, max_size=30))
def test_tau_w_equals_scipy(pairs):
    a, b = np.array(pairs).T
    ref = stats.weightedtau(a, b).statistic
    ours = weighted_tau(a, b)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        assert ours == 0.0
    else:
        assert ours == pytest.approx(ref, abs=1e-12)


def _ndcg_brute(y, s, k):
    gain = (y - y.min()) / (y.max() - y.min())
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    dcg = sum(gain[order[r]] / math.log2(r + 2) for r in range(k))
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(sorted(gain, reverse=True)[:k]))
    return dcg / idcg


def test_ranking_metrics_hand_cases():
    y = np.array([3.0, 2.0, 1.0, 0.0])
    perfect = ranking_metrics(y, y, k=2)
    assert perfect == {"tau_w": pytest.approx(1.0), "ndcg": pytest.approx(1.0), "hit": 1.0, "recall": 1.0}
    rev = ranking_metrics(y, -y, k=2)
    assert rev["tau_w"] == pytest.approx(-1.0) and rev["hit"] == 0.0 and rev["recall"] == 0.0
    assert rev["ndcg"] == pytest.approx((1 / 3) / math.log2(3) / (1 + (2 / 3) / math.log2(3)))
    # predicted order 1, 0, 3, 2: gains 2/3, 1, 0, 1/3
    s = np.array([0.8, 0.9, 0.1, 0.2])
    assert ndcg_at_k(y, s, 2) == pytest.approx((2 / 3 + 1 / math.log2(3)) / (1 + (2 / 3) / math.log2(3)))
    assert hit_at_k(y, s, 1) == 0.0 and hit_at_k(y, s, 2) == 1.0
    assert recall_at_k(y, s, 2) == 1.0 and recall_at_k(y, s, 3) == pytest.approx(2 / 3)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=2, max_size=12), st.integers(1, 12))
def test_ndcg_against_brute_force(pairs, k):
    y, s = np.array(pairs).T
    if np.ptp(y) == 0:
        return
    assert ndcg_at_k(y, s, k) == pytest.approx(_ndcg_brute(y, s, min(k, len(y))), abs=1e-12)


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_refused(k):
    with pytest.raises(ValueError, match="k must be >= 1"):
        ranking_metrics([1.0, 2.0], [1.0, 2.0], k=k)


def test_bad_lengths_and_nan():
    with pytest.raises(ValueError, match="differ in length"):
        ranking_metrics([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        ranking_metrics([1.0, np.nan], [1.0, 2.0])


def test_plackett_luce_against_brute_force_on_4_items():
    s = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    perms = list(itertools.permutations(range(4)))

    def brute(order):  # P(order) = Π_i exp(s_πi) / Σ_{j≥i} exp(s_πj), written out
        p = 1.0
        rest = list(order)
        for i in order:
            p *= math.exp(s[i]) / sum(math.exp(s[j]) for j in rest)
            rest.remove(i)
        return p

    probs = [brute(o) for o in perms]
    assert sum(probs) == pytest.approx(1.0, abs=1e-12)
    for o, p in zip(perms, probs):
        z = torch.zeros(4, dtype=torch.float64)
        z[list(o)] = torch.arange(4, 0, -1, dtype=torch.float64)  # truth ranks o first
        loss = listwise_loss(s[None], z[None], torch.ones(1, 4, dtype=torch.bool), 1.0)
        assert float(loss) == pytest.approx(-math.log(p), abs=1e-10)
        assert plackett_luce_nll(s.numpy(), o) == pytest.approx(-math.log(p), abs=1e-10)


def test_listwise_ignores_padding_and_temperature_scales():
    s = torch.tensor([[1.0, 0.0, 5.0]])
    z = torch.tensor([[2.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, False]])
    ref = -math.log(math.exp(1) / (math.exp(1) + 1))
    assert float(listwise_loss(s, z, mask, 1.0)) == pytest.approx(ref, rel=1e-6)
    assert float(listwise_loss(s, z, mask, 2.0)) == pytest.approx(-math.log(math.exp(.5) / (math.exp(.5) + 1)),
                                                                  rel=1e-6)


def test_pairwise_is_bpr():
    s = torch.tensor([[0.5, 1.5, -1.0]])
    z = torch.tensor([[2.0, 1.0, 0.0]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    sp = torch.nn.functional.softplus
    ref = (sp(-(s[0, 0] - s[0, 1])) + sp(-(s[0, 0] - s[0, 2])) + sp(-(s[0, 1] - s[0, 2]))) / 3
    assert float(pairwise_loss(s, z, mask, 1.0)) == pytest.approx(float(ref), rel=1e-6)


def test_leep_and_nce_hand_cases():
    y = np.array([0, 0, 1, 1])
    perfect = np.eye(2)[y]
    assert leep(perfect, y) == pytest.approx(0.0, abs=1e-12)
    assert nce(y, y) == pytest.approx(0.0, abs=1e-12)
    # uninformative source: one source label for everything → log P(y) = log 1/2
    assert nce(np.zeros(4), y) == pytest.approx(math.log(0.5))
    assert leep(np.full((4, 2), 0.5), y) == pytest.approx(math.log(0.5))
    # hand case: z = [0, 0, 1, 0] → P(y|z=0) = (2/3, 1/3), P(y|z=1) = (0, 1)
    z = np.array([0, 0, 1, 0])
    joint = {(0, 0): .5, (1, 0): .25, (1, 1): .25}
    ref = sum(p * math.log(p / (0.75 if zz == 0 else 0.25)) for (yy, zz), p in joint.items())
    assert nce(z, np.array([0, 0, 1, 1])) == pytest.approx(ref)
    # soft case: θ = (0.9, 0.1), (0.6, 0.4), (0.2, 0.8) with y = 0, 0, 1
    th = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    yy = np.array([0, 0, 1])
    J = np.zeros((2, 2))
    for t, lab in zip(th, yy):
        J[lab] += t / 3
    cond = J / J.sum(0)
    ref = np.mean([math.log(cond[lab] @ t) for t, lab in zip(th, yy)])
    assert leep(th, yy) == pytest.approx(ref)


def test_logme_is_the_maximised_evidence():
    rng = np.random.default_rng(0)
    F = rng.normal(size=(60, 3))
    y = F @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=60)
    from modellens.metrics import _evidence

    ev, a, b = _evidence(F, y, 200, 1e-10)
    cov = F @ F.T / a + np.eye(60) / b  # marginal likelihood of y, an independent formula
    ref = stats.multivariate_normal(np.zeros(60), cov).logpdf(y) / 60
    assert ev == pytest.approx(ref, rel=1e-8)
    # a fixed point: nearby (α, β) give lower evidence
    for da, db in ((1.2, 1), (0.8, 1), (1, 1.2), (1, 0.8)):
        c2 = F @ F.T / (a * da) + np.eye(60) / (b * db)
        assert stats.multivariate_normal(np.zeros(60), c2).logpdf(y) / 60 < ref
    assert logme(F, y, regression=True) == pytest.approx(ev)
    # informative features score higher than noise for classification
    lab = (F[:, 0] > 0).astype(int)
    assert logme(F, lab) > logme(rng.normal(size=(60, 3)), lab)


def test_transferability_bad_input():
    with pytest.raises(ValueError, match="probability"):
        leep(np.array([[0.5, 0.6], [0.5, 0.5]]), [0, 1])
    with pytest.raises(ValueError, match="rows"):
        logme(np.ones((3, 2)), [0, 1])
