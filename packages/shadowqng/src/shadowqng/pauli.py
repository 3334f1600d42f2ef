"""Pauli-string algebra in the symplectic (x, z) representation, vectorised over many strings.

A string on ``n`` qubits is two boolean rows ``x, z`` of length ``n``; the operator is
``P(x, z) = ⊗_q i^{x_q z_q} X^{x_q} Z^{z_q}`` (so ``(1, 1)`` is ``Y``, Hermitian). A set of
weighted strings is a :class:`PauliTerms`: arrays ``x, z`` of shape ``(m, n)``, real
coefficients ``coef`` of shape ``(m,)`` and an ``owner`` index per term, so that the
generators of all circuit parameters can be propagated through a circuit in one sweep.

Conversion to and from PennyLane's ``qml.pauli.PauliSentence`` keeps the package
interoperable with the rest of PennyLane (and is what the tests compare against).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pennylane.pauli import PauliSentence, PauliWord

# letter codes: 0 = I, 1 = X, 2 = Y, 3 = Z (the classical-shadow recipe r in {0,1,2} is code r + 1)
LETTERS = "IXYZ"
_X_OF = np.array([0, 1, 1, 0], dtype=bool)
_Z_OF = np.array([0, 0, 1, 1], dtype=bool)


def codes(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Letter codes (0..3 = I, X, Y, Z) of strings ``(x, z)``, same shape."""
    x = x.astype(np.int8)
    z = z.astype(np.int8)
    return (x * (1 + z) + (1 - x) * 3 * z).astype(np.int8)


def from_codes(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(c, dtype=np.int8)
    return _X_OF[c], _Z_OF[c]


def product_phase(x1, z1, x2, z2) -> np.ndarray:
    """Exponent ``g`` (mod 4) with ``P(x1,z1) P(x2,z2) = i^g P(x1^x2, z1^z2)``, per row.

    The per-qubit rule is Aaronson & Gottesman's ``g`` function (quant-ph/0406196).
    """
    x1, z1, x2, z2 = (np.asarray(a, dtype=np.int64) for a in (x1, z1, x2, z2))
    g = np.where(
        (x1 == 1) & (z1 == 1), z2 - x2,
        np.where((x1 == 1) & (z1 == 0), z2 * (2 * x2 - 1),
                 np.where((x1 == 0) & (z1 == 1), x2 * (1 - 2 * z2), 0)),
    )
    return np.mod(g.sum(axis=-1), 4)


def anticommutes(x1, z1, x2, z2) -> np.ndarray:
    """True where the two strings anticommute (odd symplectic product), per row."""
    return (np.sum((x1 & z2) ^ (z1 & x2), axis=-1) % 2).astype(bool)


def weight(x, z) -> np.ndarray:
    """Number of non-identity letters, per row."""
    return np.sum(x | z, axis=-1)


@dataclass
class PauliTerms:
    """Weighted Pauli strings; ``owner[t]`` says which operator term ``t`` belongs to."""

    x: np.ndarray
    z: np.ndarray
    coef: np.ndarray
    owner: np.ndarray

    @property
    def n_qubits(self) -> int:
        return self.x.shape[1]

    def __len__(self) -> int:
        return self.coef.shape[0]

    @classmethod
    def empty(cls, n: int) -> PauliTerms:
        return cls(np.zeros((0, n), bool), np.zeros((0, n), bool), np.zeros(0), np.zeros(0, np.int64))

    def concat(self, other: PauliTerms) -> PauliTerms:
        return PauliTerms(np.vstack([self.x, other.x]), np.vstack([self.z, other.z]),
                          np.concatenate([self.coef, other.coef]), np.concatenate([self.owner, other.owner]))

    def select(self, keep: np.ndarray) -> PauliTerms:
        return PauliTerms(self.x[keep], self.z[keep], self.coef[keep], self.owner[keep])

    def keys(self) -> np.ndarray:
        """One integer per (owner, string), for merging equal strings of the same owner."""
        n = self.n_qubits
        big = 2 * n + int(self.owner.max(initial=0)).bit_length() > 62
        owner = self.owner.astype(object) if big else self.owner
        return string_keys(self.x, self.z, big) + owner * (1 << (2 * n))

    def simplify(self, tol: float = 1e-12) -> PauliTerms:
        """Merge equal strings of one owner and drop coefficients below ``tol``."""
        if len(self) == 0:
            return self
        keys = self.keys()
        uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        coef = np.bincount(inv.ravel(), weights=self.coef, minlength=len(uniq))
        out = PauliTerms(self.x[first], self.z[first], coef, self.owner[first])
        return out.select(np.abs(coef) > tol)

    def truncate(self, k: int) -> PauliTerms:
        """Keep the strings of weight at most ``k``."""
        return self.select(weight(self.x, self.z) <= k)

    def of(self, owner: int) -> PauliTerms:
        return self.select(self.owner == owner)

    def support(self, owner: int) -> np.ndarray:
        """Boolean mask of the qubits some string of ``owner`` acts on."""
        sel = self.owner == owner
        return np.any(self.x[sel] | self.z[sel], axis=0)

    def to_pauli_sentence(self, owner: int, wires) -> PauliSentence:
        """Terms of ``owner`` as a PennyLane ``PauliSentence`` on ``wires``."""
        t = self.of(owner)
        ps = PauliSentence()
        for row, c in zip(codes(t.x, t.z), t.coef):
            word = PauliWord({wires[q]: LETTERS[v] for q, v in enumerate(row) if v})
            ps[word] = ps.get(word, 0.0) + float(c)
        return ps


def string_keys(x: np.ndarray, z: np.ndarray, big: bool = False) -> np.ndarray:
    """An integer per string (x bits then z bits), exact for any ``n`` (Python ints when ``big``)."""
    n = x.shape[1]
    dtype = object if (big or n > 30) else np.int64
    w = np.array([1 << q for q in range(n)], dtype=dtype)
    return (x.astype(dtype) @ w) * (1 << n) + z.astype(dtype) @ w


def terms_from_sentence(ps, wires, owner: int = 0) -> PauliTerms:
    """A PennyLane ``PauliSentence``/operator with a Pauli representation → :class:`PauliTerms`."""
    if not isinstance(ps, PauliSentence):
        rep = getattr(ps, "pauli_rep", None)
        if rep is None:
            raise TypeError(f"operator {ps!r} has no Pauli representation")
        ps = rep
    index = {w: q for q, w in enumerate(wires)}
    n = len(wires)
    xs, zs, cs = [], [], []
    for word, c in ps.items():
        if abs(np.imag(c)) > 1e-12:
            raise ValueError(f"coefficient of {word} is not real: {c}")
        row = np.zeros(n, np.int8)
        for w, letter in word.items():
            row[index[w]] = LETTERS.index(letter)
        x, z = from_codes(row)
        xs.append(x)
        zs.append(z)
        cs.append(float(np.real(c)))
    if not cs:
        return PauliTerms.empty(n)
    return PauliTerms(np.array(xs), np.array(zs), np.array(cs), np.full(len(cs), owner, np.int64))


def pauli_matrix(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Dense matrix of one string (wire 0 most significant), for tests and tables."""
    single = [np.eye(2), np.array([[0, 1], [1, 0]]), np.array([[0, -1j], [1j, 0]]), np.diag([1.0, -1.0])]
    m = np.ones((1, 1), dtype=complex)
    for c in codes(np.asarray(x)[None], np.asarray(z)[None])[0]:
        m = np.kron(m, single[c])
    return m
