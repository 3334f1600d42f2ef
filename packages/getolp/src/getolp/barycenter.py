"""GETO-LP: the exact fixed-support Wasserstein barycenter LP on Cartesian grids.

For ``M`` histograms ``μ_1..μ_M`` on a ``d``-dimensional grid with ``N = n_1···n_d`` points and a
*separable* ground cost ``c(x, y) = Σ_k c_k(x_k, y_k)``, the fixed-support barycenter problem

.. math::
    \\min_{ν, π_m}\\ Σ_m λ_m ⟨C, π_m⟩ \\quad π_m 1 = ν,\\ π_m^T 1 = μ_m,\\ π_m ≥ 0

is rewritten, as in Auricchio et al. (NeurIPS 2018) for a single OT problem, as one layered
``(d+1)``-partite min-cost flow per input. Layer 0 holds ν, layer ``d`` holds μ_m, and an arc
from layer ``k`` to layer ``k+1`` changes only coordinate ``k`` of a grid point at cost
``c_k(a, b)``. Every source-to-sink path changes each coordinate once, so its cost is exactly
``c(x, y)``; conversely every coupling routes along such paths. The ``M`` flows share the
layer-0 supplies ν, which are variables. The LP has ``M·N·Σ_k n_k + N`` variables, i.e.
``O(d M N^{1+1/d})`` on a cube grid, against ``M N² + N`` for the standard LP
(:func:`ot.lp.barycenter`).

Reference: the GETO-LP paper (NeurIPS 2026; the formulation here is inferred from its abstract and
from its direct ancestor, Auricchio, Bassetti, Gualandi & Veneroni, "Computing
Kantorovich-Wasserstein distances on d-dimensional histograms using (d+1)-partite graphs",
NeurIPS 2018). Written from the description, not from any official code.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeWarning, linprog

log = logging.getLogger(__name__)

SOLVERS = ("highs", "highs-ds", "highs-ipm")
_AXIS_COSTS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "sqeuclidean": lambda a, b: (a - b) ** 2,
    "l1": lambda a, b: np.abs(a - b),
    "cityblock": lambda a, b: np.abs(a - b),
}
_NON_SEPARABLE = ("euclidean",)
# HiGHS options scipy's linprog takes by name; any other HiGHS option is passed to HiGHS verbatim
_SCIPY_HIGHS_OPTIONS = ("presolve", "disp", "maxiter", "dual_feasibility_tolerance", "primal_feasibility_tolerance",
                        "ipm_optimality_tolerance", "simplex_dual_edge_weight_strategy")
# tolerances of the *scaled* LP (masses with a mean entry of 1, costs with a largest entry of 1): HiGHS's
# tolerances are absolute, and the unscaled masses per point (~1/N) sit close to its default 1e-7
DEFAULT_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


class SolverError(RuntimeError):
    """HiGHS did not return an optimal solution (time limit, or a failure on every retry)."""


# input validation --------------------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def check_grid_shape(grid_shape) -> tuple[int, ...]:
    """``grid_shape`` as a tuple of positive ints; floats, strings and bools are refused, not coerced."""
    if _is_int(grid_shape):
        grid_shape = (int(grid_shape),)
    if isinstance(grid_shape, (str, bytes, Mapping)) or not isinstance(grid_shape, (Sequence, np.ndarray)) \
            and not hasattr(grid_shape, "__iter__"):
        raise TypeError(f"grid_shape must be a tuple of ints, got {type(grid_shape).__name__} {grid_shape!r}")
    shape = tuple(grid_shape)
    bad = [s for s in shape if not _is_int(s)]
    if bad:
        raise TypeError(f"grid_shape must be a tuple of ints, got {shape!r} (entry {bad[0]!r} of type "
                        f"{type(bad[0]).__name__}; not coerced)")
    shape = tuple(int(s) for s in shape)
    if len(shape) == 0 or any(s < 1 for s in shape):
        raise ValueError(f"grid_shape must be a non-empty tuple of positive ints (a non-empty grid), got {shape}")
    return shape


def _as_array(x, name: str) -> tuple[np.ndarray, float]:
    """A real array as float64, and the machine epsilon of the dtype it came in (for tolerances).

    numpy arrays, nested lists and any POT backend array (torch, jax, ...) are accepted; strings,
    dicts, bools and complex numbers are refused with a ``TypeError`` naming ``name``.
    """
    if x is None or isinstance(x, (str, bytes, Mapping, set, frozenset)):
        raise TypeError(f"{name} must be an array of real numbers, got {type(x).__name__}")
    if not isinstance(x, (np.ndarray, list, tuple, int, float, np.generic)):
        import ot

        try:
            nx = ot.backend.get_backend(x)
        except (ValueError, TypeError, AttributeError) as e:
            raise TypeError(f"{name} must be an array of real numbers (numpy, list or a POT backend array such "
                            f"as a torch tensor), got {type(x).__name__}") from e
        x = nx.to_numpy(x)
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as e:
        raise TypeError(f"{name} must be a rectangular array of real numbers: {e}") from e
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype} (no coercion from "
                        f"{'strings' if arr.dtype.kind in 'USO' else arr.dtype.name})")
    eps = float(np.finfo(arr.dtype).eps) if arr.dtype.kind == "f" else float(np.finfo(np.float64).eps)
    return arr.astype(np.float64), eps


def mass_rtol(eps: float) -> float:
    """Relative tolerance on equal masses and on Σλ = 1 for inputs of machine epsilon ``eps``.

    ``1e-8`` for float64; ``64·eps`` for lower precision (float32: 7.6e-6), which covers the
    rounding of a normalisation done in that precision.
    """
    return max(1e-8, 64.0 * eps)


def check_histograms(histograms, grid_shape: tuple[int, ...], *, normalize: bool = False,
                     eps: float | None = None) -> np.ndarray:
    """Histograms as a float64 array of shape ``(M, N)`` with exactly equal masses.

    Masses equal to within :func:`mass_rtol` of the input dtype are rescaled to their mean (the LP
    needs consistent right-hand sides); larger differences are refused unless ``normalize``.
    """
    h, in_eps = _as_array(histograms, "histograms")
    eps = in_eps if eps is None else eps
    n = int(np.prod(grid_shape))
    if h.ndim >= 2 and (h.shape[1:] == tuple(grid_shape) or (h.ndim == 2 and h.shape[1] == n)):
        h = h.reshape(h.shape[0], n)
    else:
        raise ValueError(f"histograms must have shape (M, *grid_shape) = (M, {', '.join(map(str, grid_shape))}) "
                         f"or (M, {n}), got {h.shape}")
    if h.shape[0] < 1:
        raise ValueError("histograms must hold at least one histogram (M >= 1)")
    if not np.all(np.isfinite(h)):
        raise ValueError("histograms must be finite (found NaN or inf)")
    if np.any(h < 0):
        raise ValueError(f"histograms must be non-negative (min entry {h.min():.3g})")
    mass = h.sum(axis=1)
    if np.any(mass <= 0):
        raise ValueError("histograms must each have positive mass")
    if normalize:
        return h / mass[:, None]
    rtol = mass_rtol(eps)
    if np.ptp(mass) > rtol * mass.max():
        raise ValueError(f"histograms must have equal masses: they range from {mass.min():.9g} to {mass.max():.9g} "
                         f"(relative spread {np.ptp(mass) / mass.max():.2g} > {rtol:.2g}, the tolerance for "
                         "this dtype); pass normalize=True to rescale each to mass 1")
    return h * (mass.mean() / mass)[:, None]


def check_weights(weights, m: int) -> np.ndarray:
    """Barycentric weights λ: ``m`` non-negative numbers summing to 1 (to the dtype's precision); uniform if ``None``."""
    if weights is None:
        return np.full(m, 1.0 / m)
    w, eps = _as_array(weights, "weights")
    w = w.ravel()
    if w.shape != (m,):
        raise ValueError(f"weights must have one entry per histogram ({m}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and non-negative")
    if abs(w.sum() - 1.0) > mass_rtol(eps):
        raise ValueError(f"weights must sum to 1, got {w.sum():.10g} (tolerance {mass_rtol(eps):.2g} for this dtype)")
    return w / w.sum()


def _check_solver(solver: str) -> None:
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")


def check_time_limit(time_limit) -> float | None:
    """``None`` or a positive finite number of seconds (strings and bools refused)."""
    if time_limit is None:
        return None
    if not _is_real(time_limit):
        raise TypeError(f"time_limit must be a number of seconds or None, got {type(time_limit).__name__} "
                        f"{time_limit!r}")
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive finite number of seconds, got {time_limit!r}")
    return float(time_limit)


def check_highs_options(options) -> dict:
    """HiGHS options as a dict of name → bool/number/string (``time_limit`` has its own argument)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"highs_options must be a dict of HiGHS option names to values, got {type(options).__name__}")
    out = {}
    for k, v in options.items():
        if not isinstance(k, str) or not k:
            raise TypeError(f"highs_options keys must be HiGHS option names (strings), got {k!r}")
        if k == "time_limit":
            raise ValueError("pass the time limit as time_limit=..., not in highs_options")
        if isinstance(v, (bool, np.bool_, str)):
            out[k] = v if isinstance(v, str) else bool(v)
        elif _is_real(v) and math.isfinite(v):
            out[k] = v.item() if isinstance(v, np.generic) else v
        else:
            raise TypeError(f"highs_options[{k!r}] must be a bool, a finite number or a string, got {v!r}")
    if out:
        _probe_highs_options(out)
    return out


def _probe_highs_options(options: dict) -> None:
    """Hand the options to HiGHS on a one-variable LP: an unknown name or a bad value is a ValueError
    here (scipy would only warn, and HiGHS would fall back to its default)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        named = {k: v for k, v in options.items() if k in _SCIPY_HIGHS_OPTIONS}
        verbatim = {k: v for k, v in options.items() if k not in named}
        try:
            linprog([1.0], A_eq=[[1.0]], b_eq=[1.0], bounds=(0, None), method="highs", options={**named, **verbatim})
        except (TypeError, ValueError) as e:
            raise ValueError(f"highs_options {options}: {e}") from e
    for w in caught:
        msg = str(w.message)
        if issubclass(w.category, OptimizeWarning) and "verbatim" not in msg:
            raise ValueError(f"highs_options {options}: HiGHS refused them: {msg}")


def check_max_variables(max_variables) -> int | None:
    if max_variables is None:
        return None
    if not _is_real(max_variables) or not max_variables >= 1 or not math.isfinite(max_variables):
        raise ValueError(f"max_variables must be None or a positive number, got {max_variables!r}")
    return int(max_variables)


# costs -----------------------------------------------------------------------------------------

def grid_coords(grid_shape, coords=None) -> list[np.ndarray]:
    """Per-axis coordinates: ``coords[k]`` (length ``n_k``), default ``linspace(0, 1, n_k)``.

    The default matches POT's ``convolutional_barycenter2d`` grid.
    """
    shape = check_grid_shape(grid_shape)
    if coords is None:
        return [np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1) for n in shape]
    if len(coords) != len(shape):
        raise ValueError(f"coords must give one coordinate array per axis ({len(shape)}), got {len(coords)}")
    out = []
    for k, (c, n) in enumerate(zip(coords, shape)):
        c = np.asarray(c, dtype=float).ravel()
        if c.shape != (n,) or not np.all(np.isfinite(c)):
            raise ValueError(f"coords[{k}] must hold {n} finite numbers, got shape {c.shape}")
        out.append(c)
    return out


def axis_costs(grid_shape, cost="sqeuclidean", coords=None) -> list[np.ndarray]:
    """The per-axis cost matrices ``c_k`` (shape ``(n_k, n_k)``) of a separable ground cost.

    Args:
        grid_shape: ``(n_1, ..., n_d)``.
        cost: ``"sqeuclidean"`` (Σ_k (x_k − y_k)²), ``"l1"``/``"cityblock"`` (Σ_k |x_k − y_k|),
            a callable ``f(a, b)`` applied per axis to broadcast coordinate arrays, or a sequence of
            ``d`` matrices ``c_k``. ``"euclidean"`` is not separable and is refused.
        coords: optional per-axis coordinates (default ``linspace(0, 1, n_k)``).
    """
    shape = check_grid_shape(grid_shape)
    if isinstance(cost, str):
        if cost in _NON_SEPARABLE:
            raise ValueError(
                f"cost={cost!r} is not separable across axes, so the GETO-LP would not be exact; "
                "use 'sqeuclidean', 'l1' or per-axis costs, or pass approximate=True to "
                "fixed_support_barycenter for a labelled approximation")
        if cost not in _AXIS_COSTS:
            raise ValueError(f"cost must be one of {sorted(_AXIS_COSTS)} (separable), a callable or "
                             f"per-axis matrices, got {cost!r}")
        cost = _AXIS_COSTS[cost]
    if callable(cost):
        xs = grid_coords(shape, coords)
        mats = [np.asarray(cost(x[:, None], x[None, :]), dtype=float) for x in xs]
    elif isinstance(cost, Sequence) or isinstance(cost, np.ndarray):
        mats = [np.asarray(c, dtype=float) for c in cost]
        if len(mats) != len(shape):
            raise ValueError(f"cost must give one matrix per axis ({len(shape)}), got {len(mats)}")
    else:
        raise TypeError(f"cost must be a string, a callable or a sequence of matrices, got {type(cost).__name__}")
    for k, (c, n) in enumerate(zip(mats, shape)):
        if c.shape != (n, n):
            raise ValueError(f"cost for axis {k} must have shape ({n}, {n}), got {c.shape}")
        if not np.all(np.isfinite(c)):
            raise ValueError(f"cost for axis {k} must be finite")
    return mats


def grid_cost_matrix(grid_shape, cost="sqeuclidean", coords=None) -> np.ndarray:
    """The full ``N × N`` ground-cost matrix ``C[x, y]`` on the grid (C-order flattening).

    Separable costs are ``Σ_k c_k[x_k, y_k]``; ``"euclidean"`` is ``sqrt`` of the squared one.
    Memory is ``N²``: for baselines and checks on small grids.
    """
    shape = check_grid_shape(grid_shape)
    root = isinstance(cost, str) and cost == "euclidean"
    mats = axis_costs(shape, "sqeuclidean" if root else cost, coords)
    n = int(np.prod(shape))
    idx = np.unravel_index(np.arange(n), shape)
    C = np.zeros((n, n))
    for k, c in enumerate(mats):
        C += c[idx[k][:, None], idx[k][None, :]]
    return np.sqrt(C) if root else C


def n_variables(grid_shape, n_histograms: int) -> int:
    """Number of GETO-LP variables: ``M · N · Σ_k n_k + N`` (flows, then ν)."""
    shape = check_grid_shape(grid_shape)
    n = int(np.prod(shape))
    return int(n_histograms) * n * sum(shape) + n


# the LP ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Where each block of variables (and each row) lives in the GETO-LP."""

    grid_shape: tuple[int, ...]
    n_histograms: int
    drop_dependent: bool = False

    @property
    def n_points(self) -> int:
        return int(np.prod(self.grid_shape))

    @property
    def per_input(self) -> int:
        return self.n_points * sum(self.grid_shape)

    def flow(self, m: int, k: int) -> slice:
        """Slice of the arcs from layer ``k`` to ``k+1`` of input ``m`` (arc ``u·n_k + j``)."""
        start = m * self.per_input + self.n_points * sum(self.grid_shape[:k])
        return slice(start, start + self.n_points * self.grid_shape[k])

    @property
    def nu(self) -> slice:
        start = self.n_histograms * self.per_input
        return slice(start, start + self.n_points)

    @property
    def rows_per_input(self) -> int:
        return (len(self.grid_shape) + 1) * self.n_points

    def mu_rows(self, m: int) -> slice:
        """Rows (of the full system) of input ``m``'s last layer, whose supplies are μ_m."""
        end = (m + 1) * self.rows_per_input
        return slice(end - self.n_points, end)

    @property
    def kept_rows(self) -> np.ndarray:
        """Mask of the full system's rows kept in ``A`` (all but the dropped dependent ones)."""
        keep = np.ones(self.n_histograms * self.rows_per_input, dtype=bool)
        if self.drop_dependent:
            keep[[(m + 1) * self.rows_per_input - 1 for m in range(1, self.n_histograms)]] = False
        return keep


def _arc_heads(shape: tuple[int, ...], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the arcs of axis ``k``: tail node ``u``, new coordinate ``j`` and head node ``v``."""
    n = int(np.prod(shape))
    nk = shape[k]
    stride = int(np.prod(shape[k + 1:]))
    u = np.repeat(np.arange(n), nk)
    j = np.tile(np.arange(nk), n)
    uk = (u // stride) % nk
    v = u + (j - uk) * stride
    return u, j, v


def build_lp(histograms: np.ndarray, grid_shape, weights: np.ndarray, costs: list[np.ndarray], *,
             drop_dependent: bool = True):
    """The GETO-LP in equality form ``min cᵀx, A x = b, x ≥ 0``.

    Rows, per input ``m``: for each layer ``k = 0..d`` and node ``w``, inflow − outflow = supply,
    with ν (a variable) as the inflow of layer 0 and μ_m as the outflow of layer ``d``.

    The rows of one input sum to ``Σν = Σμ_m``, so with equal masses the ``M`` blocks carry
    ``M − 1`` linearly dependent rows (the left null space is spanned by ``1_m − 1_1``). With
    ``drop_dependent`` (default) the last μ-row of inputs ``2..M`` is removed, which leaves ``A``
    with full row rank; HiGHS's presolve reported smooth inputs infeasible with them in place.

    Returns ``(c, A, b, layout)`` with ``A`` a CSR matrix of ``(d+1)·M·N − (M−1)`` rows
    (``(d+1)·M·N`` without ``drop_dependent``).
    """
    shape = tuple(grid_shape)
    d, n, m_count = len(shape), int(np.prod(shape)), histograms.shape[0]
    lay = Layout(shape, m_count, drop_dependent)
    n_var = lay.nu.stop
    c = np.zeros(n_var)
    rows, cols, vals = [], [], []
    rows_per_input = (d + 1) * n
    arcs = [_arc_heads(shape, k) for k in range(d)]
    for m in range(m_count):
        base = m * rows_per_input
        for k, (u, j, v) in enumerate(arcs):
            sl = lay.flow(m, k)
            col = np.arange(sl.start, sl.stop)
            uk = (u // int(np.prod(shape[k + 1:]))) % shape[k]
            c[sl] = weights[m] * costs[k][uk, j]
            rows += [base + k * n + u, base + (k + 1) * n + v]  # outflow of layer k, inflow of layer k+1
            cols += [col, col]
            vals += [np.full(col.size, -1.0), np.full(col.size, 1.0)]
        rows.append(base + np.arange(n))  # ν feeds layer 0
        cols.append(np.arange(lay.nu.start, lay.nu.stop))
        vals.append(np.ones(n))
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(m_count * rows_per_input, n_var))
    b = np.zeros(m_count * rows_per_input)
    for m in range(m_count):
        b[m * rows_per_input + d * n: (m + 1) * rows_per_input] = histograms[m]
    if drop_dependent and m_count > 1:
        keep = lay.kept_rows
        A, b = A[keep], b[keep]
    return c, A, b, lay


def recover_plans(x: np.ndarray, layout: Layout) -> list[sp.csr_matrix]:
    """The ``M`` transport plans ``π_m`` (rows: ν's grid points, columns: μ_m's) from a flow.

    A path decomposition in matrix form: with ``F_k`` the ``N × N`` arc-flow matrix from layer
    ``k`` to ``k+1`` and ``t_k`` the inflow of layer ``k``, routing the flow entering each node in
    proportion to its outgoing arcs gives ``π = F_0 diag(1/t_1) F_1 ··· diag(1/t_{d-1}) F_{d-1}``.
    Each entry is a sum of path flows, each path costs ``c(x, y)``, so ``⟨C, π⟩`` equals the flow's
    cost and the marginals are those of the flow (ν, μ_m) up to the LP's feasibility tolerance.
    """
    shape, n = layout.grid_shape, layout.n_points
    x = np.where(x > 0, x, 0.0)
    arcs = [_arc_heads(shape, k) for k in range(len(shape))]
    plans = []
    for m in range(layout.n_histograms):
        plan = None
        for k, (u, _, v) in enumerate(arcs):
            f = x[layout.flow(m, k)]
            keep = f > 0
            F = sp.csr_matrix((f[keep], (u[keep], v[keep])), shape=(n, n))
            if plan is None:
                plan = F
            else:
                inflow = np.asarray(plan.sum(axis=0)).ravel()
                scale = np.divide(1.0, inflow, out=np.zeros(n), where=inflow > 0)
                plan = (plan @ sp.diags(scale)) @ F
        plan = plan.tocsr()
        plan.eliminate_zeros()
        plans.append(plan)
    return plans


@dataclass
class LPSolution:
    """An optimal solution of the (unscaled) LP: ``x``, the objective and the duals of the rows of ``A``."""

    x: np.ndarray
    fun: float
    duals: np.ndarray
    message: str
    solver: str
    options: dict
    attempts: list = field(default_factory=list)


_STATUS = {0: "optimal", 1: "iteration or time limit", 2: "infeasible", 3: "unbounded", 4: "numerical difficulties"}


def _linprog(c, A, b, solver: str, options: dict):
    named = {k: v for k, v in options.items() if k in _SCIPY_HIGHS_OPTIONS or k == "time_limit"}
    verbatim = {k: v for k, v in options.items() if k not in named}
    with warnings.catch_warnings():
        # options scipy does not name are passed to HiGHS verbatim, which is what highs_options= asks for
        warnings.filterwarnings("ignore", "Unrecognized options", OptimizeWarning)
        return linprog(c, A_eq=A, b_eq=b, bounds=(0, None), method=solver, options={**named, **verbatim})


def solve_lp(c, A, b, solver: str = "highs", time_limit: float | None = None, options=None, *,
             b_scale: float = 1.0, c_scale: float = 1.0, retry: bool = True) -> LPSolution:
    """Solve ``min cᵀx, A x = b, x ≥ 0`` with HiGHS (``scipy.optimize.linprog``), scaled and with retries.

    HiGHS solves ``min (c_scale·c)ᵀx', A x' = b_scale·b``; ``x = x'/b_scale``, objective and duals
    are returned in the original units. ``options`` are HiGHS options (:data:`DEFAULT_HIGHS_OPTIONS`
    filled in for the keys not given). A status other than optimal is retried, with a warning in the
    log, with presolve off and then with the other HiGHS method (dual simplex ↔ interior point);
    a time limit is not retried. :class:`SolverError` lists every attempt when none succeeds.
    """
    _check_solver(solver)
    time_limit = check_time_limit(time_limit)
    opts = {**DEFAULT_HIGHS_OPTIONS, **check_highs_options(options)}
    plan = [(solver, opts)]
    if retry:
        plan.append((solver, {**opts, "presolve": False}))
        other = "highs-ipm" if solver in ("highs", "highs-ds") else "highs-ds"
        plan.append((other, {**opts, "presolve": False}))
    c_s, b_s = c * c_scale, b * b_scale
    attempts, t_start = [], time.perf_counter()
    for i, (method, o) in enumerate(plan):
        o = dict(o)
        if time_limit is not None:
            left = time_limit - (time.perf_counter() - t_start) if i else time_limit
            if left <= 0:
                attempts.append({"solver": method, "options": {}, "status": 1,
                                 "message": "not attempted: the time limit was spent", "seconds": 0.0})
                break
            o["time_limit"] = left
        t0 = time.perf_counter()
        res = _linprog(c_s, A, b_s, method, o)
        attempts.append({"solver": method, "options": {k: v for k, v in o.items() if k != "time_limit"},
                         "status": int(res.status), "message": str(res.message),
                         "seconds": time.perf_counter() - t0})
        if res.status == 0 and res.x is not None:
            if i > 0:
                log.warning("HiGHS (%s, options %s) solved the LP on retry %d after: %s", method,
                            attempts[-1]["options"], i, "; ".join(f"{a['solver']}: {_STATUS.get(a['status'])}"
                                                                  for a in attempts[:-1]))
            duals = np.asarray(res.eqlin.marginals, dtype=float) / c_scale
            return LPSolution(res.x / b_scale, float(res.fun) / (b_scale * c_scale), duals, str(res.message),
                              method, o, attempts)
        if res.status == 1:  # the time (or iteration) limit: more attempts would not fit in it
            break
        if i + 1 < len(plan):
            log.warning("HiGHS (%s) returned status %d (%s: %s) on a feasible barycenter LP; retrying with %s, "
                        "options %s", method, res.status, _STATUS.get(int(res.status), "?"), res.message,
                        plan[i + 1][0], {k: v for k, v in plan[i + 1][1].items() if k not in opts or
                                         opts[k] != v})
    raise SolverError(f"HiGHS ({solver}) did not solve the LP: "
                      + "; ".join(f"{a['solver']} {a['options']}: status {a['status']}: {a['message']}"
                                  for a in attempts))


# an independent certificate ------------------------------------------------------------------

def c_transform(g: np.ndarray, costs: list[np.ndarray], weight: float = 1.0) -> np.ndarray:
    """``f(x) = min_y [weight · Σ_k c_k(x_k, y_k) − g(y)]`` on the grid, one axis at a time.

    For a separable cost the minimum over ``y`` splits into ``d`` one-axis minimisations, so the
    c-transform costs ``O(N Σ_k n_k)`` (no ``N × N`` matrix). ``g`` has shape ``grid_shape`` or ``(N,)``.
    """
    shape = tuple(c.shape[0] for c in costs)
    h = -np.asarray(g, dtype=float).reshape(shape)
    for k, ck in enumerate(costs):
        h = np.moveaxis(h, k, -1)
        h = np.min(weight * ck + h[..., None, :], axis=-1)  # [..., x_k] = min_{y_k} w c_k[x_k, y_k] + h[..., y_k]
        h = np.moveaxis(h, -1, k)
    return h.ravel()


def dual_bound(g: Sequence[np.ndarray], histograms: np.ndarray, weights: np.ndarray,
               costs: list[np.ndarray]) -> float:
    """A lower bound on the barycenter cost from *any* potentials ``g_m`` on the μ_m side.

    With ``f_m`` the c-transform of ``g_m`` for the cost ``λ_m c`` (so ``f_m(x) + g_m(y) ≤ λ_m c(x, y)``),
    every feasible (ν, π) has ``Σ_m λ_m⟨c, π_m⟩ ≥ Σ_m ⟨g_m, μ_m⟩ + ⟨Σ_m f_m, ν⟩ ≥ Σ_m ⟨g_m, μ_m⟩ +
    mass · min_x Σ_m f_m(x)``. Weak duality, checked by nothing but arithmetic: it does not trust the
    solver that produced ``g``.
    """
    h = np.asarray(histograms, dtype=float)
    F = np.zeros(h.shape[1])
    total = 0.0
    for gm, hm, wm in zip(g, h, weights):
        gm = np.asarray(gm, dtype=float).ravel()
        F += c_transform(gm, costs, float(wm))
        total += float(gm @ hm)
    return total + float(h[0].sum()) * float(F.min())


def _mu_potentials(duals: np.ndarray, layout: Layout) -> list[np.ndarray]:
    """The duals of the μ_m rows (a dropped row gets potential 0, which the bound allows)."""
    full = np.zeros(layout.kept_rows.size)
    full[layout.kept_rows] = duals
    return [full[layout.mu_rows(m)] for m in range(layout.n_histograms)]


# the public function -------------------------------------------------------------------------

def _to_backend(nu: np.ndarray, original):
    """ν as an array of ``original``'s backend (torch in, torch out), float64, on its device."""
    if isinstance(original, (np.ndarray, list, tuple)):
        return nu
    import ot

    nx = ot.backend.get_backend(original)
    out = nx.from_numpy(nu)
    device = getattr(original, "device", None)
    if device is not None and hasattr(out, "to"):
        out = out.to(device)
    return out


def fixed_support_barycenter(histograms, grid_shape, weights=None, cost="sqeuclidean", solver="highs",
                             log=False, *, coords=None, normalize=False, approximate=False,
                             time_limit=None, highs_options=None, max_variables=None, scale=True):
    """Exact fixed-support Wasserstein barycenter of histograms on a grid (GETO-LP).

    Solves ``min_ν Σ_m λ_m W_c(ν, μ_m)`` over histograms ν on the same grid, for a separable cost
    ``c(x, y) = Σ_k c_k(x_k, y_k)``, as one LP with ``M·N·Σ_k n_k + N`` variables
    (``O(d M N^{1+1/d})``) solved by HiGHS. The optimal value equals that of the standard
    ``O(M N²)`` LP (:func:`ot.lp.barycenter`).

    The LP is well posed before HiGHS sees it: the ``M − 1`` linearly dependent rows are dropped,
    and it is solved with the masses scaled to a mean entry of 1 and the costs to a largest entry
    of 1 (HiGHS's tolerances are absolute), at tolerances 1e-9 (:data:`DEFAULT_HIGHS_OPTIONS`).
    A status other than optimal is retried (presolve off, then the other HiGHS method) with a
    warning in the log. The duals give a lower bound (``log["dual_bound"]``) that certifies the
    objective independently of HiGHS.

    Args:
        histograms: array of shape ``(M, *grid_shape)`` or ``(M, N)``, non-negative, equal masses;
            numpy, nested lists or any POT backend array (a torch tensor), any float or int dtype.
            Equal masses are checked to the precision of the dtype (:func:`mass_rtol`).
        grid_shape: ``(n_1, ..., n_d)`` ints, C-order flattening.
        weights: λ, ``M`` non-negative numbers summing to 1; uniform by default.
        cost: ``"sqeuclidean"`` (default), ``"l1"``, a per-axis callable ``f(a, b)``, or ``d``
            per-axis matrices. ``"euclidean"`` is refused unless ``approximate=True``.
        solver: ``"highs"``, ``"highs-ds"`` (dual simplex) or ``"highs-ipm"`` (interior point).
        log: also return a dict with ``plans`` (``M`` sparse ``N × N`` couplings, rows ν),
            ``objective``, ``dual_bound``, ``duality_gap``, ``n_variables``, ``n_constraints``,
            ``solve_time``, ``attempts`` and more.
        coords: per-axis coordinates, default ``linspace(0, 1, n_k)``.
        normalize: rescale each histogram to mass 1 instead of refusing unequal masses.
        approximate: with ``cost="euclidean"``, solve the separable ``l1`` LP (an upper bound on
            the Euclidean cost) and report the Euclidean cost of its ν; labelled ``exact=False``.
        time_limit: HiGHS time limit in seconds (all attempts together); reaching it raises
            :class:`SolverError`.
        highs_options: HiGHS options (e.g. ``{"presolve": False, "primal_feasibility_tolerance":
            1e-10}``); they apply to the scaled LP and override :data:`DEFAULT_HIGHS_OPTIONS`.
        max_variables: refuse (``ValueError``) an LP with more variables, before building it.
        scale: solve the scaled LP (default); ``False`` hands HiGHS the raw masses and costs.

    Returns:
        ν with shape ``grid_shape`` as float64 (a float64 tensor of the same backend for
        non-numpy input), and the log dict if ``log``.

    Example:
        >>> mu = np.random.default_rng(0).random((3, 8, 8)); mu /= mu.sum((1, 2), keepdims=True)
        >>> nu, info = fixed_support_barycenter(mu, (8, 8), log=True)
    """
    # inputs (any POT backend in, the same backend out)
    shape = check_grid_shape(grid_shape)
    h = check_histograms(histograms, shape, normalize=bool(normalize))
    w = check_weights(weights, h.shape[0])
    _check_solver(solver)
    time_limit = check_time_limit(time_limit)
    highs_options = check_highs_options(highs_options)
    max_variables = check_max_variables(max_variables)
    for name, flag in (("log", log), ("normalize", normalize), ("approximate", approximate), ("scale", scale)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    euclid = isinstance(cost, str) and cost == "euclidean"
    if euclid and not approximate:
        axis_costs(shape, cost)  # raises the explanatory error
    costs = axis_costs(shape, "l1" if euclid else cost, coords)
    n_var = n_variables(shape, h.shape[0])
    if max_variables is not None and n_var > max_variables:
        raise ValueError(f"the LP for {h.shape[0]} histograms on the grid {shape} has {n_var:,} variables > "
                         f"max_variables={max_variables:,}; downsample the histograms to a coarser grid")

    # the LP, scaled: masses to a mean entry of 1, costs to a largest entry of 1
    t0 = time.perf_counter()
    c, A, b, lay = build_lp(h, shape, w, costs)
    t1 = time.perf_counter()
    mass = float(h[0].sum())
    cmax = float(np.abs(c).max()) if c.size else 0.0
    b_scale = lay.n_points / mass if scale else 1.0
    c_scale = 1.0 / cmax if scale and cmax > 0 else 1.0
    sol = solve_lp(c, A, b, solver, time_limit, highs_options, b_scale=b_scale, c_scale=c_scale)
    t2 = time.perf_counter()
    nu = np.clip(sol.x[lay.nu], 0.0, None)
    out = _to_backend(nu.reshape(shape), histograms)
    if not log:
        return out
    bound = dual_bound(_mu_potentials(sol.duals, lay), h, w, costs)
    info = {"objective": sol.fun, "dual_bound": bound,
            "duality_gap": (sol.fun - bound) / max(abs(sol.fun), 1e-300),
            "n_variables": int(A.shape[1]), "n_constraints": int(A.shape[0]), "dropped_rows": lay.kept_rows.size
            - int(A.shape[0]), "nnz": int(A.nnz), "build_time": t1 - t0, "solve_time": t2 - t1, "solver": sol.solver,
            "highs_options": sol.options, "attempts": sol.attempts, "scale": {"b": b_scale, "c": c_scale},
            "status": sol.message, "exact": True, "cost": cost if isinstance(cost, str) else "custom"}
    t3 = time.perf_counter()
    if euclid:
        import ot

        C = grid_cost_matrix(shape, "euclidean", coords)
        nu1 = nu * (h[0].sum() / nu.sum())
        plans = [sp.csr_matrix(ot.emd(nu1, hm, C)) for hm in h]
        info.update(exact=False, surrogate_objective=sol.fun, dual_bound=float("nan"), duality_gap=float("nan"),
                    objective=float(sum(wm * p.multiply(C).sum() for wm, p in zip(w, plans))),
                    approximation="ν from the separable l1 GETO-LP (l1 ≥ euclidean); objective and plans are "
                                  "the exact Euclidean OT of that ν (an upper bound on the optimum)")
    else:
        plans = recover_plans(sol.x, lay)
    info["plans"] = plans
    info["recover_time"] = time.perf_counter() - t3
    return out, info
