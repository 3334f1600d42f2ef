import numpy as np
import pytest
from lvqmark.quality import correlation_error, discriminative_score, mmd


def test_mmd_matches_brute_force(rng):
    a, b = rng.normal(size=(30, 4, 2)), rng.normal(0.5, size=(25, 4, 2))
    A, B = a.reshape(30, -1), b.reshape(25, -1)
    h = 1.3

    def k(u, v):
        return np.exp(-np.sum((u - v) ** 2) / (2 * h * h))

    saa = sum(k(A[i], A[j]) for i in range(30) for j in range(30) if i != j) / (30 * 29)
    sbb = sum(k(B[i], B[j]) for i in range(25) for j in range(25) if i != j) / (25 * 24)
    sab = sum(k(A[i], B[j]) for i in range(30) for j in range(25)) / (30 * 25)
    assert mmd(a, b, bandwidth=h) == pytest.approx(saa + sbb - 2 * sab, rel=1e-9)
    assert mmd(a, a[::-1].copy()) < mmd(a, b)


def test_correlation_error(rng):
    a = rng.normal(size=(50, 8, 3))
    assert correlation_error(a, a) == 0.0
    b = a.copy()
    b[..., 1] = b[..., 0]
    assert correlation_error(a, b) > 0.1


def test_discriminative_score_separates(rng):
    a = rng.normal(size=(200, 8, 2)).astype(np.float32)
    b = (rng.normal(size=(200, 8, 2)) + 3).astype(np.float32)
    assert discriminative_score(a, b, steps=60) > 0.4
    assert 0 <= discriminative_score(a, a.copy(), steps=20) <= 0.5
