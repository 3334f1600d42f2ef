"""Post-editing attacks on series ``x (B, T, C)``: the official repository's grid, offset, crop (midpoint
fill) and insert, each at a ``strength`` in [0, 1) (0.05 and 0.3 in the grid).

The exact definitions are inferred (the abstract names none; TimeWak's post-editing attacks):
- ``offset``: every value moves by ``strength × (max − min)`` of its channel in that series, the sign
  drawn per series.
- ``crop``: a random contiguous segment of ``round(strength·T)`` steps is removed and filled with the
  midpoint of the values on either side of it (the one neighbour at an edge).
- ``insert`` (min-max insertion): at ``round(strength·T)`` distinct random time steps every channel's
  value is replaced by that channel's min or max over the series (a fair coin per step and channel);
  nothing shifts in time.
All take a ``torch.Generator`` so that the draws are reproducible and can be kept disjoint.
"""

from __future__ import annotations

import torch

from paperworks import check_float

__all__ = ["offset", "crop", "insert", "ATTACKS", "apply"]


def _prep(x, strength):
    if not torch.is_tensor(x) or x.ndim != 3:
        raise ValueError("x must be a tensor of shape (B, T, C)")
    s = check_float(strength, "strength", minimum=0.0, maximum=1.0, open_maximum=True)
    return x, s


def offset(x, strength, *, generator=None):
    x, s = _prep(x, strength)
    rng = (x.amax(1, keepdim=True) - x.amin(1, keepdim=True))
    sign = torch.randint(0, 2, (x.shape[0], 1, 1), generator=generator).to(x) * 2 - 1
    return x + s * rng * sign


def crop(x, strength, *, generator=None):
    x, s = _prep(x, strength)
    B, T, _ = x.shape
    k = round(s * T)
    if k == 0:
        return x.clone()
    start = torch.randint(0, T - k + 1, (B,), generator=generator)
    out = x.clone()
    for b in range(B):
        a, e = int(start[b]), int(start[b]) + k
        left = x[b, a - 1] if a > 0 else None
        right = x[b, e] if e < T else None
        fill = right if left is None else left if right is None else 0.5 * (left + right)
        out[b, a:e] = fill
    return out


def insert(x, strength, *, generator=None):
    x, s = _prep(x, strength)
    B, T, C = x.shape
    k = round(s * T)
    if k == 0:
        return x.clone()
    steps = torch.rand((B, T), generator=generator).argsort(1)[:, :k]               # k distinct steps
    use_max = torch.rand((B, k, C), generator=generator) < 0.5
    lo, hi = x.amin(1, keepdim=True), x.amax(1, keepdim=True)
    vals = torch.where(use_max.to(x.device), hi.expand(B, k, C), lo.expand(B, k, C))
    out = x.clone()
    out.scatter_(1, steps.to(x.device)[:, :, None].expand(B, k, C), vals)
    return out


ATTACKS = {"offset": offset, "crop": crop, "insert": insert}


def apply(x, name, strength, *, generator=None):
    """``ATTACKS[name](x, strength, generator=generator)`` with a clear error for an unknown name."""
    if name not in ATTACKS:
        raise ValueError(f"unknown attack {name!r}; expected one of {sorted(ATTACKS)}")
    return ATTACKS[name](x, strength, generator=generator)
