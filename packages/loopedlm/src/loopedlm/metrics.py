"""Analysis of a :class:`~loopedlm.trace.RecurrenceTrace`: fixed points, attention similarity, ColSum
concentration, the Algorithm-1 limit classifier and stage correlation."""

from __future__ import annotations

import math

import numpy as np
import torch

from loopedlm.trace import RecurrenceTrace

LIMITS = ("fixed_point", "orbit", "slider", "unresolved")


def _check_trace(tr):
    if not isinstance(tr, RecurrenceTrace):
        raise TypeError(f"expected a RecurrenceTrace (from loopedlm.trace), got {type(tr).__name__}")


def _rel(a, b, eps=1e-12):
    """Per-token ‖a − b‖ / ‖a‖, averaged over batch and positions."""
    return ((a - b).norm(dim=-1) / a.norm(dim=-1).clamp_min(eps)).mean(dim=(-1, -2))


def _cos(a, b):
    return torch.nn.functional.cosine_similarity(a, b, dim=-1).mean(dim=(-1, -2))


@torch.no_grad()
def fixed_point_metrics(trace: RecurrenceTrace) -> dict:
    """Per-layer convergence of the cyclic block.

    With X_{ℓ,t} the output of block layer ℓ at recurrence t (per token, averaged over tokens):

    - ``successive`` ``(R-1, k)``: ‖X_{ℓ,t} − X_{ℓ,t−1}‖ / ‖X_{ℓ,t}‖ for t = 2..R;
    - ``distance`` / ``cosine`` ``(R, k)``: ‖X_{ℓ,t} − X_{ℓ,R}‖ / ‖X_{ℓ,R}‖ and cos(X_{ℓ,t}, X_{ℓ,R}),
      X_{ℓ,R} being the approximate fixed point (the paper takes R = 128);
    - ``fixed_point_cosine`` ``(k, k)`` and ``min_cosine``: cosine between layers' fixed points and its
      minimum over pairs (→ 1 means degenerate collapse: every layer at the same point);
    - ``tail``: mean over layers of the last successive difference.
    """
    _check_trace(trace)
    x = trace.residuals.double()
    r, k = x.shape[:2]
    if r < 2:
        raise ValueError("fixed_point_metrics needs a trace of >= 2 recurrences")
    succ = torch.stack([_rel(x[t], x[t - 1]) for t in range(1, r)])
    dist = torch.stack([_rel(x[-1], x[t]) for t in range(r)])  # relative to the fixed point's norm
    cos = torch.stack([_cos(x[t], x[-1]) for t in range(r)])
    fp = x[-1]
    fpc = torch.tensor([[float(_cos(fp[i], fp[j])) for j in range(k)] for i in range(k)])
    off = fpc[~torch.eye(k, dtype=torch.bool)]
    return {"successive": succ.numpy(), "distance": dist.numpy(), "cosine": cos.numpy(),
            "fixed_point_cosine": fpc.numpy(), "min_cosine": float(off.min()) if k > 1 else 1.0,
            "tail": float(succ[-1].mean())}


@torch.no_grad()
def attention_similarity(trace: RecurrenceTrace, *, recurrences: int | None = None) -> dict:
    """The (layer, recurrence)² Frobenius distance matrix of attention maps.

    Entry ((t, ℓ), (t', ℓ')) is ‖A_{ℓ,t} − A_{ℓ',t'}‖_F (all heads and batch rows), rows ordered
    recurrence-major. ``band_rate`` is the fraction of (t, ℓ) whose nearest map at *another* recurrence
    belongs to the same layer ℓ (chance: 1/k); ``recurrences`` keeps the first ones only.
    """
    _check_trace(trace)
    if trace.attentions is None:
        raise ValueError("trace has no attention weights: call trace(..., attentions=True) "
                         "(Hugging Face models: load with attn_implementation='eager')")
    a = trace.attentions
    if recurrences is not None:
        a = a[:recurrences]
    r, k = a.shape[:2]
    flat = a.reshape(r * k, -1).double()
    d = torch.cdist(flat[None], flat[None])[0]
    rec = torch.arange(r).repeat_interleave(k)
    lay = torch.arange(k).repeat(r)
    masked = d.clone()
    masked[rec[:, None] == rec[None, :]] = float("inf")
    nearest = masked.argmin(1)
    band = float((lay[nearest] == lay).double().mean()) if r > 1 else float("nan")
    return {"distance": d.numpy(), "band_rate": band, "chance": 1.0 / k}


def colsum_concentration(attn) -> np.ndarray:
    """ColSum concentration C = 1 + Σ_j ĉ_j log ĉ_j / log T with ĉ_j = Σ_i A_ij / T.

    Args:
        attn: one ``(T, T)`` attention map (rows sum to 1) or a batch ``(..., T, T)``; numpy or torch.

    Returns:
        ``C`` of shape ``(...)``: 0 when every column receives the same mass, 1 when one column gets all.
    """
    if isinstance(attn, torch.Tensor):
        attn = attn.detach().cpu().double().numpy()
    a = np.asarray(attn, dtype=float)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attn must be a (..., T, T) attention map, got shape {a.shape}")
    t = a.shape[-1]
    if t < 2:
        raise ValueError("colsum_concentration needs T >= 2 (log T = 0 for a single token)")
    if not np.all(np.isfinite(a)) or np.any(a < -1e-9):
        raise ValueError("attn must be finite and non-negative")
    c = a.sum(-2) / t
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = np.where(c > 0, c * np.log(c), 0.0).sum(-1)
    return 1.0 + ent / math.log(t)


def uniform_causal(t: int) -> np.ndarray:
    """The uniform causal attention map (A_ij = 1/(i+1) for j ≤ i): the ColSum baseline under a causal mask."""
    return np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]


def sink_rate(attn, *, threshold: float = 0.5) -> float:
    """Fraction of (head, query) rows, queries past the first, that put more than ``threshold`` on token 0."""
    a = torch.as_tensor(attn)
    return float((a[..., 1:, 0] > threshold).double().mean())


def representation_entropy(x) -> float:
    """Entropy (nats) of the normalised squared singular values of a ``(T, d)`` residual matrix, averaged
    over any leading axes."""
    x = torch.as_tensor(x).double()
    s = torch.linalg.svdvals(x - x.mean(-2, keepdim=True)) ** 2
    p = s / s.sum(-1, keepdim=True).clamp_min(1e-300)
    return float(-(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean())


def _check_unit(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {v!r}")


@torch.no_grad()
def classify_limits(trace_or_states, tau: float = 0.05, rho: float = 0.9, *, max_period: int = 8,
                    window: int = 4) -> dict:
    """Algorithm 1 (as inferred): per token, the limiting behaviour of the block's state across recurrences.

    The sequence is the block's last-layer output x_t (t = 1..R), per token. With
    δ(p) = ‖x_R − x_{R−p}‖ / ‖x_R‖:

    - fixed point: δ(1) < τ;
    - orbit: otherwise, δ(p) < τ for some period 2 ≤ p ≤ ``max_period``;
    - slider: otherwise, the last ``window`` steps x_t − x_{t−1} keep their direction (cosine of
      successive steps > ρ for all of them): the state drifts;
    - unresolved: none of these.
    The paper's exact tie-breaking and window are not public; these are documented inferences.

    Args:
        trace_or_states: a :class:`RecurrenceTrace` or a tensor ``(R, B, T, d)`` of states.

    Returns:
        ``labels`` ``(B, T)`` (strings of :data:`LIMITS`), ``rates`` (dict) and ``counts``.
    """
    _check_unit("tau", tau)
    _check_unit("rho", rho)
    x = trace_or_states.residuals[:, -1] if isinstance(trace_or_states, RecurrenceTrace) else trace_or_states
    x = torch.as_tensor(x).double()
    if x.ndim != 4:
        raise ValueError(f"states must be (R, B, T, d), got shape {tuple(x.shape)}")
    r = x.shape[0]
    if r < 3:
        raise ValueError("classify_limits needs >= 3 recurrences")
    norm = x[-1].norm(dim=-1).clamp_min(1e-12)
    delta = [((x[-1] - x[-1 - p]).norm(dim=-1) / norm) for p in range(1, min(max_period, r - 1) + 1)]
    fixed = delta[0] < tau
    orbit = ~fixed & torch.stack([d < tau for d in delta[1:]]).any(0) if len(delta) > 1 else torch.zeros_like(fixed)
    steps = x[1:] - x[:-1]
    w = min(window, steps.shape[0] - 1)
    cs = torch.stack([torch.nn.functional.cosine_similarity(steps[-i], steps[-i - 1], dim=-1) for i in range(1, w + 1)])
    slider = ~fixed & ~orbit & (cs > rho).all(0)
    codes = torch.full(fixed.shape, 3)
    codes[slider] = 2
    codes[orbit] = 1
    codes[fixed] = 0
    labels = np.array(LIMITS, dtype=object)[codes.numpy()]
    counts = {name: int((codes == i).sum()) for i, name in enumerate(LIMITS)}
    n = codes.numel()
    return {"labels": labels, "counts": counts, "rates": {k: v / n for k, v in counts.items()}, "n": n}


def resample(profile, n: int) -> np.ndarray:
    """A depth profile resampled to ``n`` points at relative depth (i + ½)/n by linear interpolation."""
    p = np.asarray(profile, dtype=float)
    src = (np.arange(len(p)) + 0.5) / len(p)
    return np.interp((np.arange(n) + 0.5) / n, src, p)


def stage_correlation(looped, feedforward) -> float:
    """Pearson correlation between a looped block's per-layer profile (e.g. ColSum, length k) and a
    feedforward model's depth profile (length L), the longer resampled to the shorter at relative depth."""
    a, b = np.asarray(looped, dtype=float), np.asarray(feedforward, dtype=float)
    if a.ndim != 1 or b.ndim != 1 or min(len(a), len(b)) < 3:
        raise ValueError("looped and feedforward must be 1-d profiles of length >= 3")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("profiles must be finite")
    n = min(len(a), len(b))
    a, b = resample(a, n), resample(b, n)
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def shuffled_null(looped, feedforward, *, n: int = 200, rng: np.random.Generator | None = None) -> np.ndarray:
    """Stage correlations with the looped profile's layers shuffled (the shuffled-layer null)."""
    rng = np.random.default_rng(0) if rng is None else rng
    a = np.asarray(looped, dtype=float)
    return np.array([stage_correlation(rng.permutation(a), feedforward) for _ in range(n)])
