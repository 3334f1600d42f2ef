import numpy as np
import torch
from hierwm import FrechetDistance, linear_probe, rollout_metrics, steering_responsiveness
from hierwm.metrics import frechet_distance


def test_frechet_distance_matches_gaussian_closed_forms():
    # 1-D: (μ1 − μ2)² + (σ1 − σ2)²
    assert np.isclose(frechet_distance([1.0], [[4.0]], [3.0], [[1.0]]), 4.0 + 1.0)
    # commuting (diagonal) covariances: Σ (√a − √b)²
    a, b = np.array([1.0, 4.0, 9.0]), np.array([4.0, 1.0, 9.0])
    want = 1.0 + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert np.isclose(frechet_distance(np.zeros(3), np.diag(a), np.r_[1.0, 0, 0], np.diag(b)), want)


def test_frechet_distance_on_features():
    g = torch.Generator().manual_seed(0)
    real = torch.randn(400, 1, 2, 2, generator=g)
    fd = FrechetDistance(lambda x: x.flatten(1))
    assert fd(real, real) < 1e-6
    assert fd(real, real + 1.0) > 3.5  # a mean shift of 1 in 4 dims


def test_rollout_metrics_perfect_and_wrong():
    t = torch.where(torch.rand(3, 8, 3, 4, 4) > 0.5, 1.0, -1.0)
    m = rollout_metrics(t, t, horizons=(4, 8))
    assert m["mse@8"] == 0 and m["iou@4"] == 1.0
    w = rollout_metrics(-t, t, horizons=(8,))
    assert w["iou@8"] == 0.0 and np.isclose(w["mse@8"], 4.0)


def test_linear_probe_against_sklearn():
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 10))
    y = x @ rng.normal(size=(10, 3)) + 0.1 * rng.normal(size=(400, 3))
    r2 = linear_probe(x[:300], y[:300], x[300:], y[300:], alphas=(1.0,))
    sc = StandardScaler().fit(x[:300])
    want = r2_score(y[300:], Ridge(alpha=1.0).fit(sc.transform(x[:300]), y[:300]).predict(sc.transform(x[300:])))
    assert np.isclose(r2, want)
    assert r2 > 0.95
    assert linear_probe(rng.normal(size=(300, 10)), y[:300], rng.normal(size=(100, 10)), y[300:]) < 0.1


class _Ignores:
    action_dim = 2

    def rollout(self, context, actions, *, horizon, steps, stabilization, generator=None, clip=None):
        return context[:, -1:].expand(-1, horizon, -1, -1, -1)


def test_a_model_that_ignores_actions_is_not_responsive(toy):
    f, _ = toy.get_batch(torch.arange(8))
    out = steering_responsiveness(_Ignores(), f[:, :4], toy.states[:8, :4], horizon=4)
    assert out["corr"] == 0.0 and out["mae"] > 0.5


def test_trained_models_respond_to_steering_only_if_they_use_actions(trained, toy):
    f, _ = toy.get_batch(torch.arange(8))
    m, _ = trained["hier"]
    out = steering_responsiveness(m, f[:, :4], toy.states[:8, :4], horizon=4, steps=2)
    assert np.isfinite(out["corr"]) and out["predicted"].shape == (40,)
