"""The Hebb-RNN cell: a vanilla RNN plus a fast Hebbian trace with learned per-synapse gains.

    h_t     = tanh(W h_{t-1} + (A ⊙ F_t) h_{t-1} + U x_t + b)
    F_{t+1} = clip(λ F_t + η h_t h_{t-1}ᵀ),   clip(M) = M · min(1, c / ‖M‖_F)

``W``, ``U``, ``b``, the per-synapse gains ``A`` and the scalars ``η`` (rate) and ``λ`` (decay) are
slow weights, meta-learned across episodes; ``F`` is per-episode state (zero at the start of an
episode). Parameterisation (documented as the issue asks): ``η = softplus(η_raw)`` (positive,
initialised at 0.1 so the trace is live at initialisation), ``λ = sigmoid(λ_raw)`` (always in
(0, 1), initialised at 0.9). ``A`` starts at 1 (``A ⊙ F = F``), as in Miconi et al. (2018) and
Duan et al. (ICLR 2023, PlasticRNNs), the method anchors of the abstract; the exact cell of the
paper is not public and this form is the issue's, inferred from the abstract.

Two exact paths compute the same function:

- materialised: ``F`` is a ``(B, H, H)`` tensor;
- factored: ``F = Σ_s c_s u_s v_sᵀ`` is kept as the stacked factors ``u_s = h_s``, ``v_s = h_{s-1}`` and
  coefficients ``c`` (decay and clipping only rescale ``c``). Then
  ``(A ⊙ F) h = Σ_s c_s u_s ⊙ (A (v_s ⊙ h))`` (one ``(B·k, H) × (H, H)`` matrix product), and the clipping
  norm comes from the factors' Gram entries:
  ``‖λF + η u vᵀ‖² = λ²‖F‖² + 2λη uᵀFv + η²‖u‖²‖v‖²`` with ``uᵀFv = Σ_s c_s (u·u_s)(v_s·v)``.
  No ``(B, H, H)`` tensor is formed, so autograd stores ``O(B·T·H)`` instead of ``O(B·T·H²)``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F_

from paperworks import check_float, check_int

_TINY = 1e-30


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


class HebbianRNNCell(nn.Module):
    """One step of the Hebb-RNN (see the module docstring for the maths).

    Args:
        input_size: size of ``x_t``.
        hidden_size: ``H``.
        clip: Frobenius-norm bound ``c`` of the trace ``F`` (> 0).
        factored: keep ``F`` as outer-product factors (default) or as a ``(B, H, H)`` tensor.
        plastic: ``False`` is the Hebb-off ablation (``η = 0``, the trace stays zero).
        eta, decay: initial rate ``η > 0`` and decay ``λ ∈ (0, 1)``.

    Shapes: ``x_t`` ``(B, input_size)``; ``forward(x_t, state) -> (h, state)``, ``h`` ``(B, H)``.
    ``state`` is ``None`` (start of an episode) or the dict returned by the previous step.

    Example:
        >>> cell = HebbianRNNCell(5, 8)
        >>> h, s = cell(torch.zeros(2, 5), None)
        >>> h.shape
        torch.Size([2, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, *, clip: float = 1.0, factored: bool = True,
                 plastic: bool = True, eta: float = 0.1, decay: float = 0.9):
        super().__init__()
        self.input_size = check_int(input_size, "input_size")
        self.hidden_size = check_int(hidden_size, "hidden_size")
        self.clip = check_float(clip, "clip", minimum=0, open_minimum=True)
        if not isinstance(factored, bool) or not isinstance(plastic, bool):
            raise TypeError("factored and plastic must be bools")
        self.factored, self.plastic = factored, plastic
        self.eta_init = check_float(eta, "eta", minimum=0, open_minimum=True)
        self.decay_init = check_float(decay, "decay", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
        H = self.hidden_size
        self.W = nn.Parameter(torch.empty(H, H))
        self.U = nn.Parameter(torch.empty(H, self.input_size))
        self.b = nn.Parameter(torch.empty(H))
        self.A = nn.Parameter(torch.empty(H, H))
        self.eta_raw = nn.Parameter(torch.empty(()))
        self.decay_raw = nn.Parameter(torch.empty(()))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.orthogonal_(self.W)
        with torch.no_grad():
            self.W.mul_(0.9)
        nn.init.normal_(self.U, std=1.0 / math.sqrt(self.input_size))
        nn.init.zeros_(self.b)
        nn.init.ones_(self.A)
        with torch.no_grad():
            self.eta_raw.fill_(_inverse_softplus(self.eta_init))
            self.decay_raw.fill_(math.log(self.decay_init / (1 - self.decay_init)))

    # parameters in their constrained form ----------------------------------------------------------
    @property
    def eta(self) -> torch.Tensor:
        """The plasticity rate ``η = softplus(η_raw)`` (0 for the Hebb-off ablation)."""
        return F_.softplus(self.eta_raw) if self.plastic else torch.zeros((), dtype=self.eta_raw.dtype,
                                                                            device=self.eta_raw.device)

    @property
    def decay(self) -> torch.Tensor:
        """The trace decay ``λ = sigmoid(λ_raw) ∈ (0, 1)``."""
        return torch.sigmoid(self.decay_raw)

    def set_decay(self, value: float) -> None:
        """Set ``λ`` (must lie in (0, 1))."""
        v = check_float(value, "decay", minimum=0, maximum=1, open_minimum=True, open_maximum=True)
        with torch.no_grad():
            self.decay_raw.fill_(math.log(v / (1 - v)))

    # state -----------------------------------------------------------------------------------------
    def initial_state(self, batch: int, *, dtype=None, device=None) -> dict:
        p = self.W
        dtype, device = dtype or p.dtype, device or p.device
        h = torch.zeros(batch, self.hidden_size, dtype=dtype, device=device)
        if self.factored:
            return {"h": h, "u": h.new_zeros(batch, 0, self.hidden_size), "v": h.new_zeros(batch, 0, self.hidden_size),
                    "c": h.new_zeros(batch, 0), "norm2": h.new_zeros(batch)}
        return {"h": h, "F": h.new_zeros(batch, self.hidden_size, self.hidden_size)}

    def check_state(self, state, batch: int) -> None:
        if not isinstance(state, dict) or "h" not in state:
            raise TypeError("state must be None or the dict returned by a previous step")
        need = ("u", "v", "c", "norm2") if self.factored else ("F",)
        missing = [k for k in need if k not in state]
        if missing:
            raise ValueError(f"state lacks {missing}: it was made by a {'materialised' if self.factored else 'factored'} "
                             "cell (factored must match)")
        if state["h"].shape != (batch, self.hidden_size):
            raise ValueError(f"state is for batch size {state['h'].shape[0]} and hidden size {state['h'].shape[-1]}, "
                             f"but the input has batch size {batch} (hidden size {self.hidden_size}); "
                             "pass state=None to start a new episode")

    def trace(self, state) -> torch.Tensor:
        """The trace ``F`` as a ``(B, H, H)`` tensor (from the factors on the factored path)."""
        if "F" in state:
            return state["F"]
        return torch.einsum("bk,bki,bkj->bij", state["c"], state["u"], state["v"])

    # one step --------------------------------------------------------------------------------------
    def forward(self, x_t: torch.Tensor, state: dict | None = None) -> tuple[torch.Tensor, dict]:
        if x_t.dim() != 2 or x_t.shape[1] != self.input_size:
            raise ValueError(f"x_t must have shape (batch, {self.input_size}), got {tuple(x_t.shape)}")
        B = x_t.shape[0]
        if state is None:
            state = self.initial_state(B, dtype=x_t.dtype, device=x_t.device)
        else:
            self.check_state(state, B)
        h_prev = state["h"]
        pre = F_.linear(h_prev, self.W) + F_.linear(x_t, self.U, self.b)
        lam, eta = self.decay, self.eta
        if self.factored:
            u, v, c = state["u"], state["v"], state["c"]
            if c.shape[1]:
                # (A ⊙ F) h = Σ_s c_s u_s ⊙ (A (v_s ⊙ h))
                av = F_.linear(v * h_prev.unsqueeze(1), self.A)           # (B, k, H)
                pre = pre + torch.einsum("bk,bki->bi", c, u * av)
            h = torch.tanh(pre)
            if not self.plastic:  # η = 0: no new factor (it would have coefficient 0), the trace only decays
                n2 = lam**2 * state["norm2"]
                s = self._clip_scale(n2)
                return h, {"h": h, "u": u, "v": v, "c": c * (lam * s).unsqueeze(1) if c.shape[1] else c,
                           "norm2": n2 * s * s}
            # ‖λF + η h h_prevᵀ‖² from the factors' inner products
            uFv = (c * torch.einsum("bki,bi->bk", u, h) * torch.einsum("bki,bi->bk", v, h_prev)).sum(1)
            n2 = lam**2 * state["norm2"] + 2 * lam * eta * uFv + eta**2 * (h * h).sum(1) * (h_prev * h_prev).sum(1)
            s = self._clip_scale(n2)
            c_new = torch.cat([c * lam, eta.expand(B, 1)], 1) * s.unsqueeze(1)
            return h, {"h": h, "u": torch.cat([u, h.unsqueeze(1)], 1), "v": torch.cat([v, h_prev.unsqueeze(1)], 1),
                       "c": c_new, "norm2": n2 * s * s}
        Ft = state["F"]
        pre = pre + torch.bmm(self.A * Ft, h_prev.unsqueeze(-1)).squeeze(-1)
        h = torch.tanh(pre)
        Fn = lam * Ft + eta * h.unsqueeze(2) * h_prev.unsqueeze(1)
        s = self._clip_scale((Fn * Fn).sum((1, 2)))
        return h, {"h": h, "F": Fn * s.view(B, 1, 1)}

    def _clip_scale(self, n2: torch.Tensor) -> torch.Tensor:
        norm = n2.clamp_min(_TINY).sqrt()
        return self.clip / torch.maximum(norm, torch.full_like(norm, self.clip))

    def extra_repr(self) -> str:
        return (f"{self.input_size}, {self.hidden_size}, clip={self.clip:g}, factored={self.factored}, "
                f"plastic={self.plastic}")
