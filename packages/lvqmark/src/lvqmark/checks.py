"""By-construction properties, computed on hand-built cases (stored as ``checks``, never claims)."""

from __future__ import annotations

import math

import numpy as np
import torch

from lvqmark.baselines import GlobalVQVAE
from lvqmark.lvqvae import LVQVAE
from lvqmark.watermark import Watermark
from paperworks import Claim


def covering(vae) -> np.ndarray:
    """``(L, T)`` bool: token j's window covers time step t."""
    c = vae.config
    m = np.zeros((vae.n_tokens, vae.window), bool)
    for j in range(vae.n_tokens):
        m[j, j * c["stride"]:j * c["stride"] + c["receptive_field"]] = True
    return m


def jacobian_support(vae, x) -> np.ndarray:
    """``(L, T)`` bool: ∂ encoder(x)[j] / ∂ x[t] is nonzero (one series ``x (T, C)``)."""
    jac = torch.autograd.functional.jacobian(lambda v: vae.encoder(v[None])[0], x, vectorize=True)   # (L, dim, T, C)
    return (jac.abs().sum((1, 3)) > 0).numpy()


def perturbation_support(vae, x, eps=1.0) -> np.ndarray:
    """``(L, T)`` bool: moving ``x[t]`` by ``eps`` moves the pre-quantisation vector of token j."""
    with torch.no_grad():
        base = vae.encoder(x[None])[0]
        out = np.zeros((vae.n_tokens, vae.window), bool)
        for t in range(vae.window):
            xp = x.clone()
            xp[t] += eps
            out[:, t] = (vae.encoder(xp[None])[0] - base).abs().amax(1).numpy() > 0
    return out


def construction_checks(seed: int = 0) -> list:
    torch.manual_seed(seed)
    local, glob = LVQVAE(5, dim=16).eval(), GlobalVQVAE(5, dim=16).eval()
    x = torch.randn(32, 5)
    cover = covering(local)
    wm = Watermark(seed, codebook_size=64, length=15)
    m, Lp = wm.warmup_tokens, 15 - wm.warmup_tokens
    green_tok = torch.tensor([[int(torch.nonzero(wm.green_mask(i))[0]) for i in range(15)]])
    same_code = torch.zeros(1, 16, dtype=torch.long)       # one code repeated: alternation makes it balanced
    z_green = float(wm.z_score(green_tok)[0][0])
    z_bal = float(Watermark(seed, codebook_size=64, length=16, warmup=0).z_score(same_code)[0][0])
    splits = [Watermark(k, codebook_size=64) for k in range(20)]
    frac = max(abs(float(w.green_mask(0).float().mean()) - 0.5) for w in splits)
    logits = torch.randn(3, 64)
    unbiased = max(float((wm(i, logits) - logits).abs().max()) for i in range(m))
    biased = min(float(((wm(i, logits) - logits) - wm.delta * wm.green_mask(i).float()).abs().max() == 0)
                 for i in range(m, 15))
    flip = all(bool((wm.green_mask(i) ^ wm.green_mask(i + 1)).all()) for i in range(14))
    return [
        Claim.check("local_jacobian_support_is_window", "L-VQVAE: ∂token_j/∂x[t] ≠ 0 exactly when token j's "
                    "window covers t (autograd Jacobian of the encoder, untrained weights).",
                    "entries where the Jacobian support differs from the window mask",
                    float((jacobian_support(local, x) != cover).sum()), target=0.0, tol=0.0),
        Claim.check("local_perturbation_support_is_window", "L-VQVAE: moving x[t] moves exactly the tokens whose "
                    "window covers t (perturbation).", "entries differing from the window mask",
                    float((perturbation_support(local, x) != cover).sum()), target=0.0, tol=0.0),
        Claim.check("global_encoder_couples_every_token", "GlobalVQVAE: moving any x[t] moves every token "
                    "(perturbation).", "fraction of (token, t) pairs that move",
                    float(perturbation_support(glob, x).mean()), target=1.0, tol=0.0),
        Claim.check("z_all_green_is_sqrt_L", "All-green valid tokens give z = √L' (L' = 11).", "|z − √L'|",
                    abs(z_green - math.sqrt(Lp)), threshold=1e-12, better="lower"),
        Claim.check("z_repeated_code_is_zero", "A stream repeating one code is half green under alternation: z = 0.",
                    "|z|", abs(z_bal), threshold=1e-12, better="lower"),
        Claim.check("split_is_half", "Every key's partition is exactly 32 green of 64 (20 keys).",
                    "max |green fraction − ½|", frac, target=0.0, tol=0.0),
        Claim.check("alternation_flips_parity", "Green and red swap between consecutive positions.",
                    "1 if every pair flips", float(flip), target=1.0, tol=0.0),
        Claim.check("warmup_unbiased", "The first m = min(4, L//3) = 4 positions get no bias.",
                    "max |bias| in warm-up", unbiased, target=0.0, tol=0.0),
        Claim.check("bias_is_delta_on_green", "After the warm-up the bias is exactly δ on green codes, 0 on red.",
                    "1 if exact at every position", float(biased), target=1.0, tol=0.0),
    ]
