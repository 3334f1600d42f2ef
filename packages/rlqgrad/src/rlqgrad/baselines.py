"""What RLQ-Grad is compared against, and one training loop for all, at equal evaluation budgets.

- ``adam-backprop``, ``adam-adjoint``, ``adam-parameter-shift``: Adam (β₁ = 0.9, β₂ = 0.99, ε = 1e-8,
  PennyLane's defaults) on our own differentiators (1, 1 and ``2P`` evaluations per step);
- ``spsa``: ``qml.SPSAOptimizer`` (2 evaluations per step), step-size grid over its ``a``;
- ``random-search``: a Gaussian perturbation of the incumbent, kept when better (incumbent and candidate
  evaluated on the same minibatch: 2 per step), fixed σ;
- ``es``: the (1+1)-ES with the 1/5-success rule (2 per step), initial σ;
- ``cma``: CMA-ES-lite, separable (diagonal) CMA-ES (Ros & Hansen 2008) with CSA step-size control,
  λ = 4 + ⌊3 ln P⌋ evaluations per generation, initial σ;
- ``rlqgrad``: :class:`~rlqgrad.RLQGradOptimizer` with a frozen policy (1 per step), grid over ``scale``.

Every evaluation is one forward on the step's 32-sample minibatch; all evaluations of one step share it.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from paperworks import check_int
from rlqgrad.circuit import HEA
from rlqgrad.gradients import EvalLedger, gradient
from rlqgrad.optimizer import RLQGradOptimizer

METHODS = ("rlqgrad", "adam-backprop", "adam-adjoint", "adam-parameter-shift", "spsa", "random-search", "es", "cma")
GRADIENT_METHODS = ("adam-backprop", "adam-adjoint", "adam-parameter-shift")
ZEROTH_ORDER = ("spsa", "random-search", "es", "cma")


def _batched_loss(hea: HEA, thetas: np.ndarray, X: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        f = hea.expval(torch.as_tensor(np.atleast_2d(thetas)), X)
    return ((1 - f * y) / 2).mean(-1).numpy()


def train(method: str, hea: HEA, X_train, y_train, theta0, *, budget: int, lr: float, policy=None, batch: int = 32,
          seed: int = 0, eval_sets: dict | None = None, every: int = 250) -> dict:
    """Train ``hea`` on ``(X_train, y_train)`` with ``method`` until ``budget`` evaluations are spent.

    Args:
        method: one of :data:`METHODS`.
        theta0: the starting angles (shared by all methods for a seed).
        budget: circuit evaluations (≥ 1); a step that would overrun it is not taken.
        lr: the method's step size (Adam's learning rate, SPSA's ``a``, the ES/CMA/random-search σ,
            RLQ-Grad's ``scale``).
        eval_sets: ``{"val": (X, y), "test": (X, y)}`` measured at every ``every`` evaluations (not counted).

    Returns:
        dict with ``theta``, ``evaluations``, ``wall_s``, ``curve`` (rows of evaluations, wall, accuracies)
        and the final accuracies ``acc_<set>``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    budget = check_int(budget, "budget", minimum=1)
    if not (isinstance(lr, (int, float)) and not isinstance(lr, bool) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if method == "rlqgrad" and policy is None:
        raise ValueError("method='rlqgrad' needs policy=")
    rng = np.random.default_rng(seed)
    X = torch.as_tensor(np.asarray(X_train, dtype=float))
    y = torch.as_tensor(np.asarray(y_train, dtype=float))
    P = hea.n_params
    theta = np.asarray(theta0, dtype=float).copy()
    if theta.shape != (P,):
        raise ValueError(f"theta0 must have shape ({P},), got {theta.shape}")
    ledger = EvalLedger(method)
    evals = {k: hea.cost(*v) for k, v in (eval_sets or {}).items()}
    curve, next_mark, t0 = [], 0, time.perf_counter()

    def minibatch():
        idx = torch.as_tensor(rng.choice(X.shape[0], size=min(batch, X.shape[0]), replace=False))
        return X[idx], y[idx]

    def mark(th):
        nonlocal next_mark
        while ledger.total >= next_mark:
            row = {"evaluations": next_mark, "wall_s": time.perf_counter() - t0}
            for k, c in evals.items():
                row[f"acc_{k}"] = c.loss_acc(th)[1]
            curve.append(row)
            next_mark += every

    # per-method state
    m = v = None
    t_adam = 0
    if method.startswith("adam"):
        m, v = np.zeros(P), np.zeros(P)
        diff = method.removeprefix("adam-")
        per_step = 2 * P if diff == "parameter-shift" else 1
    elif method == "spsa":
        import pennylane as qml
        from pennylane import numpy as pnp

        np.random.seed(seed)
        spsa = qml.SPSAOptimizer(maxiter=max(1, budget // 2), a=lr, c=0.2)
        per_step = 2
    elif method in ("random-search", "es"):
        sigma, per_step = float(lr), 2
    elif method == "cma":
        lam = 4 + int(3 * math.log(P))
        mu = lam // 2
        w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
        w /= w.sum()
        mueff = 1.0 / np.sum(w**2)
        cs = (mueff + 2) / (P + mueff + 5)
        ds = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (P + 1)) - 1) + cs
        cc = 4 / (P + 4)
        c1 = 2 / ((P + 1.3) ** 2 + mueff) * (P + 2) / 3
        cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((P + 2) ** 2 + mueff) * (P + 2) / 3)
        chi = math.sqrt(P) * (1 - 1 / (4 * P) + 1 / (21 * P**2))
        sigma, C, ps, pc = float(lr), np.ones(P), np.zeros(P), np.zeros(P)
        per_step = lam
    else:
        opt = RLQGradOptimizer(policy, scale=float(lr), ledger=ledger, seed=seed)
        per_step = 1

    mark(theta)
    while ledger.total + per_step + (1 if method == "rlqgrad" and opt.steps == 0 else 0) <= budget:
        Xb, yb = minibatch()
        if method.startswith("adam"):
            g = gradient(hea.cost(Xb, yb), theta, method=diff, ledger=ledger)
            t_adam += 1
            m = 0.9 * m + 0.1 * g
            v = 0.99 * v + 0.01 * g * g
            theta = theta - lr * (m / (1 - 0.9**t_adam)) / (np.sqrt(v / (1 - 0.99**t_adam)) + 1e-8)
        elif method == "spsa":
            def f(p, Xb=Xb, yb=yb):
                ledger.record(1)
                return _batched_loss(hea, np.asarray(p, dtype=float), Xb, yb)[0]

            theta = np.asarray(spsa.step(f, pnp.array(theta, requires_grad=True)), dtype=float)
        elif method in ("random-search", "es"):
            cand = theta + sigma * rng.standard_normal(P)
            lc, li = _batched_loss(hea, np.stack([cand, theta]), Xb, yb)
            ledger.record(2)
            if lc < li:
                theta = cand
                if method == "es":
                    sigma *= math.exp(1 / 3)
            elif method == "es":
                sigma *= math.exp(-1 / 12)
        elif method == "cma":
            z = rng.standard_normal((lam, P))
            ys = z * np.sqrt(C)
            fx = _batched_loss(hea, theta + sigma * ys, Xb, yb)
            ledger.record(lam)
            order = np.argsort(fx)[:mu]
            yw, zw = w @ ys[order], w @ z[order]
            theta = theta + sigma * yw
            ps = (1 - cs) * ps + math.sqrt(cs * (2 - cs) * mueff) * zw
            sigma *= math.exp((cs / ds) * (np.linalg.norm(ps) / chi - 1))
            pc = (1 - cc) * pc + math.sqrt(cc * (2 - cc) * mueff) * yw
            C = (1 - c1 - cmu) * C + c1 * pc**2 + cmu * (w @ ys[order] ** 2)
        else:
            theta = opt.step(hea.cost(Xb, yb), theta)
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(f"{method}: parameters became non-finite after {ledger.total} evaluations")
        mark(theta)
    out = {"method": method, "theta": theta, "evaluations": ledger.total, "wall_s": time.perf_counter() - t0,
           "curve": curve}
    for k, c in evals.items():
        out[f"acc_{k}"] = c.loss_acc(theta)[1]
        out[f"loss_{k}"] = c.loss_acc(theta)[0]
    return out


def accuracy_at(curve: list[dict], evaluations: float, key: str = "acc_test") -> float:
    """The accuracy recorded at the last checkpoint at or before ``evaluations`` (the start if none)."""
    rows = [r for r in curve if r["evaluations"] <= evaluations]
    return (rows[-1] if rows else curve[0])[key]


def accuracy_at_time(curve: list[dict], wall_s: float, key: str = "acc_test") -> float:
    rows = [r for r in curve if r["wall_s"] <= wall_s]
    return (rows[-1] if rows else curve[0])[key]


__all__ = ["METHODS", "GRADIENT_METHODS", "ZEROTH_ORDER", "train", "accuracy_at", "accuracy_at_time"]
