"""First-order ascent on MCR², the tail rate fitted on the distance, and the local constants.

Runners (``ascend``), with g_t = ∇F(Z_t) and step η:

- ``gd``:          Z ← Z + η g
- ``heavy_ball``:  v ← β v + g,  Z ← Z + η v   (Polyak; β = ``momentum``)
- ``adam``:        Adam's update with learning rate η, ascending (betas, eps as torch's defaults)
- ``pgd_sphere``:  Z ← rows of (Z + η g) scaled to unit norm (the sphere-constrained MCR²)

The closed-form maximizer set is that of the regularised objective, so the distance is tracked
for the first three; on the sphere there is no closed-form set, and the rate is fitted on the
Riemannian gradient norm instead (under an error bound that norm bounds the distance).

Rates: :func:`linear_rate` fits log v_t = a + b t by least squares and returns (e^b, R²).
A smooth *sublinear* decay (v_t ∝ t^{-p}) also looks log-linear on any short late window, with
a contraction just below 1, so :func:`linear_convergence` asks in addition that the rate be
stable: the per-step log-decrease on the last window is at least half of that on an earlier
window (at a tenth of the run). Linear convergence gives a ratio ≈ 1; t^{-p} gives
≈ t_early/t_late, about 0.1–0.3. And it asks that the run reach the float64 floor of the
distance: a sequence that barely moves is also "log-linear" with a contraction of 0.9999.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

from mcr2opt.maximizers import distance_to_maximizers, infer_ranks
from mcr2opt.objective import _check_Z, class_index, value_and_grad
from paperworks.utils import check_float, check_int

METHODS = ("gd", "heavy_ball", "adam", "pgd_sphere")


class DivergenceError(RuntimeError):
    """The iterates left every bounded region (or became NaN); the message names the step."""


def _sphere(Z: Tensor) -> Tensor:
    return Z / Z.norm(dim=1, keepdim=True)


def ascend(Z0: Tensor, y, *, eps: float, lam: float, method: str = "gd", step: float, n_steps: int,
           momentum: float = 0.5, betas: tuple[float, float] = (0.9, 0.999), track_distance: bool = True,
           ranks=None, stop_below: float | None = None, max_norm: float = 1e6) -> dict:
    """Run a first-order method on F from ``Z0`` (float64) and record its history.

    Args:
        Z0: start, shape ``(n, d)``; y: labels.
        eps, lam: the objective (λ > 0 for the distance to the closed-form set).
        method: ``"gd" | "heavy_ball" | "adam" | "pgd_sphere"``.
        step: η > 0; n_steps: iterations.
        momentum: β of heavy-ball; betas: Adam's.
        track_distance: record dist(Z_t, 𝒳*) (not for ``pgd_sphere``).
        ranks: class ranks for the distance (default: inferred at every iterate).
        stop_below: stop once the tracked quantity (distance; gradient norm for the sphere) is below it.
        max_norm: ‖Z‖_F above this is divergence.

    Returns:
        ``{"F": [...], "grad_norm": [...], "dist": [...], "Z": final Z, "method", "step", "steps_run"}``;
        entry t is at iterate Z_t (t = 0 the start).

    Raises:
        DivergenceError: NaN/inf or ‖Z‖ > ``max_norm``, naming the step.
    """
    Z = _check_Z(Z0).detach().double().clone()
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    step = check_float(step, "step", minimum=0.0, open_minimum=True)
    n_steps = check_int(n_steps, "n_steps", minimum=0)
    eps = check_float(eps, "eps", minimum=0.0, open_minimum=True)
    lam = check_float(lam, "lam", minimum=0.0)
    momentum = check_float(momentum, "momentum", minimum=0.0, maximum=1.0, open_maximum=True)
    check_float(max_norm, "max_norm", minimum=0.0, open_minimum=True)
    stop_below = check_float(stop_below, "stop_below", minimum=0.0, optional=True)
    class_index(y, Z.shape[0])
    sphere = method == "pgd_sphere"
    track = track_distance and not sphere
    if sphere:
        Z = _sphere(Z)
    hist = {"F": [], "grad_norm": [], "dist": [], "method": method, "step": step}
    v = torch.zeros_like(Z)
    m2 = torch.zeros_like(Z)
    b1, b2 = betas
    for t in range(n_steps + 1):
        F, g = value_and_grad(Z, y, eps=eps, lam=lam)
        if sphere:   # Riemannian gradient: remove each row's radial part
            g = g - (g * Z).sum(1, keepdim=True) * Z
        gn = float(g.norm())
        hist["F"].append(float(F))
        hist["grad_norm"].append(gn)
        if track:
            hist["dist"].append(distance_to_maximizers(Z, y, eps=eps, lam=lam, ranks=ranks))
        watched = hist["dist"][-1] if track else gn
        if t == n_steps or (stop_below is not None and watched <= stop_below):
            break
        # update
        if method == "gd" or sphere:
            Z = Z + step * g
        elif method == "heavy_ball":
            v = momentum * v + g
            Z = Z + step * v
        else:
            v = b1 * v + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            vh, mh = v / (1 - b1 ** (t + 1)), m2 / (1 - b2 ** (t + 1))
            Z = Z + step * vh / (mh.sqrt() + 1e-8)
        if sphere:
            Z = _sphere(Z)
        nz = float(Z.norm())
        if not math.isfinite(nz) or nz > max_norm:
            raise DivergenceError(f"{method} diverged at step {t + 1} (step size {step:g}): ‖Z‖_F = {nz:.3g}")
    hist["Z"] = Z
    hist["steps_run"] = len(hist["F"]) - 1
    return hist


def linear_rate(values) -> tuple[float, float]:
    """(contraction factor, R²) of the least-squares fit log v_t = a + b t: factor = e^b.

    Args:
        values: a positive sequence (a window of distances or gradient norms), ≥ 3 values.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) < 3:
        raise ValueError(f"values must be a 1-D sequence of at least 3 numbers, got shape {v.shape}")
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError("values must be finite and positive (a log-linear fit)")
    t = np.arange(len(v), dtype=float)
    lv = np.log(v)
    b, a = np.polyfit(t, lv, 1)
    ss_tot = float(np.sum((lv - lv.mean()) ** 2))
    ss_res = float(np.sum((lv - (a + b * t)) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 0.0
    return float(math.exp(b)), float(r2)


def linear_convergence(values, *, window: int = 100, floor: float = 1e-12, min_r2: float = 0.95,
                       require_floor: bool = True) -> dict:
    """Decide linear convergence of a positive sequence from its tail (see the module doc).

    The run's tail ends where the values first reach ``floor`` (the float64 resolution of the
    distance) or at its end. ``rate``, ``r2``: :func:`linear_rate` on the last ``window`` values
    of the tail; ``rate_early``: the same on the window starting at a tenth of the tail;
    ``stability`` = log(rate)/log(rate_early). ``linear`` is rate < 1, R² > ``min_r2``,
    stability ≥ ½ and (``require_floor``) the values reached ``floor``.
    """
    window = check_int(window, "window", minimum=3)
    v = np.asarray(values, dtype=float)
    hit = np.nonzero(v <= floor)[0]
    T = int(hit[0]) if len(hit) else len(v)
    w = min(window, T // 2)
    out = {"steps": T, "reached_floor": bool(len(hit)), "window": w, "rate": math.nan, "r2": math.nan,
           "rate_early": math.nan, "stability": math.nan, "linear": False}
    if w < 3:
        return out
    rate, r2 = linear_rate(v[T - w:T])
    e0 = T // 10
    rate_e, _ = linear_rate(v[e0:e0 + w])
    stab = math.log(rate) / math.log(rate_e) if rate_e < 1 and rate < 1 else math.nan
    out.update(rate=rate, r2=r2, rate_early=rate_e, stability=stab,
               linear=bool(rate < 1 and r2 > min_r2 and stab >= 0.5 and (len(hit) > 0 or not require_floor)))
    return out


def radial_directions(Zstar: Tensor, y) -> list[Tensor]:
    """Per class, the unit direction that scales that class's singular values (zero elsewhere)."""
    out = []
    for ix in class_index(y, Zstar.shape[0]):
        D = torch.zeros_like(Zstar)
        D[ix] = Zstar[ix]
        nrm = D.norm()
        if nrm > 0:
            out.append(D / nrm)
    return out


def local_constants(Zstar: Tensor, y, *, eps: float, lam: float, radii, n_dirs: int = 20,
                    generator: torch.Generator | None = None, ranks=None) -> list[dict]:
    """Error-bound, PL and quadratic-growth constants sampled in shrinking balls around ``Zstar``.

    At Z = Z* + r·u (u: ``n_dirs`` random unit directions and the outward radial direction of each
    class), with gap = F(Z*) − F(Z) and dist = dist(Z, 𝒳*):

    - κ̂(r) = max dist/‖∇F‖    (error bound: dist ≤ κ‖∇F‖),
    - μ̂(r) = min ‖∇F‖²/(2 gap) (PL: gap ≤ ‖∇F‖²/(2μ)),
    - ĉ(r) = min 2 gap/dist²   (quadratic growth: gap ≥ (c/2) dist²),
    - ``min_gap``: the smallest gap (a negative one: F rose, Z* is not a local max there).

    Sampled, so κ̂ is a lower estimate of the sup (μ̂, ĉ upper estimates of the inf).
    """
    Zstar = _check_Z(Zstar).double()
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    r = infer_ranks(Zstar, y, eps=eps, lam=lam) if ranks is None else ranks
    F0 = float(value_and_grad(Zstar, y, eps=eps, lam=lam)[0])
    dirs = []
    for _ in range(check_int(n_dirs, "n_dirs", minimum=0)):
        D = torch.randn(Zstar.shape, generator=gen, dtype=torch.float64)
        dirs.append(D / D.norm())
    dirs += radial_directions(Zstar, y)
    rows = []
    for rad in radii:
        rad = check_float(rad, "radii", minimum=0.0, open_minimum=True)
        kap, pl, qg, mg = 0.0, math.inf, math.inf, math.inf
        for D in dirs:
            Z = Zstar + rad * D
            F, g = value_and_grad(Z, y, eps=eps, lam=lam)
            gn = float(g.norm())
            dist = distance_to_maximizers(Z, y, eps=eps, lam=lam, ranks=r)
            gap = F0 - float(F)
            kap = max(kap, dist / gn if gn > 0 else math.inf)
            mg = min(mg, gap)
            if gap > 0:
                pl = min(pl, gn**2 / (2 * gap))
                qg = min(qg, 2 * gap / dist**2)
        rows.append({"radius": rad, "kappa": kap, "pl": pl, "qg": qg, "min_gap": mg})
    return rows


def loglog_slope(x, v) -> float:
    """Least-squares slope of log v on log x (0: the quantity stays bounded as x shrinks)."""
    x, v = np.log(np.asarray(x, float)), np.log(np.asarray(v, float))
    return float(np.polyfit(x, v, 1)[0])
