import numpy as np
import pytest
from rlqgrad import gradient_variance


def test_global_cost_variance_falls_with_n():
    """McClean / Cerezo: with a global observable the gradient variance shrinks exponentially in n."""
    v = [gradient_variance(n, 2, method="adjoint", cost="global", n_circuits=100, seed=1) for n in (2, 4, 6)]
    assert v[0] > v[1] > v[2]
    assert v[0] / v[2] > 4


def test_policy_variance_and_cosine(policy):
    var, log = gradient_variance(4, 2, method="policy", policy=policy, n_circuits=20, log=True)
    assert var > 0 and len(log["cosine"]) == 20
    assert all(-1 - 1e-9 <= c <= 1 + 1e-9 for c in log["cosine"])


def test_variance_bad_inputs(policy):
    with pytest.raises(ValueError, match="method must be"):
        gradient_variance(3, 2, method="spsa")
    with pytest.raises(ValueError, match="policy="):
        gradient_variance(3, 2, method="policy")
    with pytest.raises(ValueError, match="n_circuits"):
        gradient_variance(3, 2, method="adjoint", n_circuits=1)
    assert np.isfinite(gradient_variance(3, 1, method="parameter-shift", n_circuits=5))
