"""Baselines on the NumPy simulator under the same finite-shot accounting, and a fast update loop.

The per-shot study of record runs every method through its PennyLane optimizer on QNodes
(:mod:`shadowqng.study`); the functions here are the NumPy references its tests check against
(exact block-diagonal metric, exact QFIM, classical Fisher bound) and :class:`Trainer`, a fast loop
on the statevector simulator for experiments outside the record.

- SGD and Adam: ``qml.GradientDescentOptimizer`` / ``qml.AdamOptimizer`` fed the sampled
  parameter-shift gradient.
- Block-diagonal QNG: ``qml.QNGOptimizer`` with the block-diagonal Fubini–Study metric, each block
  measured at finite shots on the circuit truncated before its layer (one circuit per layer, all
  generator covariances of the layer from the same outcomes) — what
  ``qml.metric_tensor(approx="block-diag")`` evaluates exactly.
- Random natural gradient (Kolotouros & Wallden, arXiv:2311.04135): the classical Fisher matrix of a
  measurement after random single-qubit Haar rotations, with ``∂p`` from parameter-shifted circuits.
- Exact QNG (oracle): exact gradient and exact QFIM; charged as SGD so its curve can be drawn.

Natural-gradient methods all use the Fubini–Study scale (QFIM/4, as ``qml.QNGOptimizer``) and the same
``lam`` regularisation, so they share one learning-rate grid.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml
from pennylane import numpy as pnp
from scipy.stats import unitary_group

from shadowqng.circuit import BASIS_ROTATIONS, apply_local
from shadowqng.ledger import ShotLedger
from shadowqng.pauli import codes
from shadowqng.surrogate import build_plan, natural_direction, propagate_generators, shadow_estimate
from shadowqng.vqe import VQEProblem

METHODS = ("sgd", "adam", "bdqng", "rng", "exact_qng", "shadowqng")


def parametrized_layers(problem: VQEProblem) -> list[tuple[int, list[int]]]:
    """``(first gate index, [params])`` per layer of parameterised gates on disjoint wires."""
    layers, cur, used, start = [], [], set(), None
    for gi, g in enumerate(problem.circ.gates):
        if g.kind == "rot" and g.param is not None and not (set(g.wires) & used):
            if start is None:
                start = gi
            cur.append(g.param)
            used |= set(g.wires)
            continue
        if cur:
            layers.append((start, cur))
        cur, used, start = [], set(), None
        if g.kind == "rot" and g.param is not None:
            start, cur, used = gi, [g.param], set(g.wires)
    if cur:
        layers.append((start, cur))
    return layers


def _prefix_states(problem: VQEProblem, theta, upto: int) -> np.ndarray:
    sim = problem.sim
    psi = np.zeros((1, 2 ** problem.n), complex)
    psi[0, 0] = 1.0
    for kind, g, a, c in sim._ops[:upto]:
        if kind == "rot":
            phi = g.scale * theta[g.param] if g.param is not None else g.angle
            psi = np.cos(phi / 2) * psi - 1j * np.sin(phi / 2) * (c * psi[:, a])
        elif kind == "diag":
            psi = psi * a
        else:
            psi = apply_local(psi, g.matrix, g.wires, problem.n)
    return psi


def block_diag_metric(problem: VQEProblem, theta, shots: int | None, rng, ledger: ShotLedger | None) -> np.ndarray:
    """Block-diagonal Fubini–Study metric; ``shots=None`` is exact (= ``qml.metric_tensor`` block-diag)."""
    n, p = problem.n, problem.n_params
    out = np.zeros((p, p))
    idx = np.arange(2 ** n)
    for start, params in parametrized_layers(problem):
        psi = _prefix_states(problem, theta, start)
        gates = [next(g for g in problem.circ.gates if g.param == q) for q in params]
        basis = np.full(n, 2)
        for g in gates:
            for q in g.wires:
                basis[q] = int(codes(g.x[None, q:q + 1], g.z[None, q:q + 1])[0, 0]) - 1
        for q in range(n):
            if basis[q] != 2:
                psi = apply_local(psi, BASIS_ROTATIONS[basis[q]], (q,), n)
        prob = np.abs(psi[0]) ** 2
        eig = np.stack([1 - 2 * (np.bitwise_count(idx & sum(1 << (n - 1 - q) for q in g.wires)).astype(int) % 2)
                        for g in gates])  # (m, 2**n)
        half = np.array([g.scale / 2 for g in gates])
        if shots is None:
            mean = eig @ prob
            second = (eig * prob) @ eig.T
            cov = second - np.outer(mean, mean)
        else:
            counts = rng.multinomial(shots, prob / prob.sum())
            samples = np.repeat(eig, counts, axis=1).astype(float)
            cov = np.cov(samples) if shots > 1 else np.zeros((len(gates), len(gates)))
            cov = np.atleast_2d(cov)
            ledger.record("metric", circuits=1, shots=shots)
        out[np.ix_(params, params)] = np.outer(half, half) * cov
    return out


def rng_fisher(problem: VQEProblem, theta, shots: int, rng, ledger: ShotLedger) -> np.ndarray:
    """Classical Fisher matrix (Fubini–Study scale, /4) after random local Haar rotations, finite shots."""
    n, p = problem.n, problem.n_params
    us = unitary_group.rvs(2, size=n, random_state=rng)
    plus, minus = problem._shifted(theta)
    thetas = np.vstack([theta[None], plus, minus])
    psi = problem.sim.states(thetas)
    for q in range(n):
        psi = apply_local(psi, us[q], (q,), n)
    prob = np.abs(psi) ** 2
    prob /= prob.sum(axis=1, keepdims=True)
    freq = rng.multinomial(shots, prob) / shots
    ledger.record("rng", circuits=2 * p + 1, shots=(2 * p + 1) * shots)
    p0, dp = freq[0], problem.scales[:, None] * (freq[1:p + 1] - freq[p + 1:]) / 2
    seen = p0 > 0
    fisher = (dp[:, seen] / p0[seen]) @ dp[:, seen].T
    return fisher / 4.0


def exact_qfim(problem: VQEProblem, theta) -> np.ndarray:
    """Exact QFIM from derivative states, ``∂_p ψ = (s_p / 2) ψ(θ_p + π / s_p)``."""
    psi = problem.sim.states(theta[None])[0]
    shifted = theta[None, :] + np.diag(np.pi / problem.scales)
    d = (problem.scales / 2)[:, None] * problem.sim.states(shifted)
    gram = d.conj() @ d.T
    ov = d.conj() @ psi
    return 4 * np.real(gram - np.outer(ov, ov.conj()))


class Trainer:
    """One optimisation run of ``method`` on ``problem`` until the shot budget is spent.

    Each step charges its gradient (and its metric measurements) to ``self.ledger``; the exact
    relative energy error is recorded after every step for the curves.
    """

    def __init__(self, problem: VQEProblem, method: str, lr: float, *, shots: int, snapshots: int = 500,
                 k: int = 2, lam: float = 0.01, groups: int = 10, mask: bool = True, seed: int = 0,
                 init_scale: float = 1.0):
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.problem, self.method, self.lr = problem, method, float(lr)
        self.shots, self.snapshots, self.k, self.lam, self.groups, self.mask = shots, snapshots, k, lam, groups, mask
        init_rng = np.random.default_rng([seed, problem.n, 7])
        self.theta = init_rng.uniform(-init_scale, init_scale, problem.n_params) * np.pi
        self.rng = np.random.default_rng([seed, problem.n, 11, METHODS.index(method), k])
        self.ledger = ShotLedger()
        self.opt = {"sgd": qml.GradientDescentOptimizer, "adam": qml.AdamOptimizer}.get(
            method, qml.QNGOptimizer)(stepsize=self.lr)
        self.active_fraction: list[float] = []

    def step(self) -> None:
        pr, th = self.problem, self.theta
        if self.method == "exact_qng":
            g = pr.exact_gradient(th)
            c, s = pr.energy_cost(self.shots)
            self.ledger.record("gradient", circuits=2 * pr.n_params * c, shots=2 * pr.n_params * s)
        else:
            g = pr.sampled_gradient(th, self.shots, self.rng, self.ledger)
        if self.method in ("sgd", "adam"):
            (new,) = self.opt.apply_grad((pnp.array(g),), (pnp.array(th, requires_grad=True),))
            self.theta = np.asarray(new, dtype=float)
            return
        if self.method == "shadowqng":
            terms = propagate_generators(pr.circ, th, self.k)
            plan = build_plan(terms, pr.n_params, use_mask=self.mask)
            self.active_fraction.append(float(plan.active.mean()))
            if plan.active.any():
                bits, recipes = pr.shadow(th, self.snapshots, self.rng, self.ledger)
                f = shadow_estimate(plan, bits, recipes, groups=self.groups) / 4.0
            else:
                f = np.zeros((pr.n_params, pr.n_params))
            self.theta = th - self.lr * natural_direction(g, f, plan.active, self.lam)
            return
        if self.method == "bdqng":
            metric = block_diag_metric(pr, th, self.shots, self.rng, self.ledger)
        elif self.method == "rng":
            metric = rng_fisher(pr, th, self.shots, self.rng, self.ledger)
        else:
            metric = exact_qfim(pr, th) / 4.0
        self.opt.metric_tensor = metric + self.lam * np.eye(pr.n_params)
        (new,) = self.opt.apply_grad((pnp.array(g),), (pnp.array(th, requires_grad=True),))
        self.theta = np.asarray(new, dtype=float)

    def run(self, budget: int, max_steps: int = 100000) -> dict:
        """Step until the cumulative shots reach ``budget``; returns the curve."""
        theta0 = self.theta.copy()
        shots, errors = [0], [self.problem.relative_error(self.theta)]
        for _ in range(max_steps):
            self.step()
            err = self.problem.relative_error(self.theta)
            if not np.isfinite(err):
                raise FloatingPointError(f"{self.method}: energy is not finite at step {len(errors)}")
            shots.append(self.ledger.shots)
            errors.append(err)
            if self.ledger.shots >= budget:
                break
        return {"shots": np.array(shots), "error": np.array(errors), "ledger": self.ledger.by_kind(), "theta0": theta0,
                "active_fraction": float(np.mean(self.active_fraction)) if self.active_fraction else 1.0}
