import inspect

import numpy as np
import pytest
import torch
from m2le import him_modulation, merge_lora, pm_alpha
from m2le.merge import takes_no_data
from scipy.optimize import minimize, minimize_scalar


def _quadratic(rng, n=15):
    return rng.normal(size=n), rng.exponential(size=n), rng.exponential(size=n)


def test_him_is_the_numerical_argmin_of_the_joint_quadratic(rng):
    # tasks L_i = ½(θ − θ_i*)ᵀH_i(θ − θ_i*), diagonal H_i: θ_prev* = W, θ_cur* = W + Δ
    W, (d, hp, hc) = rng.normal(size=15), _quadratic(rng)

    def joint(theta):
        return 0.5 * np.sum(hp * (theta - W) ** 2) + 0.5 * np.sum(hc * (theta - W - d) ** 2)

    def grad(theta):  # by hand: finite-difference BFGS stops ~1e-6 from the optimum, CPU-dependently
        return hp * (theta - W) + hc * (theta - W - d)

    num = minimize(joint, W, jac=grad, method="BFGS", options={"gtol": 1e-12}).x
    m = him_modulation(torch.tensor(d), torch.tensor(hp), torch.tensor(hc), damping=0.0).numpy()
    np.testing.assert_allclose(W + m * d, num, atol=1e-6)
    merged, _ = merge_lora({"w": torch.tensor(W)}, {"w": torch.tensor(d)}, {"w": torch.tensor(hp)},
                           {"w": torch.tensor(hc)}, merge="him", damping=0.0)
    np.testing.assert_allclose(merged["w"].numpy(), num, atol=1e-6)


def test_scalar_case_is_pm_alpha_by_line_search(rng):
    d, hp, hc = _quadratic(rng)
    line = minimize_scalar(lambda a: np.sum(hp * (a * d) ** 2) + np.sum(hc * ((a - 1) * d) ** 2),
                           bounds=(-2, 3), method="bounded", options={"xatol": 1e-12}).x
    assert pm_alpha(torch.tensor(d), torch.tensor(hp), torch.tensor(hc)) == pytest.approx(line, abs=1e-7)
    # a dict of layers gives one α over all of them
    a = pm_alpha({"a": torch.tensor(d[:5]), "b": torch.tensor(d[5:])}, {"a": torch.tensor(hp[:5]), "b": torch.tensor(hp[5:])},
                 {"a": torch.tensor(hc[:5]), "b": torch.tensor(hc[5:])})
    assert a == pytest.approx(line, abs=1e-7)


def test_limits_and_range(rng):
    d, hp, hc = (torch.tensor(v) for v in _quadratic(rng, 50))
    m = him_modulation(d, hp, hc)
    assert bool(((m >= 0) & (m <= 1)).all())
    assert torch.allclose(him_modulation(d, torch.zeros_like(hp), hc), torch.ones_like(d), atol=1e-6)
    assert torch.allclose(him_modulation(d, hp, torch.zeros_like(hc)), torch.zeros_like(d), atol=1e-6)
    # a wrong m (the scalar α* everywhere) is not the element-wise argmin
    assert not torch.allclose(m, torch.full_like(m, pm_alpha(d, hp, hc)))


def test_fisher_merge_with_an_offset_anchor_is_the_weighted_average(rng):
    W, (d, hp, hc), a = rng.normal(size=15), _quadratic(rng), rng.normal(size=15)
    out, _ = merge_lora({"w": torch.tensor(W)}, {"w": torch.tensor(d)}, {"w": torch.tensor(hp)}, {"w": torch.tensor(hc)},
                        merge="fisher", damping=0.0, anchor={"w": torch.tensor(a)})
    np.testing.assert_allclose(out["w"].numpy(), (hp * a + hc * (W + d)) / (hp + hc), atol=1e-12)


def test_merge_signature_takes_no_data():
    assert takes_no_data(merge_lora) and takes_no_data(him_modulation) and takes_no_data(pm_alpha)
    assert "loader" not in inspect.signature(merge_lora).parameters


def _args():
    z = torch.ones(3, 2)
    return {"w": z}, {"w": z}, {"w": z}, {"w": z}


@pytest.mark.parametrize("bad, match", [
    (lambda W, D, P, C: (W, D, {}, C), "fisher_prev is missing keys"),
    (lambda W, D, P, C: (W, D, P, {"w": torch.ones(2, 3)}), r"fisher_cur\['w'\] has shape"),
    (lambda W, D, P, C: (W, D, {"w": -torch.ones(3, 2)}, C), "negative"),
    (lambda W, D, P, C: (W, D, P, {"w": torch.full((3, 2), float("nan"))}), "NaN"),
    (lambda W, D, P, C: (W, {"v": torch.ones(3, 2)}, P, C), "weights is missing keys"),
])
def test_bad_merge_inputs(bad, match):
    with pytest.raises(ValueError, match=match):
        merge_lora(*bad(*_args()))


def test_a_data_loader_passed_to_the_merge_is_refused():
    from torch.utils.data import DataLoader, TensorDataset

    W, D, P, C = _args()
    dl = DataLoader(TensorDataset(torch.ones(4, 2), torch.zeros(4)))
    with pytest.raises(TypeError, match="fisher_cur must be a dict"):
        merge_lora(W, D, P, dl)
    with pytest.raises(TypeError, match="never data"):
        him_modulation(torch.ones(2), torch.ones(2), dl)
    with pytest.raises(ValueError, match="merge must be one of"):
        merge_lora(W, D, P, C, merge="ties")
