"""Speed and memory, local vs global and watermarked vs not, through ``paperworks.bench`` (ratios)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lvqmark.baselines import GlobalVQVAE
from lvqmark.lvqmark import LVQMark, RobustEncoder
from lvqmark.lvqvae import LVQVAE
from lvqmark.prior import TokenPrior
from lvqmark.watermark import Watermark
from paperworks import Claim
from paperworks.bench import compare, peak_memory

KINDS = {"local": LVQVAE, "global": GlobalVQVAE}


def build(kind="local", seed=0):
    torch.manual_seed(seed)
    vae = KINDS[kind](5).eval()
    vae.vq(torch.randn(256, 15, 64))          # k-means initialise the codebook
    vae.eval()
    prior = TokenPrior(64, vae.n_tokens).eval()
    return LVQMark(vae, prior, RobustEncoder(vae), Watermark(1, codebook_size=64))


def train_step(vae, opt, x):
    recon, _, vq_loss = vae(x, decoder="local")
    loss = F.mse_loss(recon, x) + vq_loss.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def _setup_train(kind):
    mark = build(kind)
    vae = mark.vae.train()
    return vae, torch.optim.Adam(vae.parameters(), 1e-3), torch.randn(128, 32, 5)


def _setup_local():
    return _setup_train("local")


def _setup_global():
    return _setup_train("global")


def run_bench(cfg):
    b = cfg.bench
    reps, n_gen, n_det = int(b.repeats), int(b.n_generate), int(b.n_detect)
    marks = {k: build(k) for k in KINDS}
    x = torch.randn(n_det, 32, 5)
    trains = {k: _setup_train(k) for k in KINDS}
    gen = torch.Generator().manual_seed(0)
    res = compare({
        "train_local": lambda: train_step(*trains["local"]), "train_global": lambda: train_step(*trains["global"]),
        "gen_wm": lambda: marks["local"].generate(n_gen, generator=gen),
        "gen_nowm": lambda: marks["local"].generate(n_gen, watermark=False, generator=gen),
        "detect_local": lambda: marks["local"].detect(x), "detect_global": lambda: marks["global"].detect(x),
    }, repeats=reps, warmup=1, threads=1)
    wm_cost = res.speedup("gen_nowm", over="gen_wm", kind="cpu")   # CPU time(WM) / time(NoWM): the shared
    wm_cost_wall = res.speedup("gen_nowm", over="gen_wm")           # machine's load lands on wall time
    train_ratio = res.speedup("train_global", over="train_local")   # time(local) / time(global)
    det_ratio = res.speedup("detect_global", over="detect_local")
    mem = {k: peak_memory(train_step, setup=s) for k, s in (("local", _setup_local), ("global", _setup_global))}
    claims = [
        Claim.threshold("wm_generation_cost_le_1.1x", "Performance: watermarked generation costs at most 1.1× "
                        f"unwatermarked ({n_gen} series, L-VQVAE + prior, CPU time of the process, interleaved; the wall "
                        "ratio is in the notes).", "CPU time(WM) / CPU time(NoWM)", wm_cost, threshold=1.1, better="lower"),
    ]
    rows = res.rows() + [
        {"candidate": "ratio CPU time(WM)/time(NoWM) generation", "value": wm_cost.value},
        {"candidate": "ratio wall time(WM)/time(NoWM) generation", "value": wm_cost_wall.value},
        {"candidate": "ratio time(local)/time(global) train step", "value": train_ratio.value},
        {"candidate": "ratio time(local)/time(global) detection", "value": det_ratio.value},
        *({"candidate": f"peak memory train step {k}", "mib": m.mib, "wall_s": m.wall_s} for k, m in mem.items()),
    ]
    notes = {"wall_ratio_wm_over_nowm": wm_cost_wall.value, "train_local_over_global": train_ratio.value, "detect_local_over_global": det_ratio.value,
             "peak_mib_local": mem["local"].mib, "peak_mib_global": mem["global"].mib}
    claims[0].notes = ", ".join(f"{k}={v:.3g}" for k, v in notes.items() if not math.isnan(v))
    return claims, rows
