"""A finite-shot VQE problem: every quantity an optimizer sees is sampled and charged to a ledger.

The state is simulated exactly (a NumPy statevector), but the optimizers only see sampled outcomes:
energies from ``shots`` measurements split over the Hamiltonian's qubit-wise commuting groups,
parameter-shift gradients from such energies, classical-shadow snapshots (one random Pauli basis
and one shot each), and the baselines' metric measurements. The exact energy is recorded for the
curves only and never charged or shown to an optimizer.
"""

from __future__ import annotations

import numpy as np

from shadowqng.circuit import BASIS_ROTATIONS, Circuit, StateSimulator, hardware_efficient
from shadowqng.data import ground_energy, measurement_groups, rotate_to_basis, spin_chain
from shadowqng.ledger import ShotLedger


class VQEProblem:
    """``model`` chain on ``n`` qubits with the hardware-efficient ansatz of ``layers`` layers."""

    def __init__(self, model: str, n: int, layers: int, *, h: float = 1.0, delta: float = 1.0,
                 circuit: Circuit | None = None):
        self.model, self.n, self.layers = model, n, layers
        self.hamiltonian = spin_chain(model, n, h=h, delta=delta)
        self.circ = circuit if circuit is not None else hardware_efficient(n, layers)
        self.sim = StateSimulator(self.circ)
        self.groups = measurement_groups(self.hamiltonian, n)
        self.e0 = ground_energy(self.hamiltonian, n)
        self.scales = np.zeros(self.circ.n_params)
        for g in self.circ.gates:
            if g.kind == "rot" and g.param is not None:
                self.scales[g.param] = g.scale

    @property
    def n_params(self) -> int:
        return self.circ.n_params

    # exact (for the curves and the oracle only) ----------------------------------------------------
    def exact_energy(self, thetas) -> np.ndarray:
        psi = self.sim.states(thetas)
        return sum((np.abs(rotate_to_basis(psi, g.basis, self.n)) ** 2) @ g.values for g in self.groups)

    def relative_error(self, theta) -> float:
        return float((self.exact_energy(theta)[0] - self.e0) / abs(self.e0))

    def exact_gradient(self, theta) -> np.ndarray:
        plus, minus = self._shifted(theta)
        return self.scales * (self.exact_energy(plus) - self.exact_energy(minus)) / 2

    # sampled ---------------------------------------------------------------------------------------
    def sampled_energy(self, thetas, shots: int, rng: np.random.Generator) -> np.ndarray:
        """Energy estimates for each row of ``thetas``, each from ``shots`` split over the groups."""
        psi = self.sim.states(thetas)
        per = max(1, shots // len(self.groups))
        est = np.zeros(psi.shape[0])
        for g in self.groups:
            p = np.abs(rotate_to_basis(psi, g.basis, self.n)) ** 2
            p = p / p.sum(axis=1, keepdims=True)
            counts = rng.multinomial(per, p)
            est += counts @ g.values / per
        return est

    def energy_cost(self, shots: int) -> tuple[int, int]:
        """``(circuits, shots)`` of one sampled energy."""
        per = max(1, shots // len(self.groups))
        return len(self.groups), per * len(self.groups)

    def _shifted(self, theta):
        shift = np.pi / (2 * self.scales)
        plus = theta[None, :] + np.diag(shift)
        minus = theta[None, :] - np.diag(shift)
        return plus, minus

    def sampled_gradient(self, theta, shots: int, rng, ledger: ShotLedger) -> np.ndarray:
        """Parameter-shift gradient: 2 energies per parameter, each from ``shots`` shots."""
        plus, minus = self._shifted(theta)
        e = self.sampled_energy(np.vstack([plus, minus]), shots, rng)
        c, s = self.energy_cost(shots)
        ledger.record("gradient", circuits=2 * self.n_params * c, shots=2 * self.n_params * s)
        return self.scales * (e[: self.n_params] - e[self.n_params:]) / 2

    def shadow(self, theta, snapshots: int, rng, ledger: ShotLedger) -> tuple[np.ndarray, np.ndarray]:
        """``snapshots`` random-Pauli snapshots ``(bits, recipes)`` in ``qml.classical_shadow``'s format."""
        psi = self.sim.states(theta[None])[0]
        recipes = rng.integers(0, 3, size=(snapshots, self.n))
        # outcome distributions in all 3**n local Pauli bases at once: (3, 2, 3, 2, ...) tensor
        t = psi.reshape((2,) * self.n)
        for q in range(self.n):
            t = np.tensordot(BASIS_ROTATIONS, t, axes=([2], [2 * q]))  # new axes (3, 2) in front
            t = np.moveaxis(t, (0, 1), (2 * q, 2 * q + 1)) if q else t
        p = (np.abs(t) ** 2).reshape((3, 2) * self.n)
        p = p.transpose(list(range(0, 2 * self.n, 2)) + list(range(1, 2 * self.n, 2))).reshape(3 ** self.n, -1)
        row = recipes @ (3 ** np.arange(self.n - 1, -1, -1))
        cdf = np.cumsum(p[row], axis=1)
        u = rng.random(snapshots)[:, None] * cdf[:, -1:]
        outcome = np.minimum((cdf < u).sum(axis=1), 2 ** self.n - 1)
        bits = ((outcome[:, None] >> np.arange(self.n - 1, -1, -1)[None, :]) & 1).astype(np.int8)
        ledger.record("shadow", circuits=snapshots, shots=snapshots)
        return bits, recipes.astype(np.int8)
