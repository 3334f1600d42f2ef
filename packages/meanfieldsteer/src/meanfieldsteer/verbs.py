"""``meanfieldsteer steer data.path=FILE [model=GMM.npz] lam=...``: MMD-steer a saved prior toward a user's samples."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from meanfieldsteer.data import load_samples
from meanfieldsteer.diffusion import GaussianMixture
from meanfieldsteer.rewards import MMDReward
from meanfieldsteer.sampler import MeanFieldSampler
from paperworks import Claim, check_float, check_int


def run_steer(cfg, out_dir: Path | None = None) -> dict:
    if cfg.data.get("path") is None:
        raise ValueError("meanfieldsteer steer needs data.path=FILE (target samples, one per row)")
    target, info = load_samples(str(cfg.data.path))
    if cfg.get("model") is not None:
        prior = GaussianMixture.load(str(cfg.model))
    else:  # Exp 1's prior
        prior = GaussianMixture([0.25, 0.75], [[-2.0], [2.0]], [0.25, 0.25])
    if target.shape[1] != prior.dim:
        raise ValueError(f"data.path has {target.shape[1]} columns but the prior has dimension {prior.dim}")
    lam = check_float(cfg.lam, "lam", minimum=0.0)
    n = check_int(cfg.n, "n", minimum=2)
    reward = MMDReward(torch.as_tensor(target), lam=lam, bandwidth=check_float(cfg.bandwidth, "bandwidth"))
    s = MeanFieldSampler(prior, reward, n_steps=check_int(cfg.n_steps, "n_steps"), mode=str(cfg.mode),
                         k_fp=check_int(cfg.k_fp, "k_fp", minimum=0), device=str(cfg.device))
    wp = s.sample(n, prior.dim, generator=torch.Generator().manual_seed(int(cfg.seed)))
    base = MeanFieldSampler(prior, None, n_steps=int(cfg.n_steps), device=str(cfg.device)).sample(
        n, prior.dim, generator=torch.Generator().manual_seed(int(cfg.seed)))
    mmd_steered, mmd_prior = float(reward.mmd2(wp)), float(reward.mmd2(base))
    if out_dir is not None:
        wp.save(Path(out_dir) / "samples.npz")
    check = Claim.check("samples_written", "The weighted samples were drawn and written (samples.npz).",
                        "particles", float(wp.n), target=float(n), tol=0.0)
    return {"claims": [], "checks": [check],
            "metrics": [{"mmd2_steered": mmd_steered, "mmd2_prior": mmd_prior, "ess": wp.ess,
                         "target_rows": info["rows"], "skipped_rows": info["skipped"]}],
            "extra": {"data": str(cfg.data.path), "skipped_lines": info["bad_lines"][:100],
                      "weighted_mean": np.asarray(wp.mean().cpu()).tolist()}}


__all__ = ["run_steer"]
