import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from rlqgrad import HEA, EvalLedger, gradient


@pytest.mark.parametrize("n,L,cost", [(3, 2, "local"), (4, 3, "global"), (5, 1, "local")])
def test_simulator_equals_default_qubit(n, L, cost, rng):
    hea = HEA(n, L, cost=cost)
    qn = hea.qnode(qml.device("default.qubit", wires=n))
    th = hea.init_params(rng)
    X = rng.uniform(0, np.pi, (4, n))
    ref = np.array([qn(x, th) for x in X])
    np.testing.assert_allclose(hea.expval(th, X).numpy(), ref, atol=1e-10)


@pytest.mark.parametrize("cost", ["local", "global"])
def test_differentiators_equal_each_other_and_qml_grad(cost, rng):
    hea = HEA(4, 2, cost=cost)
    qn = hea.qnode(qml.device("default.qubit", wires=4), diff_method="backprop")
    th = hea.init_params(rng)
    X = rng.uniform(0, np.pi, (3, 4))
    y = np.array([1.0, -1.0, 1.0])
    ref = qml.grad(lambda p: sum((1 - y[i] * qn(X[i], p)) / 2 for i in range(3)) / 3)(pnp.array(th, requires_grad=True))
    c = hea.cost(X, y)
    for m in ("backprop", "parameter-shift", "adjoint"):
        np.testing.assert_allclose(gradient(c, th, method=m), ref, atol=1e-8)


def test_ledger_counts_parameter_shift_2P_and_forward_1(rng):
    hea = HEA(3, 2)
    c = hea.cost(rng.uniform(0, 3, (8, 3)), np.ones(8))
    th = hea.init_params(rng)
    led = EvalLedger()
    gradient(c, th, method="parameter-shift", ledger=led)
    assert led.total == 2 * hea.n_params
    gradient(c, th, method="adjoint", ledger=led)
    gradient(c, th, method="backprop", ledger=led)
    assert led.total == 2 * hea.n_params + 2


def test_bad_inputs(rng):
    with pytest.raises(ValueError, match="cost must be"):
        HEA(3, 2, cost="medium")
    with pytest.raises(TypeError, match="n_qubits"):
        HEA(3.0, 2)
    with pytest.raises(ValueError, match="n_layers"):
        HEA(3, 0)
    hea = HEA(3, 2)
    c = hea.cost(rng.uniform(0, 3, (4, 3)), np.ones(4))
    with pytest.raises(ValueError, match="n_params = 12"):
        gradient(c, np.zeros(5))
    with pytest.raises(ValueError, match="method must be"):
        gradient(c, np.zeros(12), method="finite-differences")
    with pytest.raises(ValueError, match="finite"):
        gradient(c, np.full(12, np.nan))
    with pytest.raises(ValueError, match="labels"):
        hea.cost(np.zeros((2, 3)), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="X must have shape"):
        hea.cost(np.zeros((2, 4)), np.ones(2))
    with pytest.raises(TypeError, match="QNNCost"):
        gradient(lambda p: 0.0, np.zeros(12))
