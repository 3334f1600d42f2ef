"""The bench: decision latency (batch 1 and 64) and training-step time of every model, interleaved.

All timings go through :func:`paperworks.bench.compare` (interleaved repeats, threads pinned, ratio of
paired medians with a bootstrap interval). Untrained models: latency does not depend on the weights.
"""

from __future__ import annotations

import torch

from latentwam.baselines import PixelWAM
from latentwam.checks import identity_checks
from latentwam.wam import LatentWAM, VLAPolicy
from paperworks import Claim

MODELS = ("vla", "latent", "pixel_regress", "pixel_flow")


def _models():
    torch.manual_seed(0)
    kw = {"action_dim": 2, "proprio_dim": 2}
    return {"vla": VLAPolicy(**kw), "latent": LatentWAM(**kw), "pixel_regress": PixelWAM(**kw, decoder="regress"),
            "pixel_flow": PixelWAM(**kw, decoder="flow")}


def _inputs(B, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"frames": torch.randint(0, 256, (B, 2, 3, 24, 24), generator=g, dtype=torch.uint8),
            "proprio": torch.rand(B, 2, generator=g), "actions": torch.rand(B, 8, 2, generator=g) * 2 - 1,
            "future": torch.randint(0, 256, (B, 2, 3, 24, 24), generator=g, dtype=torch.uint8)}


def run_bench(cfg) -> dict:
    from paperworks.bench import compare

    b = cfg.bench
    models = _models()
    rows, claims = [], []
    for B in b.batches:
        x = _inputs(int(B))
        for m in models.values():
            m.eval()
        res = compare({k: (lambda m=m, x=x: m.act(x["frames"], x["proprio"])) for k, m in models.items()},
                      repeats=int(b.repeats), warmup=int(b.warmup), threads=int(b.threads))
        for r in res.rows():
            rows.append({"what": "decision", "batch": int(B), **r})
        over_vla = res.speedup("vla", over="latent")  # time(latent) / time(vla)
        pix_reg = res.speedup("latent", over="pixel_regress")  # time(pixel) / time(latent)
        pix_flow = res.speedup("latent", over="pixel_flow")
        claims.append(Claim.threshold(
            f"latent_decision_within_1.15x_vla_b{B}",
            f"Performance: the latent WAM decides (one action chunk, batch {B}) in at most 1.15× the VLA's time: "
            f"it adds 4 tokens.", "time(latent WAM) / time(VLA), ratio of paired medians", over_vla,
            threshold=1.15, better="lower"))
        claims.append(Claim.threshold(
            f"latent_decision_2x_faster_than_pixel_b{B}",
            f"Performance: the latent WAM decides at least 2× faster than the pixel WAM with a regression decoder "
            f"(its cheapest form), batch {B}; the flow decoder beside.",
            "time(pixel WAM, regress) / time(latent WAM)", pix_reg, threshold=2.0, better="higher",
            baselines={"pixel WAM (flow) / latent WAM": pix_flow}))
    # training-step time (forward + backward + AdamW), batch 64
    x = _inputs(int(b.train_batch))
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}

    def step(k):
        m = models[k]
        m.train()
        loss, _ = m.loss(x)
        opts[k].zero_grad(set_to_none=True)
        loss.backward()
        opts[k].step()

    res = compare({k: (lambda k=k: step(k)) for k in models}, repeats=int(b.repeats), warmup=int(b.warmup),
                  threads=int(b.threads))
    for r in res.rows():
        rows.append({"what": "train_step", "batch": int(b.train_batch), **r})
    step_ratio = res.speedup("vla", over="latent")
    params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    return {"claims": claims, "checks": identity_checks(), "metrics": rows,
            "extra": {"parameters": params, "train_step_ratio_latent_over_vla": step_ratio.to_dict()}}
