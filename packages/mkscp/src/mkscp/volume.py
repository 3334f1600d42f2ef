"""Volumes of prediction regions ``{e : s(e) <= q}``, with a stated accuracy.

:func:`region_volume` (one score) and :func:`region_volumes` (several scores and thresholds on
shared points, as the experiments use it) pick, with ``method="auto"``:

- the closed form for ellipsoids and boxes (``score.closed_form_volume``);
- otherwise (``d >= 2``) the variance-targeted importance sampler ``"adaptive"``: a pilot from the
  mixture sampler (below) locates the region; a Gaussian mixture fitted to the pilot's points in the
  region (resampled by weight, so nearly uniform on it) plus a defensive 30% uniform on an ellipsoid
  around the region is the proposal, each point weighted by ``1 / proposal density``. Its density is
  nearly flat on the region, so the weights vary little: at d = 6 it reaches 1.4% relative standard
  error with 20,000 points where uniform sampling in the data's ellipsoid reaches 18% with 100,000.
  (It is also used at d = 2, 3, where it measured 3-5x more precise per point than uniform sampling.)
- ``"ellipsoid"``: uniform points in an expanded Mahalanobis ellipsoid of the residuals (``d = 1``);
- ``"mixture"``: a defensive mixture ``0.8 GMM + 0.2 Uniform(ellipsoid)``, the Gaussian mixture fitted
  to the fit residuals (the 0.1 experiments' sampler);
- ``"box"``: uniform points in a bounding box (a cross-check for small ``d``).

The estimate is ``V = mean(w 1[s <= q])`` with standard error ``se = sd / sqrt(n)``. The domain
(the ellipsoid or box) is first grown until no point of the region falls in its outer shell
(so the region lies inside it and the weights on the region are bounded, ``<= vol / 0.2`` for the
mixture); then batches are added (doubling) until ``se / V < rtol`` for every region, or
``max_points`` is reached. ``stable=True`` means exactly that: the region stayed off the shell and
``se / V < rtol``; the spread of ``V`` across random states is then about ``rtol`` (one standard error).

A region whose threshold reaches the score's limit at infinity is unbounded: the volume is ``inf``
(with an :class:`~mkscp.base.UnboundedRegionWarning`), never the Monte-Carlo number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mkscp.base import check_int, check_real
from mkscp.baselines import MahalanobisScore, unit_ball_log_volume

METHODS = ("auto", "ellipsoid", "adaptive", "mixture", "box")

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


def fit_proposal_mixture(E, rng: np.random.Generator, *, n_components: int = 8, inflate: float = 1.5):
    """A ``GaussianMixture`` fitted to ``E`` with covariances inflated by ``inflate^2`` (the proposal's bulk)."""
    from sklearn.mixture import GaussianMixture

    E = np.asarray(E, dtype=float)
    d = E.shape[1]
    gm = GaussianMixture(n_components=min(n_components, len(E) // (4 * d) or 1), covariance_type="full",
                         reg_covar=1e-6, random_state=int(rng.integers(2**31))).fit(E)
    gm.covariances_ = gm.covariances_ * inflate**2
    gm.precisions_cholesky_ = np.linalg.cholesky(np.linalg.inv(gm.covariances_))
    return gm


def mixture_points(E, center, cov, radius: float, n: int, rng: np.random.Generator, *, n_components: int = 8,
                   inflate: float = 1.5, defensive: float = 0.2, gmm=None) -> MonteCarloPoints:
    """Importance-sampling points from ``(1 - defensive) GMM + defensive Uniform(ellipsoid)``.

    The Gaussian mixture (``sklearn.mixture.GaussianMixture``, covariances inflated by ``inflate^2``)
    is fitted on the residuals ``E``; the ellipsoid is ``{(e - c)^T cov^{-1} (e - c) <= radius^2}``.
    The proposal has full support, so the estimate is unbiased for any region; the uniform part
    bounds the weights inside the ellipsoid. ``gmm``: a mixture from :func:`fit_proposal_mixture`
    (fitted here when ``None``).
    """
    from scipy.special import logsumexp

    d = np.asarray(E).shape[1]
    gm = gmm if gmm is not None else fit_proposal_mixture(E, rng, n_components=n_components, inflate=inflate)
    n_unif = int(rng.binomial(n, defensive))
    U = ellipsoid_points(center, cov, radius, n_unif, rng)
    G = _gmm_sample(gm, n - n_unif, rng) if n - n_unif > 0 else np.empty((0, d))
    P = np.vstack([G, U.points])[rng.permutation(n)]
    vol_ell = float(U.weights[0]) if n_unif else ellipsoid_points(center, cov, radius, 1, rng).weights[0]
    L = np.linalg.cholesky(np.asarray(cov, dtype=float).reshape(d, d))
    rad = np.linalg.norm(np.linalg.solve(L, (P - center).T), axis=0) / radius
    log_unif = np.where(rad <= 1.0, math.log(defensive) - math.log(vol_ell), -np.inf)
    logp = logsumexp(np.stack([math.log1p(-defensive) + gm.score_samples(P), log_unif]), axis=0)
    return MonteCarloPoints(P, np.exp(-logp), rad > SHELL, "mixture")


def _gmm_sample(gm, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from a fitted ``GaussianMixture`` with our generator (its ``sample`` uses its own seed)."""
    k = rng.choice(len(gm.weights_), size=n, p=gm.weights_ / gm.weights_.sum())
    z = rng.normal(size=(n, gm.means_.shape[1]))
    L = np.linalg.cholesky(gm.covariances_)
    return gm.means_[k] + np.einsum("nij,nj->ni", L[k], z)


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


def _inside(values: np.ndarray, q) -> np.ndarray:
    return np.all(values <= np.asarray(q), axis=1) if values.ndim == 2 else values <= q


def _check_options(method, n_points, max_points, rtol):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    n_points = check_int("n_points", n_points, low=100)
    max_points = check_int("max_points", max_points, low=n_points)
    return n_points, max_points, check_real("rtol", rtol, low=0.0)


def region_volumes(scores: Mapping, thresholds: Mapping, E, *, method: str = "auto", n_points: int = 20_000,
                   max_points: int = 500_000, rtol: float = 0.02, random_state=None, growth: float = 1.4,
                   max_grow: int = 8) -> dict:
    """Volumes of ``{s <= q}`` for several fitted global scores and thresholds, on shared points.

    Args:
        scores: name -> fitted :class:`~mkscp.base.BaseScore` (global: not ``local``).
        thresholds: name -> a sequence of thresholds for that score (a threshold may be an array,
            e.g. the Bonferroni box's per-coordinate thresholds).
        E: the fit residuals, shape ``(n, d)``: they place the proposal (Mahalanobis ellipsoid or box,
            Gaussian mixture).
        method: ``"auto"`` (closed form where one exists, else ``"adaptive"``; ``"ellipsoid"`` for
            ``d = 1``), or one Monte-Carlo sampler for every score: ``"ellipsoid"``, ``"adaptive"``,
            ``"mixture"`` or ``"box"``.
        n_points: the first batch; later batches double the total.
        max_points: the most points drawn for one domain.
        rtol: the target relative standard error ``se / V`` of every estimate.
        random_state: seed (``None``: fresh entropy).

    Returns:
        name -> a list (one per threshold) of dicts with ``volume``, ``se``, ``rel_se``, ``stable``,
        ``truncated``, ``n_points`` and ``method`` (``"closed_form"``, ``"unbounded"`` or the sampler).
    """
    n_points, max_points, rtol = _check_options(method, n_points, max_points, rtol)
    E = np.asarray(E, dtype=float)
    d = E.shape[1]
    rng = np.random.default_rng(random_state)
    out, todo = {}, []
    for name, s in scores.items():
        if s.local:
            raise ValueError(f"{name}: a local score's volume depends on x; use its closed_form_volume(q, X)")
        qs = list(thresholds[name])
        out[name] = [None] * len(qs)
        for i, q in enumerate(qs):
            if not s.is_bounded(q):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    s._warn_if_unbounded(q)
                out[name][i] = {"volume": math.inf, "se": 0.0, "rel_se": 0.0, "stable": True, "truncated": False,
                                "n_points": 0, "method": "unbounded"}
                continue
            closed = s.closed_form_volume(q) if method == "auto" else None
            if closed is not None:
                out[name][i] = {"volume": float(np.mean(closed)), "se": 0.0, "rel_se": 0.0, "stable": True,
                                "truncated": False, "n_points": 0, "method": "closed_form"}
            else:
                todo.append((name, i, q))
    if not todo:
        return out
    kind = ("ellipsoid" if d == 1 else "adaptive") if method == "auto" else method
    opts = {"n_points": n_points, "max_points": max_points, "rtol": rtol, "growth": growth, "max_grow": max_grow}
    if kind == "adaptive":
        # one domain per score (its thresholds are nested regions): the ellipsoid fitted to its largest region
        for name in dict.fromkeys(t[0] for t in todo):
            items = [t for t in todo if t[0] == name]
            draw, label = _adaptive_sampler(scores[name], [t[2] for t in items], E, rng, n_points)
            _run_domain(draw, label, items, scores, out, **opts)
    else:
        _run_domain(_sampler(kind, E, rng), kind, todo, scores, out, **opts)
    return out


def _run_domain(draw, kind, todo, scores, out, *, n_points, max_points, rtol, growth, max_grow):
    """Grow the domain until no region reaches its shell, then add points until ``se / V < rtol`` (all regions)."""
    names = sorted({t[0] for t in todo})
    scale, est = 1.0, None
    for grow in range(max_grow + 1):
        sums = {(n, i): [0.0, 0.0] for n, i, _ in todo}
        total, batch, touching = 0, n_points, False
        while total < max_points:
            pts = draw(scale, batch)
            vals = {n: scores[n].nonconformity(pts.points) for n in names}
            for n, i, q in todo:
                inside = _inside(vals[n], q)
                if np.any(inside & pts.shell):
                    touching = True
                c = np.where(inside, pts.weights, 0.0)
                sums[(n, i)][0] += float(c.sum())
                sums[(n, i)][1] += float((c**2).sum())
            total += batch
            est = {k: _mean_se(s1, s2, total) for k, (s1, s2) in sums.items()}
            if touching or all(se < rtol * v for v, se in est.values()):
                break
            batch = min(total, max_points - total)
        if not touching or grow == max_grow:
            break
        scale *= growth
    if touching:
        warnings.warn(f"a region still reaches the outer shell of the {kind} domain after {max_grow} enlargements: "
                      "its volume is underestimated (stable=False)", RuntimeWarning, stacklevel=3)
    for n, i, _ in todo:
        v, se = est[(n, i)]
        rel = se / v if v > 0 else math.inf
        out[n][i] = {"volume": v, "se": se, "rel_se": rel, "stable": bool(not touching and rel < rtol),
                     "truncated": bool(touching), "n_points": int(total), "method": kind, "scale": scale}


def _adaptive_sampler(score, qs, E, rng, n_pilot: int):
    """The variance-targeted proposal. A pilot from the mixture sampler finds the region (its largest
    threshold); resampling the pilot's inside points by their weights gives points roughly uniform on the
    region, to which a Gaussian mixture is fitted (covariances inflated by 1.2^2): its density is nearly
    flat on the region, so the weights vary little. A defensive 30% is uniform on the ellipsoid of the
    region's weighted mean and covariance, radius 1.2 x the largest pilot radius, which bounds the weights
    on the region and defines the shell."""
    pilot = _sampler("mixture", E, rng)(1.0, n_pilot)
    vals = score.nonconformity(pilot.points)
    inside = np.zeros(len(vals), dtype=bool)
    for q in qs:
        inside |= _inside(vals, q)
    d = E.shape[1]
    if inside.sum() <= 8 * d:  # too few pilot points to fit the region: the residuals' mixture sampler
        return _sampler("mixture", E, rng), "mixture"
    P, w = pilot.points[inside], pilot.weights[inside]
    mu = np.average(P, axis=0, weights=w)
    D = P - mu
    S = (D * w[:, None]).T @ D / w.sum()
    S += 1e-9 * np.trace(S) / d * np.eye(d)
    rad = math.sqrt(float(np.max(np.einsum("ij,jk,ik->i", D, np.linalg.inv(S), D))))
    U = P[rng.choice(len(P), size=min(len(P), 4000), p=w / w.sum())]
    gmm = fit_proposal_mixture(U, rng, inflate=1.2)
    return (lambda scale, n: mixture_points(U, mu, S, 1.2 * scale * rad, n, rng, gmm=gmm, defensive=0.3)), "adaptive"


def _mean_se(s1: float, s2: float, n: int) -> tuple[float, float]:
    mean = s1 / n
    var = max(s2 / n - mean**2, 0.0) * n / max(n - 1, 1)
    return mean, math.sqrt(var / n)


def _sampler(kind: str, E: np.ndarray, rng: np.random.Generator):
    """``draw(scale, n) -> MonteCarloPoints`` for the domain ``kind`` around the residuals ``E``."""
    if kind == "box":
        lo, hi = E.min(axis=0), E.max(axis=0)
        c, h = (lo + hi) / 2, np.maximum((hi - lo) / 2, 1e-12) * 1.25
        return lambda scale, n: box_points(c - scale * h, c + scale * h, n, rng)
    maha = MahalanobisScore().fit(E)
    r0 = 1.2 * math.sqrt(float(np.max(maha.nonconformity(E))))
    if kind == "ellipsoid":
        return lambda scale, n: ellipsoid_points(maha.location_, maha.covariance_, scale * r0, n, rng)
    gmm = fit_proposal_mixture(E, rng)
    return lambda scale, n: mixture_points(E, maha.location_, maha.covariance_, scale * r0, n, rng, gmm=gmm)


def region_volume(score, q, E, *, method: str = "auto", n_points: int = 20_000, max_points: int = 500_000,
                  rtol: float = 0.02, random_state=None) -> dict:
    """The volume of ``{e : s(e) <= q}`` for one fitted global score (see :func:`region_volumes`).

    Returns a dict with ``volume``, ``se``, ``rel_se``, ``stable`` (the region stayed inside the
    domain and ``se / volume < rtol``), ``truncated``, ``n_points`` and ``method``.

    Example:
        >>> from mkscp import MKSScore
        >>> rng = np.random.default_rng(0)
        >>> s = MKSScore().fit(rng.normal(size=(300, 2)))
        >>> est = region_volume(s, s.calibrate(rng.normal(size=(300, 2)), 0.1), rng.normal(size=(300, 2)),
        ...                     random_state=0)
        >>> bool(est["stable"]) and est["rel_se"] < 0.02
        True
    """
    return region_volumes({"score": score}, {"score": [q]}, E, method=method, n_points=n_points,
                          max_points=max_points, rtol=rtol, random_state=random_state)["score"][0]
