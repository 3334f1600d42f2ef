"""The hardware-efficient ansatz (HEA): a torch statevector simulator batched over data, and the same QNode.

Circuit (wire 0 is the most significant bit, as in PennyLane)::

    |0…0⟩ ─ RY(x_q) on every wire (angle embedding of n PCA features)
          ─ L × [ RY(θ_{l,q,0}) · RZ(θ_{l,q,1}) on every wire q, then CZ(0,1) CZ(1,2) … CZ(n−2,n−1) ]
          ─ measure ⟨O⟩,  O = Z₀ (``cost="local"``)  or  Z⊗…⊗Z (``cost="global"``, Cerezo et al. 2021)

Parameters ``θ`` have shape ``(L, n, 2)``, flattened to ``P = 2·n·L`` in that order. Labels are ``y ∈ {−1, +1}``,
the prediction is ``sign⟨O⟩`` and the loss is the probability that the measured ±1 outcome disagrees with the label,

    C(θ) = 1/B · Σ_b (1 − y_b ⟨O⟩_b(θ)) / 2  ∈ [0, 1],

which is linear in ``⟨O⟩``: its parameter-shift gradient needs exactly ``2P`` evaluations (inferred: the
abstract names no loss). Since the RY's of one layer act on different wires they commute, and so do the
RZ's; the simulator applies each layer as all RY's, then one diagonal (all RZ's times the CZ ladder).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from paperworks import check_int

_DTYPE = torch.float64
_CDTYPE = torch.complex128


def _bits(n: int) -> torch.Tensor:
    """``(2**n, n)`` matrix of ±1: ``z_q(k)``, the Z eigenvalue of wire q in basis state k."""
    k = torch.arange(2**n)
    shifts = torch.arange(n - 1, -1, -1)
    return 1.0 - 2.0 * ((k[:, None] >> shifts[None, :]) & 1).to(_DTYPE)


class HEA:
    """Hardware-efficient ansatz of ``n_qubits`` wires and ``n_layers`` RY·RZ + CZ-ladder layers.

    Args:
        n_qubits: wires ``n ≥ 1`` (also the number of PCA features embedded).
        n_layers: layers ``L ≥ 1``.
        cost: ``"local"`` (observable Z₀) or ``"global"`` (Z on every wire).

    Example:
        >>> hea = HEA(4, 2)
        >>> theta = hea.init_params(np.random.default_rng(0))
        >>> hea.expval(theta, np.zeros((3, 4))).shape
        torch.Size([3])
    """

    def __init__(self, n_qubits: int, n_layers: int, *, cost: str = "local"):
        self.n_qubits = check_int(n_qubits, "n_qubits", minimum=1)
        self.n_layers = check_int(n_layers, "n_layers", minimum=1)
        if self.n_qubits > 20:
            raise ValueError(f"n_qubits must be <= 20 for the statevector simulator, got {n_qubits}")
        if cost not in ("local", "global"):
            raise ValueError(f"cost must be 'local' or 'global', got {cost!r}")
        self.cost_kind = cost
        n = self.n_qubits
        self.n_params = 2 * n * self.n_layers
        self.z = _bits(n)  # (2^n, n)
        cz = torch.ones(2**n, dtype=_DTYPE)
        for q in range(n - 1):
            cz = cz * torch.where((self.z[:, q] < 0) & (self.z[:, q + 1] < 0), -1.0, 1.0)
        self.cz = cz
        self.obs = self.z[:, 0].clone() if cost == "local" else self.z.prod(dim=1)

    def __repr__(self) -> str:
        return f"HEA(n_qubits={self.n_qubits}, n_layers={self.n_layers}, cost={self.cost_kind!r})"

    # parameters ---------------------------------------------------------------------------------------

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Uniform random angles in [0, 2π), shape ``(P,)``."""
        return rng.uniform(0.0, 2 * math.pi, size=self.n_params)

    def as_params(self, params, name: str = "params") -> torch.Tensor:
        """``params`` as a float64 tensor of shape ``(S, P)`` (``S = 1`` for one flat vector)."""
        t = torch.as_tensor(np.asarray(params, dtype=float) if not torch.is_tensor(params) else params)
        t = t.to(_DTYPE)
        if t.ndim == 0 or t.shape[-1] != self.n_params and t.numel() != self.n_params:
            raise ValueError(f"{name} must hold n_params = {self.n_params} values, got shape {tuple(t.shape)}")
        t = t.reshape(-1, self.n_params)
        if not torch.isfinite(t).all():
            raise ValueError(f"{name} must be finite (found NaN or inf)")
        return t

    def as_data(self, X) -> torch.Tensor:
        x = torch.as_tensor(np.asarray(X, dtype=float) if not torch.is_tensor(X) else X).to(_DTYPE)
        if x.ndim != 2 or x.shape[1] != self.n_qubits:
            raise ValueError(f"X must have shape (batch, n_qubits={self.n_qubits}), got {tuple(x.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("X must be finite (found NaN or inf)")
        return x

    # simulation ---------------------------------------------------------------------------------------

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """Product state ⊗_q RY(x_q)|0⟩, shape ``(B, 2**n)`` complex."""
        psi = torch.ones(X.shape[0], 1, dtype=X.dtype)
        for q in range(self.n_qubits):
            v = torch.stack([torch.cos(X[:, q] / 2), torch.sin(X[:, q] / 2)], dim=1)
            psi = (psi[:, :, None] * v[:, None, :]).reshape(X.shape[0], -1)
        return psi.to(_CDTYPE)

    def _ry_all(self, psi: torch.Tensor, ang: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
        """RY(sign·ang[:, q]) on every wire q; psi ``(S, B, 2**n)``, ang ``(S, n)``."""
        S, B = psi.shape[:2]
        n = self.n_qubits
        c, s = torch.cos(ang / 2), sign * torch.sin(ang / 2)
        if not (torch.is_grad_enabled() and (psi.requires_grad or ang.requires_grad)):
            # no tape needed: real arithmetic on the (re, im) view into two ping-pong buffers (3x faster)
            r = torch.view_as_real(psi.contiguous()).reshape(S, B, 2 ** (n + 1)).clone()
            out = torch.empty_like(r)
            for q in range(n):
                shape = (S, B, 2**q, 2, 2 ** (n - q))
                v, o = r.view(shape), out.view(shape)
                a0, a1 = v[:, :, :, 0], v[:, :, :, 1]
                cq, sq = c[:, q].reshape(S, 1, 1, 1), s[:, q].reshape(S, 1, 1, 1)
                torch.mul(a0, cq, out=o[:, :, :, 0])
                o[:, :, :, 0].addcmul_(a1, sq, value=-1)
                torch.mul(a0, sq, out=o[:, :, :, 1])
                o[:, :, :, 1].addcmul_(a1, cq)
                r, out = out, r
            return torch.view_as_complex(r.view(S, B, 2**n, 2))
        for q in range(n):
            v = psi.reshape(S, B, 2**q, 2, 2 ** (n - q - 1))
            a0, a1 = v[:, :, :, 0], v[:, :, :, 1]
            cq, sq = c[:, q].reshape(S, 1, 1, 1), s[:, q].reshape(S, 1, 1, 1)
            psi = torch.stack([cq * a0 - sq * a1, sq * a0 + cq * a1], dim=3).reshape(S, B, -1)
        return psi

    def _diag(self, ang: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
        """The layer's diagonal: all RZ(ang[:, q]) then the CZ ladder, shape ``(S, 2**n)``."""
        phase = torch.exp(-0.5j * sign * (ang @ self.z.T).to(_CDTYPE))
        return phase * self.cz.to(_CDTYPE)

    def states(self, theta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """Final states, shape ``(S, B, 2**n)``, for parameters ``(S, P)`` and data ``(B, n)``."""
        S = theta.shape[0]
        th = theta.reshape(S, self.n_layers, self.n_qubits, 2)
        psi = self.embed(X)[None].expand(S, -1, -1)
        for layer in range(self.n_layers):
            psi = self._ry_all(psi, th[:, layer, :, 0])
            psi = psi * self._diag(th[:, layer, :, 1])[:, None, :]
        return psi

    def expval(self, params, X) -> torch.Tensor:
        """⟨O⟩ per data point: shape ``(B,)`` for one parameter vector, ``(S, B)`` for ``(S, P)``."""
        single = not (torch.is_tensor(params) and params.ndim == 2) and np.ndim(params) != 2
        theta = self.as_params(params) if not torch.is_tensor(params) else params.to(_DTYPE).reshape(-1, self.n_params)
        psi = self.states(theta, self.as_data(X))
        f = (psi.real**2 + psi.imag**2) @ self.obs
        return f[0] if single else f

    def cost(self, X, y) -> QNNCost:
        """The loss oracle on data ``(X, y)``: a :class:`QNNCost`."""
        return QNNCost(self, X, y)

    # PennyLane ---------------------------------------------------------------------------------------

    def circuit(self, x, params):
        """The circuit as PennyLane operations (for a QNode); ``params`` flat, length P."""
        import pennylane as qml

        n = self.n_qubits
        for q in range(n):
            qml.RY(x[q], wires=q)
        k = 0
        for _ in range(self.n_layers):
            for q in range(n):
                qml.RY(params[k], wires=q)
                qml.RZ(params[k + 1], wires=q)
                k += 2
            for q in range(n - 1):
                qml.CZ(wires=[q, q + 1])
        if self.cost_kind == "local":
            return qml.expval(qml.PauliZ(0))
        return qml.expval(qml.prod(*[qml.PauliZ(q) for q in range(n)]))

    def qnode(self, device=None, **kwargs):
        """The same circuit as a ``qml.QNode(x, params) -> ⟨O⟩`` on ``device`` (default ``default.qubit``).

        ``kwargs`` go to :class:`qml.QNode` (``diff_method=...``, ``interface=...``). Parameters are flat,
        length P, in the simulator's order.
        """
        import pennylane as qml

        if device is None:
            device = qml.device("default.qubit", wires=self.n_qubits)
        return qml.QNode(self.circuit, device, **kwargs)


class QNNCost:
    """The loss oracle ``C(θ) = mean_b (1 − y_b⟨O⟩_b(θ))/2`` of an :class:`HEA` on data ``(X, y)``.

    Calling it returns the loss as a Python float (one circuit evaluation); :meth:`loss_acc` gives the
    loss and the accuracy of ``sign⟨O⟩`` from the same evaluation; :meth:`torch_loss` keeps the graph.
    """

    def __init__(self, hea: HEA, X, y):
        self.hea = hea
        self.X = hea.as_data(X)
        yy = torch.as_tensor(np.asarray(y, dtype=float)).to(_DTYPE).reshape(-1)
        if yy.shape[0] != self.X.shape[0]:
            raise ValueError(f"y must have {self.X.shape[0]} labels, got {yy.shape[0]}")
        if not bool(((yy == 1) | (yy == -1)).all()):
            raise ValueError("y must hold labels in {-1, +1}")
        self.y = yy
        self.n_params = hea.n_params

    def torch_loss(self, theta: torch.Tensor) -> torch.Tensor:
        """Loss for ``theta`` of shape ``(P,)`` (scalar) or ``(S, P)`` (shape ``(S,)``), differentiable."""
        single = theta.ndim == 1
        f = self.hea.expval(theta.reshape(-1, self.n_params), self.X)
        loss = (1 - f * self.y).mean(dim=-1) / 2
        return loss[0] if single else loss

    def loss_acc(self, params) -> tuple[float, float]:
        theta = self.hea.as_params(params)
        with torch.no_grad():
            f = self.hea.expval(theta, self.X)[0]
        return float(((1 - f * self.y) / 2).mean()), float((torch.sign(f) == self.y).double().mean())

    def __call__(self, params) -> float:
        return self.loss_acc(params)[0]
