"""VQE problems: open 1-D transverse-field Ising and XXZ/Heisenberg chains (PennyLane ``qml.spin``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pennylane as qml
import scipy.sparse.linalg

from shadowqng.circuit import BASIS_ROTATIONS, apply_local
from shadowqng.pauli import codes, terms_from_sentence

MODELS = ("tfim", "xxz")


def spin_chain(model: str, n: int, *, h: float = 1.0, delta: float = 1.0):
    """The Hamiltonian of an open chain of ``n`` spins.

    ``tfim``: :math:`-\\sum Z_iZ_{i+1} - h\\sum X_i`; ``xxz``: :math:`\\sum X_iX_{i+1} + Y_iY_{i+1} + \\Delta Z_iZ_{i+1}`
    (``delta = 1`` is the Heisenberg chain).
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    if model == "tfim":
        return qml.spin.transverse_ising("chain", [n], coupling=1.0, h=h, boundary_condition=False)
    return qml.spin.heisenberg("chain", [n], coupling=[1.0, 1.0, delta], boundary_condition=False)


def ground_energy(hamiltonian, n: int) -> float:
    """The exact ground-state energy (sparse Lanczos; dense for tiny ``n``)."""
    mat = hamiltonian.sparse_matrix(wire_order=range(n))
    if n <= 4:
        return float(np.linalg.eigvalsh(mat.toarray())[0])
    return float(scipy.sparse.linalg.eigsh(mat, k=1, which="SA")[0][0])


@dataclass
class MeasurementGroup:
    basis: np.ndarray  # (n,) recipe per qubit: 0 = X, 1 = Y, 2 = Z
    values: np.ndarray  # (2**n,) the group's energy contribution for each outcome


def measurement_groups(hamiltonian, n: int) -> list[MeasurementGroup]:
    """Qubit-wise commuting groups (``qml.pauli.group_observables``), each measured by one circuit."""
    coeffs, ops = hamiltonian.terms()
    groups, gcoeffs = qml.pauli.group_observables(ops, coeffs, grouping_type="qwc")
    idx = np.arange(2 ** n)
    bit = np.stack([(idx >> (n - 1 - q)) & 1 for q in range(n)], axis=1)  # (2**n, n)
    out = []
    for group, cs in zip(groups, gcoeffs):
        basis = np.full(n, 2, np.int64)
        values = np.zeros(2 ** n)
        for op, c in zip(group, cs):
            t = terms_from_sentence(op.pauli_rep, list(range(n)))
            row = codes(t.x, t.z)[0]
            supp = row > 0
            basis[supp] = row[supp] - 1
            values += float(np.real(c)) * t.coef[0] * (1 - 2 * (bit[:, supp].sum(axis=1) % 2))
        out.append(MeasurementGroup(basis, values))
    return out


def rotate_to_basis(psi: np.ndarray, basis: np.ndarray, n: int) -> np.ndarray:
    """States ``(B, 2**n)`` rotated so that measuring Z measures ``basis`` (one recipe per qubit)."""
    for q in range(n):
        if basis[q] != 2:
            psi = apply_local(psi, BASIS_ROTATIONS[basis[q]], (q,), n)
    return psi
