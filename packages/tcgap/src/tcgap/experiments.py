"""The studies of the miniature, one function each; every function returns plain rows (dicts)."""

from __future__ import annotations

import logging

import numpy as np
from tqdm import tqdm

from tcgap.backbones import PCA, RandomReLU, Raw, TorchBackbone, finetune_drift, pretrain_mlp
from tcgap.data import digits_splits, gaussian_tasks, split_tasks
from tcgap.gap import gap_readings
from tcgap.learners import NCM, SLDA, FeCAM, RanPAC, TaskHeadCE
from tcgap.margin import gamma_min
from tcgap.schedule import TheoryScheduleCE, incremental_accuracies
from tcgap.tail import heavy_tail_sgd, rate_exponent, tail_index

log = logging.getLogger(__name__)
PROTOTYPES = ("ncm", "slda", "fecam", "ranpac")


def make_learner(name, cfg, seed):
    if name == "ncm":
        return NCM()
    if name == "slda":
        return SLDA(shrinkage=cfg.shrinkage)
    if name == "fecam":
        return FeCAM(shrinkage=cfg.shrinkage)
    if name == "ranpac":
        return RanPAC(n_components=int(cfg.ranpac.n_components), ridge=float(cfg.ranpac.ridge), random_state=seed)
    if name == "ce":
        return TaskHeadCE(C=float(cfg.ce.C), solver="lbfgs", n_steps=int(cfg.ce.max_iter), random_state=seed)
    raise ValueError(f"unknown learner {name!r}")


def _measure(cfg, learners, train, gamma_split, test, task_of, seed, base):
    tid = np.asarray(task_of)[test[1]]
    g_task = gamma_min(*gamma_split, task_of, shrinkage=cfg.shrinkage, centroids="task")
    g_class = gamma_min(*gamma_split, task_of, shrinkage=cfg.shrinkage, centroids="class")
    rows = []
    for name in learners:
        res = gap_readings(make_learner(name, cfg, seed), split_tasks(*train, task_of), (test[0], test[1], tid))
        for reading, r in res.items():
            rows.append({**base, "seed": seed, "learner": name, "reading": reading, "gamma_task": g_task,
                         "gamma_class": g_class, **r})
    return rows


def gaussian_study(cfg, seeds) -> list[dict]:
    gc = cfg.gaussian
    rows = []
    for level in tqdm(list(gc.gammas), desc="gaussian", disable=None):
        for seed in seeds:
            rng = np.random.default_rng([seed, 17, int(level * 1000)])
            gen = gaussian_tasks(rng, gamma=float(level), n_tasks=int(gc.n_tasks), d=int(gc.d),
                                 within=float(gc.within), cov_seed=seed)
            train, gam, test = gen["sample"](int(gc.n_train)), gen["sample"](int(gc.n_gamma)), gen["sample"](int(gc.n_test))
            rows += _measure(cfg, list(cfg.learners), train, gam, test, gen["task_of_class"], seed,
                             {"study": "gaussian", "config": f"gamma{level:g}", "gamma_planted": float(level),
                              "gamma_class_planted": gen["gamma_class"]})
    return rows


def digits_backbones(cfg, split, seed):
    """(name, fitted backbone) for every backbone of the digits study, fitted on the pretraining split."""
    Xp, yp = split["pretrain"]
    dc = cfg.digits
    out = []
    if dc.raw:
        out.append(("raw", Raw().fit(Xp)))
    out += [(f"pca{k}", PCA(int(k)).fit(Xp)) for k in dc.pca]
    out += [(f"relu{w}", RandomReLU(int(w), seed=seed).fit(Xp)) for w in dc.relu]
    for e in dc.mlp_epochs:
        net = pretrain_mlp(Xp, yp, epochs=int(e), hidden=int(dc.mlp_hidden), seed=seed)
        out.append((f"mlp{e}", TorchBackbone(net, f"mlp{e}").fit(Xp)))
    return out


def digits_study(cfg, seeds) -> list[dict]:
    rows = []
    for seed in tqdm(seeds, desc="digits", disable=None):
        split = digits_splits(seed, n_tasks=int(cfg.digits.n_tasks))
        for name, bb in digits_backbones(cfg, split, seed):
            f = {k: (bb(split[k][0]), split[k][1]) for k in ("train", "gamma", "test")}
            rows += _measure(cfg, list(cfg.learners), f["train"], f["gamma"], f["test"], split["task_of_class"], seed,
                             {"study": "digits", "config": name, "width": getattr(bb, "width", None)})
    return rows


def decomposition_study(cfg, seeds) -> list[dict]:
    """E_CF and E_TC of per-task CE heads over budgets K × backbones (claim 2's disjointness)."""
    dc = cfg.decomposition
    rows = []
    for seed in tqdm(seeds, desc="decomposition", disable=None):
        split = digits_splits(seed, n_tasks=int(cfg.digits.n_tasks))
        task_of = split["task_of_class"]
        bbs = {n: b for n, b in digits_backbones(cfg, split, seed) if n in set(dc.backbones)}
        for name in dc.backbones:
            bb = bbs[name]
            Ftr, Fte = bb(split["train"][0]), bb(split["test"][0])
            tasks = split_tasks(Ftr, split["train"][1], task_of)
            test = (Fte, split["test"][1], task_of[split["test"][1]])
            Fp = bb(split["pretrain"][0])
            lr = 1.0 / float(np.linalg.eigvalsh(Fp.T @ Fp / len(Fp))[-1])  # 1/λ_max: the same relative step everywhere
            conv = gap_readings(TaskHeadCE(C=float(cfg.ce.C), n_steps=int(cfg.ce.max_iter)), tasks, test, ("task_il",))
            conv_task_il = conv["task_il"]["reference_risk"]
            for K in dc.budgets:
                r = gap_readings(TaskHeadCE(C=float(cfg.ce.C), solver="sgd", n_steps=int(K), lr=lr,
                                            batch_size=int(dc.batch_size), random_state=seed), tasks, test,
                                 ("task_il",))["task_il"]
                rows.append({"study": "decomposition", "seed": seed, "config": name, "K": int(K), "lr": lr,
                             "class_il_risk": r["class_il_risk"], "task_il_risk": r["reference_risk"],
                             "task_il_risk_converged": conv_task_il,
                             "E_CF": r["reference_risk"] - conv_task_il, "E_TC": r["gap"]})
    return rows


def ecf_study(cfg, seeds) -> list[dict]:
    """E_CF vs budget K under injected Student-t gradient noise, with and without clipping."""
    ec = cfg.ecf
    rows = []
    for seed in tqdm(seeds, desc="E_CF", disable=None):
        split = digits_splits(seed, n_tasks=int(cfg.digits.n_tasks))
        bb = PCA(int(ec.pca)).fit(split["pretrain"][0])
        X, y = split["train"]
        first = np.flatnonzero(split["task_of_class"] == 0)
        m = np.isin(y, first)
        F, yb = bb(X[m]), (y[m] == first[1]).astype(float)
        for alpha in ec.alphas:
            for clip in (None, float(ec.clip)):
                err, noise = heavy_tail_sgd(F, yb, budgets=list(ec.budgets), alpha=float(alpha),
                                            noise_scale=float(ec.noise_scale), clip=clip, lam=float(ec.lam),
                                            replicates=int(ec.replicates), seed=seed)
                rows.append({"study": "ecf", "seed": seed, "alpha": float(alpha), "clipped": clip is not None,
                             "alpha_hat": tail_index(noise), "slope": rate_exponent(list(ec.budgets), err),
                             **{f"E_CF_K{int(k)}": float(e) for k, e in zip(ec.budgets, err)}})
    return rows


def drift_study(cfg, seeds) -> list[dict]:
    dc = cfg.drift
    rows = []
    for seed in tqdm(seeds, desc="drift", disable=None):
        split = digits_splits(seed, n_tasks=int(cfg.digits.n_tasks))
        Xp, yp = split["pretrain"]
        mu, sd = Xp.mean(0), np.where(Xp.std(0) > 1e-8, Xp.std(0), 1.0)
        net = pretrain_mlp((Xp - mu) / sd, yp, epochs=int(dc.pretrain_epochs), hidden=int(cfg.digits.mlp_hidden),
                           seed=seed)
        X, y = split["train"]
        first = np.flatnonzero(split["task_of_class"] == 0)
        m = np.isin(y, first)
        d = finetune_drift(net, (X[m] - mu) / sd, np.searchsorted(first, y[m]), lrs=list(dc.lrs),
                           steps=int(dc.steps), seed=seed, probe=(split["test"][0] - mu) / sd)
        lrs = np.asarray(dc.lrs, float)
        rows.append({"study": "drift", "seed": seed, "pearson_r": float(np.corrcoef(lrs, d)[0, 1]),
                     "loglog_slope": rate_exponent(lrs, d), **{f"drift_lr{lr:g}": float(v) for lr, v in zip(lrs, d)}})
    return rows


def _feats(bb, split, task_of):
    tr = split_tasks(bb(split["train"][0]), split["train"][1], task_of)
    va = split_tasks(bb(split["gamma"][0]), split["gamma"][1], task_of)
    te = split_tasks(bb(split["test"][0]), split["test"][1], task_of)
    return tr, va, te


def schedule_study(cfg, seeds) -> list[dict]:
    """Theory schedule vs a fixed-LR schedule tuned on a 5-point grid (equal budget) and the prototype learners."""
    sc = cfg.schedule
    rows = []
    for seed in tqdm(seeds, desc="schedule", disable=None):
        split = digits_splits(seed, n_tasks=int(cfg.digits.n_tasks))
        task_of = split["task_of_class"]
        Xp = split["pretrain"][0]
        mu, sd = Xp.mean(0), np.where(Xp.std(0) > 1e-8, Xp.std(0), 1.0)
        net = pretrain_mlp((Xp - mu) / sd, split["pretrain"][1], epochs=int(sc.pretrain_epochs),
                           hidden=int(cfg.digits.mlp_hidden), seed=seed)
        bb = _Composed(net, mu, sd).fit(Xp)
        tr, va, te = _feats(bb, split, task_of)
        g_hat = gamma_min(np.concatenate([x for x, _ in va]), np.concatenate([y for _, y in va]), task_of,
                          shrinkage=cfg.shrinkage)
        # fixed schedule: the LR picked on the held-out split (final class-IL accuracy), grid extended at an edge
        grid = sorted(float(v) for v in sc.lr_grid)

        def fixed(lr, seed=seed):
            return TaskHeadCE(C=float(cfg.ce.C), solver="sgd", n_steps=int(sc.k_max), lr=lr,
                              batch_size=int(sc.batch_size), random_state=seed)

        scores = {lr: incremental_accuracies(fixed(lr), tr, va)[-1] for lr in grid}
        for _ in range(int(sc.max_extensions)):  # extend the grid ×3 past an edge until the best LR is inside
            best = max(scores, key=scores.get)
            if best == grid[-1]:
                grid.append(grid[-1] * 3)
            elif best == grid[0]:
                grid.insert(0, grid[0] / 3)
            else:
                break
            for lr in grid:
                if lr not in scores:
                    scores[lr] = incremental_accuracies(fixed(lr), tr, va)[-1]
        best = max(scores, key=scores.get)
        learners = {"theory": TheoryScheduleCE(gamma=g_hat, C=float(cfg.ce.C), k_max=int(sc.k_max),
                                                batch_size=int(sc.batch_size), random_state=seed),
                    "fixed_tuned": fixed(best)}
        learners.update({n: make_learner(n, cfg, seed) for n in PROTOTYPES})
        row = {"study": "schedule", "seed": seed, "gamma_hat": g_hat, "fixed_lr": best,
               "fixed_lr_on_edge": best in (grid[0], grid[-1]), "fixed_grid_size": len(grid)}
        for name, lrn in learners.items():
            acc = incremental_accuracies(lrn, tr, te)
            row[f"final_{name}"], row[f"avg_inc_{name}"] = float(acc[-1]), float(acc.mean())
        th = TheoryScheduleCE(gamma=g_hat, C=float(cfg.ce.C), k_max=int(sc.k_max), batch_size=int(sc.batch_size),
                              random_state=seed)
        for X, y in tr:
            th.partial_fit(X, y)
        row["theory_steps_mean"] = float(np.mean([s["steps"] for s in th.schedule_]))
        row["theory_clipped_tasks"] = int(sum(s["clip"] is not None for s in th.schedule_))
        row["theory_lr_mean"] = float(np.mean([s["lr"] for s in th.schedule_]))
        rows.append(row)
    return rows


class _Composed(TorchBackbone):
    """Standardise inputs with the pretraining statistics, then the MLP's features."""

    def __init__(self, net, mu, sd):
        super().__init__(net, "mlp")
        self.mu, self.sd = mu, sd

    def _raw(self, X):
        return super()._raw((X - self.mu) / self.sd)


__all__ = ["decomposition_study", "digits_study", "drift_study", "ecf_study", "gaussian_study",
           "schedule_study"]
