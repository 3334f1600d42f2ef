"""``run(cfg) -> dict``: the experiments (smoke, quick, paper: the CPU miniature; bench: speed).

Every repetition r draws its own data (seed r) and its own mirror noise; all methods see the same
data and the same q. Per repetition we record the false discovery proportion and the power of each
method; FDR is their mean over repetitions (t interval), as the brief asks (FDR ± SE).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from groupfdr.baselines import (
    any_selected,
    bh_group_ftest,
    coordinate_gm,
    fdp_and_power,
    group_knockoffs,
    group_lasso_cv,
)
from groupfdr.data import simulate_sequences, simulate_var_groups
from groupfdr.mirror import as_groups, mirror_threshold, ols_statistics, ols_statistics_brute
from paperworks import Claim, binomial_ci, estimate, seeds_of

log = logging.getLogger(__name__)


def _mask(selected_labels, n_groups):
    return np.isin(np.arange(n_groups), np.asarray(selected_labels, dtype=int))


# linear, n > p ----------------------------------------------------------------------------------

def linear_rep(seed: int, cfg, rho: float, *, heavy: bool) -> dict:
    """One repetition of the low-dimensional linear study: FDP and power of every method."""
    lc = cfg.linear
    X, y, groups, active = simulate_var_groups(int(lc.n), int(lc.n_groups), int(lc.lags), int(lc.n_active), rho,
                                               random_state=seed, signal=float(lc.signal))
    G, q = int(lc.n_groups), float(cfg.q)
    _, idx = as_groups(groups, X.shape[1])
    am = _mask(active, G)
    rng = np.random.default_rng([seed, 1])
    Z = [rng.standard_normal((len(y), len(g))) for g in idx]
    row = {"rho": rho, "seed": seed}
    M_e, _ = ols_statistics(X, y, idx, Z)
    M_w, _ = ols_statistics(X, y, idx, Z, norm="whitened")
    sels = {
        "block_gm": M_e >= mirror_threshold(M_e, q, offset=1),
        "block_gm_offset0": M_e >= mirror_threshold(M_e, q, offset=0),
        "block_gm_whitened": M_w >= mirror_threshold(M_w, q, offset=1),
    }
    single = [np.array([j]) for j in range(X.shape[1])]
    zs = rng.standard_normal((len(y), X.shape[1]))
    M_c, _ = ols_statistics(X, y, single, [zs[:, [j]] for j in range(X.shape[1])])
    sels["coordinate_gm_any_lag"] = any_selected(M_c >= mirror_threshold(M_c, q, offset=1), idx)
    sels["bh_group_ftest"] = bh_group_ftest(X, y, idx, q=q)[1]
    if heavy:
        sels["group_lasso"] = group_lasso_cv(X, y, idx, random_state=seed)
        sels["group_knockoffs"] = group_knockoffs(X, y, groups, q=q, method=str(cfg.knockoff_method),
                                                  random_state=seed)
    for name, s in sels.items():
        row[f"fdp_{name}"], row[f"power_{name}"] = fdp_and_power(s, am)
    null_M = M_e[~am]
    row["null_pos_frac"] = float(np.mean(null_M[null_M != 0] > 0)) if np.any(null_M != 0) else float("nan")
    return row


def highdim_rep(seed: int, cfg) -> dict:
    hc = cfg.highdim
    X, y, groups, active = simulate_var_groups(int(hc.n), int(hc.n_groups), int(hc.lags), int(hc.n_active),
                                               float(hc.rho), random_state=seed, signal=float(hc.signal))
    from groupfdr.mirror import BlockGaussianMirror

    G = int(hc.n_groups)
    am = _mask(active, G)
    sel = BlockGaussianMirror(groups, q=float(cfg.q), estimator="lasso", offset=1, random_state=[seed, 2]).fit(X, y)
    row = {"seed": seed, "alpha": sel.alpha_}
    row["fdp_block_gm_lasso"], row["power_block_gm_lasso"] = fdp_and_power(_mask(sel.selected_groups_, G), am)
    M = sel.mirror_statistics_
    s0 = M >= mirror_threshold(M, float(cfg.q), offset=0)
    row["fdp_block_gm_lasso_offset0"], row["power_block_gm_lasso_offset0"] = fdp_and_power(s0, am)
    nz = M[~am][M[~am] != 0]
    row["null_pos_frac"] = float(np.mean(nz > 0)) if nz.size else float("nan")
    return row


def null_rep(seed: int, cfg) -> dict:
    """The global null: no active group, so FDR = FWER = P(any selection)."""
    lc = cfg.linear
    X, y, groups, _ = simulate_var_groups(int(lc.n), int(lc.n_groups), int(lc.lags), 0, float(cfg.global_null.rho),
                                          random_state=seed, signal=float(lc.signal))
    _, idx = as_groups(groups, X.shape[1])
    rng = np.random.default_rng([seed, 3])
    M, _ = ols_statistics(X, y, idx, [rng.standard_normal((len(y), len(g))) for g in idx])
    return {"seed": seed, "any_offset1": bool(np.any(M >= mirror_threshold(M, float(cfg.q), offset=1))),
            "any_offset0": bool(np.any(M >= mirror_threshold(M, float(cfg.q), offset=0))),
            "pos_frac": float(np.mean(M[M != 0] > 0)), "M": M.tolist()}


# neural -------------------------------------------------------------------------------------------

def _gru(channels: int, hidden: int):
    import torch

    class GRURegressor(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(channels, hidden, batch_first=True)
            self.head = torch.nn.Linear(hidden, 1)

        def forward(self, x):
            out, _ = self.gru(x)
            return self.head(out[:, -1]).squeeze(-1)

    return GRURegressor()


def neural_rep(seed: int, cfg) -> dict:
    from groupfdr.neural import NeuralBlockMirror, block_permutation_importance, train_torch

    nc = cfg.neural
    X, y, groups, active = simulate_sequences(int(nc.n), int(nc.n_series), int(nc.lags), int(nc.n_active),
                                              float(nc.rho), random_state=seed)
    S, q = int(nc.n_series), float(cfg.q)
    am = _mask(active, S)
    train_kwargs = {"epochs": int(nc.epochs), "device": str(cfg.device)}
    nbm = NeuralBlockMirror(_gru(2 * S, int(nc.hidden)), groups, q=q, n_permutations=int(nc.n_permutations),
                            random_state=[seed, 4], offset=int(nc.offset), train_kwargs=train_kwargs).fit(X, y)
    M = nbm.mirror_statistics_
    row = {"seed": seed, "epochs": nbm.history_["epochs"], "val_mse": nbm.history_["best_val_mse"],
           "var_y": float(np.var(y))}
    row["fdp_neural_mirror"], row["power_neural_mirror"] = fdp_and_power(M >= nbm.threshold_, am)
    alt = 1 - int(nc.offset)
    s_alt = M >= mirror_threshold(M, q, offset=alt)
    row[f"fdp_neural_mirror_offset{alt}"], row[f"power_neural_mirror_offset{alt}"] = fdp_and_power(s_alt, am)
    # baseline: the same network on the original input, block permutation importance on held-out rows
    perm = np.random.default_rng([seed, 5]).permutation(len(y))
    n_tr = int(0.75 * len(y))
    predict, _ = train_torch(_gru(S, int(nc.hidden)), X[perm[:n_tr]], y[perm[:n_tr]], random_state=[seed, 6],
                             **train_kwargs)
    pi = block_permutation_importance(predict, X[perm[n_tr:]], y[perm[n_tr:]], groups, random_state=[seed, 7])
    row["fdp_block_perm_importance"], row["power_block_perm_importance"] = fdp_and_power(
        pi >= mirror_threshold(pi, q, offset=int(nc.offset)), am)
    nz = M[~am][M[~am] != 0]
    row["null_pos_frac"] = float(np.mean(nz > 0)) if nz.size else float("nan")
    row["null_M"] = M[~am].tolist()
    return row


# identities -----------------------------------------------------------------------------------------

def identity_checks(seed: int) -> list:
    """Checks that hold by construction (fast path = refits, block size 1 = GM, orthogonal copies, ...)."""
    from groupfdr.shapley import exact_group_shapley, group_permutation_shap

    X, y, groups, _ = simulate_var_groups(120, 8, 3, 2, 0.6, random_state=seed, signal=0.3)
    _, idx = as_groups(groups, X.shape[1])
    rng = np.random.default_rng([seed, 8])
    Z = [rng.standard_normal((len(y), len(g))) for g in idx]
    fast, Cf = ols_statistics(X, y, idx, Z)
    brute, _ = ols_statistics_brute(X, y, idx, Z)
    rel = float(np.max(np.abs(fast - brute) / np.maximum(np.abs(brute), 1e-12)))
    Xc = X - X.mean(0)
    worst = 0.0
    for g, z, C in zip(idx, Z, Cf):
        rest = np.setdiff1d(np.arange(X.shape[1]), g)
        Q, _ = np.linalg.qr(np.column_stack([np.ones(len(y)), Xc[:, rest]]))
        A = Xc[:, g] - Q @ (Q.T @ Xc[:, g])
        B = z - Q @ (Q.T @ z)
        worst = max(worst, float(np.max(np.abs((A + B @ C).T @ (A - B @ C))) / np.sum(A * A)))
    single = [np.array([j]) for j in range(X.shape[1])]
    zs = rng.standard_normal((len(y), X.shape[1]))
    M_block, _ = ols_statistics(X, y, single, [zs[:, [j]] for j in range(X.shape[1])])
    M_gm, _ = coordinate_gm(X, y, zs)
    gm_rel = float(np.max(np.abs(M_block - M_gm) / np.maximum(np.abs(M_gm), 1e-12)))
    Mt = rng.standard_normal(40) + 0.8
    t = mirror_threshold(Mt, 0.2)
    grid = np.sort(np.abs(Mt))
    ok = [tt for tt in grid if (1 + np.sum(Mt <= -tt)) / max(np.sum(Mt >= tt), 1) <= 0.2]
    thr_err = abs(t - (ok[0] if ok else np.inf)) if ok or np.isfinite(t) else 0.0
    f = lambda Zb: np.tanh(Zb[:, 0] * Zb[:, 3]) + Zb[:, 1] ** 2 - Zb[:, 4] * Zb[:, 5]  # noqa: E731
    Xs, bg = rng.standard_normal((6, 6)), rng.standard_normal((3, 6))
    gl = [0, 0, 1, 2, 3, 3]
    shap_err = float(np.max(np.abs(group_permutation_shap(f, Xs, gl, bg, "all") - exact_group_shapley(f, Xs, gl, bg))))
    return [
        Claim.check("fast_path_equals_refits", "The shared-Gram fast path equals brute-force per-group refits.",
                    "max relative difference of M_g (same Z)", rel, threshold=1e-6, better="lower"),
        Claim.check("mirror_copies_uncorrelated", "The residualised copies X_g⁺ and X_g⁻ are uncorrelated.",
                    "max |(A+BC)ᵀ(A−BC)| / ‖A‖²", worst, threshold=1e-10, better="lower"),
        Claim.check("block_size_1_is_gm", "At block size 1 block GM equals an independently written Gaussian Mirror.",
                    "max relative difference of M_j", gm_rel, threshold=1e-8, better="lower"),
        Claim.check("threshold_matches_brute_force", "mirror_threshold equals a scan over every candidate t.",
                    "|τ − τ_brute|", float(thr_err), threshold=1e-12, better="lower"),
        Claim.check("group_shap_exact", "Group permutation SHAP over all permutations equals subset enumeration.",
                    "max |φ − φ_exact|", shap_err, threshold=1e-10, better="lower"),
    ]


# the experiment ---------------------------------------------------------------------------------------

def _est(rows, key, bounds=(0, 1)):
    vals = [r[key] for r in rows if key in r and np.isfinite(r[key])]
    return estimate(vals, bounds=bounds)


def _within_q(rows, key, q) -> bool:
    """The mean FDP is at most q + 2 standard errors (a precondition for comparing power)."""
    v = np.array([r[key] for r in rows])
    return bool(v.mean() <= q + 2 * v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else False


def run(cfg, out_dir: Path | None = None) -> dict:
    if cfg.get("bench", None) is not None and cfg.experiment.name == "bench":
        from groupfdr.bench import run_bench

        return run_bench(cfg)
    seeds = seeds_of(cfg)
    q = float(cfg.q)
    timings, metrics, claims = {}, [], []
    rhos = [float(r) for r in cfg.linear.rhos]
    n_heavy = int(cfg.knockoff_reps)
    # linear, n > p
    t0 = time.perf_counter()
    lin = {rho: [] for rho in rhos}
    for rho in rhos:
        for k, s in enumerate(tqdm(seeds, desc=f"linear rho={rho}", disable=None)):
            lin[rho].append(linear_rep(s, cfg, rho, heavy=k < n_heavy))
        metrics += [{"study": "linear", **r} for r in lin[rho]]
    timings["linear_s"] = time.perf_counter() - t0
    hi_rho = max(rhos)
    for rho in rhos:
        claims.append(Claim.threshold(
            f"fdr_controlled_rho{rho:g}", f"Block GM (OLS, offset 1) controls the group FDR at q = {q:g} (ρ = {rho:g}).",
            f"group FDR (mean FDP over {len(lin[rho])} repetitions)", _est(lin[rho], "fdp_block_gm"),
            threshold=q, better="lower",
            baselines={m: _est(lin[rho], f"fdp_{m}") for m in ("coordinate_gm_any_lag", "bh_group_ftest",
                                                                "group_knockoffs", "group_lasso", "block_gm_whitened")}))
    heavy = [r for r in lin[hi_rho] if "power_group_knockoffs" in r]
    fdr_ok = _within_q(lin[hi_rho], "fdp_block_gm", q)
    if not heavy:
        raise ValueError("knockoff_reps must be >= 1: the power claims compare with group knockoffs")
    claims.append(Claim.compare(
        "power_beats_knockoffs_high_rho",
        f"Under correlated grouped signals (ρ = {hi_rho:g}) block GM has higher power than group knockoffs.",
        "power (paired over repetitions)", [r["power_block_gm"] for r in heavy], baseline="group_knockoffs",
        baselines={"group_knockoffs": [r["power_group_knockoffs"] for r in heavy]}, better="higher", paired=True,
        bounds=(0, 1), requires={f"block GM's FDR at ρ = {hi_rho:g} within q + 2 SE": bool(fdr_ok),
                                 "≥ 10 paired repetitions": len(heavy) >= 10}))
    claims.append(Claim.compare_all(
        "power_beats_all_high_rho",
        f"At ρ = {hi_rho:g} block GM has higher power than group knockoffs and than BH on group F-tests "
        "(the strongest simple baseline with the same information).",
        "power (paired over repetitions)", [r["power_block_gm"] for r in heavy],
        baselines={"group_knockoffs": [r["power_group_knockoffs"] for r in heavy],
                   "bh_group_ftest": [r["power_bh_group_ftest"] for r in heavy]},
        better="higher", paired=True, bounds=(0, 1),
        requires={"≥ 10 paired repetitions": len(heavy) >= 10}))
    claims.append(Claim.threshold(
        "coordinate_gm_inflates_group_fdr",
        f"Coordinate-wise GM aggregated as 'any lag selected' inflates the group FDR above q (ρ = {hi_rho:g}).",
        "group FDR of aggregated coordinate GM", _est(lin[hi_rho], "fdp_coordinate_gm_any_lag"),
        threshold=q, better="higher"))
    claims.append(Claim.within(
        "null_statistics_symmetric",
        "Null-group mirror statistics are symmetric about 0 (sign-flip test: P(M_g > 0) = 1/2).",
        "fraction of null M_g > 0 (per repetition, all ρ)",
        estimate([r["null_pos_frac"] for rho in rhos for r in lin[rho] if np.isfinite(r["null_pos_frac"])],
                 bounds=(0, 1)), target=0.5, tol=0.03))
    claims.append(Claim.compare(
        "whitened_power_beats_euclidean_high_rho",
        f"(ours) The whitened statistic has higher power than the Euclidean one at ρ = {hi_rho:g}.",
        "power (paired over repetitions)", [r["power_block_gm_whitened"] for r in lin[hi_rho]],
        baseline="block_gm", baselines={"block_gm": [r["power_block_gm"] for r in lin[hi_rho]]},
        better="higher", paired=True, bounds=(0, 1),
        requires={"whitened FDR within q + 2 SE": _within_q(lin[hi_rho], "fdp_block_gm_whitened", q)}))
    # global null
    t0 = time.perf_counter()
    nulls = [null_rep(s, cfg) for s in tqdm(seeds[: int(cfg.global_null.reps)], desc="global null", disable=None)]
    timings["null_s"] = time.perf_counter() - t0
    k1 = int(sum(r["any_offset1"] for r in nulls))
    k0 = int(sum(r["any_offset0"] for r in nulls))
    claims.append(Claim.threshold(
        "fwer_global_null", f"Under the global null block GM selects nothing with probability ≥ 1 − q (FDR = FWER ≤ {q:g}).",
        "P(any selection), Clopper–Pearson", binomial_ci(k1, len(nulls)), threshold=q, better="lower",
        baselines={"offset0": binomial_ci(k0, len(nulls))}))
    metrics += [{"study": "null", **{k: v for k, v in r.items() if k != "M"}} for r in nulls]
    # high-dimensional
    if int(cfg.highdim.reps) > 0:
        t0 = time.perf_counter()
        hd = [highdim_rep(s, cfg) for s in tqdm(seeds[: int(cfg.highdim.reps)], desc="high-dim", disable=None)]
        timings["highdim_s"] = time.perf_counter() - t0
        metrics += [{"study": "highdim", **r} for r in hd]
        claims.append(Claim.threshold(
            "fdr_controlled_highdim",
            f"In high dimensions (n = {cfg.highdim.n}, p = {int(cfg.highdim.n_groups) * int(cfg.highdim.lags)}) "
            f"block GM with Lasso controls the group FDR at q = {q:g}.",
            f"group FDR (mean FDP over {len(hd)} repetitions)", _est(hd, "fdp_block_gm_lasso"), threshold=q,
            better="lower", baselines={"offset0": _est(hd, "fdp_block_gm_lasso_offset0")}))
    # neural
    neural = []
    if int(cfg.neural.reps) > 0:
        t0 = time.perf_counter()
        neural = [neural_rep(s, cfg) for s in tqdm(seeds[: int(cfg.neural.reps)], desc="neural", disable=None)]
        timings["neural_s"] = time.perf_counter() - t0
        metrics += [{"study": "neural", **{k: v for k, v in r.items() if k != "null_M"}} for r in neural]
        off = int(cfg.neural.offset)
        trained = float(np.mean([r["val_mse"] < 0.8 * r["var_y"] for r in neural]))
        req = {"the networks explain ≥ 20% of var(y) in ≥ 80% of repetitions": trained >= 0.8}
        claims.append(Claim.threshold(
            "neural_fdr_controlled", f"Neural block mirror (offset {off}) controls the group FDR at q = {q:g}.",
            f"group FDR (mean FDP over {len(neural)} repetitions)", _est(neural, "fdp_neural_mirror"), threshold=q,
            better="lower", baselines={"block_perm_importance": _est(neural, "fdp_block_perm_importance"),
                                       f"offset{1 - off}": _est(neural, f"fdp_neural_mirror_offset{1 - off}")},
            requires=req))
        claims.append(Claim.compare(
            "neural_power_beats_permutation_importance",
            "Neural block mirror has higher power than block permutation importance with the same threshold.",
            "power (paired over repetitions)", [r["power_neural_mirror"] for r in neural],
            baseline="block_perm_importance",
            baselines={"block_perm_importance": [r["power_block_perm_importance"] for r in neural]},
            better="higher", paired=True, bounds=(0, 1), requires=req))
        claims.append(Claim.within(
            "neural_null_symmetric", "SHAP-derivative mirror statistics of null groups are symmetric about 0.",
            "fraction of null M_g > 0 (per repetition)",
            estimate([r["null_pos_frac"] for r in neural if np.isfinite(r["null_pos_frac"])], bounds=(0, 1)),
            target=0.5, tol=0.1, requires=req))
    checks = identity_checks(seeds[0])
    summary = {f"{rho:g}": {k: _est(lin[rho], k).value for k in lin[rho][0] if k.startswith(("fdp_", "power_"))}
               for rho in rhos}

    def plots(out_dir):
        from groupfdr.plot import plot_fdr_power, plot_null_histograms

        plot_fdr_power(lin, q, Path(out_dir) / "fdr_power_vs_rho.png")
        plot_null_histograms(lin, nulls, neural, Path(out_dir) / "null_statistics.png")

    return {"claims": claims, "checks": checks, "metrics": metrics, "seeds": seeds, "timings": timings,
            "extra": {"summary": summary}, "plots": plots}


__all__ = ["run", "linear_rep", "neural_rep", "null_rep", "highdim_rep", "identity_checks"]
