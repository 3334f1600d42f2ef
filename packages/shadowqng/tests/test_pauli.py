import numpy as np
import pennylane as qml
import pytest
from shadowqng.pauli import (
    PauliTerms,
    anticommutes,
    codes,
    from_codes,
    pauli_matrix,
    product_phase,
    terms_from_sentence,
)


def _random_strings(rng, m, n):
    return from_codes(rng.integers(0, 4, size=(m, n)))


def test_product_phase_matches_matrices(rng):
    n = 3
    x1, z1 = _random_strings(rng, 40, n)
    x2, z2 = _random_strings(rng, 40, n)
    g = product_phase(x1, z1, x2, z2)
    for i in range(40):
        lhs = pauli_matrix(x1[i], z1[i]) @ pauli_matrix(x2[i], z2[i])
        rhs = (1j ** g[i]) * pauli_matrix(x1[i] ^ x2[i], z1[i] ^ z2[i])
        np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_anticommutes_matches_matrices(rng):
    x1, z1 = _random_strings(rng, 40, 3)
    x2, z2 = _random_strings(rng, 40, 3)
    anti = anticommutes(x1, z1, x2, z2)
    for i in range(40):
        a, b = pauli_matrix(x1[i], z1[i]), pauli_matrix(x2[i], z2[i])
        assert np.allclose(a @ b, -b @ a) == anti[i]


def test_codes_roundtrip(rng):
    c = rng.integers(0, 4, size=(10, 5))
    np.testing.assert_array_equal(codes(*from_codes(c)), c)


def test_sentence_roundtrip_and_simplify():
    op = 0.5 * qml.X(0) @ qml.Y(2) - 0.25 * qml.Z(1) + 0.5 * qml.X(0) @ qml.Y(2)
    t = terms_from_sentence(op.pauli_rep, [0, 1, 2]).simplify()
    assert len(t) == 2
    back = t.to_pauli_sentence(0, [0, 1, 2])
    np.testing.assert_allclose(qml.matrix(back.operation(), wire_order=[0, 1, 2]),
                               qml.matrix(op, wire_order=[0, 1, 2]), atol=1e-12)


def test_truncate_keeps_low_weight():
    x, z = from_codes(np.array([[1, 0, 0], [1, 2, 0], [1, 2, 3]]))
    t = PauliTerms(x, z, np.ones(3), np.zeros(3, np.int64))
    assert len(t.truncate(2)) == 2
    assert len(t.truncate(1)) == 1


def test_complex_coefficient_rejected():
    with pytest.raises(ValueError, match="not real"):
        terms_from_sentence(qml.pauli.PauliSentence({qml.pauli.PauliWord({0: "X"}): 1j}), [0])
