"""Circuits as a flat list of Pauli rotations and Clifford gates, read from PennyLane tapes.

Every gate is either

- a **Pauli rotation** ``exp(-i φ P / 2)`` with ``P`` a Pauli string (RX, RY, RZ, IsingXX/YY/ZZ,
  PauliRot, MultiRZ, ... — any operation whose generator is one Pauli word), with
  ``φ = scale · θ[param]`` for a trainable parameter or a fixed ``φ``; or
- a **Clifford** gate (CZ, CNOT, H, S, SWAP, ...), kept as its matrix and its Pauli conjugation table.

:func:`circuit_from_tape` builds this from any PennyLane tape (so from any QNode);
:func:`hardware_efficient` builds the paper's ansatz directly. :class:`StateSimulator` is a small
batched NumPy statevector simulator of such circuits used by the experiments (PennyLane devices are
used through :mod:`shadowqng.surrogate` and as the reference in the tests).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pennylane as qml

from shadowqng.pauli import LETTERS, PauliTerms, codes, from_codes, pauli_matrix


@dataclass
class Gate:
    kind: str  # "rot" or "clifford"
    wires: tuple[int, ...]  # positions in Circuit.wires
    x: np.ndarray | None = None  # rotation string (length n)
    z: np.ndarray | None = None
    param: int | None = None  # trainable parameter index, or None
    scale: float = 1.0  # φ = scale · θ[param]
    angle: float = 0.0  # fixed φ when param is None
    matrix: np.ndarray | None = None  # Clifford matrix on ``wires``
    table: tuple[np.ndarray, np.ndarray] | None = None  # (image code index, sign) per input string


@dataclass
class Circuit:
    wires: list
    gates: list[Gate] = field(default_factory=list)
    n_params: int = 0

    @property
    def n_qubits(self) -> int:
        return len(self.wires)

    def generator_terms(self) -> list[tuple[int, int, PauliTerms]]:
        """``(gate index, param, G)`` per trainable gate, ``G = scale · P / 2``."""
        out = []
        for gi, g in enumerate(self.gates):
            if g.kind == "rot" and g.param is not None:
                t = PauliTerms(g.x[None].copy(), g.z[None].copy(), np.array([g.scale / 2]),
                               np.array([g.param], np.int64))
                out.append((gi, g.param, t))
        return out


# Clifford conjugation tables ---------------------------------------------------------------

def clifford_table(matrix: np.ndarray, n_wires: int, tol: float = 1e-9):
    """Images ``U P U†`` of all ``4**n_wires`` strings, or ``None`` if ``U`` is not Clifford.

    Returns ``(image, sign)``: input string with letter codes ``(c_0, ..., c_{m-1})`` (index
    ``Σ c_q 4^{m-1-q}``) maps to ``sign · (string with index image)``.
    """
    m = n_wires
    strings = list(itertools.product(range(4), repeat=m))
    mats = {}
    for s in strings:
        x, z = from_codes(np.array(s))
        mats[s] = pauli_matrix(x, z)
    image, sign = np.zeros(4 ** m, np.int64), np.zeros(4 ** m)
    for idx, s in enumerate(strings):
        conj = matrix @ mats[s] @ matrix.conj().T
        for jdx, t in enumerate(strings):
            ov = np.trace(mats[t].conj().T @ conj) / 2 ** m
            if abs(abs(ov) - 1) < tol:
                if abs(ov.imag) > tol:
                    return None
                image[idx], sign[idx] = jdx, np.sign(ov.real)
                break
        else:
            return None
    return image, sign


_TABLE_CACHE: dict = {}


def _cached_table(name: str, matrix: np.ndarray, m: int):
    key = (name, m, matrix.tobytes())
    if key not in _TABLE_CACHE:
        _TABLE_CACHE[key] = clifford_table(matrix, m)
    return _TABLE_CACHE[key]


# reading PennyLane tapes -----------------------------------------------------------------------

def _single_word(op):
    """``(coeff, PauliWord)`` of an operation whose generator is one Pauli word, else ``None``."""
    try:
        gen = qml.generator(op, format="observable")
    except Exception:  # noqa: BLE001 - PennyLane raises several types for "no generator"
        return None
    rep = getattr(gen, "pauli_rep", None)
    if rep is None:
        return None
    rep = qml.pauli.PauliSentence(rep)
    rep.simplify()
    words = [(w, c) for w, c in rep.items() if len(w) > 0]
    if len(words) != 1 or len(rep) != 1:
        return None
    word, c = words[0]
    return float(np.real(c)), word


def circuit_from_tape(tape, wires=None) -> Circuit:
    """The :class:`Circuit` of a PennyLane tape; trainable tape parameters become ``θ[0..P-1]``.

    Raises:
        ValueError: an operation is neither a Pauli rotation nor a Clifford gate, or a trainable
            parameter sits in an operation without a single-Pauli-word generator.
    """
    wires = list(wires if wires is not None else tape.wires)
    index = {w: q for q, w in enumerate(wires)}
    n = len(wires)
    circ = Circuit(wires)
    trainable = set(tape.trainable_params)
    pidx = 0  # running index over all tape parameters
    tidx = 0  # running index over trainable ones
    for op in tape.operations:
        n_par = op.num_params
        owned = [p for p in range(pidx, pidx + n_par) if p in trainable]
        pidx += n_par
        qw = tuple(index[w] for w in op.wires)
        if n_par == 0:
            mat = qml.matrix(op, wire_order=op.wires)
            table = _cached_table(op.name, np.asarray(mat), len(op.wires))
            if table is None:
                raise ValueError(f"operation {op.name} on wires {list(op.wires)} is neither a Pauli rotation "
                                 "nor a Clifford gate: its generator is not known to the propagation")
            circ.gates.append(Gate("clifford", qw, matrix=np.asarray(mat), table=table))
            continue
        sw = _single_word(op) if n_par == 1 else None
        if sw is None:
            raise ValueError(f"operation {op.name} has no single-Pauli-word generator; only Pauli rotations "
                             "(RX, RY, RZ, IsingXX/YY/ZZ, PauliRot, MultiRZ, ...) and Clifford gates are supported")
        c, word = sw
        row = np.zeros(n, np.int8)
        for w, letter in word.items():
            row[index[w]] = LETTERS.index(letter)
        x, z = from_codes(row)
        scale = -2.0 * c  # op(θ) = exp(i θ c P) = exp(-i (scale θ) P / 2)
        if owned:
            circ.gates.append(Gate("rot", qw, x=x, z=z, param=tidx, scale=scale))
            tidx += 1
        else:
            theta = float(np.real(qml.math.toarray(op.data[0])))
            circ.gates.append(Gate("rot", qw, x=x, z=z, angle=scale * theta))
    circ.n_params = tidx
    return circ


# the paper's ansatz --------------------------------------------------------------------------

def hardware_efficient(n: int, layers: int) -> Circuit:
    """``layers`` × (RY then RZ on every qubit, then CZ on each nearest-neighbour pair); 2·n·layers params."""
    if n < 2 or layers < 1:
        raise ValueError(f"need n >= 2 and layers >= 1, got n={n}, layers={layers}")
    circ = Circuit(list(range(n)))
    cz = np.diag([1.0, 1.0, 1.0, -1.0]).astype(complex)
    table = _cached_table("CZ", cz, 2)
    p = 0
    for _ in range(layers):
        for letter in (2, 3):  # Y, Z
            for q in range(n):
                row = np.zeros(n, np.int8)
                row[q] = letter
                x, z = from_codes(row)
                circ.gates.append(Gate("rot", (q,), x=x, z=z, param=p, scale=1.0))
                p += 1
        for q in range(n - 1):
            circ.gates.append(Gate("clifford", (q, q + 1), matrix=cz, table=table))
    circ.n_params = p
    return circ


def apply_ansatz(circ: Circuit, theta) -> None:
    """Queue ``circ`` as PennyLane operations (inside a QNode); ``theta`` has shape ``(n_params,)``."""
    for g in circ.gates:
        wires = [circ.wires[q] for q in g.wires]
        if g.kind == "clifford":
            qml.QubitUnitary(g.matrix, wires=wires) if not _is_cz(g) else qml.CZ(wires=wires)
            continue
        word = "".join(LETTERS[c] for c in codes(g.x, g.z)[list(g.wires)])
        phi = g.scale * theta[g.param] if g.param is not None else g.angle
        if len(word) == 1:
            {"X": qml.RX, "Y": qml.RY, "Z": qml.RZ}[word](phi, wires=wires[0])
        else:
            qml.PauliRot(phi, word, wires=wires)


def _is_cz(g: Gate) -> bool:
    return g.matrix.shape == (4, 4) and np.allclose(g.matrix, np.diag([1, 1, 1, -1]))


# a batched statevector simulator -----------------------------------------------------------

_H = np.array([[1, 1], [1, -1]], complex) / np.sqrt(2)
_SDG = np.diag([1, -1j])
# rotations taking the X, Y, Z eigenbases to the computational basis (recipe 0, 1, 2)
BASIS_ROTATIONS = np.stack([_H, _H @ _SDG, np.eye(2, dtype=complex)])


class StateSimulator:
    """Batched statevectors of a :class:`Circuit` (wire 0 is the most significant bit).

    ``states(thetas)`` takes ``(B, P)`` parameters and returns ``(B, 2**n)`` amplitudes.
    """

    def __init__(self, circ: Circuit):
        self.circ = circ
        n = circ.n_qubits
        self.n = n
        idx = np.arange(2 ** n)
        self._ops = []
        for g in circ.gates:
            if g.kind == "rot":
                xm = sum(1 << (n - 1 - q) for q in range(n) if g.x[q])
                zm = sum(1 << (n - 1 - q) for q in range(n) if g.z[q])
                y = int(np.sum(g.x & g.z))
                perm = idx ^ xm
                parity = np.array([bin(v).count("1") & 1 for v in (perm & zm)])
                phase = (1j ** y) * (1 - 2 * parity)
                self._ops.append(("rot", g, perm, phase))
            elif np.allclose(g.matrix, np.diag(np.diag(g.matrix))):
                d = np.ones(2 ** n, complex)
                bits = [(idx >> (n - 1 - q)) & 1 for q in g.wires]
                local = sum(b << (len(g.wires) - 1 - i) for i, b in enumerate(bits))
                d = np.diag(g.matrix)[local]
                self._ops.append(("diag", g, d, None))
            else:
                self._ops.append(("dense", g, None, None))

    def states(self, thetas) -> np.ndarray:
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        if thetas.shape[1] != self.circ.n_params:
            raise ValueError(f"params must have {self.circ.n_params} entries, got shape {thetas.shape[1:]}")
        b = thetas.shape[0]
        psi = np.zeros((b, 2 ** self.n), complex)
        psi[:, 0] = 1.0
        for kind, g, a, c in self._ops:
            if kind == "rot":
                phi = g.scale * thetas[:, g.param] if g.param is not None else np.full(b, g.angle)
                psi = np.cos(phi / 2)[:, None] * psi - 1j * np.sin(phi / 2)[:, None] * (c * psi[:, a])
            elif kind == "diag":
                psi = psi * a
            else:
                psi = apply_local(psi, g.matrix, g.wires, self.n)
        return psi


def apply_local(psi: np.ndarray, mat: np.ndarray, wires, n: int) -> np.ndarray:
    """Apply a ``len(wires)``-qubit matrix (shared by the batch) to flat states ``(B, 2**n)``."""
    b = psi.shape[0]
    m = len(wires)
    t = psi.reshape((b,) + (2,) * n)
    axes = [1 + q for q in wires]
    t = np.moveaxis(t, axes, list(range(1, m + 1)))
    shp = t.shape
    t = (mat @ t.reshape(b, 2 ** m, -1)).reshape(shp)
    t = np.moveaxis(t, list(range(1, m + 1)), axes)
    return t.reshape(b, 2 ** n)


def rotate_each(psi: np.ndarray, mats: np.ndarray, q: int, n: int) -> np.ndarray:
    """Apply a per-state one-qubit matrix ``mats[b]`` on qubit ``q`` to ``psi[b]``."""
    b = psi.shape[0]
    t = psi.reshape(b, 2 ** q, 2, 2 ** (n - q - 1))
    return np.einsum("bij,bajc->baic", mats, t).reshape(b, 2 ** n)
