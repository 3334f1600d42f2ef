"""The paper miniature: train both tokenizers through the four stages, watermark, attack, detect, score.

For each seed and tokenizer (``local`` = L-VQVAE, ``global`` = GlobalVQVAE, same budget):
1. data: ``n_windows`` series (train split for every stage; a held-out real split for quality);
2. stages: tokenizer + local decoder → global decoder → prior → RobustEncoder (its own generator);
3. δ: the largest value of ``delta_grid`` whose watermarked generations keep the MMD proxy within
   ``quality_tol`` × the unwatermarked one, on a separate tuning draw of the first seed (quality only,
   never detection), then kept for the other seeds;
4. scoring draws: ``n_eval`` WM + ``n_eval`` NoWM series, and ``n_eval`` more clean NoWM series to
   calibrate the one threshold at ``fpr`` (out of sample for the scored NoWM);
5. per attack of the grid: attacked-NoWM FPR at the clean threshold, null shift (mean of z_attacked −
   z_clean in clean-σ units), σ ratio, KS of attacked vs clean NoWM z, attacked-WM TPR, AUC; wrong-key FPR;
6. quality of WM and NoWM generations against the held-out real split.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch
from scipy.stats import ks_2samp
from sklearn.metrics import roc_auc_score
from tqdm import tqdm

from lvqmark.attacks import ATTACKS
from lvqmark.baselines import GlobalVQVAE, wrong_key
from lvqmark.data import macrodata_series, standardize, synthetic_series, windows
from lvqmark.lvqmark import LVQMark, train_robust_encoder
from lvqmark.lvqvae import LVQVAE, train_vae
from lvqmark.prior import TokenPrior, train_prior
from lvqmark.quality import correlation_error, discriminative_score, mmd, predictive_score
from lvqmark.watermark import Watermark

log = logging.getLogger("lvqmark")

TOKENIZERS = {"local": LVQVAE, "global": GlobalVQVAE}


def _gen(seed: int, stream: int) -> torch.Generator:
    """Independent generators per purpose (SeedSequence spawn keys): training, robust, tuning, scoring."""
    s = np.random.SeedSequence([seed, stream]).generate_state(1)[0]
    return torch.Generator().manual_seed(int(s))


STREAM = {"train": 1, "robust": 2, "tune": 3, "score": 4, "quality": 5}


def make_data(cfg, seed):
    d = cfg.data
    if d.name == "synthetic":
        x = synthetic_series(int(d.n_windows), window=int(d.window), n_channels=int(d.n_channels), rng=seed)
    elif d.name == "macrodata":
        x = windows(macrodata_series(), int(d.window), 1)
    elif d.name == "csv":
        from lvqmark.data import load_csv

        series, report = load_csv(d.path)
        log.info("loaded %s: %d rows, %d skipped", d.path, report["n_rows"], report["n_skipped"])
        x = windows(series, int(d.window), int(d.get("stride", 1)))
    else:
        raise ValueError(f"data.name must be synthetic, macrodata or csv, got {d.name!r}")
    perm = np.random.default_rng(seed).permutation(len(x))
    n_hold = max(2, int(round(float(d.holdout) * len(x))))
    train, hold = x[perm[n_hold:]], x[perm[:n_hold]]
    train, stats = standardize(train)
    hold, _ = standardize(hold, stats)
    return torch.tensor(train), torch.tensor(hold), stats


def train_mark(kind, train, cfg, seed, device="cpu"):
    m = cfg.model
    torch.manual_seed(seed)
    vae = TOKENIZERS[kind](train.shape[-1], window=train.shape[1], receptive_field=int(m.receptive_field),
                           stride=int(m.stride), codebook_size=int(m.codebook_size), dim=int(m.dim),
                           layers=int(m.layers)).to(device)
    train = train.to(device)
    g = _gen(seed, STREAM["train"])
    t0 = time.perf_counter()
    losses = train_vae(vae, train, steps=int(m.vae_steps), global_steps=int(m.global_steps), batch=int(m.batch),
                       generator=g)
    prior = TokenPrior(int(m.codebook_size), vae.n_tokens, dim=int(m.prior_dim), layers=int(m.prior_layers)).to(device)
    losses["prior_nll"] = train_prior(prior, vae.encode(train), steps=int(m.prior_steps), batch=int(m.batch),
                                      generator=g)
    robust = train_robust_encoder(vae, train, steps=int(m.robust_steps), batch=int(m.batch),
                                  generator=_gen(seed, STREAM["robust"]))
    losses["train_s"] = time.perf_counter() - t0
    wm = Watermark(int(cfg.watermark.key) + seed, codebook_size=int(m.codebook_size), delta=float(cfg.watermark.delta),
                   alternate=bool(cfg.watermark.alternate), warmup=cfg.watermark.warmup)
    return LVQMark(vae, prior, robust, wm), losses


def with_delta(mark, delta):
    s = mark.watermark.settings()
    s["delta"] = float(delta)
    new = LVQMark(mark.vae, mark.prior, mark.robust_encoder, Watermark(mark.watermark.key, **s))
    new.norm = mark.norm
    return new


def tune_delta(mark, hold, cfg, seed):
    """Largest δ of the grid with MMD(WM) ≤ MMD(NoWM) + quality_tol·|MMD(NoWM)| on a tuning draw
    (the smallest δ when none passes)."""
    g = _gen(seed, STREAM["tune"])
    n = int(cfg.n_tune)
    base = mmd(hold, mark.generate(n, watermark=False, generator=g).cpu())
    table = {float(d): mmd(hold, with_delta(mark, float(d)).generate(n, generator=g).cpu()) for d in cfg.delta_grid}
    ok = [d for d, q in table.items() if q <= base + float(cfg.quality_tol) * abs(base)]
    return (max(ok) if ok else min(table)), base, table


def _rate(z, thr):
    return float((z > thr).float().mean())


def score_mark(mark, hold, train, cfg, seed, *, quality=True):
    """Steps 4–6; returns (summary dict, per-attack rows, arrays for plots)."""
    g = _gen(seed, STREAM["score"])
    n = int(cfg.n_eval)
    wm_x = mark.generate(n, generator=g).cpu()
    nowm_x = mark.generate(n, watermark=False, generator=g).cpu()
    cal_x = mark.generate(n, watermark=False, generator=g).cpu()
    thr = mark.calibrate(cal_x, fpr=float(cfg.fpr))
    z_wm, z_null = mark.detect(wm_x)["z"], mark.detect(nowm_x)["z"]
    z_wrong = mark.detect(wm_x, watermark=wrong_key(mark.watermark))["z"]
    sd = float(z_null.std())
    summ = {"threshold": thr, "delta": mark.watermark.delta, "clean_fpr": _rate(z_null, thr),
            "clean_tpr": _rate(z_wm, thr), "clean_auc": _auc(z_wm, z_null), "wrong_key_fpr": _rate(z_wrong, thr),
            "wrong_key_fp": int((z_wrong > thr).sum()), "n_eval": n, "null_mean": float(z_null.mean()), "null_sd": sd, "wrong_key_z_mean": float(z_wrong.mean())}
    rows, arrays = [], {"clean": z_null.numpy(), "equal_train": _n_equal(torch.cat([wm_x, nowm_x]), train)}
    for name in cfg.attacks:
        for s in cfg.strengths:
            za = mark.detect(ATTACKS[name](nowm_x, float(s), generator=g))["z"]
            zwa = mark.detect(ATTACKS[name](wm_x, float(s), generator=g))["z"]
            arrays[f"{name}@{s}"] = za.numpy()
            rows.append({"attack": name, "strength": float(s), "fpr": _rate(za, thr), "fp": int((za > thr).sum()),
                         "null_shift": float((za - z_null).mean()) / sd, "sigma_ratio": float(za.std()) / sd,
                         "ks": float(ks_2samp(za.numpy(), z_null.numpy()).statistic),
                         "ks_p": float(ks_2samp(za.numpy(), z_null.numpy()).pvalue),
                         "tpr": _rate(zwa, thr), "auc": _auc(zwa, za)})
    if quality:
        q = cfg.quality
        for tag, xg in (("wm", wm_x), ("nowm", nowm_x)):
            summ[f"disc_{tag}"] = discriminative_score(hold, xg, steps=int(q.steps), seed=seed)
            summ[f"pred_{tag}"] = predictive_score(hold, xg, steps=int(q.steps), seed=seed)
            summ[f"corr_{tag}"] = correlation_error(hold, xg)
            summ[f"mmd_{tag}"] = mmd(hold, xg[: int(q.mmd_n)])
    return summ, rows, arrays


def _n_equal(a, b) -> int:
    """How many rows of ``a`` equal some row of ``b`` exactly."""
    d = torch.cdist(a.flatten(1).double(), b.cpu().flatten(1).double())
    return int((d.min(1).values == 0).sum())


def _auc(pos, neg):
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    return float(roc_auc_score(y, np.r_[pos.numpy(), neg.numpy()]))


def recon_mse(mark, hold):
    with torch.no_grad():
        return float(((mark.vae.decode(mark.vae.encode(hold)).cpu() - hold) ** 2).mean())


def run_all(cfg, seeds, device="cpu"):
    """Every seed × tokenizer of ``cfg``; returns (rows, per-attack rows, arrays, one trained mark)."""
    rows, att_rows, arrays, keep, tuned = [], [], {}, None, {}
    for seed in tqdm(seeds, desc="seeds", disable=None):
        train, hold, stats = make_data(cfg, seed)
        for kind in cfg.tokenizers:
            t0 = time.perf_counter()
            mark, losses = train_mark(kind, train, cfg, seed, device)
            mark.norm = {k: v for k, v in stats.items()}
            if not cfg.tune_delta:
                delta, table = float(cfg.watermark.delta), {}
            elif kind not in tuned:                # tuned once per tokenizer, on the first seed's tuning draw
                tuned[kind] = tune_delta(mark, hold, cfg, seed)
                delta, _, table = tuned[kind]
            else:
                delta, table = tuned[kind][0], {}
            mark = with_delta(mark, delta)
            summ, arows, arr = score_mark(mark, hold, train, cfg, seed,
                                          quality=bool(cfg.quality.enabled) and kind in cfg.quality.tokenizers)
            summ["scored_equal_train"] = arr.pop("equal_train")
            row = {"data": cfg.data.name, "seed": seed, "tokenizer": kind, "recon_mse": recon_mse(mark, hold),
                   "codes_used": int(mark.vae.encode(train).unique().numel()), **losses, **summ,
                   "delta_table": str({k: round(v, 5) for k, v in table.items()}),
                   "wall_s": time.perf_counter() - t0}
            rows.append(row)
            for r in arows:
                att_rows.append({"data": cfg.data.name, "seed": seed, "tokenizer": kind, **r})
            arrays[(seed, kind)] = arr
            log.info("%s seed %d %s: δ=%g clean TPR %.3f FPR %.3f, worst attacked FPR %.3f (%.0f s)", cfg.data.name,
                     seed, kind, delta, summ["clean_tpr"], summ["clean_fpr"], max(r["fpr"] for r in arows),
                     row["wall_s"])
            if keep is None and kind == "local":
                keep = mark
    return rows, att_rows, arrays, keep
