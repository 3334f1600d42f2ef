import numpy as np
import pennylane as qml
import pytest
from shadowqng.circuit import StateSimulator, hardware_efficient
from shadowqng.data import ground_energy, measurement_groups, rotate_to_basis, spin_chain


@pytest.mark.parametrize("model", ["tfim", "xxz"])
def test_groups_reproduce_the_hamiltonian(model, rng):
    n = 4
    h = spin_chain(model, n)
    groups = measurement_groups(h, n)
    assert len(groups) == {"tfim": 2, "xxz": 3}[model]
    circ = hardware_efficient(n, 2)
    psi = StateSimulator(circ).states(rng.uniform(-np.pi, np.pi, circ.n_params))
    e = sum((np.abs(rotate_to_basis(psi, g.basis, n)) ** 2) @ g.values for g in groups)[0]
    ref = np.real(psi[0].conj() @ qml.matrix(h, wire_order=range(n)) @ psi[0])
    assert np.isclose(e, ref)


@pytest.mark.parametrize("model", ["tfim", "xxz"])
def test_ground_energy_matches_dense(model):
    h = spin_chain(model, 6)
    assert np.isclose(ground_energy(h, 6), np.linalg.eigvalsh(qml.matrix(h, wire_order=range(6)))[0])


def test_tfim_critical_chain_energy_per_site():
    # the open critical TFIM approaches -4/π per site from above
    e = ground_energy(spin_chain("tfim", 8), 8) / 8
    assert -4 / np.pi - 0.05 < e < -4 / np.pi + 0.2


@pytest.mark.parametrize("bad", [dict(model="ising3d", n=4), dict(model="tfim", n=1)])
def test_bad_chain(bad):
    with pytest.raises(ValueError, match="model must be|n must be"):
        spin_chain(**bad)
