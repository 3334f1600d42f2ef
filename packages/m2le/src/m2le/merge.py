"""HIM: Hessian-information-guided element-wise merging, and the scalar / Fisher / averaging merges.

*Inferred from the abstract* (no code or full text is public). After task t the previous tasks' loss
near the merged weights θ̂ is modelled as ½(θ − θ_p)ᵀF_prev(θ − θ_p) and the current task's as
½(θ − θ̂ − Δ)ᵀF_cur(θ − θ̂ − Δ), with diagonal empirical Fishers and Δ = ΔW the trained LoRA update.
HIM takes θ_p = θ̂ (the merged weights stand in for the previous optimum) and the merged update mΔ:

    min_m ½(m⊙Δ)ᵀF_prev(m⊙Δ) + ½((m−1)⊙Δ)ᵀF_cur((m−1)⊙Δ)
    ⇒ m = F_cur / (F_prev + F_cur)                    (per element; Δ ≠ 0)

damped as m = (F_cur + λ)/(F_prev + F_cur + 2λ) (both curvatures F + λ), so m ∈ [0, 1], F_prev → 0
gives m → 1 and F_cur → 0 gives m → 0. Constraining m to one scalar gives P&M's
α* = ΔᵀF_curΔ / Δᵀ(F_prev + F_cur)Δ.

Cross terms. When θ̂ is off the previous optimum, θ_p = θ̂ − d, the objective gains F_prev d⊙(mΔ)
and the minimiser becomes m⊙Δ = (F_cur⊙Δ − F_prev⊙d)/(F_prev + F_cur), i.e. the merged weights are
θ̂ + m⊙Δ = (F_prev⊙θ_p + F_cur⊙(θ̂ + Δ))/(F_prev + F_cur): Fisher-weighted averaging of the optima
(Matena & Raffel). So Fisher merging *is* HIM with the cross terms, where θ_p is tracked as the
running Fisher-weighted mean of the tasks' optima; ``merge="fisher"`` does that.

Every function here takes weights, LoRA deltas and stored Fishers only, never data.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

import torch

MERGES = ("him", "fisher", "scalar", "average", "seq")


def _as_tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.utils.data.DataLoader) or (isinstance(x, Iterable) and not isinstance(x, torch.Tensor)
                                                       and not hasattr(x, "__array__")):
        raise TypeError(f"{name} must be a tensor (the merge takes weights, LoRA deltas and stored Fishers only, "
                        f"never data), got {type(x).__name__}")
    t = torch.as_tensor(x)
    if not t.is_floating_point():
        t = t.double()
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or inf")
    return t


def _fisher(x, name: str, shape) -> torch.Tensor:
    t = _as_tensor(x, name)
    if t.shape != shape:
        raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(shape)} (the delta's)")
    if (t < 0).any():
        raise ValueError(f"{name} has negative entries (a diagonal Fisher is ≥ 0)")
    return t


def him_modulation(delta, fisher_prev, fisher_cur, *, damping: float = 1e-8) -> torch.Tensor:
    """HIM's element-wise modulation m = (F_cur + λ)/(F_prev + F_cur + 2λ), m ∈ [0, 1].

    Args:
        delta: the current task's update ΔW (any shape); used for its shape only (m does not
            depend on Δ without cross terms).
        fisher_prev: accumulated diagonal Fisher of the previous tasks (ΔW's shape, ≥ 0).
        fisher_cur: diagonal Fisher of the current task at its trained weights (≥ 0).
        damping: λ ≥ 0 added to both curvatures.

    Returns:
        m, ΔW's shape; the merged weights are W + m⊙ΔW.

    Example:
        >>> him_modulation(torch.ones(2), torch.tensor([0., 3.]), torch.tensor([1., 1.]))
        tensor([1.0000, 0.2500])
    """
    d = _as_tensor(delta, "delta")
    fp, fc = _fisher(fisher_prev, "fisher_prev", d.shape), _fisher(fisher_cur, "fisher_cur", d.shape)
    lam = _damping(damping)
    return (fc + lam) / (fp + fc + 2 * lam)


def _damping(damping) -> float:
    from paperworks import check_float

    return check_float(damping, "damping", minimum=0.0)


def _pairs(delta, fisher_prev, fisher_cur):
    if isinstance(delta, Mapping):
        for name, arg in (("fisher_prev", fisher_prev), ("fisher_cur", fisher_cur)):
            if not isinstance(arg, Mapping):
                raise TypeError(f"{name} must be a dict like delta, got {type(arg).__name__}")
            missing = [k for k in delta if k not in arg]
            if missing:
                raise ValueError(f"{name} is missing keys {missing}")
        return [(f"delta[{k!r}]", delta[k], fisher_prev[k], fisher_cur[k]) for k in delta]
    return [("delta", delta, fisher_prev, fisher_cur)]


def pm_alpha(delta, fisher_prev, fisher_cur) -> float:
    """P&M's scalar merge coefficient α* = ΔᵀF_curΔ / Δᵀ(F_prev + F_cur)Δ (sums over every element).

    Args: tensors of one shape, or dicts ``{name: tensor}`` with the same keys (one α for all).
    Returns: α* ∈ [0, 1] (1.0 when Δᵀ(F_prev + F_cur)Δ = 0).
    """
    num = den = 0.0
    for name, d, fp, fc in _pairs(delta, fisher_prev, fisher_cur):
        d = _as_tensor(d, name)
        fp = _fisher(fp, name.replace("delta", "fisher_prev"), d.shape)
        fc = _fisher(fc, name.replace("delta", "fisher_cur"), d.shape)
        d2 = d.double().square()
        num += float((fc.double() * d2).sum())
        den += float(((fp + fc).double() * d2).sum())
    return num / den if den > 0 else 1.0


def merge_lora(weights, deltas, fisher_prev, fisher_cur, *, merge: str = "him", damping: float = 1e-8,
               task: int = 1, anchor=None) -> tuple[dict, dict]:
    """Merge the current task's LoRA updates into the weights: W ← W + m⊙ΔW.

    Args:
        weights: ``{name: W}`` the merged weights after the previous tasks (the LoRA targets).
        deltas: ``{name: ΔW}`` the current task's LoRA updates (``get_delta_weight``).
        fisher_prev, fisher_cur: ``{name: F}`` accumulated previous / current diagonal Fishers.
        merge: ``"him"`` (element-wise m), ``"fisher"`` (HIM with cross terms = Fisher-weighted
            average of the optima), ``"scalar"`` (P&M's α*), ``"average"``
            (α = 1/task), ``"seq"`` (m = 1).
        task: the 1-based index of the current task (for ``"average"``).
        anchor: ``{name: θ_p}`` the previous tasks' Fisher-weighted optimum (``"fisher"`` only;
            default: the weights themselves, where Fisher merging equals HIM exactly).

    Returns:
        ``(merged {name: W + m⊙ΔW}, m {name: tensor or scalar})``.
    """
    if merge not in MERGES:
        raise ValueError(f"merge must be one of {MERGES}, got {merge!r}")
    for name, arg in (("weights", weights), ("deltas", deltas), ("fisher_prev", fisher_prev),
                      ("fisher_cur", fisher_cur)):
        if not isinstance(arg, Mapping):
            raise TypeError(f"{name} must be a dict {{name: tensor}} (the merge takes weights, LoRA deltas and "
                            f"stored Fishers only, never data), got {type(arg).__name__}")
    missing = [k for k in deltas if k not in weights]
    if missing:
        raise ValueError(f"weights is missing keys {missing}")
    lam = _damping(damping)
    pairs = _pairs(deltas, fisher_prev, fisher_cur)
    out, mods = {}, {}
    if merge == "scalar":
        alpha = pm_alpha(deltas, fisher_prev, fisher_cur)
    for name, d, fp, fc in pairs:
        k = name[len("delta["):-1].strip("'\"")
        d = _as_tensor(d, f"deltas[{k!r}]")
        w = _as_tensor(weights[k], f"weights[{k!r}]")
        if w.shape != d.shape:
            raise ValueError(f"deltas[{k!r}] has shape {tuple(d.shape)}, weights[{k!r}] {tuple(w.shape)}")
        fp = _fisher(fp, f"fisher_prev[{k!r}]", d.shape).to(d.dtype)
        fc = _fisher(fc, f"fisher_cur[{k!r}]", d.shape).to(d.dtype)
        if merge == "him":
            m = (fc + lam) / (fp + fc + 2 * lam)
            out[k] = w + m * d
        elif merge == "fisher":
            a = w if anchor is None else _as_tensor(anchor[k], f"anchor[{k!r}]").to(d.dtype)
            if a.shape != d.shape:
                raise ValueError(f"anchor[{k!r}] has shape {tuple(a.shape)}, expected {tuple(d.shape)}")
            out[k] = ((fp + lam) * a + (fc + lam) * (w + d)) / (fp + fc + 2 * lam)
            m = None
        else:
            m = {"scalar": lambda: alpha, "average": lambda: 1.0 / task, "seq": lambda: 1.0}[merge]()
            out[k] = w + m * d
        mods[k] = m
    return out, mods


def takes_no_data(fn=merge_lora) -> bool:
    """True when no parameter of ``fn`` is a data argument (loader/data/dataset/x/y/batch)."""
    banned = {"loader", "data", "dataset", "x", "y", "batch", "inputs", "labels", "train_loader"}
    return not (set(inspect.signature(fn).parameters) & banned)
