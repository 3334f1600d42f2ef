"""Paired statistics of a behavioural shift: treated vs reference answers to the same prompts.

Rows pair by ``prompt_id`` (and by ``seed``/``sample`` when both frames have them). The shift is

    Δ = mean over pairs of (metric_treated − metric_reference)

``method="bootstrap"``: a percentile bootstrap that resamples *prompts* with all their pairs (seeds and
samples of one prompt are not independent, so resampling single pairs would undercover when the shift
varies across prompts; ``cluster=None`` resamples single pairs, kept as the naive reference);
two-sided p-value from the bootstrap distribution's mass beyond 0.
``method="mcnemar"``: the exact McNemar test, i.e. the two-sided exact binomial test of
``b`` = #(treated 1, reference 0) among the ``b + c`` discordant pairs at 1/2 (equal to
``statsmodels.stats.contingency_tables.mcnemar(table, exact=True)``); its interval is the Clopper–Pearson
interval of ``b/(b+c)`` mapped to Δ = (b+c)/n·(2π−1), conditional on the number of discordant pairs.
``exclude_verbalized=True`` drops the pairs whose *treated* answer verbalises evaluation awareness, which
is how the paper asks whether the shift persists without verbalised awareness (claim 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as st

from paperworks import Estimate


@dataclass(frozen=True)
class Shift:
    """The result of :func:`paired_shift`."""

    delta: float
    lower: float
    upper: float
    p_value: float
    n_pairs: int
    n_prompts: int
    discordant: tuple[int, int]
    method: str
    level: float = 0.95
    treated_mean: float = math.nan
    reference_mean: float = math.nan

    def estimate(self) -> Estimate:
        """The shift as a :class:`paperworks.Estimate` (for claims)."""
        return Estimate(self.delta, self.lower, self.upper, self.n_pairs, self.level, f"paired-{self.method}",
                        bounds=(-1.0, 1.0))

    def to_dict(self) -> dict:
        return {"delta": self.delta, "lower": self.lower, "upper": self.upper, "p_value": self.p_value,
                "n_pairs": self.n_pairs, "n_prompts": self.n_prompts, "b": self.discordant[0],
                "c": self.discordant[1], "method": self.method}


def pair_frames(treated: pd.DataFrame, reference: pd.DataFrame, *, metric: str = "refused") -> pd.DataFrame:
    """Merge two answer frames into pairs: columns ``prompt_id, t, r, verbalized`` (treated's flag)."""
    for name, df in (("treated", treated), ("reference", reference)):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
        miss = [c for c in ("prompt_id", metric) if c not in df.columns]
        if miss:
            raise ValueError(f"{name}: missing column(s) {miss} (need prompt_id, {metric!r} and verbalized)")
    ti, ri = set(treated["prompt_id"]), set(reference["prompt_id"])
    if ti != ri:
        only_t, only_r = sorted(map(str, ti - ri))[:5], sorted(map(str, ri - ti))[:5]
        raise ValueError(f"treated and reference prompt ids differ: only in treated {only_t} ({len(ti - ri)}), "
                         f"only in reference {only_r} ({len(ri - ti)})")
    keys = ["prompt_id"] + [c for c in ("seed", "sample") if c in treated.columns and c in reference.columns]
    cols = keys + [metric] + (["verbalized"] if "verbalized" in treated.columns else [])
    t = treated[cols].copy()
    r = reference[keys + [metric]].copy()
    t["_rep"] = t.groupby(keys).cumcount()
    r["_rep"] = r.groupby(keys).cumcount()
    m = t.merge(r, on=keys + ["_rep"], suffixes=("_t", "_r"), how="inner")
    if len(m) != len(t) or len(m) != len(r):
        raise ValueError(f"treated ({len(t)} rows) and reference ({len(r)} rows) do not pair one to one on {keys}")
    out = pd.DataFrame({"prompt_id": m["prompt_id"], "t": m[f"{metric}_t"].astype(float),
                        "r": m[f"{metric}_r"].astype(float)})
    out["verbalized"] = m["verbalized"].astype(bool).to_numpy() if "verbalized" in m.columns else False
    return out


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: ``binomtest(b, b + c, 1/2)`` (1.0 without discordant pairs)."""
    return 1.0 if b + c == 0 else float(st.binomtest(int(b), int(b + c), 0.5).pvalue)


def paired_shift(treated: pd.DataFrame, reference: pd.DataFrame, *, metric: str = "refused",
                 exclude_verbalized: bool = False, method: str = "bootstrap", level: float = 0.95,
                 n_resamples: int = 2000, cluster: str | None = "prompt_id", seed: int = 0) -> Shift:
    """The paired shift Δ of ``metric`` between treated and reference answers (see the module docstring).

    Args:
        treated, reference: frames with ``prompt_id``, the ``metric`` column and ``verbalized``
            (e.g. from :func:`~metaknow.evaluate`); the prompt ids must be the same set.
        metric: a 0/1 column (``refused``) or a score (``harm``; pairs with NaN dropped; bootstrap only).
        exclude_verbalized: drop pairs whose treated answer verbalises evaluation awareness.
        method: ``"bootstrap"`` or ``"mcnemar"`` (exact).
        cluster: resample whole prompts (default) or, ``None``, single pairs (naive).

    Example:
        >>> s = paired_shift(sdf_df, base_df, exclude_verbalized=True)
        >>> s.delta, (s.lower, s.upper), s.p_value
    """
    if method not in ("bootstrap", "mcnemar"):
        raise ValueError(f"method must be 'bootstrap' or 'mcnemar', got {method!r}")
    if not isinstance(level, float) or not 0 < level < 1:
        raise ValueError(f"level must be a float in (0, 1), got {level!r}")
    if cluster not in ("prompt_id", None):
        raise ValueError(f"cluster must be 'prompt_id' or None, got {cluster!r}")
    if exclude_verbalized and "verbalized" not in treated.columns:
        raise ValueError("treated: exclude_verbalized=True needs a 'verbalized' column")
    p = pair_frames(treated, reference, metric=metric)
    return shift_of_pairs(p, metric=metric, exclude_verbalized=exclude_verbalized, method=method, level=level,
                          n_resamples=n_resamples, cluster=cluster, seed=seed)


def shift_of_pairs(p: pd.DataFrame, *, metric: str = "refused", exclude_verbalized: bool = False,
                   method: str = "bootstrap", level: float = 0.95, n_resamples: int = 2000,
                   cluster: str | None = "prompt_id", seed: int = 0) -> Shift:
    """:func:`paired_shift` on pairs already made by :func:`pair_frames`."""
    if exclude_verbalized:
        p = p[~p["verbalized"]]
    p = p.dropna(subset=["t", "r"])
    if len(p) == 0:
        raise ValueError("no pairs left (every treated answer verbalised awareness, or the metric is all NaN)")
    d = (p["t"] - p["r"]).to_numpy()
    binary = bool(np.isin(p[["t", "r"]].to_numpy(), (0.0, 1.0)).all())
    b = int(((p["t"] == 1) & (p["r"] == 0)).sum()) if binary else 0
    c = int(((p["t"] == 0) & (p["r"] == 1)).sum()) if binary else 0
    delta = float(d.mean())
    n_prompts = int(p["prompt_id"].nunique())
    a = (1 - level) / 2
    if method == "mcnemar":
        if not binary:
            raise ValueError(f"method='mcnemar' needs a 0/1 metric; {metric!r} has other values")
        pv = mcnemar_exact(b, c)
        if b + c == 0:
            lo = hi = 0.0
        else:
            ci = st.binomtest(b, b + c).proportion_ci(confidence_level=level, method="exact")
            k = (b + c) / len(d)
            lo, hi = k * (2 * ci.low - 1), k * (2 * ci.high - 1)
    else:
        rng = np.random.default_rng(seed)
        if cluster is None:
            sums, cnt = d, np.ones(len(d))
        else:
            codes, _ = pd.factorize(p["prompt_id"])
            sums = np.bincount(codes, weights=d)
            cnt = np.bincount(codes).astype(float)
        boot = np.empty(n_resamples)
        for s in range(0, n_resamples, 256):  # chunks keep memory small
            k = min(256, n_resamples - s)
            idx = rng.integers(len(sums), size=(k, len(sums)))
            boot[s:s + k] = sums[idx].sum(1) / cnt[idx].sum(1)
        lo, hi = (float(x) for x in np.quantile(boot, [a, 1 - a]))
        pv = float(min(1.0, 2 * min((boot <= 0).mean(), (boot >= 0).mean()))) if np.ptp(d) > 0 or delta != 0 else 1.0
    lo, hi = min(lo, delta), max(hi, delta)
    return Shift(delta, float(lo), float(hi), float(pv), len(d), n_prompts, (b, c), method, level,
                 float(p["t"].mean()), float(p["r"].mean()))
