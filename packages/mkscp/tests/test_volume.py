import math

import numpy as np
import pytest
from mkscp import MahalanobisScore, MKSScore
from mkscp.data import sample_residuals
from mkscp.volume import (
    box_points,
    box_volume_stable,
    ellipsoid_points,
    ellipsoid_volume_stable,
    mixture_points,
    monte_carlo_volume,
)


def test_ellipsoid_points_are_uniform(rng):
    cov = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.5]])
    pts = ellipsoid_points(np.ones(3), cov, 2.0, 40_000, rng)
    D = pts.points - 1.0
    rad2 = np.einsum("ij,jk,ik->i", D, np.linalg.inv(cov), D) / 4.0
    assert rad2.max() <= 1.0 + 1e-12
    # uniform in a d-ball: P(radius <= t) = t^d, so the radius^d is U(0, 1)
    u = rad2 ** 1.5
    assert abs(u.mean() - 0.5) < 0.01 and abs((u < 0.25).mean() - 0.25) < 0.01
    vol = 4 / 3 * math.pi * 8.0 * math.sqrt(np.linalg.det(cov))
    assert pts.weights[0] == pytest.approx(vol, rel=1e-12)


def test_box_and_ellipsoid_recover_closed_form_mahalanobis(rng):
    E = sample_residuals("gaussian", 500, 2, rng)
    m = MahalanobisScore().fit(E)
    q = m.calibrate(sample_residuals("gaussian", 500, 2, rng), 0.1)
    exact = m.closed_form_volume(q)[0]
    box = box_volume_stable(m, q, E.min(0) - 1, E.max(0) + 1, n_points=50_000, rng=rng)
    ell = ellipsoid_volume_stable(m, q, m.location_, m.covariance_, 1.0, n_points=50_000, rng=rng)
    for est in (box, ell):
        assert est["stable"] and not est["truncated"]
        assert abs(est["volume"] - exact) < 4 * est["se"] + 1e-9


def test_mixture_importance_sampling_is_unbiased_in_4d(rng):
    E = sample_residuals("banana", 800, 4, rng)
    m = MahalanobisScore().fit(E)
    q = m.calibrate(sample_residuals("banana", 800, 4, rng), 0.1)
    r = 1.2 * math.sqrt(m.score_samples(E).max())
    pts = mixture_points(E, m.location_, m.covariance_, r, 40_000, rng)
    est = monte_carlo_volume(m, q, pts)
    assert abs(est["volume"] - m.closed_form_volume(q)[0]) < 4 * est["se"]


def test_mks_volume_box_vs_ellipsoid_d2(rng):
    E = sample_residuals("mixture", 300, 2, rng)
    s = MKSScore().fit(E)
    q = s.calibrate(sample_residuals("mixture", 300, 2, rng), 0.1)
    m = MahalanobisScore().fit(E)
    ell = ellipsoid_volume_stable(s, q, m.location_, m.covariance_, 1.0, n_points=15_000, rng=rng)
    box = box_volume_stable(s, q, E.min(0), E.max(0), n_points=15_000, rng=rng)
    assert ell["stable"] and len(ell["history"]) >= 2
    assert abs(ell["volume"] - box["volume"]) < 4 * math.hypot(ell["se"], box["se"])


def test_small_proposal_is_flagged_truncated(rng):
    E = sample_residuals("banana", 400, 2, rng)
    s = MKSScore().fit(E)
    q = s.calibrate(sample_residuals("banana", 400, 2, rng), 0.1)
    pts = box_points(-0.2 * np.ones(2), 0.2 * np.ones(2), 5000, rng)
    assert monte_carlo_volume(s, q, pts)["truncated"]
    m = MahalanobisScore().fit(E)
    with pytest.warns(RuntimeWarning, match="did not stabilise"):
        est = ellipsoid_volume_stable(s, q, m.location_, m.covariance_, 0.05, n_points=2000, max_steps=2, rng=rng)
    assert not est["stable"]


def test_box_points_bad_input(rng):
    with pytest.raises(ValueError, match="hi > lo"):
        box_points(np.ones(2), np.zeros(2), 10, rng)
