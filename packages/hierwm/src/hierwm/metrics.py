"""Evaluation: rollout MSE / IoU by horizon, a Fréchet distance on a frame encoder's features, steering
responsiveness on counterfactual actions, and a ridge probe from frozen hidden states to object states."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hierwm.env import RASTER, simulate


def rollout_metrics(pred: torch.Tensor, true: torch.Tensor, *, horizons: Sequence[int] = (8, 16, 24),
                    channel: int = 1, threshold: float = 0.0) -> dict:
    """MSE and occupancy IoU of predicted frames ``(B, H, C, h, w)`` against the truth at each horizon.

    ``mse@h``: mean squared error of frame h (1-based step after the context). ``iou@h``: IoU of the
    occupancy ``frame[channel] > threshold`` (the car channel), pooled over the batch.
    """
    if pred.shape != true.shape or pred.dim() != 5:
        raise ValueError(f"pred and true must be equal (B, H, C, h, w) tensors, got {tuple(pred.shape)} "
                         f"and {tuple(true.shape)}")
    out = {}
    for h in horizons:
        if not 1 <= h <= pred.shape[1]:
            raise ValueError(f"horizon {h} outside 1..{pred.shape[1]}")
        p, t = pred[:, h - 1].float(), true[:, h - 1].float()
        out[f"mse@{h}"] = float(((p - t) ** 2).mean())
        po, to = p[:, channel] > threshold, t[:, channel] > threshold
        union = (po | to).sum()
        out[f"iou@{h}"] = float((po & to).sum() / union) if union > 0 else 1.0
    return out


# ---- the Fréchet distance ---------------------------------------------------------------------

def frechet_distance(mu1, cov1, mu2, cov2) -> float:
    """‖μ₁ − μ₂‖² + Tr(Σ₁ + Σ₂ − 2 (Σ₁Σ₂)^{1/2}) (the FID/FVD formula)."""
    from scipy import linalg

    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    cov1, cov2 = np.atleast_2d(cov1), np.atleast_2d(cov2)
    covmean = linalg.sqrtm(cov1 @ cov2)
    if not np.isfinite(covmean).all():
        eps = 1e-6 * np.eye(cov1.shape[0])
        covmean = linalg.sqrtm((cov1 + eps) @ (cov2 + eps))
    covmean = np.asarray(covmean)
    covmean = covmean.real
    return float(((mu1 - mu2) ** 2).sum() + np.trace(cov1) + np.trace(cov2) - 2 * np.trace(covmean))


class FrechetDistance:
    """Fréchet distance between real and generated frames in the feature space of ``feature_fn``
    (frames ``(N, C, H, W)`` → features ``(N, d)``): the FVD-style proxy of the miniature, where
    ``feature_fn`` is a small encoder trained on simulator frames (:func:`train_frame_encoder`); a user's
    I3D (clips → features) plugs in the same way.
    """

    def __init__(self, feature_fn: Callable[[torch.Tensor], torch.Tensor]):
        if not callable(feature_fn):
            raise TypeError("feature_fn must be callable")
        self.feature_fn = feature_fn

    @torch.no_grad()
    def features(self, frames: torch.Tensor) -> np.ndarray:
        x = frames.reshape(-1, *frames.shape[-3:]) if frames.dim() == 5 else frames
        f = self.feature_fn(x)
        return f.detach().double().cpu().numpy()

    def __call__(self, real: torch.Tensor, fake: torch.Tensor) -> float:
        a, b = self.features(real), self.features(fake)
        if a.shape[0] < 2 or b.shape[0] < 2:
            raise ValueError("need at least 2 real and 2 generated frames")
        return frechet_distance(a.mean(0), np.cov(a, rowvar=False), b.mean(0), np.cov(b, rowvar=False))


class FrameEncoder(nn.Module):
    """A small conv encoder trained to regress the simulator's object states from a frame; its
    penultimate layer (``feature_dim``) is the feature space of the Fréchet distance."""

    def __init__(self, channels: int = 3, state_dim: int = 11, feature_dim: int = 32):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU(),
                                  nn.Conv2d(32, 32, 3, 2, 1), nn.SiLU(), nn.Flatten(), nn.LazyLinear(feature_dim),
                                  nn.SiLU())
        self.head = nn.Linear(feature_dim, state_dim)

    def features(self, x):
        return self.body(x.to(self.head.weight.dtype))

    def forward(self, x):
        return self.head(self.features(x))


def train_frame_encoder(dataset, *, steps: int = 300, batch_size: int = 128, seed: int = 0) -> FrameEncoder:
    """Fit a :class:`FrameEncoder` on ``dataset``'s frames → standardised true states (Adam, MSE)."""
    if dataset.states is None:
        raise ValueError("the frame encoder needs a dataset with true states")
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    n, t = dataset.frames.shape[:2]
    states = dataset.states.reshape(n * t, -1)
    mu, sd = states.mean(0), states.std(0).clamp(min=1e-6)
    enc = FrameEncoder(dataset.frames.shape[2], states.shape[1])
    enc(torch.zeros(1, *dataset.frames.shape[2:]))  # materialise the lazy layer
    opt = torch.optim.Adam(enc.parameters(), lr=2e-3)
    for _ in range(steps):
        i = torch.randint(0, n, (batch_size,), generator=g)
        j = torch.randint(0, t, (batch_size,), generator=g)
        x = dataset.frames[i, j].float() * dataset.scale + dataset.shift
        loss = F.mse_loss(enc(x), (dataset.states[i, j] - mu) / sd)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return enc.eval()


# ---- steering responsiveness ------------------------------------------------------------------

def ego_column(frames: torch.Tensor, *, channel: int = 2, low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """The ego's lateral position (in simulator pixels) in frames ``(..., C, H, W)``: the column centroid of
    the ego channel's occupancy ``clip((x − low)/(high − low), 0, 1)``."""
    w = ((frames[..., channel, :, :].float() - low) / (high - low)).clamp(0, 1).sum(-2)
    cols = (torch.arange(w.shape[-1], dtype=w.dtype) + 0.5) * (RASTER / w.shape[-1])
    return (w * cols).sum(-1) / w.sum(-1).clamp(min=1e-6)


@torch.no_grad()
def steering_responsiveness(model, context: torch.Tensor, states: torch.Tensor, *, horizon: int = 4,
                            steers: Sequence[float] = (-1.0, -0.5, 0.0, 0.5, 1.0), steps: int = 10,
                            stabilization: float = 0.02, generator: torch.Generator | None = None,
                            clip: float | None = None) -> dict:
    """Counterfactual steering from one context: predicted vs simulated ego lateral shift.

    For each context ``(B, T0, C, H, W)`` (true states ``(B, T0, d)``, last one used) and each constant
    steering value (zero acceleration), the model rolls out ``horizon`` frames and the simulator (noise-free)
    runs the same actions. Returns the Pearson correlation and mean absolute error of the predicted
    shift (ego column of the last predicted frame minus the last context frame's) against the simulated.
    """
    if context.shape[0] != states.shape[0]:
        raise ValueError("context and states must have the same batch size")
    b = context.shape[0]
    pred, true = [], []
    x_ctx = ego_column(context[:, -1])
    s_last = states[:, -1].double().numpy()
    for s in steers:
        acts = torch.zeros(b, horizon, model.action_dim)
        acts[..., 0] = float(s)
        roll = model.rollout(context, acts, horizon=horizon, steps=steps, stabilization=stabilization,
                             generator=generator, clip=clip)
        pred.append((ego_column(roll[:, -1].cpu()) - x_ctx).numpy())
        sim = simulate(s_last, np.concatenate([acts.numpy(), np.zeros((b, 1, acts.shape[-1]))], axis=1), None)
        true.append(sim[:, -1, 0] - s_last[:, 0])
    p, t = np.concatenate(pred), np.concatenate(true)
    corr = float(np.corrcoef(p, t)[0, 1]) if p.std() > 0 and t.std() > 0 else 0.0
    return {"corr": corr, "mae": float(np.abs(p - t).mean()), "predicted": p, "simulated": t}


# ---- the linear probe -------------------------------------------------------------------------

def probe_targets(states: torch.Tensor, n_cars: int = 3) -> torch.Tensor:
    """Object positions and velocities a raster can show, ``(B, T, 2 + 3·n_cars)`` from states ``(B, T, d)``:
    the ego's column and lateral velocity, and for the cars ordered by screen row (the raster cannot tell
    car identities apart, so the order is by row, not by index): column, row and row velocity
    ``1.5·(v_ego − u_car)``."""
    ex = states[..., 0]
    evx = torch.cat([torch.zeros_like(ex[:, :1]), ex[:, 1:] - ex[:, :-1]], dim=1)
    cx, cy = states[..., 2:2 + n_cars], states[..., 2 + n_cars:2 + 2 * n_cars]
    cv = 1.5 * (states[..., 1:2] - states[..., 2 + 2 * n_cars:2 + 3 * n_cars])
    order = cy.argsort(dim=-1)
    g = [t.gather(-1, order) for t in (cx, cy, cv)]
    return torch.cat([ex[..., None], evx[..., None], *g], dim=-1)


def linear_probe(train_x, train_y, test_x, test_y, *, alphas: Sequence[float] = (1e-3, 1e-2, 1e-1, 1, 10, 100)) -> float:
    """Held-out R² (averaged over standardised targets) of a ridge probe from frozen features to states;
    the ridge strength is chosen by leave-one-out CV on the training split (``RidgeCV``)."""
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    arrs = [np.asarray(a, dtype=float) for a in (train_x, train_y, test_x, test_y)]
    for name, a in zip(("train_x", "train_y", "test_x", "test_y"), arrs, strict=True):
        if a.ndim != 2 or not np.isfinite(a).all():
            raise ValueError(f"{name} must be a finite 2-D array, got shape {a.shape}")
    tx, ty, vx, vy = arrs
    keep = ty.std(0) > 1e-9
    probe = make_pipeline(StandardScaler(), RidgeCV(alphas=list(alphas))).fit(tx, ty[:, keep])
    return float(r2_score(vy[:, keep], probe.predict(vx), multioutput="uniform_average"))
