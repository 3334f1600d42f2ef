"""The per-shot study through the public optimizers, on PennyLane QNodes (issue #24, item 3).

Every arm is a PennyLane optimizer stepping a QNode with ``opt.step(cost, theta, ...)``:

- ``sgd``, ``adam``: ``qml.GradientDescentOptimizer``, ``qml.AdamOptimizer``;
- ``bdqng``: ``qml.QNGOptimizer(approx="block-diag")``, its metric ``qml.metric_tensor(approx="block-diag")``
  evaluated on the same QNode on a device with shots (one circuit per layer of the ansatz);
- ``rng``: random natural gradient (Kolotouros & Wallden, arXiv:2311.04135) as a ``metric_tensor_fn`` of
  ``qml.QNGOptimizer``: the classical Fisher matrix of a measurement after random single-qubit Haar
  rotations, with ``p`` and ``∂p`` (parameter shift) sampled on a device with shots;
- ``shadowqng_k{k}``: :class:`ShadowQNGOptimizer` with ``k`` ∈ {1, 2, 3}; ``shadowqng_kn``: ``k = n``
  and no mask, the full QFIM estimated from the same classical shadows (no truncation bias, only shadow
  variance).

All arms take the same gradient: parameter shift sampled on ``default.qubit`` with shots (``shots`` per
energy evaluation, split over the Hamiltonian's qubit-wise commuting groups), passed as ``grad_fn`` and
evaluated as one broadcast QNode call. A :class:`ShotLedger` charges every circuit the same way
(gradient, block-diagonal metric circuits as the device's tracker counts them, RNG circuits, shadow
snapshots); for the surrogate arms the optimizer's own ledger must agree with it. The exact energy
(NumPy statevector) is recorded after each step for the curves only.

Tuning: per (model, arm), the learning rate (and ``λ`` for the natural-gradient arms) on a grid, on
pilot seeds disjoint from the record seeds and a shorter horizon; a chosen value on a grid edge extends
that axis by one point (up to ``max_extend`` times per axis), and whether the optimum was bracketed is
recorded.
"""

from __future__ import annotations

import functools
import logging
import math
import time

import numpy as np
import pennylane as qml
from pennylane import numpy as pnp
from scipy.stats import unitary_group
from tqdm import tqdm

from shadowqng.circuit import apply_ansatz
from shadowqng.data import spin_chain
from shadowqng.ledger import ShotLedger
from shadowqng.surrogate import ShadowQNGOptimizer
from shadowqng.vqe import VQEProblem

log = logging.getLogger(__name__)

BASELINE_ARMS = ("sgd", "adam", "bdqng", "rng")
NATURAL = ("bdqng", "rng")


def arm_names(ks) -> list[str]:
    """Arm labels: the baselines, then ``shadowqng_k{k}`` (``k="n"``: the untruncated, unmasked arm)."""
    return list(BASELINE_ARMS) + [f"shadowqng_k{k}" for k in ks]


def uses_lam(arm: str) -> bool:
    return arm in NATURAL or arm.startswith("shadowqng")


class QNodeProblem:
    """``model`` chain on ``n`` qubits, the hardware-efficient ansatz as PennyLane QNodes.

    ``shots`` is the shot count of one energy evaluation (split over the qubit-wise commuting groups,
    as the device runs one circuit per group); each metric circuit of ``bdqng`` and ``rng`` also gets
    ``shots`` shots.
    """

    def __init__(self, model: str, n: int, layers: int, shots: int):
        self.model, self.n, self.layers, self.shots = model, int(n), int(layers), int(shots)
        self.exact = VQEProblem(model, n, layers)  # exact energies for the curves (never shown to optimizers)
        self.circ = self.exact.circ
        self.P = self.circ.n_params
        ham = spin_chain(model, n)
        self.ham = qml.Hamiltonian(*ham.terms(), grouping_type="qwc")
        self.G = len(self.exact.groups)
        self.per = max(1, self.shots // self.G)  # shots per group circuit
        circ = self.circ

        def energy(t):
            apply_ansatz(circ, t)
            return qml.expval(self.ham)

        def probs(t, us):
            apply_ansatz(circ, t)
            for q in range(n):
                qml.QubitUnitary(us[q], wires=q)
            return qml.probs(wires=range(n))

        self._energy, self._probs = energy, probs
        self.cost = qml.QNode(energy, qml.device("default.qubit", wires=n))  # analytic: the optimizers' QNode

    def devices(self, seed):
        """Seeded devices with shots for one run: (gradient QNode, metric QNode, probs QNode, device)."""
        dev = qml.device("default.qubit", wires=self.n, seed=np.random.default_rng(seed))
        grad_q = qml.set_shots(qml.QNode(self._energy, dev, diff_method=None), shots=self.per)
        metric_q = qml.set_shots(qml.QNode(self._energy, dev), shots=self.shots)
        probs_q = qml.set_shots(qml.QNode(self._probs, dev, diff_method=None), shots=self.shots)
        return grad_q, metric_q, probs_q, dev

    def theta0(self, seed) -> np.ndarray:
        """The initial θ of ``seed``: the same for every arm (paired comparisons)."""
        return np.random.default_rng([seed, self.n, 7]).uniform(-np.pi, np.pi, self.P)

    def relative_error(self, theta) -> float:
        return self.exact.relative_error(np.asarray(theta, dtype=float))


class SampledGradient:
    """``grad_fn`` for the optimizers: parameter shift sampled on a device with shots, one broadcast
    QNode call (2P parameter vectors), charged to ``ledger`` (2P energies × the group circuits)."""

    def __init__(self, problem: QNodeProblem, qnode, ledger: ShotLedger):
        self.problem, self.qnode, self.ledger = problem, qnode, ledger
        self.forward = math.nan  # the optimizers return it as the cost; no energy is measured at θ

    def __call__(self, theta):
        pr = self.problem
        th = np.asarray(theta, dtype=float)
        shift = np.eye(pr.P) * (np.pi / 2)  # every gate of the ansatz is exp(-iθP/2)
        batch = np.vstack([th + shift, th - shift])  # (2P, P)
        e = np.asarray(self.qnode(batch.T), dtype=float)
        self.ledger.record("gradient", circuits=2 * pr.P * pr.G, shots=2 * pr.P * pr.G * pr.per)
        return pnp.array((e[: pr.P] - e[pr.P:]) / 2)


def rng_metric_fn(problem: QNodeProblem, probs_q, rng: np.random.Generator, ledger: ShotLedger):
    """Random natural gradient's metric for ``qml.QNGOptimizer(metric_tensor_fn=...)``: the classical
    Fisher matrix (Fubini–Study scale, /4) of the outcome distribution after random local Haar
    rotations, from ``2P + 1`` sampled circuits (θ and its parameter shifts), ``shots`` shots each."""
    pr = problem

    def fn(theta):
        th = np.asarray(theta, dtype=float)
        us = unitary_group.rvs(2, size=pr.n, random_state=rng)
        shift = np.eye(pr.P) * (np.pi / 2)
        batch = np.vstack([th[None], th + shift, th - shift])  # (2P + 1, P)
        p = np.asarray(probs_q(batch.T, us), dtype=float)
        ledger.record("rng", circuits=2 * pr.P + 1, shots=(2 * pr.P + 1) * pr.shots)
        p0, dp = p[0], (p[1:pr.P + 1] - p[pr.P + 1:]) / 2
        seen = p0 > 0
        return pnp.array((dp[:, seen] / p0[seen]) @ dp[:, seen].T / 4.0)

    return fn


def tracked_metric_fn(metric_fn, device, ledger: ShotLedger, kind: str = "metric"):
    """Wrap a ``metric_tensor_fn`` so the device executions it runs (and their shots) are charged."""

    def fn(*args, **kwargs):
        with qml.Tracker(device) as tr:
            out = metric_fn(*args, **kwargs)
        ledger.record(kind, circuits=int(tr.totals.get("executions", 0)), shots=int(tr.totals.get("shots", 0)))
        return out

    return fn


@functools.lru_cache(maxsize=8)
def problem_of(model: str, n: int, layers: int, shots: int) -> QNodeProblem:
    return QNodeProblem(model, n, layers, shots)


def run_arm(problem: QNodeProblem, arm: str, lr: float, lam: float | None, seed: int, budget: float, *,
            snapshots: int = 500, groups: int = 10, max_steps: int = 10000) -> dict:
    """One optimisation run of ``arm`` through its PennyLane optimizer until ``budget`` shots are spent."""
    pr = problem
    ledger = ShotLedger()
    grad_q, metric_q, probs_q, dev = pr.devices([seed, pr.n, 11])
    gf = SampledGradient(pr, grad_q, ledger)
    kw = {}
    own = None
    if arm == "sgd":
        opt = qml.GradientDescentOptimizer(stepsize=lr)
    elif arm == "adam":
        opt = qml.AdamOptimizer(stepsize=lr)
    elif arm == "bdqng":
        opt = qml.QNGOptimizer(stepsize=lr, approx="block-diag", lam=lam)
        kw["metric_tensor_fn"] = tracked_metric_fn(qml.metric_tensor(metric_q, approx="block-diag"), dev, ledger)
    elif arm == "rng":
        opt = qml.QNGOptimizer(stepsize=lr, lam=lam)
        kw["metric_tensor_fn"] = rng_metric_fn(pr, probs_q, np.random.default_rng([seed, pr.n, 13]), ledger)
    elif arm.startswith("shadowqng_k"):
        kk = arm[len("shadowqng_k"):]
        k = pr.n if kk == "n" else int(kk)
        own = ShotLedger()
        opt = ShadowQNGOptimizer(stepsize=lr, k=k, shots=snapshots, lam=lam, mask=kk != "n", groups=groups,
                                 seed=np.random.default_rng([seed, pr.n, 17, k]), ledger=own,
                                 grad_shots=pr.G * pr.per)
    else:
        raise ValueError(f"unknown arm {arm!r}; expected one of {arm_names([1, 2, 3, 'n'])}")
    theta = pnp.array(pr.theta0(seed), requires_grad=True)
    theta0 = np.array(theta)
    shots, errors, active = [0], [pr.relative_error(theta)], []
    t0 = time.perf_counter()
    for _ in range(max_steps):
        if own is not None:
            before = own.shots
            theta = opt.step(pr.cost, theta, grad_fn=gf)
            ledger.record("shadow", circuits=snapshots, shots=snapshots)
            active.append(float(np.mean(opt.active)))
            if own.shots - before != 2 * pr.P * pr.G * pr.per + snapshots:
                raise RuntimeError(f"{arm}: the optimizer's ledger disagrees with the study's")
        else:
            theta = opt.step(pr.cost, theta, grad_fn=gf, **kw)
        err = pr.relative_error(theta)
        shots.append(ledger.shots)
        errors.append(err if np.isfinite(err) else math.inf)
        if not np.isfinite(err) or ledger.shots >= budget:
            break
    wall = time.perf_counter() - t0
    th = np.asarray(theta, dtype=float)
    return {"arm": arm, "lr": float(lr), "lam": None if lam is None else float(lam), "seed": int(seed),
            "shots": np.array(shots, float), "error": np.array(errors, float), "wall_s": wall,
            "steps": len(shots) - 1, "ledger": ledger.by_kind(),
            "active_fraction": float(np.mean(active)) if active else 1.0,
            "grad0": float(np.linalg.norm(pr.exact.exact_gradient(theta0))),
            "grad_end": float(np.linalg.norm(pr.exact.exact_gradient(th)))}


# tuning ------------------------------------------------------------------------------------------

def _job(args):
    key, arm, lr, lam, seed, budget, snapshots, groups = args
    return run_arm(problem_of(*key), arm, lr, lam, seed, budget, snapshots=snapshots, groups=groups)


class Runner:
    """Runs study jobs in order, in ``workers`` processes when > 1 (use as a context manager)."""

    def __init__(self, workers: int = 1):
        self.workers = int(workers)
        self._ex = None

    def __enter__(self):
        if self.workers > 1:
            import concurrent.futures as cf
            import multiprocessing as mp

            self._ex = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=mp.get_context("fork"))
        return self

    def __exit__(self, *exc):
        if self._ex is not None:
            self._ex.shutdown()

    def map(self, jobs, desc: str = "runs") -> list:
        jobs = list(jobs)
        it = map(_job, jobs) if self._ex is None else self._ex.map(_job, jobs, chunksize=1)
        return list(tqdm(it, total=len(jobs), desc=desc, disable=None))


def _extend(grid: list[float], best: float) -> float | None:
    """The next point beyond ``best`` when it is on an edge of ``grid`` (same ratio as the edge's
    neighbour), else ``None``."""
    if len(grid) < 2:
        return None
    if best == grid[0]:
        return grid[0] * grid[0] / grid[1]
    if best == grid[-1]:
        return grid[-1] * grid[-1] / grid[-2]
    return None


def score(curves) -> float:
    """Mean final relative error over the pilot seeds (a divergent run scores inf)."""
    return float(np.mean([c["error"][-1] for c in curves]))


def tune_all(specs, lrs, lams, seeds, budget: float, *, snapshots: int, groups: int, max_extend: int = 3,
             runner: Runner | None = None) -> dict:
    """Grid search per ``(key, arm)`` in ``specs``: ``lr`` (and ``lam`` for natural-gradient arms) on
    the pilot ``seeds`` at ``budget`` shots, scored by the mean final relative error.

    A best value on an edge of its axis adds the next point beyond it (the same ratio), up to
    ``max_extend`` times per axis; ``bracketed`` says whether the final best is interior on each axis.
    All arms' settings of one round run in one batch.
    """
    runner = runner or Runner(1)
    state = {}
    for key, arm in specs:
        state[(key, arm)] = {"lrs": sorted(float(x) for x in lrs),
                             "lams": sorted(float(x) for x in lams) if uses_lam(arm) else [None],
                             "table": {}, "ext": {"lr": 0, "lam": 0}}

    def evaluate():
        todo = []
        for (key, arm), st in state.items():
            for lr in st["lrs"]:
                for lam in st["lams"]:
                    if (lr, lam) not in st["table"]:
                        todo.append((key, arm, lr, lam))
        jobs = [(key, arm, lr, lam, s, budget, snapshots, groups) for key, arm, lr, lam in todo for s in seeds]
        res = runner.map(jobs, desc=f"tuning ({len(todo)} settings)")
        for i, (key, arm, lr, lam) in enumerate(todo):
            state[(key, arm)]["table"][(lr, lam)] = res[i * len(seeds):(i + 1) * len(seeds)]
        return len(todo)

    def best_of(st):
        return min(st["table"], key=lambda p: score(st["table"][p]))

    evaluate()
    while True:
        for st in state.values():
            best = best_of(st)
            new_lr = _extend(st["lrs"], best[0])
            if new_lr is not None and st["ext"]["lr"] < max_extend:
                st["lrs"] = sorted(st["lrs"] + [new_lr])
                st["ext"]["lr"] += 1
            if st["lams"] != [None]:
                new_lam = _extend(st["lams"], best[1])
                if new_lam is not None and st["ext"]["lam"] < max_extend:
                    st["lams"] = sorted(st["lams"] + [new_lam])
                    st["ext"]["lam"] += 1
        if not evaluate():
            break
    out = {}
    for (key, arm), st in state.items():
        best = best_of(st)
        bracketed = {"lr": best[0] not in (st["lrs"][0], st["lrs"][-1])}
        if st["lams"] != [None]:
            bracketed["lam"] = best[1] not in (st["lams"][0], st["lams"][-1])
        log.info("tuned %s %s: lr=%g lam=%s score=%.4f bracketed=%s (%d settings)", key[0], arm, best[0], best[1],
                 score(st["table"][best]), bracketed, len(st["table"]))
        out[(key, arm)] = {
            "lr": best[0], "lam": best[1], "score": score(st["table"][best]), "bracketed": bracketed,
            "lrs": st["lrs"], "lams": st["lams"] if st["lams"] != [None] else None, "extensions": st["ext"],
            "table": [{"lr": lr, "lam": lam, "score": score(cs), "wall_s": float(sum(c["wall_s"] for c in cs)),
                       "final_errors": [float(c["error"][-1]) for c in cs]}
                      for (lr, lam), cs in sorted(st["table"].items(), key=lambda t: (t[0][0], t[0][1] or 0))]}
    return out
