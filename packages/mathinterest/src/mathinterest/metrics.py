"""Agreement statistics between a judge (an LLM or a simulated rater) and people.

- :func:`rating_agreement`: Spearman ρ of the judge's expected rating with the human mean rating,
  a problem-level bootstrap CI, and the split-half noise ceiling (Spearman–Brown corrected).
- :func:`distribution_gap`: per-problem ordinal W1 or Jensen–Shannon divergence of the judge's
  rating distribution to the human histogram, against the human-vs-human baseline (each problem's
  raters split into two disjoint halves; the judge is scored against one half, the other half
  against it, so both sides face the same sampling noise in the reference).
- :func:`rationale_alignment`: correlation of the judge's rationale probabilities with the human
  rationale frequencies, against the same split-half baseline.
- :func:`population_divergence`: correlation of the judge's (B − A) population deltas with the
  human ones (IMO − crowd by default).
- :func:`krippendorff_alpha`: inter-rater reliability via the ``krippendorff`` package.

Judges are DataFrames with ``problem_id``, ``p1..p7`` (and ``expected``; optional ``population``,
and one column per rationale), as returned by the raters' ``rate`` and ``choose_rationales``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from mathinterest.data import PROB_COLUMNS, SCALE, check_humans

_K = len(SCALE)


# distances -------------------------------------------------------------------------------------

def w1_ordinal(p, q) -> np.ndarray:
    r"""Wasserstein-1 distance between distributions on the ordinal scale 1..7 (unit spacing).

    .. math:: W_1(p, q) = \sum_{k=1}^{6} |F_p(k) - F_q(k)|

    Args: p, q: ``(..., 7)`` probability vectors. Returns ``(...)``.
    """
    p, q = np.asarray(p, float), np.asarray(q, float)
    return np.abs(np.cumsum(p, -1) - np.cumsum(q, -1))[..., :-1].sum(-1)


def js_divergence(p, q, *, base: float = 2.0) -> np.ndarray:
    r"""Jensen–Shannon divergence :math:`\tfrac12 KL(p\|m) + \tfrac12 KL(q\|m)`, :math:`m = (p+q)/2`
    (base 2: in [0, 1]; scipy's ``jensenshannon`` is its square root)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    m = (p + q) / 2

    def kl(a):
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(a > 0, a * np.log(a / np.where(m > 0, m, 1.0)), 0.0)
        return t.sum(-1)

    return (kl(p) + kl(q)) / 2 / np.log(base)


METRICS = {"w1": w1_ordinal, "js": js_divergence}


def spearman_brown(r, k: float = 2.0):
    """Reliability of a k-times longer test from reliability ``r``: ``k r / (1 + (k − 1) r)``."""
    r = np.asarray(r, float)
    return k * r / (1 + (k - 1) * r)


# helpers ---------------------------------------------------------------------------------------

def _population(humans: pd.DataFrame, population: str | None) -> str:
    pops = sorted(map(str, humans["population"].unique()))
    if population is None:
        if len(pops) != 1:
            raise ValueError(f"humans hold populations {pops}; pass population=")
        return pops[0]
    if population not in pops:
        raise ValueError(f"unknown population {population!r}; the ratings hold {pops}")
    return population


def rating_matrix(humans: pd.DataFrame, population: str | None = None) -> pd.DataFrame:
    """Problems × raters matrix of one population's ratings (NaN where a rater skipped a problem)."""
    humans = check_humans(humans)
    pop = _population(humans, population)
    sub = humans[humans["population"].astype(str) == pop]
    return sub.pivot_table(index="problem_id", columns="rater_id", values="rating", aggfunc="first").astype(float)


def judge_rows(judge: pd.DataFrame, population: str | None, problem_ids, columns) -> np.ndarray:
    """The judge's ``columns`` for ``problem_ids`` (its rows for ``population`` when it has that column)."""
    if not isinstance(judge, pd.DataFrame):
        raise TypeError(f"judge must be a DataFrame (a rater's rate() output), got {type(judge).__name__}")
    missing = [c for c in ["problem_id", *columns] if c not in judge.columns]
    if missing:
        raise ValueError(f"judge: missing column(s) {missing}")
    sub = judge
    if "population" in judge.columns:
        sub = judge[judge["population"].astype(str) == str(population)]
        if sub.empty:
            raise ValueError(f"judge has no rows for population {population!r} "
                             f"(it has {sorted(map(str, judge.population.unique()))})")
    sub = sub.drop_duplicates("problem_id", keep="last")
    sub.index = pd.Index([str(i) for i in sub["problem_id"]])
    ids = [str(i) for i in problem_ids]
    unknown = [i for i in ids if i not in sub.index]
    if unknown:
        raise ValueError(f"judge has no rating for problem(s) {unknown[:5]}{' ...' if len(unknown) > 5 else ''}")
    return sub.loc[ids, list(columns)].to_numpy(float)


def _half_masks(H: np.ndarray, rng: np.random.Generator):
    """Per problem (row), split the raters present into two disjoint random halves."""
    valid = ~np.isnan(H)
    keys = np.where(valid, rng.random(H.shape), np.inf)
    pos = np.argsort(np.argsort(keys, axis=1), axis=1)
    half = (valid.sum(1) // 2)[:, None]
    return valid & (pos < half), valid & (pos >= half)


def _hist(H: np.ndarray, mask: np.ndarray) -> np.ndarray:
    counts = np.stack([((H == k) & mask).sum(1) for k in SCALE], 1).astype(float)
    return counts / np.maximum(counts.sum(1, keepdims=True), 1)


def _rankrows(x):
    return stats.rankdata(x, axis=-1)


def _rowcorr(a, b):
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(-1) / np.where(den > 0, den, 1), np.nan)


def _spearman(a, b) -> float:
    return float(_rowcorr(_rankrows(np.asarray(a, float)), _rankrows(np.asarray(b, float))))


def _check_min_raters(H: np.ndarray, ids, what: str, minimum: int = 4) -> None:
    n = (~np.isnan(H)).sum(1)
    bad = [(i, int(c)) for i, c in zip(ids, n) if c < minimum]
    if bad:
        raise ValueError(f"under {minimum} raters for the human-vs-human {what} baseline: "
                         f"problem(s) {bad[:5]} (problem, raters)")


def split_half_reliability(H, *, n_splits: int = 20, seed: int = 0, method: str = "spearman") -> float:
    """Spearman–Brown corrected split-half reliability of the per-problem mean rating.

    ``H``: problems × raters (NaN allowed). Each split halves every problem's raters at random; the
    correlation of the two half-means is corrected to full length, ``2r/(1+r)``; averaged over splits.
    """
    H = np.asarray(H, float)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_splits):
        a, b = _half_masks(H, rng)
        ma = np.nansum(np.where(a, H, 0), 1) / np.maximum(a.sum(1), 1)
        mb = np.nansum(np.where(b, H, 0), 1) / np.maximum(b.sum(1), 1)
        ok = (a.sum(1) > 0) & (b.sum(1) > 0)
        r = _spearman(ma[ok], mb[ok]) if method == "spearman" else float(_rowcorr(ma[ok], mb[ok]))
        out.append(float(spearman_brown(r)))
    return float(np.nanmean(out))


# public statistics -------------------------------------------------------------------------------

def rating_agreement(judge, humans, *, population: str | None = None, n_boot: int = 1000, n_splits: int = 20,
                     level: float = 0.95, seed: int = 0) -> dict:
    """Spearman ρ of the judge's expected rating with the human mean, with a problem-level CI.

    Bootstrapping problems (not raters) because a handful of problems inflates agreement.

    Returns:
        dict: ``rho``, ``ci`` (percentile bootstrap over problems), ``ceiling`` (split-half,
        Spearman–Brown corrected reliability of the human mean ranks), ``n_problems``, ``n_raters``.
        ``rho`` is NaN for a judge whose expected rating is constant.
    """
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 10:
        raise ValueError(f"n_boot must be an integer >= 10, got {n_boot!r}")
    H = rating_matrix(humans, population)
    pop = _population(humans, population)
    j = judge_rows(judge, pop, H.index, ["expected"])[:, 0]
    if not np.all(np.isfinite(j)):
        raise ValueError("judge: expected ratings must be finite (a rater with no captured mass gives NaN)")
    hm = np.nanmean(H.to_numpy(), 1)
    n = len(hm)
    if n < 3:
        raise ValueError(f"need >= 3 problems for a rank correlation, got {n}")
    rho = _spearman(j, hm)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boots = _rowcorr(_rankrows(j[idx]), _rankrows(hm[idx]))
    boots = boots[np.isfinite(boots)]
    a = (1 - level) / 2
    ci = (float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a))) if boots.size else (np.nan, np.nan)
    ceiling = split_half_reliability(H.to_numpy(), n_splits=n_splits, seed=seed)
    return {"rho": rho, "ci": ci, "ceiling": ceiling, "n_problems": n, "n_raters": int(H.shape[1]),
            "population": pop}


def distribution_gap(judge, humans, *, metric: str = "w1", population: str | None = None, n_splits: int = 10,
                     n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> dict:
    """Per-problem distance of the judge's rating distribution to the human histogram, against people.

    For each of ``n_splits`` random halvings of every problem's raters into A and B:
    ``judge = D(p_judge, h_A)`` and ``baseline = D(h_B, h_A)``; both averaged over splits, then over
    problems. A judge that matches the human distribution scores at or below the baseline (it carries
    no sampling noise of its own); ``excess = judge − baseline`` > 0 means it does not match.

    Args:
        metric: ``"w1"`` (ordinal Wasserstein-1, :func:`w1_ordinal`) or ``"js"`` (:func:`js_divergence`).

    Returns:
        dict: ``judge``, ``baseline``, ``excess`` (means over problems), ``ci`` (bootstrap over problems
        of the mean excess), ``per_problem`` (DataFrame: problem_id, judge, baseline).

    Raises:
        ValueError: under 4 raters on a problem (no two halves of ≥ 2), unknown metric or population.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    D = METRICS[metric]
    Hdf = rating_matrix(humans, population)
    pop = _population(humans, population)
    H = Hdf.to_numpy()
    _check_min_raters(H, Hdf.index, "distribution")
    pj = judge_rows(judge, pop, Hdf.index, PROB_COLUMNS)
    if not np.all(np.isfinite(pj)) or (pj < -1e-12).any():
        raise ValueError("judge: p1..p7 must be finite probabilities")
    pj = pj / pj.sum(1, keepdims=True)
    rng = np.random.default_rng(seed)
    dj, dh = np.zeros(len(H)), np.zeros(len(H))
    for _ in range(n_splits):
        a, b = _half_masks(H, rng)
        ha, hb = _hist(H, a), _hist(H, b)
        dj += D(pj, ha) / n_splits
        dh += D(hb, ha) / n_splits
    ex = dj - dh
    idx = rng.integers(0, len(ex), size=(n_boot, len(ex)))
    bm = ex[idx].mean(1)
    a_ = (1 - level) / 2
    return {"metric": metric, "judge": float(dj.mean()), "baseline": float(dh.mean()), "excess": float(ex.mean()),
            "ci": (float(np.quantile(bm, a_)), float(np.quantile(bm, 1 - a_))),
            "per_problem": pd.DataFrame({"problem_id": Hdf.index.astype(str), "judge": dj, "baseline": dh}),
            "population": pop}


def rationale_alignment(judge, humans, *, population: str | None = None, options=None, n_splits: int = 10,
                        n_boot: int = 0, level: float = 0.95, seed: int = 0) -> dict:
    """How well the judge's rationale probabilities track the human rationale frequencies.

    For each rationale, the Pearson correlation across problems between the judge's probability and
    the frequency with which half A of the raters picked it; averaged over rationales (those constant
    on either side are skipped; none left gives 0). ``baseline``: the same score for half B against
    half A. ``pooled_*``: one correlation over all problem × rationale cells.

    ``n_boot > 0`` adds ``ci``: a percentile bootstrap over problems of ``judge − baseline``.

    Returns: dict ``judge``, ``baseline``, ``pooled_judge``, ``pooled_baseline``, ``per_rationale`` (and ``ci``).
    """
    humans = check_humans(humans)
    if "rationale" not in humans.columns:
        raise ValueError("humans: no 'rationale' column")
    pop = _population(humans, population)
    sub = humans[(humans["population"].astype(str) == pop) & humans["rationale"].notna()]
    if sub.empty:
        raise ValueError(f"humans: no rationales picked in population {pop!r}")
    opts = sorted(map(str, sub["rationale"].unique())) if options is None else [str(o) for o in options]
    unknown = sorted(set(map(str, sub["rationale"])) - set(opts))
    if unknown:
        raise ValueError(f"humans picked rationale(s) {unknown} not among options {opts}")
    code = {o: i for i, o in enumerate(opts)}
    R = sub.assign(code=sub["rationale"].astype(str).map(code)).pivot_table(
        index="problem_id", columns="rater_id", values="code", aggfunc="first").astype(float)
    H = R.to_numpy()
    _check_min_raters(H, R.index, "rationale")
    J = judge_rows(judge, pop, R.index, opts)
    J = J / np.maximum(J.sum(1, keepdims=True), 1e-300)
    rng = np.random.default_rng(seed)

    def freq(mask):
        c = np.stack([((H == i) & mask).sum(1) for i in range(len(opts))], 1).astype(float)
        return c / np.maximum(c.sum(1, keepdims=True), 1)

    per_j, per_h, pool_j, pool_h, FA, FB = [], [], [], [], [], []
    for _ in range(n_splits):
        a, b = _half_masks(H, rng)
        fa, fb = freq(a), freq(b)
        FA.append(fa)
        FB.append(fb)
        per_j.append(_rowcorr(J.T, fa.T))
        per_h.append(_rowcorr(fb.T, fa.T))
        pool_j.append(float(_rowcorr(J.ravel(), fa.ravel())))
        pool_h.append(float(_rowcorr(fb.ravel(), fa.ravel())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a rationale constant on one side: skipped
        pj, ph = np.nanmean(per_j, 0), np.nanmean(per_h, 0)

    def mean_or_zero(x):
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else 0.0

    out = {"judge": mean_or_zero(pj), "baseline": mean_or_zero(ph),
           "pooled_judge": float(np.nan_to_num(np.nanmean(pool_j))),
           "pooled_baseline": float(np.nan_to_num(np.nanmean(pool_h))),
           "per_rationale": dict(zip(opts, map(float, pj))), "population": pop}
    if n_boot:
        idx = rng.integers(0, len(H), size=(n_boot, len(H)))
        FA, FB = np.stack(FA), np.stack(FB)  # (splits, problems, rationales)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cj = _rowcorr(np.swapaxes(J[idx], -1, -2)[None], np.swapaxes(FA[:, idx], -1, -2))  # (S, B, R)
            ch = _rowcorr(np.swapaxes(FB[:, idx], -1, -2), np.swapaxes(FA[:, idx], -1, -2))
            d = np.nan_to_num(np.nanmean(np.nanmean(cj, 0), -1)) - np.nan_to_num(np.nanmean(np.nanmean(ch, 0), -1))
        a_ = (1 - level) / 2
        out["ci"] = (float(np.quantile(d, a_)), float(np.quantile(d, 1 - a_)))
    return out


def _two_populations(humans, populations):
    pops = sorted(map(str, humans["population"].unique()))
    if populations is None:
        if {"crowd", "imo"} <= set(pops):
            return "crowd", "imo"
        if len(pops) == 2:
            return pops[0], pops[1]
        raise ValueError(f"humans hold populations {pops}; pass populations=(a, b)")
    a, b = populations
    for p in (a, b):
        if p not in pops:
            raise ValueError(f"unknown population {p!r}; the ratings hold {pops}")
    return a, b


def population_divergence(judge, humans, *, populations=None, n_splits: int = 10, n_boot: int = 0,
                          level: float = 0.95, seed: int = 0) -> dict:
    """Does the judge capture the systematic difference between two populations (default IMO − crowd)?

    Human delta per common problem: mean(B) − mean(A); judge delta: expected rating for B − for A (a
    judge without a ``population`` column has delta 0 everywhere and captures none of it: ``corr`` 0).
    ``baseline``: the correlation between the deltas of two disjoint rater halves (the human
    split-half reliability of the deltas).

    ``n_boot > 0`` adds ``ci``: a percentile bootstrap over problems of ``corr − baseline``.

    Returns: dict ``corr``, ``baseline``, ``human_mean_delta``, ``judge_mean_delta``, ``mae``, ``n_problems``
    (and ``ci``).
    """
    humans = check_humans(humans)
    a, b = _two_populations(humans, populations)
    Ha, Hb = rating_matrix(humans, a), rating_matrix(humans, b)
    common = Ha.index.intersection(Hb.index)
    if len(common) < 3:
        raise ValueError(f"populations {a!r} and {b!r} share {len(common)} problem(s); need >= 3")
    Ha, Hb = Ha.loc[common].to_numpy(), Hb.loc[common].to_numpy()
    hd = np.nanmean(Hb, 1) - np.nanmean(Ha, 1)
    if "population" in judge.columns:
        jd = judge_rows(judge, b, common, ["expected"])[:, 0] - judge_rows(judge, a, common, ["expected"])[:, 0]
    else:
        judge_rows(judge, None, common, ["expected"])
        jd = np.zeros(len(common))
    corr = float(np.nan_to_num(_rowcorr(jd, hd))) if np.ptp(jd) > 1e-12 else 0.0
    rng = np.random.default_rng(seed)
    base, D1, D2 = [], [], []

    def m(H, mask):
        return np.where(mask, np.nan_to_num(H), 0).sum(1) / np.maximum(mask.sum(1), 1)

    for _ in range(n_splits):
        a1, a2 = _half_masks(Ha, rng)
        b1, b2 = _half_masks(Hb, rng)
        D1.append(m(Hb, b1) - m(Ha, a1))
        D2.append(m(Hb, b2) - m(Ha, a2))
        base.append(float(_rowcorr(D1[-1], D2[-1])))
    out = {"corr": corr, "baseline": float(np.nanmean(base)), "human_mean_delta": float(hd.mean()),
           "judge_mean_delta": float(jd.mean()), "mae": float(np.abs(jd - hd).mean()),
           "n_problems": int(len(common)), "populations": (a, b)}
    if n_boot:
        idx = rng.integers(0, len(hd), size=(n_boot, len(hd)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cj = np.nan_to_num(_rowcorr(jd[idx], hd[idx])) if np.ptp(jd) > 1e-12 else np.zeros(n_boot)
            ch = np.nanmean(_rowcorr(np.stack(D1)[:, idx], np.stack(D2)[:, idx]), 0)
        a_ = (1 - level) / 2
        out["ci"] = (float(np.quantile(cj - ch, a_)), float(np.quantile(cj - ch, 1 - a_)))
    return out


def krippendorff_alpha(humans, *, population: str | None = None, level: str = "ordinal") -> float:
    """Krippendorff's α of one population's ratings (``krippendorff`` package; raters × problems)."""
    import krippendorff

    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level must be nominal/ordinal/interval/ratio, got {level!r}")
    H = rating_matrix(humans, population)
    kw = {"value_domain": list(SCALE)} if level in ("nominal", "ordinal") else {}
    return float(krippendorff.alpha(reliability_data=H.to_numpy().T, level_of_measurement=level, **kw))
