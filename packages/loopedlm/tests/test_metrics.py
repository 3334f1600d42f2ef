import itertools

import numpy as np
import pytest
import torch
from loopedlm import (
    classify_limits,
    colsum_concentration,
    fixed_point_metrics,
    stage_correlation,
    uniform_causal_colsum,
)
from loopedlm.metrics import uniform_causal
from loopedlm.trace import RecurrenceTrace
from scipy.stats import entropy, pearsonr


def test_colsum_hand_matrices():
    t = 8
    assert colsum_concentration(np.eye(t)[[0] * t]) == pytest.approx(1.0)  # all mass on one column
    assert colsum_concentration(np.full((t, t), 1 / t)) == pytest.approx(0.0)  # uniform columns
    a = np.random.default_rng(0).dirichlet(np.ones(t), size=t)
    c = a.sum(0) / t
    assert colsum_concentration(a) == pytest.approx(1 - entropy(c) / np.log(t))  # scipy reference
    batch = np.stack([a, np.eye(t)])
    np.testing.assert_allclose(colsum_concentration(torch.tensor(batch)), [colsum_concentration(a), 0.0], atol=1e-12)
    assert 0 < uniform_causal_colsum(t) < 1
    np.testing.assert_allclose(uniform_causal(t).sum(1), 1.0)


def _contractive_block(k, d, seed):
    g = torch.Generator().manual_seed(seed)
    ws = [torch.randn(d, d, generator=g) for _ in range(k)]
    ws = [0.8 * w / torch.linalg.matrix_norm(w, 2) for w in ws]  # Lipschitz 0.8 (tanh is 1-Lipschitz)
    bs = [torch.randn(d, generator=g) for _ in range(k)]
    return [lambda x, w=w, b=b: torch.tanh(x @ w.T + b) for w, b in zip(ws, bs, strict=True)]


def _run(layers, x, r):
    out = []
    for _ in range(r):
        states = []
        for f in layers:
            x = f(x)
            states.append(x)
        out.append(torch.stack(states))
    return torch.stack(out)


def test_prop_4_1_cyclic_permutations_converge_to_cyclic_images():
    k, d = 3, 6
    layers = _contractive_block(k, d, 0)
    x0 = torch.randn(d, generator=torch.Generator().manual_seed(1), dtype=torch.float32)
    base = _run(layers, x0, 60)[-1]  # fixed points of each layer of the cycle
    for s in range(k):
        perm = layers[s:] + layers[:s]
        fps = _run(perm, torch.zeros(d), 60)
        assert float((fps[-1] - fps[-2]).abs().max()) < 1e-5  # converges
        for i in range(k):  # the layer f_{(s+i) mod k} ends at its own fixed point, whatever the order
            torch.testing.assert_close(fps[-1, i], base[(s + i) % k], atol=1e-5, rtol=0)
    assert float(torch.cdist(base, base).fill_diagonal_(1).min()) > 1e-3  # distinct fixed points: a cycle


def test_prop_4_2_lipschitz_bound():
    k, d = 3, 6
    layers = _contractive_block(k, d, 2)
    g = torch.Generator().manual_seed(3)
    for _ in range(20):
        x, y = torch.randn(d, generator=g), torch.randn(d, generator=g)
        fx, fy = x, y
        for f in layers:
            fx, fy = f(fx), f(fy)
        assert float((fx - fy).norm()) <= 0.8 ** k * float((x - y).norm()) + 1e-6


def _states(kind, r=20):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(1, 1, 8, generator=g)
    other = torch.randn(1, 1, 8, generator=g)
    if kind == "fixed":
        return torch.stack([base + 0.5 ** t * other for t in range(r)])
    if kind == "cycle":
        return torch.stack([base if t % 2 else other for t in range(r)])
    return torch.stack([base + t * other for t in range(r)])  # drifting


@pytest.mark.parametrize(("kind", "label"), [("fixed", "fixed_point"), ("cycle", "orbit"), ("drift", "slider")])
def test_classifier_on_planted_sequences(kind, label):
    res = classify_limits(_states(kind), 0.05, 0.9)
    assert res["labels"][0, 0] == label and res["rates"][label] == 1.0


def test_fixed_point_metrics_reference():
    r, k = 6, 2
    x = torch.randn(r, k, 1, 3, 4, dtype=torch.float64)
    fp = fixed_point_metrics(RecurrenceTrace(residuals=x))
    ref = np.linalg.norm(x[3, 1] - x[2, 1], axis=-1) / np.linalg.norm(x[3, 1], axis=-1)
    assert fp["successive"][2, 1] == pytest.approx(ref.mean())
    assert fp["distance"][-1].max() == 0.0 and fp["cosine"][-1].min() == pytest.approx(1.0)


def test_stage_correlation_reference():
    a, b = np.array([0.1, 0.5, 0.2, 0.9]), np.array([0.1, 0.5, 0.2, 0.9])
    assert stage_correlation(a, b) == pytest.approx(1.0)
    c = np.random.default_rng(0).random(12)
    from loopedlm.metrics import resample

    assert stage_correlation(a, c) == pytest.approx(pearsonr(a, resample(c, 4))[0])
    assert all(-1 <= stage_correlation(list(p), c) <= 1 for p in itertools.islice(itertools.permutations(a), 5))
    with pytest.raises(ValueError, match="length"):
        stage_correlation([1, 2], c)


def test_sink_rate_and_representation_entropy_references():
    from loopedlm import representation_entropy, sink_rate

    t = 6
    a = np.tile(np.eye(t)[0], (t, 1))  # every query on token 0
    assert sink_rate(a) == 1.0 and sink_rate(uniform_causal(t)) == 0.0
    x = np.random.default_rng(0).normal(size=(10, 4))
    s = np.linalg.svd(x - x.mean(0), compute_uv=False) ** 2
    assert representation_entropy(x) == pytest.approx(entropy(s / s.sum()))


def test_model_runs_in_float64(small_model):
    import copy

    from loopedlm import trace

    m = copy.deepcopy(small_model).to(torch.float64)
    tr = trace(m, torch.randint(0, 16, (1, 5)), 3)
    assert tr.residuals.dtype == torch.float64
