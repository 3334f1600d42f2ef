import numpy as np
import pytest
from tcgap import tail_index
from tcgap.tail import heavy_tail_sgd, rate_exponent


@pytest.mark.parametrize("alpha", [1.2, 2.0, 3.0])
def test_hill_recovers_pareto_tails(alpha):
    x = np.random.default_rng(int(alpha * 10)).pareto(alpha, 1_000_000) + 1.0
    assert tail_index(x) == pytest.approx(alpha, rel=0.1)  # SE of Hill: α/√k, k = 1000


def test_hill_bad_input():
    with pytest.raises(ValueError, match="method"):
        tail_index(np.ones(100), method="pickands")
    with pytest.raises(ValueError, match="finite"):
        tail_index(np.r_[np.ones(100), np.nan])
    with pytest.raises(ValueError, match="at least 10"):
        tail_index(np.ones(5))


def test_heavy_tail_sgd_error_shrinks_with_budget(rng):
    X = rng.normal(size=(80, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=80) > 0).astype(float)
    budgets = [50, 200, 800]
    err, noise = heavy_tail_sgd(X, y, budgets=budgets, alpha=1.8, noise_scale=0.1, clip=1.0, replicates=30, seed=0)
    assert err[0] > err[-1] > 0 and rate_exponent(budgets, err) < 0
    assert noise.size > 1000
    with pytest.raises(ValueError, match="alpha"):
        heavy_tail_sgd(X, y, budgets=budgets, alpha=0.9, noise_scale=0.1)
