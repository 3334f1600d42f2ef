"""(a) Planted effects: simulated StubPolicy studies with a known shift, analysed like real ones."""

from __future__ import annotations

import logging

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from tqdm.auto import tqdm

from metaknow.stats import pair_frames, shift_of_pairs
from metaknow.stub import StubPolicy

log = logging.getLogger("metaknow")


def cells(deltas, verbalize):
    """The grid of (delta, p_verbalize, shift_only) cells: every (δ, v) in the standard mode, and the
    verbalised-only mode wherever ``v > 0``, ``δ > 0`` and the stub can carry the shift."""
    out = []
    for d in deltas:
        for v in verbalize:
            out.append((float(d), float(v), False))
    for d in deltas:
        for v in verbalize:
            if d > 0 and v > 0:
                out.append((float(d), float(v), True))
    return out


def run_planted(*, studies: int, prompts: int, seeds: int, p_refuse: float, deltas, verbalize, n_resamples: int,
                seed: int = 0, level: float = 0.95) -> list[dict]:
    """One row per simulated study: truth, estimates (prompt-cluster bootstrap, naive pair bootstrap,
    McNemar), with and without the verbalisation filter, and the statsmodels McNemar p-value."""
    rows = []
    grid = []
    for d, v, only in cells(deltas, verbalize):
        try:
            StubPolicy(p_refuse, d, v, shift_only_when_verbalized=only)
        except ValueError:
            log.info("planted: skipping cell delta=%s verbalize=%s only=%s (stub cannot carry it)", d, v, only)
            continue
        grid.append((d, v, only))
    for ci, (d, v, only) in enumerate(tqdm(grid, disable=None, desc="planted cells")):
        pol = StubPolicy(p_refuse, d, v, shift_only_when_verbalized=only, seed=seed * 1000 + ci)
        for s in range(studies):
            t, r = pol.study(prompts, seeds=seeds)
            p = pair_frames(t, r)
            boot = shift_of_pairs(p, n_resamples=n_resamples, seed=s, level=level)
            naive = shift_of_pairs(p, n_resamples=n_resamples, seed=s, cluster=None, level=level)
            mc = shift_of_pairs(p, method="mcnemar", level=level)
            row = {"delta": d, "p_verbalize": v, "shift_only": only, "study": s,
                   "truth": pol.true_shift(), "truth_filtered": pol.true_shift(exclude_verbalized=True),
                   "est": boot.delta, "lo": boot.lower, "hi": boot.upper, "p_boot": boot.p_value,
                   "naive_lo": naive.lower, "naive_hi": naive.upper, "p_mcnemar": mc.p_value}
            b, c = mc.discordant
            row["p_statsmodels"] = float(sm_mcnemar(np.array([[0, b], [c, 0]]), exact=True).pvalue)
            if v > 0:
                f = shift_of_pairs(p, exclude_verbalized=True, n_resamples=n_resamples, seed=s, level=level)
                row.update(est_f=f.delta, lo_f=f.lower, hi_f=f.upper)
            rows.append(row)
    return rows


def summarize_planted(rows) -> dict:
    """The quantities the claims use."""
    import pandas as pd

    df = pd.DataFrame(rows)
    std = df[~df["shift_only"]]
    only = df[df["shift_only"]]
    cov = ((std["lo"] <= std["truth"]) & (std["truth"] <= std["hi"]))
    cov_naive = ((std["naive_lo"] <= std["truth"]) & (std["truth"] <= std["naive_hi"]))
    null = std[std["delta"] == 0]
    big = std[std["delta"] == std["delta"].max()]
    keep = std[(std["p_verbalize"] > 0) & (std["delta"] > 0)]
    out = {
        "coverage": (int(cov.sum()), len(std)), "coverage_naive": (int(cov_naive.sum()), len(std)),
        "fp_mcnemar": (int((null["p_mcnemar"] < 0.05).sum()), len(null)),
        "fp_boot": (int((null["p_boot"] < 0.05).sum()), len(null)),
        "power_mcnemar": (int((big["p_mcnemar"] < 0.05).sum()), len(big)),
        "power_boot": (int((big["p_boot"] < 0.05).sum()), len(big)),
        "bias": (std["est"] - std["truth"]).to_numpy(),
        "mcnemar_vs_statsmodels": float(np.max(np.abs(df["p_mcnemar"] - df["p_statsmodels"]))),
        "coverage_by_cell": {f"d={d:g},v={v:g}": float(((g["lo"] <= g["truth"]) & (g["truth"] <= g["hi"])).mean())
                             for (d, v), g in std.groupby(["delta", "p_verbalize"])},
    }
    if len(only):
        out["only_filtered"] = only["est_f"].to_numpy()
        out["only_unfiltered_cover"] = (int(((only["lo"] <= only["truth"]) & (only["truth"] <= only["hi"])).sum()),
                                        len(only))
        out["only_unfiltered_detect"] = (int((only["p_mcnemar"] < 0.05).sum()), len(only))
    if len(keep):
        out["keep_filtered_bias"] = (keep["est_f"] - keep["truth_filtered"]).to_numpy()
    return out
