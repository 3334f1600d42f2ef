r"""GraphMuon: Muon's polar update taken in the metric of the graph-propagated layer input.

Reconstructed from the paper's abstract (the full paper and its code were not available): the
metric, the covariance estimate, the damping and the step normalisation below are our reading of
"orthogonalization in a metric defined by these propagated representations" and "normalizes step
sizes according to the update's induced effect on the layer representation".

For a weight ``W`` of shape ``(d_out, d_in)`` (torch layout, ``Y = X Wᵀ``) whose input is the
propagated representation ``X = Â H`` (``n × d_in``):

.. math::
    \Sigma &\leftarrow \beta\,\Sigma + (1-\beta)\,X^\top X / n
        \qquad \Sigma_\epsilon = \Sigma + \epsilon\,\tfrac{\operatorname{tr}\Sigma}{d_{in}} I \\
    B &\leftarrow \mu B + (1-\mu) G, \qquad M = (1-\mu) G + \mu B \quad\text{(Nesterov, as torch.optim.Muon)} \\
    U &= \operatorname{polar}\!\big(M\,\Sigma_\epsilon^{-1/2}\big)\,\Sigma_\epsilon^{-1/2} \\
    W &\leftarrow W(1-\eta\lambda) - \eta\,\rho\,\sqrt{d_{in}d_{out}}\;U / \|U\|_\Sigma,
        \qquad \|U\|_\Sigma = \sqrt{\operatorname{tr}(U\Sigma U^\top)} = \|X U^\top\|_F/\sqrt n

``U`` is the steepest-descent direction under the norm ``‖W Σ^{1/2}‖_op`` (so ``‖U Σ^{1/2}‖_op = 1``
for an exact polar factor), and the step is scaled so that the *induced* change of the layer output,
``‖X ΔWᵀ‖_F/√n``, equals ``η ρ √(d_in d_out)`` — the size of ``torch.optim.Muon``'s
``match_rms_adamw`` step on unit-covariance inputs, so one learning-rate grid serves AdamW, Muon and
GraphMuon. With Σ = I (and ``eps=0``, ``scale`` set to Muon's option) the update *is* Muon's.

Parameters that are not registered graph weights are updated by AdamW (torch's functional
``adamw``), as one pairs ``torch.optim.Muon`` with AdamW.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.optim import Optimizer
from torch.optim.adamw import adamw

from graphmuon.linalg import NS_COEFFICIENTS, NS_EPS, NS_STEPS, inverse_sqrt, newton_schulz, svd_polar

CaptureFn = Callable[[nn.Module, tuple, dict], Tensor]
SCALES = ("induced", "original", "match_rms_adamw")
UNREGISTERED = ("raise", "warn", "ignore")


def _check_number(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(v).__name__} {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v!r}")


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype Σ is kept in for a weight of ``dtype``: float64 for float64 weights, else float32."""
    return torch.promote_types(dtype, torch.float32)


def muon_lr_scale(scale: str, shape) -> float:
    """``torch.optim.Muon``'s ``adjust_lr_fn`` factor for a ``(A, B)`` matrix."""
    a, b = shape[:2]
    if scale == "original":
        return math.sqrt(max(1, a / b))
    if scale == "match_rms_adamw":
        return 0.2 * math.sqrt(max(a, b))
    raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")


def graph_polar_direction(m: Tensor, sigma_inv_sqrt: Tensor, *, orthogonalize: str = "newton_schulz",
                          ns_steps: int = NS_STEPS, ns_coefficients=NS_COEFFICIENTS, ns_eps: float = NS_EPS,
                          ns_dtype: torch.dtype = torch.bfloat16) -> Tensor:
    """``U = polar(M Σ^(-1/2)) Σ^(-1/2)`` for ``M`` of shape ``(d_out, d_in)``: the graph-metric polar step.

    Before any learning rate: ``‖U Σ^{1/2}‖_op = 1`` for ``orthogonalize="svd"`` (≈ 1 for Newton–Schulz).
    """
    if orthogonalize not in ("newton_schulz", "svd"):
        raise ValueError(f"orthogonalize must be 'newton_schulz' or 'svd', got {orthogonalize!r}")
    if m.ndim != 2 or sigma_inv_sqrt.shape != (m.size(1), m.size(1)):
        raise ValueError(f"m must be (d_out, d_in) and sigma_inv_sqrt (d_in, d_in); got {tuple(m.shape)} "
                         f"and {tuple(sigma_inv_sqrt.shape)}")
    whitened = m @ sigma_inv_sqrt
    if orthogonalize == "svd":
        q = svd_polar(whitened)
    else:
        q = newton_schulz(whitened, ns_steps, ns_coefficients, ns_eps, ns_dtype)
    return q.to(m.dtype) @ sigma_inv_sqrt


class GraphMuon(Optimizer):
    r"""GraphMuon (reconstructed from the abstract; see the module docstring for the update rule).

    Graph weights are registered with :func:`graphmuon.attach` (or :meth:`register`), which hooks the
    layer so that its propagated input ``X = Â H`` feeds the covariance Σ. Every other parameter is
    updated by AdamW with the group's ``lr``.

    Args:
        params: parameters or param groups. A group may set ``use_graphmuon``: ``None`` (default:
            registered weights get GraphMuon, the rest AdamW), ``True`` (every parameter must be a
            registered 2-D weight) or ``False`` (AdamW only).
        lr: learning rate η (default 0.01; the same meaning as AdamW's, see ``rms``).
        momentum: μ (default 0.95). nesterov: Nesterov momentum as ``torch.optim.Muon`` (default True).
        weight_decay: decoupled weight decay λ of the graph weights (default 0).
        cov_beta: EMA factor β of Σ (default 0.95; the first capture initialises Σ).
        eps: relative damping ε: Σ + ε·(tr Σ / d)·I (default 1e-3; ``0`` allowed).
        scale: ``"induced"`` (default, the paper's induced-effect normalisation) or Muon's
            ``"original"``/``"match_rms_adamw"`` learning-rate adjustment (for ablations and the Σ = I check).
        rms: ρ, the induced step is η·ρ·√(d_in·d_out) in ``‖·‖_Σ`` (default 0.2, Moonlight's AdamW match).
        orthogonalize: ``"newton_schulz"`` (default, quintic, bfloat16 as Muon) or ``"svd"`` (exact).
        ns_steps, ns_coefficients, ns_eps, ns_dtype: the Newton–Schulz iteration (Muon's defaults).
        inv_sqrt: ``"auto"`` (eigh for d ≤ ``eigh_max_dim``, else coupled Newton), ``"eigh"`` or ``"newton"``.
        eigh_max_dim: default 512.
        precond_every: capture X, update Σ and recompute Σ^(-1/2) every this many steps (default 10; the
            steps between reuse them, as Shampoo/SOAP amortise their preconditioners). ``cov_beta`` is per
            step: a refresh after k steps weighs the new covariance by 1 − β^k. ``precond_every=1`` is the
            per-step method.
        cov_rows: estimate XᵀX from at most this many rows (a strided sample whose offset moves each
            refresh, rescaled to n rows; default ``None``: every row).
        unregistered: what ``step()`` does when no graph weight is registered (the optimizer would be plain
            AdamW, e.g. after forgetting :func:`graphmuon.attach`): ``"raise"`` (default, RuntimeError),
            ``"warn"`` or ``"ignore"``. Groups with ``use_graphmuon=False`` never trigger it.
        adamw_betas, adamw_eps, adamw_weight_decay: AdamW settings of the other parameters.

    Example:
        >>> opt = GraphMuon(model.parameters(), lr=0.01)    # doctest: +SKIP
        >>> graphmuon.attach(model, opt)                    # doctest: +SKIP
    """

    def __init__(self, params, lr: float = 0.01, momentum: float = 0.95, *, nesterov: bool = True,
                 weight_decay: float = 0.0, cov_beta: float = 0.95, eps: float = 1e-3, scale: str = "induced",
                 rms: float = 0.2, orthogonalize: str = "newton_schulz", ns_steps: int = NS_STEPS,
                 ns_coefficients: tuple[float, float, float] = NS_COEFFICIENTS, ns_eps: float = NS_EPS,
                 ns_dtype: torch.dtype = torch.bfloat16, inv_sqrt: str = "auto", eigh_max_dim: int = 512,
                 precond_every: int = 10, adamw_betas: tuple[float, float] = (0.9, 0.999), adamw_eps: float = 1e-8,
                 adamw_weight_decay: float = 0.0, use_graphmuon: bool | None = None, cov_rows: int | None = None,
                 unregistered: str = "raise") -> None:
        nums = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, cov_beta=cov_beta, eps=eps, rms=rms,
                    ns_eps=ns_eps, adamw_eps=adamw_eps, adamw_weight_decay=adamw_weight_decay)
        for name, v in nums.items():
            _check_number(name, v)
        for name, v in dict(ns_steps=ns_steps, eigh_max_dim=eigh_max_dim, precond_every=precond_every).items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
        if cov_rows is not None and (isinstance(cov_rows, bool) or not isinstance(cov_rows, int)):
            raise TypeError(f"cov_rows must be an int or None, got {type(cov_rows).__name__} {cov_rows!r}")
        if not isinstance(nesterov, bool):
            raise TypeError(f"nesterov must be a bool, got {type(nesterov).__name__}")
        if not isinstance(ns_dtype, torch.dtype) or not ns_dtype.is_floating_point:
            raise TypeError(f"ns_dtype must be a floating torch.dtype, got {ns_dtype!r}")
        if use_graphmuon is not None and not isinstance(use_graphmuon, bool):
            raise TypeError(f"use_graphmuon must be None or a bool, got {use_graphmuon!r}")
        try:
            betas = tuple(adamw_betas)
            coeffs = tuple(ns_coefficients)
        except TypeError as err:
            raise TypeError("adamw_betas and ns_coefficients must be sequences of numbers") from err
        for i, b in enumerate(betas):
            _check_number(f"adamw_betas[{i}]", b)
        for i, c in enumerate(coeffs):
            _check_number(f"ns_coefficients[{i}]", c)
        checks = {"lr": lr >= 0, "momentum": 0 <= momentum < 1, "weight_decay": weight_decay >= 0,
                  "cov_beta": 0 <= cov_beta < 1, "eps": eps >= 0, "rms": rms > 0, "precond_every": precond_every >= 1,
                  "eigh_max_dim": eigh_max_dim >= 1, "adamw_eps": adamw_eps > 0, "ns_eps": ns_eps > 0,
                  "ns_steps": 1 <= ns_steps < 100, "adamw_weight_decay": adamw_weight_decay >= 0,
                  "cov_rows": cov_rows is None or cov_rows >= 1, "ns_coefficients": len(coeffs) == 3,
                  "adamw_betas": len(betas) == 2 and all(0 <= b < 1 for b in betas)}
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"invalid {name}: {locals()[name]!r}")
        if unregistered not in UNREGISTERED:
            raise ValueError(f"unregistered must be one of {UNREGISTERED}, got {unregistered!r}")
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        if orthogonalize not in ("newton_schulz", "svd"):
            raise ValueError(f"orthogonalize must be 'newton_schulz' or 'svd', got {orthogonalize!r}")
        if inv_sqrt not in ("auto", "eigh", "newton"):
            raise ValueError(f"inv_sqrt must be 'auto', 'eigh' or 'newton', got {inv_sqrt!r}")
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay, cov_beta=cov_beta,
                        eps=eps, scale=scale, rms=rms, orthogonalize=orthogonalize, ns_steps=ns_steps,
                        ns_coefficients=tuple(ns_coefficients), ns_eps=ns_eps, ns_dtype=ns_dtype, inv_sqrt=inv_sqrt,
                        eigh_max_dim=eigh_max_dim, precond_every=precond_every, adamw_betas=betas,
                        adamw_eps=adamw_eps, adamw_weight_decay=adamw_weight_decay, use_graphmuon=use_graphmuon,
                        cov_rows=cov_rows)
        super().__init__(params, defaults)
        self.unregistered = unregistered
        self._names: dict[Tensor, str] = {}
        self._hooks: dict[Tensor, object] = {}

    # registration ---------------------------------------------------------------------------

    def _owns(self, p: Tensor) -> bool:
        return any(p is q for g in self.param_groups for q in g["params"])

    def param_name(self, p: Tensor) -> str:
        """The registered name of ``p``, else its position in the param groups."""
        if p in self._names:
            return self._names[p]
        for gi, g in enumerate(self.param_groups):
            for pi, q in enumerate(g["params"]):
                if q is p:
                    return f"param_groups[{gi}]['params'][{pi}] {tuple(p.shape)}"
        return f"<parameter {tuple(p.shape)}>"

    @property
    def registered(self) -> dict[str, Tensor]:
        """Registered graph weights by name."""
        return {n: p for p, n in self._names.items()}

    def _group_of(self, p: Tensor) -> dict:
        for g in self.param_groups:
            if any(p is q for q in g["params"]):
                return g
        raise ValueError(f"parameter {self.param_name(p)!r} is not in this optimizer's param_groups")

    def _capture_due(self, p: Tensor) -> bool:
        """Σ and Σ^(-1/2) are refreshed every ``precond_every`` steps: capture only before those steps."""
        st = self.state[p]
        return "inv_sqrt" not in st or st.get("step", 0) % self._group_of(p)["precond_every"] == 0

    def register(self, weight: Tensor, module: nn.Module, capture: CaptureFn | None = None, *,
                 name: str | None = None):
        """Register ``weight`` as a graph weight whose propagated input ``module`` receives.

        Registering a weight again replaces its hook (one hook per weight, so :func:`graphmuon.attach`
        may be called twice).

        Args:
            weight: a 2-D parameter of this optimizer, shape ``(d_out, d_in)``.
            module: the module to hook (a forward pre-hook, with kwargs).
            capture: ``capture(module, args, kwargs) -> X`` of shape ``(..., d_in)``, the propagated
                input the weight acts on; default: the first positional input (right for an
                ``nn.Linear`` applied after propagation).
            name: used in error messages (default: the position in the param groups).

        Returns:
            The hook handle.
        """
        if not isinstance(weight, Tensor):
            raise TypeError(f"weight must be a torch.Tensor, got {type(weight).__name__}")
        label = name or self.param_name(weight)
        if weight.ndim != 2:
            raise ValueError(f"registered parameter {label!r} must be a 2-D matrix, got shape {tuple(weight.shape)}")
        if not isinstance(module, nn.Module):
            raise TypeError(f"module for {label!r} must be an nn.Module, got {type(module).__name__}")
        if not self._owns(weight):
            raise ValueError(f"parameter {label!r} is not in this optimizer's param_groups")
        capture = capture or _first_input
        if not callable(capture):
            raise TypeError(f"capture for {label!r} must be callable, got {type(capture).__name__}")
        self._names[weight] = label
        if weight in self._hooks:
            self._hooks.pop(weight).remove()
        acc = accumulation_dtype(weight.dtype)

        def hook(mod, args, kwargs):
            if not (mod.training and torch.is_grad_enabled()) or not self._capture_due(weight):
                return None  # evaluation passes, and steps between refreshes, do not move Σ
            with torch.no_grad():
                x = capture(mod, args, kwargs)
                if not isinstance(x, Tensor) or x.size(-1) != weight.size(1):
                    got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
                    raise ValueError(f"capture for {label!r} returned {got}; expected (..., {weight.size(1)})")
                x = x.reshape(-1, x.size(-1)).to(acc)
                n = x.size(0)
                st = self.state[weight]
                rows = self._group_of(weight)["cov_rows"]
                if rows is not None and n > rows:  # a strided row sample, its offset moving with the step
                    stride = -(-n // rows)
                    sub = x[int(st.get("step", 0)) % stride::stride]
                    xtx = (sub.T @ sub) * (n / sub.size(0))
                else:
                    xtx = x.T @ x
                st["pending_xtx"] = st["pending_xtx"] + xtx if "pending_xtx" in st else xtx
                st["pending_n"] = int(st.get("pending_n", 0)) + n
            return None

        handle = module.register_forward_pre_hook(hook, with_kwargs=True)
        self._hooks[weight] = handle
        return handle

    def remove_hooks(self) -> None:
        """Remove every capture hook this optimizer registered (the weights stay registered)."""
        for h in self._hooks.values():
            h.remove()
        self._hooks.clear()

    def load_state_dict(self, state_dict) -> None:
        """As :meth:`torch.optim.Optimizer.load_state_dict`; Σ and Σ^(-1/2) keep their accumulation dtype."""
        super().load_state_dict(state_dict)
        for p, st in self.state.items():
            acc = accumulation_dtype(p.dtype)
            for key in ("sigma", "inv_sqrt", "pending_xtx"):
                if isinstance(st.get(key), Tensor):
                    st[key] = st[key].to(acc)

    # the update -----------------------------------------------------------------------------

    def _covariance(self, p: Tensor, group: dict) -> Tensor:
        st = self.state[p]
        n = int(st.get("pending_n", 0))
        if n > 0:
            batch = st.pop("pending_xtx") / n
            st["pending_n"] = 0
            if not torch.isfinite(batch).all():
                raise ValueError(f"non-finite propagated input captured for parameter {self.param_name(p)!r}")
            step = int(st.get("step", 0))
            if "sigma" not in st:
                st["sigma"] = batch
            else:  # β per step: a refresh after k steps weighs the new batch by 1 − β^k
                k = max(1, step - int(st.get("sigma_step", step - 1)))
                st["sigma"] = st["sigma"].lerp_(batch.to(st["sigma"].dtype), 1 - group["cov_beta"] ** k)
            st["sigma_step"] = step
        if "sigma" not in st:
            raise ValueError(f"parameter {self.param_name(p)!r} is a GraphMuon weight without a propagated-input "
                             "capture: call graphmuon.attach(model, optimizer) or optimizer.register(...) and run a "
                             "training forward pass before step()")
        return st["sigma"]

    def _graph_step(self, p: Tensor, group: dict) -> None:
        g = p.grad
        st = self.state[p]
        if "momentum_buffer" not in st:
            st["momentum_buffer"] = torch.zeros_like(g, memory_format=torch.preserve_format)
            st["step"] = 0
        sigma = self._covariance(p, group)
        buf = st["momentum_buffer"]
        buf.lerp_(g, 1 - group["momentum"])
        m = g.lerp(buf, group["momentum"]) if group["nesterov"] else buf
        if "inv_sqrt" not in st or st["step"] % group["precond_every"] == 0:
            d = sigma.size(0)
            damped = sigma
            if group["eps"] > 0:
                damped = sigma + (group["eps"] * sigma.diagonal().mean().clamp(min=1e-30)) * torch.eye(
                    d, dtype=sigma.dtype, device=sigma.device)
            st["inv_sqrt"] = inverse_sqrt(damped, group["inv_sqrt"], group["eigh_max_dim"])
        st["step"] += 1
        u = graph_polar_direction(m, st["inv_sqrt"].to(m.dtype), orthogonalize=group["orthogonalize"],
                                  ns_steps=group["ns_steps"], ns_coefficients=group["ns_coefficients"],
                                  ns_eps=group["ns_eps"], ns_dtype=group["ns_dtype"])
        lr = group["lr"]
        if group["scale"] == "induced":
            induced = torch.sqrt(torch.clamp((u @ sigma.to(u.dtype) * u).sum(), min=0.0))
            target = group["rms"] * math.sqrt(p.size(0) * p.size(1))
            step = lr * target / induced if induced > 0 else torch.zeros((), dtype=u.dtype)
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(u * step, alpha=-1.0)
        else:
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(u, alpha=-lr * muon_lr_scale(group["scale"], p.shape))

    def _adamw_step(self, params: list[Tensor], group: dict) -> None:
        grads, avgs, sqs, steps = [], [], [], []
        for p in params:
            st = self.state[p]
            if "exp_avg" not in st:
                st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["adamw_step"] = torch.tensor(0.0)
            grads.append(p.grad)
            avgs.append(st["exp_avg"])
            sqs.append(st["exp_avg_sq"])
            steps.append(st["adamw_step"])
        b1, b2 = group["adamw_betas"]
        adamw(params, grads, avgs, sqs, [], steps, foreach=False, amsgrad=False, beta1=b1, beta2=b2, lr=group["lr"],
              weight_decay=group["adamw_weight_decay"], eps=group["adamw_eps"], maximize=False)

    @torch.no_grad()
    def step(self, closure=None):
        """One optimisation step (``closure`` re-evaluates the loss, as in every torch optimizer)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not self._names and self.unregistered != "ignore" and any(
                g["use_graphmuon"] is None for g in self.param_groups):
            msg = ("GraphMuon.step() with no graph weight registered: every parameter gets plain AdamW. Call "
                   "graphmuon.attach(model, optimizer) (or optimizer.register(...)) before training, or pass "
                   "unregistered='warn'/'ignore' (or use_graphmuon=False) if AdamW-only is intended")
            if self.unregistered == "raise":
                raise RuntimeError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
        for group in self.param_groups:
            use = group["use_graphmuon"]
            aux = []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise ValueError(f"parameter {self.param_name(p)!r} has a sparse gradient; GraphMuon needs dense")
                if not torch.isfinite(p.grad).all():
                    raise ValueError(f"non-finite gradient (NaN or inf) in parameter {self.param_name(p)!r}")
                graph = p in self._names if use is None else bool(use)
                if graph:
                    if p.ndim != 2:
                        raise ValueError(f"GraphMuon parameter {self.param_name(p)!r} must be a 2-D matrix, "
                                         f"got shape {tuple(p.shape)}")
                    self._graph_step(p, group)
                else:
                    aux.append(p)
            if aux:
                self._adamw_step(aux, group)
        return loss


def _first_input(module: nn.Module, args: tuple, kwargs: dict) -> Tensor:
    if args:
        return args[0]
    for key in ("input", "x"):
        if key in kwargs:
            return kwargs[key]
    raise ValueError(f"cannot find the input of {type(module).__name__}: pass a capture function")
