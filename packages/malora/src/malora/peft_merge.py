"""MaLoRA inside non-linear models: margins linearised in α (``torch.func.jvp``), re-solved until α settles.

*Our extension* (the paper's closed forms are for a linear head). For a model f(x; W(α)) whose adapted
weights are W_l(α) = W_l⁰ + Σ_t α_t ΔW_{l,t}, the pair margins m_ic(α) = f_y(x_i) − f_c(x_i) are
linearised at the current α_k, m(α) ≈ m(α_k) + J(α − α_k) with J from forward-mode jvps (``jacfwd``), and the
normalised min-margin min m / ‖W(α)‖_F (the norm over every adapted weight together) is maximised by
:func:`malora.mixing.solve_program` inside a trust region |α − α_k| ≤ δ. A step is kept when the true
(non-linear) min-margin improves, else δ is halved; it stops when α moves by less than ``tol``.

:func:`merge_peft` applies this to a ``peft.PeftModel`` and writes the merge with
``add_weighted_adapter(..., combination_type="cat")``, which is exactly Σ_t α_t B_tA_t (``linear``
would weight A and B separately, i.e. scale both factors: PEFT #1155).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch

from malora.mixing import DEFAULT_ALPHA_MAX, gram_root, solve_program
from paperworks import check_float, check_int


def pair_margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(n·(C−1),) pair margins logit_y − logit_c, c ≠ y, of (n, C) logits."""
    zy = logits.gather(1, y[:, None])
    D = zy - logits
    mask = torch.ones_like(D, dtype=torch.bool)
    mask[torch.arange(len(y), device=y.device), y] = False
    return D[mask]


def linearized_mixing(margins: Callable[[dict], torch.Tensor], base: Mapping[str, torch.Tensor],
                      deltas: list[Mapping[str, torch.Tensor]], *, alpha0=None, alpha_max: float = DEFAULT_ALPHA_MAX,
                      max_iter: int = 20, tol: float = 1e-3, trust: float = 1.0, log: bool = False):
    """α maximising min-margin / ‖W(α)‖_F of a non-linear model by successive linearisation.

    Args:
        margins: ``weights -> (P,)`` pair margins of all calibration data, for a dict
            ``{param name: merged weight}`` (differentiable in the weights).
        base: ``{param name: W⁰}`` of the adapted weights. deltas: T dicts ``{param name: ΔW_t}``.
        alpha0: the start (default: the better of α = 1/T and α = 1).
        trust: the initial trust-region radius δ.

    Returns:
        α (T,), plus ``{"min_margin", "iterations", "history"}`` with ``log=True``.
    """
    T = len(deltas)
    names = list(base)
    R = gram_root([np.concatenate([base[k].detach().double().reshape(-1).cpu().numpy() for k in names])]
                  + [np.concatenate([D[k].detach().double().reshape(-1).cpu().numpy() for k in names]) for D in deltas])

    stacked = {k: torch.stack([D[k] for D in deltas]) for k in names}  # (T, *shape) per weight

    def weights(a: torch.Tensor) -> dict:
        return {k: base[k] + torch.tensordot(a.to(base[k].device, base[k].dtype), stacked[k], dims=1) for k in names}

    def norm(a: np.ndarray) -> float:
        return float(np.linalg.norm(R @ np.concatenate([[1.0], a])))

    def value(a: np.ndarray) -> tuple[float, torch.Tensor]:
        with torch.no_grad():
            m = margins(weights(torch.as_tensor(a)))
        return float(m.min()) / norm(a), m

    starts = [np.full(T, 1.0 / T), np.ones(T)] if alpha0 is None else [np.asarray(alpha0, dtype=float)]
    alpha = max(starts, key=lambda a: value(a)[0])
    best, m = value(alpha)
    history = [best]
    delta = float(trust)
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        a_t = torch.as_tensor(alpha)
        J = _jacobian(lambda a: margins(weights(a)), a_t)
        a0 = m.detach().double().cpu().numpy() - J @ alpha
        lo, hi = np.maximum(0.0, alpha - delta), np.minimum(alpha_max, alpha + delta)
        cand, _, _ = solve_program(a0, J, R, lo, hi, how="homogeneous")
        v, m_new = value(cand)
        step = float(np.max(np.abs(cand - alpha)))
        if v > best:
            alpha, best, m = cand, v, m_new
            delta = min(2 * delta, alpha_max)
        else:
            delta /= 2
        history.append(best)
        if step < tol or delta < tol:
            break
    if log:
        return alpha, {"min_margin": best, "iterations": iterations, "history": history}
    return alpha


def _jacobian(f: Callable[[torch.Tensor], torch.Tensor], a: torch.Tensor) -> np.ndarray:
    """(P, T) Jacobian of f at a: T forward-mode jvps, SDPA attention on its math kernel (the fused
    CPU kernels have no forward-mode derivative)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        try:  # all T directions in one vmapped forward
            return torch.func.jacfwd(f)(a).detach().double().cpu().numpy()
        except (RuntimeError, NotImplementedError):
            pass
        cols = []
        for t in range(len(a)):  # one jvp per adapter
            e = torch.zeros_like(a)
            e[t] = 1.0
            _, dm = torch.func.jvp(f, (a,), (e,))
            cols.append(dm.detach().double().cpu().numpy())
    return np.stack(cols, axis=1)


# PEFT ----------------------------------------------------------------------------------------------------


def _lora_modules(model, adapter: str) -> dict:
    from peft.tuners.lora import LoraLayer

    return {name: mod for name, mod in model.named_modules() if isinstance(mod, LoraLayer) and adapter in mod.lora_A}


def _logits(out):
    return out.logits if hasattr(out, "logits") else out


def merge_peft(model, adapter_names, calibration, *, adapter_name: str = "malora", base_data=None,
               alpha_max: float = DEFAULT_ALPHA_MAX, max_iter: int = 20, tol: float = 1e-3, log: bool = False):
    """Compute MaLoRA's α for LoRA adapters of a ``peft.PeftModel`` and add the merged adapter.

    Args:
        model: a ``peft.PeftModel`` (any model whose forward returns logits or an output with
            ``.logits``, (n, C)) holding the adapters ``adapter_names``; everything runs on the
            model's device (the calibration tensors are moved there).
        adapter_names: the T adapters to merge; they must adapt the same modules.
        calibration: adapter name → ``(X, y)``: that task's inputs (whatever the model takes, e.g.
            input ids (n, L)) and integer labels in [0, C). Points that a task's own adapter gets wrong
            are left out of the calibration union (counted in ``log["dropped"]``); a task whose own
            adapter gets none right raises, naming it.
        adapter_name: name of the merged adapter, written with ``add_weighted_adapter(..., "cat")``.
        base_data: optional ``(X, y)`` of the base model's own task, kept in the union (retention);
            points the base model gets wrong are left out.

    Returns:
        α (T,) (numpy), plus the diagnostics dict with ``log=True``. The model gets the adapter
        ``adapter_name`` = Σ_t α_t B_tA_t (rank Σ_t r_t) and it is made active.
    """
    from peft import PeftModel

    if not isinstance(model, PeftModel):
        raise TypeError(f"model must be a peft.PeftModel, got {type(model).__name__}")
    if isinstance(adapter_names, str) or not adapter_names:
        raise ValueError("adapter_names must be a non-empty list of adapter names")
    adapter_names = list(adapter_names)
    missing = [a for a in adapter_names if a not in model.peft_config]
    if missing:
        raise ValueError(f"unknown adapters {missing}; the model has {sorted(model.peft_config)}")
    if adapter_name in model.peft_config:
        raise ValueError(f"an adapter named {adapter_name!r} already exists")
    if not isinstance(calibration, Mapping) or set(calibration) != set(adapter_names):
        raise ValueError(f"calibration must map every adapter name {adapter_names} to its (X, y)")
    check_int(max_iter, "max_iter", minimum=1)
    alpha_max = check_float(alpha_max, "alpha_max", minimum=0.0, open_minimum=True)
    mods = [_lora_modules(model, a) for a in adapter_names]
    for a, m in zip(adapter_names[1:], mods[1:]):
        if set(m) != set(mods[0]):
            raise ValueError(f"adapters on different modules: {adapter_names[0]!r} adapts {sorted(mods[0])}, "
                             f"{a!r} adapts {sorted(m)}")
    if not mods[0]:
        raise ValueError(f"adapter {adapter_names[0]!r} has no LoRA linear layers")
    pnames = dict(model.named_parameters())
    base, deltas = {}, [dict() for _ in adapter_names]
    for name, mod in mods[0].items():
        key = f"{name}.base_layer.weight"
        if key not in pnames:
            raise ValueError(f"module {name!r} has no base_layer.weight (only LoRA on linear layers is supported)")
        base[key] = pnames[key].detach()
        if not torch.isfinite(base[key]).all():
            raise ValueError(f"the base weight {key} contains NaN or inf")
        with torch.no_grad():
            for t, a in enumerate(adapter_names):
                D = mod.get_delta_weight(a).detach().to(base[key].dtype)
                if not torch.isfinite(D).all():
                    raise ValueError(f"adapter {a!r} has NaN or inf weights in {name}")
                deltas[t][key] = D

    data = []
    sets = [(a, calibration[a]) for a in adapter_names] + ([("base_data", base_data)] if base_data is not None else [])
    for a, ds in sets:
        X, y = ds if isinstance(ds, (tuple, list)) and len(ds) == 2 else (None, None)
        if X is None:
            raise ValueError(f"the calibration data of {a!r} must be an (X, y) pair")
        X, y = torch.as_tensor(X), torch.as_tensor(y)  # moved to the model's device below
        if len(y) == 0 or len(X) == 0:
            raise ValueError(f"the calibration set of {a!r} is empty")
        if len(X) != len(y) or y.ndim != 1 or y.dtype.is_floating_point:
            raise ValueError(f"the calibration labels of {a!r} must be 1-D integers, one per input")
        if X.dtype.is_floating_point and not torch.isfinite(X).all():
            raise ValueError(f"the calibration inputs of {a!r} contain NaN or inf")
        device = next(iter(base.values())).device
        data.append((X.to(device), y.long().to(device)))

    model.eval()

    def logits_at(weights: dict, X):  # called with the adapters disabled: the base layers carry W(α)
        return _logits(torch.func.functional_call(model, weights, (X,)))

    # own-adapter check, the head size and the points kept
    kept, dropped = [], {}
    with model.disable_adapter(), torch.no_grad():
        for t, ((a, _), (X, y)) in enumerate(zip(sets, data)):
            own = {k: base[k] + (deltas[t][k] if t < len(deltas) else 0.0) for k in base}
            z = logits_at(own, X)
            if y.min() < 0 or y.max() >= z.shape[1]:
                raise ValueError(f"labels of {a!r} outside the head's {z.shape[1]} classes: "
                                 f"range [{int(y.min())}, {int(y.max())}]")
            ok = pair_margins(z, y).reshape(len(y), -1).min(dim=1).values > 0
            if not ok.any():
                raise ValueError(f"task {a!r} has no positive margin under its own adapter on its calibration data"
                                 if t < len(deltas) else "base_data has no positive margin under the base model")
            dropped[a] = int((~ok).sum())
            kept.append((X[ok], y[ok]))

    try:  # one batched forward over every task's calibration inputs when their shapes allow
        batches = [(torch.cat([X for X, _ in kept]), torch.cat([y for _, y in kept]))]
    except (RuntimeError, TypeError):
        batches = kept

    def margins(weights: dict) -> torch.Tensor:
        return torch.cat([pair_margins(logits_at(weights, X), y) for X, y in batches])

    with model.disable_adapter():
        alpha, info = linearized_mixing(margins, base, deltas, alpha_max=alpha_max, max_iter=max_iter, tol=tol,
                                        log=True)
    model.add_weighted_adapter(adapter_names, [float(v) for v in alpha], adapter_name, combination_type="cat")
    model.set_adapter(adapter_name)
    if log:
        return alpha, {**info, "dropped": dropped}
    return alpha
