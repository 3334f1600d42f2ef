"""Volumes of prediction regions ``{e : s(e) <= q}``.

- closed form for ellipsoids and boxes (``score.closed_form_volume``);
- bounding-box Monte Carlo: uniform points in a box, volume = box volume x fraction inside;
- ellipsoid importance sampling: uniform points in an expanded Mahalanobis ellipsoid;
- mixture importance sampling (for d >= 4, where a uniform domain wastes most points): draws from
  a defensive mixture of a Gaussian mixture fitted to the residuals and the uniform ellipsoid,
  each point weighted by ``1 / proposal density``.

Both Monte-Carlo estimators only see the region inside their domain. A region that reaches the
outer shell of the domain is flagged ``truncated`` (its volume is underestimated); the
``*_stable`` helpers grow the domain until the shell is empty and the estimate stops growing.
A region whose threshold reaches the score's limit at infinity is unbounded: the volume is
``inf`` (with an :class:`~mkscp.base.UnboundedRegionWarning`), never the Monte-Carlo number.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from mkscp.baselines import unit_ball_log_volume

SHELL = 0.9  # the outer shell: Mahalanobis radius > SHELL * r (ellipsoid), or the outer 10% of each half-width (box)


@dataclass
class MonteCarloPoints:
    """Monte-Carlo points with importance weights (``1 / density``) and a mask of the domain's outer shell.

    For uniform points on a domain of volume ``V`` every weight is ``V``.
    """

    points: np.ndarray
    weights: np.ndarray
    shell: np.ndarray
    kind: str

    def estimate(self, inside: np.ndarray) -> dict:
        """Volume, its standard error and the truncation flag from an ``inside`` mask of the points."""
        inside = np.asarray(inside, dtype=bool)
        contrib = np.where(inside, self.weights, 0.0)
        se = float(contrib.std(ddof=1) / math.sqrt(len(contrib))) if len(contrib) > 1 else math.inf
        return {"volume": float(contrib.mean()), "se": se, "truncated": bool(np.any(inside & self.shell)),
                "method": self.kind}


def box_points(lo, hi, n: int, rng: np.random.Generator) -> MonteCarloPoints:
    """``n`` uniform points in the box ``[lo, hi]``."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if lo.shape != hi.shape or not np.all(hi > lo):
        raise ValueError(f"the box needs hi > lo elementwise, got lo={lo}, hi={hi}")
    P = rng.uniform(lo, hi, size=(int(n), lo.size))
    c, h = (lo + hi) / 2, (hi - lo) / 2
    shell = np.any(np.abs(P - c) > SHELL * h, axis=1)
    return MonteCarloPoints(P, np.full(len(P), float(np.prod(hi - lo))), shell, "box")


def ellipsoid_points(center, cov, radius: float, n: int, rng: np.random.Generator) -> MonteCarloPoints:
    """``n`` uniform points in ``{e : (e - c)^T cov^{-1} (e - c) <= radius^2}``."""
    center = np.asarray(center, dtype=float)
    d = center.size
    L = np.linalg.cholesky(np.asarray(cov, dtype=float).reshape(d, d))
    z = rng.normal(size=(int(n), d))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    u = rng.uniform(size=(int(n), 1)) ** (1.0 / d)
    P = center + radius * (z * u) @ L.T
    logvol = unit_ball_log_volume(d) + d * math.log(radius) + float(np.sum(np.log(np.diag(L))))
    return MonteCarloPoints(P, np.full(len(P), math.exp(logvol)), u[:, 0] > SHELL, "ellipsoid")


def mixture_points(E, center, cov, radius: float, n: int, rng: np.random.Generator, *, n_components: int = 8,
                   inflate: float = 1.5, defensive: float = 0.2) -> MonteCarloPoints:
    """Importance-sampling points from ``(1 - defensive) GMM + defensive Uniform(ellipsoid)``.

    The Gaussian mixture (``sklearn.mixture.GaussianMixture``, covariances inflated by ``inflate^2``)
    is fitted on the residuals ``E``; the ellipsoid is ``{(e - c)^T cov^{-1} (e - c) <= radius^2}``.
    The proposal has full support, so the estimate is unbiased for any region; the uniform part
    bounds the weights inside the ellipsoid.
    """
    from scipy.special import logsumexp
    from sklearn.mixture import GaussianMixture

    E = np.asarray(E, dtype=float)
    d = E.shape[1]
    gm = GaussianMixture(n_components=min(n_components, len(E) // (4 * d) or 1), covariance_type="full",
                         reg_covar=1e-6, random_state=int(rng.integers(2**31))).fit(E)
    gm.covariances_ = gm.covariances_ * inflate**2
    gm.precisions_cholesky_ = np.linalg.cholesky(np.linalg.inv(gm.covariances_))
    n_unif = int(rng.binomial(n, defensive))
    U = ellipsoid_points(center, cov, radius, n_unif, rng)
    G = gm.sample(n - n_unif)[0] if n - n_unif > 0 else np.empty((0, d))
    P = np.vstack([G, U.points])[rng.permutation(n)]
    vol_ell = float(U.weights[0]) if n_unif else ellipsoid_points(center, cov, radius, 1, rng).weights[0]
    L = np.linalg.cholesky(np.asarray(cov, dtype=float).reshape(d, d))
    rad = np.linalg.norm(np.linalg.solve(L, (P - center).T), axis=0) / radius
    log_unif = np.where(rad <= 1.0, math.log(defensive) - math.log(vol_ell), -np.inf)
    logp = logsumexp(np.stack([math.log1p(-defensive) + gm.score_samples(P), log_unif]), axis=0)
    return MonteCarloPoints(P, np.exp(-logp), rad > SHELL, "mixture")


def _unbounded(score, q, X):
    if not score.is_bounded(q, X):
        score._warn_if_unbounded(q, X)
        return {"volume": math.inf, "se": 0.0, "truncated": False, "method": "unbounded"}
    return None


def monte_carlo_volume(score, q, points: MonteCarloPoints, X=None) -> dict:
    """The volume of ``{s <= q}`` on the given points (``inf`` if the region is unbounded)."""
    out = _unbounded(score, q, X)
    if out is not None:
        return out
    return points.estimate(score.contains(points.points, q))


def ellipsoid_volume_stable(score, q, center, cov, radius: float, *, n_points: int = 100_000, growth: float = 1.5,
                            max_steps: int = 6, rtol: float = 0.05, rng: np.random.Generator | None = None) -> dict:
    """Importance-sampling volume with the proposal grown until the estimate is stable.

    Starting at ``radius``, the ellipsoid is grown by ``growth`` until the region no longer
    reaches the proposal's outer shell and two successive estimates agree within ``rtol`` (or
    ``max_steps`` is reached, which sets ``stable=False``). Returns the last estimate with the
    sequence of estimates (``history``) and ``stable``.
    """
    out = _unbounded(score, q, None)
    if out is not None:
        return {**out, "stable": True, "history": []}
    rng = rng if rng is not None else np.random.default_rng(0)
    history, prev = [], None
    for _ in range(max_steps):
        est = monte_carlo_volume(score, q, ellipsoid_points(center, cov, radius, n_points, rng))
        history.append((radius, est["volume"]))
        tol = max(rtol * est["volume"], 3 * est["se"])
        if prev is not None and not est["truncated"] and abs(est["volume"] - prev) <= tol:
            return {**est, "stable": True, "history": history, "radius": radius}
        prev, radius = est["volume"], radius * growth
    warnings.warn(f"the importance-sampling volume did not stabilise in {max_steps} steps: {history}",
                  RuntimeWarning, stacklevel=2)
    return {**est, "stable": False, "history": history, "radius": radius / growth}


def box_volume_stable(score, q, lo, hi, *, n_points: int = 100_000, growth: float = 1.3, max_steps: int = 6,
                      rng: np.random.Generator | None = None) -> dict:
    """Bounding-box Monte Carlo, growing the box (about its centre) until the region avoids its shell."""
    out = _unbounded(score, q, None)
    if out is not None:
        return {**out, "stable": True}
    rng = rng if rng is not None else np.random.default_rng(0)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    for _ in range(max_steps):
        est = monte_carlo_volume(score, q, box_points(lo, hi, n_points, rng))
        if not est["truncated"]:
            return {**est, "stable": True, "box": (lo, hi)}
        c, h = (lo + hi) / 2, (hi - lo) / 2 * growth
        lo, hi = c - h, c + h
    warnings.warn("the region still reaches the box boundary: the box volume is an underestimate",
                  RuntimeWarning, stacklevel=2)
    return {**est, "stable": False, "box": (lo, hi)}
