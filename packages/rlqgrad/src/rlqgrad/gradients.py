"""Our own differentiators at their true cost, the evaluation ledger, and the gradient-variance probe.

PennyLane's ``TorchLayer`` can silently ignore ``diff_method`` (PennyLane #4188, #6078), so every
gradient baseline here calls its own differentiator:

- ``backprop``: torch autograd through the statevector simulator (memory grows with L·2ⁿ: the tape);
- ``parameter-shift``: ``∂C/∂θ_k = [C(θ + π/2·e_k) − C(θ − π/2·e_k)]/2``, all ``2P`` shifted circuits
  evaluated in one batched call (chunked), recorded as ``2P`` evaluations;
- ``adjoint``: Jones & Gacon (2020): one forward pass, then the state and ``λ = Σ_b w_b O ψ_b`` are
  un-computed gate by gate, ``∂C/∂θ_k = Im⟨λ|G_k ψ⟩`` (``G_k`` the gate's Pauli generator); memory O(B·2ⁿ).

The ledger counts every circuit evaluation alike: one forward of the circuit on one minibatch (the 32
samples of a step) at one parameter vector is 1. Backprop and adjoint gradients are recorded as 1 (their
forward); they exist only on a simulator, where their extra cost is wall-clock, which is timed apart.
"""

from __future__ import annotations

import math
import time
from collections import Counter

import numpy as np
import torch

from paperworks import check_int
from rlqgrad.circuit import HEA, QNNCost

METHODS = ("backprop", "parameter-shift", "adjoint")


class EvalLedger:
    """Counts circuit evaluations (by kind) and wall time; meta-training keeps its own ledger.

    Example:
        >>> led = EvalLedger()
        >>> led.record(3, kind="shift")
        >>> led.total
        3
    """

    def __init__(self, name: str = "deployment"):
        self.name = name
        self.by_kind: Counter = Counter()
        self.wall_s = 0.0

    def record(self, n: int = 1, *, kind: str = "forward") -> None:
        n = check_int(n, "n", minimum=0)
        self.by_kind[kind] += n

    @property
    def total(self) -> int:
        return int(sum(self.by_kind.values()))

    def timed(self):
        """Context manager adding the block's wall time to ``wall_s``."""
        ledger = self

        class _T:
            def __enter__(self):
                self.t0 = time.perf_counter()

            def __exit__(self, *a):
                ledger.wall_s += time.perf_counter() - self.t0

        return _T()

    def as_dict(self) -> dict:
        return {"name": self.name, "total": self.total, "wall_s": self.wall_s, **dict(self.by_kind)}

    def __repr__(self) -> str:
        return f"EvalLedger({self.name!r}, total={self.total}, {dict(self.by_kind)})"


def _check(cost, params, method, ledger):
    if not isinstance(cost, QNNCost):
        raise TypeError("cost must be an rlqgrad QNNCost (HEA(...).cost(X, y)); for a QNode use qml.grad, "
                        f"got {type(cost).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if ledger is not None and not isinstance(ledger, EvalLedger):
        raise TypeError(f"ledger must be an EvalLedger or None, got {type(ledger).__name__}")
    theta = cost.hea.as_params(params)
    if theta.shape[0] != 1:
        raise ValueError(f"params must be one vector of n_params = {cost.n_params} values")
    return theta[0]


def gradient(cost: QNNCost, params, *, method: str = "backprop", ledger: EvalLedger | None = None,
             chunk: int = 8) -> np.ndarray:
    """∇C(θ) by ``method`` ∈ {``"backprop"``, ``"parameter-shift"``, ``"adjoint"``}; shape ``(P,)``.

    Args:
        cost: a :class:`QNNCost` (``HEA(n, L).cost(X, y)``).
        params: ``P`` finite angles.
        method: the differentiator; all three return the same gradient (to ~1e-12).
        ledger: records the evaluations (backprop/adjoint 1, parameter-shift ``2P``).
        chunk: shifted circuits per batched call (parameter-shift).
    """
    theta = _check(cost, params, method, ledger)
    if method == "backprop":
        g = _backprop(cost, theta)
        n_eval, kind = 1, "forward"
    elif method == "parameter-shift":
        g = _parameter_shift(cost, theta, check_int(chunk, "chunk"))
        n_eval, kind = 2 * cost.n_params, "shift"
    else:
        g = _adjoint(cost, theta)
        n_eval, kind = 1, "forward"
    if ledger is not None:
        ledger.record(n_eval, kind=kind)
    return g.detach().numpy()


def value_and_grad(cost: QNNCost, params, *, method: str, ledger: EvalLedger | None = None) -> tuple[float, np.ndarray]:
    """Loss and gradient; the loss comes free with backprop/adjoint (their forward), costs 1 more with shifts."""
    theta = _check(cost, params, method, ledger)
    if method == "backprop":
        theta = theta.clone().requires_grad_(True)
        loss = cost.torch_loss(theta)
        (g,) = torch.autograd.grad(loss, theta)
        if ledger is not None:
            ledger.record(1)
        return float(loss), g.numpy()
    g = gradient(cost, theta, method=method, ledger=ledger)
    if method == "adjoint":
        return cost(theta.numpy()), g  # adjoint's own forward gives the loss; not charged twice
    if ledger is not None:
        ledger.record(1)
    return cost(theta.numpy()), g


def _backprop(cost: QNNCost, theta: torch.Tensor) -> torch.Tensor:
    theta = theta.clone().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(cost.torch_loss(theta), theta)
    return g


def _parameter_shift(cost: QNNCost, theta: torch.Tensor, chunk: int) -> torch.Tensor:
    P = cost.n_params
    eye = torch.eye(P, dtype=theta.dtype) * (math.pi / 2)
    shifted = torch.cat([theta + eye, theta - eye])  # (2P, P)
    with torch.no_grad():
        vals = torch.cat([cost.torch_loss(shifted[i:i + chunk]) for i in range(0, 2 * P, chunk)])
    return (vals[:P] - vals[P:]) / 2


def _adjoint(cost: QNNCost, theta: torch.Tensor) -> torch.Tensor:
    hea = cost.hea
    n, L = hea.n_qubits, hea.n_layers
    th = theta.reshape(1, L, n, 2)
    with torch.no_grad():
        psi = hea.states(theta[None], cost.X)  # (1, B, 2^n)
        w = (-cost.y / (2 * cost.X.shape[0])).to(psi.dtype)  # dC/d⟨O⟩_b
        lam = psi * hea.obs.to(psi.dtype) * w[None, :, None]
        grad = torch.zeros(L, n, 2, dtype=theta.dtype)
        zc = hea.z.to(psi.dtype)
        for layer in range(L - 1, -1, -1):
            # un-compute the CZ ladder (self-inverse), then read the RZ gradients: Im⟨λ|Z_q ψ⟩
            cz = hea.cz.to(psi.dtype)
            psi, lam = psi * cz, lam * cz
            overlap = (lam.conj() * psi).sum(dim=1)[0]  # per basis state, summed over data
            grad[layer, :, 1] = (overlap @ zc).imag
            phase = torch.exp(0.5j * (th[:, layer, :, 1] @ hea.z.T).to(psi.dtype))[:, None, :]
            psi, lam = psi * phase, lam * phase
            # RY gradients: Im⟨λ|Y_q ψ⟩, all at once (the RY's of a layer commute), then un-compute them
            for q in range(n):
                v = psi.reshape(1, -1, 2**q, 2, 2 ** (n - q - 1))
                u = lam.reshape(1, -1, 2**q, 2, 2 ** (n - q - 1))
                # Yψ: (−i a1, i a0)
                ip = (u[:, :, :, 0].conj() * (-1j) * v[:, :, :, 1] + u[:, :, :, 1].conj() * 1j * v[:, :, :, 0]).sum()
                grad[layer, q, 0] = ip.imag
            psi = hea._ry_all(psi, th[:, layer, :, 0], sign=-1.0)
            lam = hea._ry_all(lam, th[:, layer, :, 0], sign=-1.0)
    return grad.reshape(-1)


def gradient_variance(n_qubits: int, n_layers: int, *, method: str, n_circuits: int = 100, cost: str = "local",
                      policy=None, n_data: int = 1, seed: int = 0, log: bool = False):
    """Variance of ∂C/∂θ₁ over ``n_circuits`` random circuits and parameters (McClean et al. 2018).

    Each circuit draws fresh uniform angles and a fresh random data point (a random angle embedding), so
    the variance is taken over circuits and parameters, not over one weight. ``method="policy"`` measures
    the first coordinate of a frozen :class:`~rlqgrad.UpdatePolicy`'s sampled update instead, observing the
    loss and accuracy at the same points (its variance comes from its weights and action noise).

    Returns:
        The variance (float); with ``log=True`` also a dict with the per-circuit values and, for the
        policy, the cosine of its mean update with −∇C.
    """
    n_circuits = check_int(n_circuits, "n_circuits", minimum=2)
    if method not in (*METHODS, "policy"):
        raise ValueError(f"method must be one of {(*METHODS, 'policy')}, got {method!r}")
    if method == "policy" and policy is None:
        raise ValueError("method='policy' needs policy=")
    hea = HEA(n_qubits, n_layers, cost=cost)
    rng = np.random.default_rng(seed)
    vals, cos = [], []
    gen = torch.Generator().manual_seed(seed)
    for _ in range(n_circuits):
        theta = hea.init_params(rng)
        X = rng.uniform(0, math.pi, size=(n_data, n_qubits))
        y = np.ones(n_data)
        c = hea.cost(X, y)
        if method == "policy":
            loss, acc = c.loss_acc(theta)
            obs = policy.observe(theta, loss, acc, np.zeros_like(theta), 0.0)
            with torch.no_grad():
                mean, std = policy.dist_params(obs)
                step = mean + std * torch.randn(mean.shape, generator=gen, dtype=mean.dtype)
            vals.append(float(step.reshape(-1)[0]))
            g = gradient(c, theta, method="backprop")
            m = mean.reshape(-1).double().numpy()
            denom = np.linalg.norm(m) * np.linalg.norm(g)
            cos.append(float(-(m @ g) / denom) if denom > 0 else 0.0)
        else:
            vals.append(float(gradient(c, theta, method=method)[0]))
    var = float(np.var(vals, ddof=1))
    if log:
        return var, {"values": vals, "cosine": cos}
    return var
