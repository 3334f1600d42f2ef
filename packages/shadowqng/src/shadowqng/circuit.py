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
from pennylane import numpy as pnp

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
    jacobian: np.ndarray | None = None  # (n_params, T): d θ / d (tape's trainable parameters), from tapes
    values: np.ndarray | None = None  # θ at the tape's parameters, from tapes

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

_DROPPED = ("GlobalPhase", "Identity", "Barrier", "Snapshot")  # no effect on expectations or generators


def _single_word(op):
    """``(coeff, PauliWord)`` of an operation whose generator is one Pauli word (plus, possibly, a
    multiple of the identity: a global phase), else ``None``."""
    try:
        gen = qml.generator(op, format="observable")
    except Exception:  # noqa: BLE001 - PennyLane raises several types for "no generator"
        return None
    rep = getattr(gen, "pauli_rep", None)
    if rep is None:  # e.g. PhaseShift's generator is a projector
        if len(gen.wires) > 3:
            return None
        rep = qml.pauli_decompose(qml.matrix(gen, wire_order=gen.wires), wire_order=gen.wires, pauli=True)
    rep = qml.pauli.PauliSentence(rep)
    rep.simplify()
    words = [(w, c) for w, c in rep.items() if len(w) > 0]
    if len(words) != 1:
        return None
    word, c = words[0]
    if abs(np.imag(c)) > 1e-12:
        return None
    return float(np.real(c)), word


def _clifford(op):
    """``(matrix, conjugation table)`` of a parameterless Clifford gate on at most 3 wires, else ``None``."""
    if len(op.wires) > 3:
        return None
    try:
        mat = np.asarray(qml.matrix(op, wire_order=op.wires))
    except Exception:  # noqa: BLE001 - no matrix: not readable as a Clifford
        return None
    table = _cached_table(op.name, mat, len(op.wires))
    return None if table is None else (mat, table)


def supported(op) -> bool:
    """The stopping rule of the decomposition: gates :func:`circuit_from_tape` reads as they are.

    State preparations (kept as the initial state), global phases, Clifford gates without parameters
    and one-parameter gates whose generator is one Pauli word (RX, RY, RZ, PhaseShift, IsingXX/YY/ZZ,
    PauliRot, MultiRZ, ...). Everything else (templates, ``Rot``, controlled rotations, ``T``, ...)
    is decomposed by PennyLane until it is made of these.
    """
    if isinstance(op, qml.operation.StatePrepBase) or op.name in _DROPPED:
        return True
    if op.num_params == 0:
        return _clifford(op) is not None
    if op.num_params == 1 and qml.math.ndim(op.data[0]) == 0:
        return _single_word(op) is not None
    return False


def expand_tape(tape):
    """``(prefix, body)``: ``tape`` decomposed to :func:`supported` gates, split into its leading state
    preparations (``prefix``, a list of operations) and the gates (``body``, a ``QuantumScript`` with
    the same measurements; every parameter a scalar, global phases dropped).

    Raises:
        ValueError: a state preparation after the first gate.
    """
    [new], _ = qml.transforms.decompose(tape, stopping_condition=supported)
    prefix, body = [], []
    for op in new.operations:
        if isinstance(op, qml.operation.StatePrepBase):
            if body:
                raise ValueError(f"{op.name} on wires {list(op.wires)} comes after a gate: a state preparation "
                                 "must start the circuit (it is read as the initial state)")
            prefix.append(op)
        elif op.name not in _DROPPED:
            body.append(op)
    return prefix, qml.tape.QuantumScript(body, new.measurements, shots=new.shots)


def _decomposition_jacobian(tape):
    """``(values, J)``: the body's parameters after :func:`expand_tape` and their Jacobian ``(B, T)``
    with respect to the tape's trainable parameters, flattened (``T`` their total size; autograd
    through PennyLane's decompositions, which are written in ``qml.math``)."""
    params = list(tape.get_parameters(trainable_only=False))
    idx = list(tape.trainable_params)
    shapes = [qml.math.shape(params[i]) for i in idx]
    sizes = [int(np.prod(s)) for s in shapes]
    x0 = np.concatenate([np.real(np.asarray(qml.math.toarray(params[i]), dtype=complex)).ravel() for i in idx]) \
        if idx else np.zeros(0)

    def body_params(x):
        data, pos = list(params), 0
        for i, s, m in zip(idx, shapes, sizes):
            data[i] = qml.math.reshape(x[pos:pos + m], s)
            pos += m
        _, body = expand_tape(tape.bind_new_parameters(data, list(range(len(data)))))
        ps = body.get_parameters(trainable_only=False)
        return qml.math.stack(ps) if ps else qml.math.zeros(0)

    values = np.real(np.asarray(qml.math.toarray(body_params(x0)), dtype=complex))
    if not len(x0) or not len(values):
        return values, np.zeros((len(values), len(x0)))
    jac = np.asarray(qml.jacobian(body_params)(pnp.array(x0, requires_grad=True)), dtype=float)
    return values, jac.reshape(len(values), len(x0))


def circuit_from_tape(tape, wires=None, *, depends=None) -> Circuit:
    """The :class:`Circuit` of a PennyLane tape, decomposed to Pauli rotations and Clifford gates.

    Templates, ``Rot``, controlled rotations, ``T`` and other gates are decomposed by PennyLane
    (:func:`expand_tape`); leading state preparations (``BasisState``, ``StatePrep``) are the initial
    state and need no generator. A gate of the decomposition whose angle depends on the tape's
    trainable parameters becomes one circuit parameter ``θ[0..P-1]`` (so ``CRX(t)`` gives two, at
    ``±t/2``); ``circ.jacobian`` ``(P, T)`` maps the tape's trainable parameters, flattened (``T``
    entries), to them and ``circ.values`` holds their values. A metric ``F`` over ``θ`` is ``Jᵀ F J``
    over the tape's.

    ``depends`` (a boolean per parameter of :func:`expand_tape`'s body) overrides which gates are
    trainable; ``circ.jacobian`` is then ``None`` (the caller has it, e.g. from
    ``qml.gradients.classical_jacobian`` with ``expand_fn``).

    Raises:
        ValueError: an operation PennyLane cannot decompose into Pauli rotations and Clifford gates.
    """
    wires = list(wires if wires is not None else tape.wires)
    index = {w: q for q, w in enumerate(wires)}
    n = len(wires)
    circ = Circuit(wires)
    _, body = expand_tape(tape)
    if depends is None:
        values, jac = _decomposition_jacobian(tape)
        depends = np.any(np.abs(jac) > 0, axis=1) if jac.size else np.zeros(len(values), bool)
    else:
        jac = None
        values = np.array([float(np.real(qml.math.toarray(v))) for v in body.get_parameters(trainable_only=False)])
        depends = np.asarray(depends, bool)
        if depends.shape != values.shape:
            raise ValueError(f"depends must have one entry per gate parameter ({len(values)}), got {depends.shape}")
    rows = []
    pidx = 0
    for op in body.operations:
        qw = tuple(index[w] for w in op.wires)
        if op.num_params == 0:
            cliff = _clifford(op)
            if cliff is None:
                raise ValueError(f"operation {op.name} on wires {list(op.wires)} is neither a Pauli rotation "
                                 "nor a Clifford gate, and PennyLane does not decompose it into them")
            circ.gates.append(Gate("clifford", qw, matrix=cliff[0], table=cliff[1]))
            continue
        sw = _single_word(op) if op.num_params == 1 else None
        if sw is None:
            raise ValueError(f"operation {op.name} has no single-Pauli-word generator, and PennyLane does not "
                             "decompose it into Pauli rotations (RX, RY, RZ, IsingXX/YY/ZZ, PauliRot, MultiRZ, "
                             "...) and Clifford gates")
        c, word = sw
        row = np.zeros(n, np.int8)
        for w, letter in word.items():
            row[index[w]] = LETTERS.index(letter)
        x, z = from_codes(row)
        scale = -2.0 * c  # op(φ) = exp(i φ c P) (up to a global phase) = exp(-i (scale φ) P / 2)
        if depends[pidx]:
            circ.gates.append(Gate("rot", qw, x=x, z=z, param=len(rows), scale=scale))
            rows.append(pidx)
        else:
            circ.gates.append(Gate("rot", qw, x=x, z=z, angle=scale * float(values[pidx])))
        pidx += 1
    circ.n_params = len(rows)
    circ.jacobian = None if jac is None else jac[rows]
    circ.values = values[rows]
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
