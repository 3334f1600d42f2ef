import math

import numpy as np
import pytest
import torch
from mcr2opt import DivergenceError, ascend, closed_form_maximizer, critical_lam, linear_convergence, linear_rate
from mcr2opt.ascent import radial_directions

EPS, LAM = 0.5, 0.1  # as the maximizer fixture in conftest.py


def test_linear_rate_recovers_a_geometric_sequence():
    rate, r2 = linear_rate(0.3 * 0.9 ** np.arange(50))
    assert rate == pytest.approx(0.9, rel=1e-12) and r2 == pytest.approx(1.0)
    with pytest.raises(ValueError, match="positive"):
        linear_rate([1.0, 0.0, 1.0])


def test_linear_convergence_rejects_a_power_law():
    t = np.arange(1, 2001)
    assert linear_convergence(0.5 ** (t / 30.0) + 0.0)["linear"]
    slow = linear_convergence(1.0 / t)
    assert slow["rate"] < 1 and slow["r2"] > 0.95     # a late window alone would call it linear
    assert not slow["linear"]


@pytest.fixture(scope="module")
def smoke_runs(maximizer):
    """Exp A in the smoke setting (d = 8, K = 2, n = 20): GD near a maximizer and the degenerate control."""
    Z, y = maximizer
    g = torch.Generator().manual_seed(1)
    D = torch.randn(Z.shape, generator=g, dtype=torch.float64)
    gd = ascend(Z + 0.1 * D / D.norm(), y, eps=EPS, lam=LAM, method="gd", step=1.0, n_steps=400, stop_below=1e-12)
    lc = critical_lam(10, 20, 8, eps=EPS)
    Zc, yc = closed_form_maximizer([10, 10], 8, eps=EPS, lam=lc, generator=g)
    R = sum(radial_directions(Zc, yc))
    ctrl = ascend(Zc + 0.1 * R / R.norm(), yc, eps=EPS, lam=lc, method="gd", step=1.0, n_steps=400)
    return gd, ctrl


def test_gd_converges_linearly_in_distance(smoke_runs):
    gd, _ = smoke_runs
    dist = gd["dist"]
    assert dist[-1] <= 1e-12
    last = [v for v in dist if v > 1e-12][-100:]
    rate, r2 = linear_rate(last)
    assert rate < 1 and r2 > 0.95
    assert linear_convergence(dist)["linear"]
    assert np.all(np.diff(gd["F"]) > -1e-12)       # ascent


def test_negative_control_fails_the_check(smoke_runs):
    _, ctrl = smoke_runs
    res = linear_convergence(ctrl["dist"])
    assert not res["linear"]
    assert ctrl["dist"][-1] > 1e-4                  # nowhere near the floor after 400 steps
    assert res["stability"] < 0.5


@pytest.mark.parametrize("method,step", [("heavy_ball", 1.0), ("adam", 0.003), ("pgd_sphere", 1.0)])
def test_other_methods_run_and_ascend(maximizer, method, step):
    Z, y = maximizer
    g = torch.Generator().manual_seed(2)
    Z0 = Z + 0.05 * torch.randn(Z.shape, generator=g, dtype=torch.float64)
    h = ascend(Z0, y, eps=EPS, lam=LAM, method=method, step=step, n_steps=60)
    assert len(h["F"]) == 61 and all(math.isfinite(v) for v in h["F"])
    if method == "pgd_sphere":
        assert torch.allclose(h["Z"].norm(dim=1), torch.ones(20, dtype=torch.float64))
        assert h["dist"] == [] and h["grad_norm"][-1] < h["grad_norm"][0]
    else:
        assert h["dist"][-1] < h["dist"][0]


def test_divergence_names_the_step(maximizer):
    Z, y = maximizer
    with pytest.raises(DivergenceError, match=r"diverged at step \d+"):
        ascend(Z, y, eps=EPS, lam=LAM, method="heavy_ball", step=500.0, momentum=0.99, n_steps=200, max_norm=1e3)


def test_bad_input(maximizer):
    Z, y = maximizer
    with pytest.raises(ValueError, match="step"):
        ascend(Z, y, eps=EPS, lam=LAM, step=0.0, n_steps=3)
    with pytest.raises(ValueError, match="step"):
        ascend(Z, y, eps=EPS, lam=LAM, step=-1.0, n_steps=3)
    with pytest.raises(ValueError, match="method"):
        ascend(Z, y, eps=EPS, lam=LAM, method="newton", step=1.0, n_steps=3)
    with pytest.raises(TypeError, match="n_steps"):
        ascend(Z, y, eps=EPS, lam=LAM, step=1.0, n_steps=2.5)
