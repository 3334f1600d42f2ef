import numpy as np
import pennylane as qml
import pytest
from pennylane import numpy as pnp
from shadowqng.circuit import StateSimulator, apply_ansatz, circuit_from_tape, clifford_table, hardware_efficient


def test_simulator_matches_default_qubit(rng):
    circ = hardware_efficient(4, 2)
    theta = rng.uniform(-np.pi, np.pi, circ.n_params)

    @qml.qnode(qml.device("default.qubit", wires=4))
    def state(t):
        apply_ansatz(circ, t)
        return qml.state()

    np.testing.assert_allclose(StateSimulator(circ).states(theta)[0], state(theta), atol=1e-12)


def test_circuit_from_tape_general_gates(rng):
    @qml.qnode(qml.device("default.qubit", wires=3))
    def state(t):
        qml.Hadamard(0)
        qml.RX(t[0], 0)
        qml.CNOT([0, 2])
        qml.IsingZZ(t[1], [1, 2])
        qml.PauliRot(0.3, "XY", [0, 1])  # fixed angle
        qml.S(1)
        qml.RY(2 * t[2], 1)
        return qml.state()

    t = pnp.array(rng.uniform(-1, 1, 3), requires_grad=True)
    tape = qml.workflow.construct_tape(state)(t)
    circ = circuit_from_tape(tape, wires=[0, 1, 2])  # tape.wires is in order of appearance: [0, 2, 1]
    assert circ.n_params == 3
    np.testing.assert_allclose(StateSimulator(circ).states(tape.get_parameters())[0], state(t), atol=1e-12)


def test_non_clifford_gates_are_decomposed():
    """T is PhaseShift(π/4), CRX is two RY(±t/2) with CNOTs: fixed and trainable angles as PennyLane
    decomposes them."""
    tape = qml.tape.QuantumScript([qml.T(0), qml.CRX(0.3, wires=[0, 1])], [qml.expval(qml.Z(0))])
    circ = circuit_from_tape(tape)
    assert circ.n_params == 2
    np.testing.assert_allclose(sorted(circ.values), [-0.15, 0.15])
    np.testing.assert_allclose(sorted(circ.jacobian.ravel()), [-0.5, 0.5])


def test_state_preparation_must_come_first():
    tape = qml.tape.QuantumScript([qml.RX(0.3, 0), qml.BasisState(np.array([1]), wires=[0])], [qml.expval(qml.Z(0))])
    with pytest.raises(ValueError, match="must start the circuit"):
        circuit_from_tape(tape)


def test_clifford_table_of_t_is_none():
    assert clifford_table(qml.matrix(qml.T(0)), 1) is None


@pytest.mark.parametrize("n,layers", [(1, 1), (3, 0)])
def test_hardware_efficient_bad_sizes(n, layers):
    with pytest.raises(ValueError, match="n >= 2 and layers >= 1"):
        hardware_efficient(n, layers)
