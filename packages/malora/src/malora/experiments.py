"""The experiments: Exp A (margins vs λ), Exp B (merging in the theory regime), Exp C (permuted digits).

Each returns flat rows (one per measurement) and per-seed summaries; :mod:`malora.run` turns the
summaries into claims. Data each rule sees: adapters train on the train split; MaLoRA calibrates on
the held-out split and every baseline's hyper-parameters are tuned on that same split; the test
split is only measured.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from malora import baselines as bl
from malora.data import permuted_digits, theory_tasks
from malora.lora import train_head, train_lora
from malora.margins import closed_form_margins, cosine, multiclass_svm, normalized_margins
from malora.mixing import mixing_coefficients

log = logging.getLogger("malora")


def _lams(cfg) -> np.ndarray:
    return np.logspace(float(cfg.lam_min), float(cfg.lam_max), int(cfg.n_lams))


def _tasks(cfg, seed: int, rho: float, difficulty: str):
    T, s0 = int(cfg.T), float(cfg.separation)
    seps = [s0] * T if difficulty == "equal" else list(np.geomspace(s0 / np.sqrt(2), s0 * np.sqrt(2), T))
    return theory_tasks(seed, d=int(cfg.d), k=int(cfg.k), T=T, rho=rho, n_classes=int(cfg.n_classes), n=int(cfg.n),
                        separations=seps, pt_separation=s0, noise=float(cfg.noise), n_test=int(cfg.n_test))


# Exp A ---------------------------------------------------------------------------------------------


def exp_a(cfg, seeds) -> list[dict]:
    """PT/FT normalised margins and cos(ΔW, SVM) over the λ grid, every ρ and task, against the closed form."""
    a = cfg.expA
    lams = _lams(a)
    rows = []
    for i, seed in enumerate(seeds):
        log.info("Exp A: seed %d (%d of %d)", seed, i + 1, len(seeds))
        for rho in a.rhos:
            pt, fts = _tasks(a, seed, float(rho), "equal")
            W0 = train_head(pt.X, pt.y, int(a.n_classes))
            for t, ft in enumerate(fts[: int(a.tasks)]):
                S = multiclass_svm(ft.X, ft.y, int(a.n_classes))
                cf = closed_form_margins(lams, W0=W0, X_pt=pt.X, y_pt=pt.y, X_ft=ft.X, y_ft=ft.y, W_svm=S)
                for i, lam in enumerate(lams):
                    r = train_lora(W0, ft.X, ft.y, rank=int(a.rank), lam=float(lam), seed=seed)
                    W = W0 + r["delta"]
                    rows.append({
                        "exp": "A", "seed": seed, "rho": float(rho), "task": t, "lam": float(lam),
                        "cos_svm": cosine(r["delta"], S), "delta_norm": float(np.linalg.norm(r["delta"])),
                        "ft_margin": float(normalized_margins(W, ft.X, ft.y).min()), "ft_closed_form": float(cf["ft"][i]),
                        "pt_margin": float(normalized_margins(W, pt.X, pt.y).min()), "pt_closed_form": float(cf["pt"][i]),
                        "pt_raw_margin": float(normalized_margins(W, pt.X, pt.y).min() * np.linalg.norm(W)),
                        "pt_raw_w0": float(cf["pt_raw"]), "lam_band": cf["lam_band"], "lam_max": cf["lam_max"],
                        "in_band": bool(lam <= cf["lam_band"]), "lbfgs_iters": r["iters"],
                    })
    return rows


# Exp B ---------------------------------------------------------------------------------------------


def _union(W, sets) -> tuple[float, float, float]:
    """(union min normalised margin, min-task accuracy, mean accuracy) of head W over (X, y) sets."""
    mins, accs = [], []
    for X, y in sets:
        m = normalized_margins(W, X, y)
        mins.append(m.min())
        accs.append(float(np.mean(np.argmax(X @ W.T, axis=1) == y)))
    return float(min(mins)), float(min(accs)), float(np.mean(accs))


def exp_b(cfg, seeds) -> list[dict]:
    """MaLoRA's α against the baselines at each ρ and difficulty setting (5-way: PT + T FT tasks)."""
    b = cfg.expB
    rows = []
    for i, seed in enumerate(seeds):
        log.info("Exp B: seed %d (%d of %d)", seed, i + 1, len(seeds))
        for rho in b.rhos:
            for difficulty in b.difficulties:
                rows += _exp_b_setting(b, seed, float(rho), difficulty)
    return rows


def _exp_b_setting(b, seed: int, rho: float, difficulty: str) -> list[dict]:
    pt, fts = _tasks(b, seed, rho, difficulty)
    W0 = train_head(pt.X, pt.y, int(b.n_classes))
    D = [train_lora(W0, ft.X, ft.y, rank=int(b.rank), lam=float(b.lam), seed=seed)["delta"] for ft in fts]
    val = [(pt.X_val, pt.y_val)] + [(ft.X_val, ft.y_val) for ft in fts]
    test = [(pt.X_test, pt.y_test)] + [(ft.X_test, ft.y_test) for ft in fts]
    alpha, info = mixing_coefficients(W0, D, val[1:], base_data=val[0], method="program", log=True)
    merged = {"malora": W0 + sum(at * Dt for at, Dt in zip(alpha, D))}
    params = {"malora": {"alpha": [round(float(x), 4) for x in alpha]}}

    def score(delta):  # held-out only: union min-margin, ties broken by mean accuracy
        m, _, acc = _union(W0 + delta, val)
        return m + 1e-9 * acc

    for name in b.baselines:
        delta, meta = bl.tune(name, D, score, seed=seed)
        merged[name] = W0 + delta
        params[name] = meta["params"]
    rows = []
    for name, W in merged.items():
        m, mn, mean = _union(W, test)
        mv, _, _ = _union(W, val)
        rows.append({"exp": "B", "seed": seed, "rho": rho, "difficulty": difficulty, "method": name,
                     "test_min_margin": m, "test_min_acc": mn, "test_mean_acc": mean, "val_min_margin": mv,
                     "params": str(params[name]), "positive_program": info["positive"]})
    return rows


# Exp C ---------------------------------------------------------------------------------------------


class MLP(torch.nn.Module):
    """The digits MLP 64-128-10: ``layer1`` (adapted by LoRA), ReLU, the shared ``head``."""

    def __init__(self, d_in: int = 64, hidden: int = 128, n_classes: int = 10):
        super().__init__()
        self.layer1 = torch.nn.Linear(d_in, hidden)
        self.head = torch.nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.head(torch.relu(self.layer1(x)))


def _fit(params, loss_fn, max_iter: int):
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=max_iter, history_size=20, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    opt.step(closure)


def exp_c(cfg, seeds) -> list[dict]:
    """Permuted digits: base MLP, rank-r LoRA on layer 1 per permuted task, merged; per-task accuracy."""
    rows = []
    for i, seed in enumerate(seeds):
        log.info("Exp C: seed %d (%d of %d)", seed, i + 1, len(seeds))
        rows += _exp_c_seed(cfg.expC, seed)
    return rows


def _exp_c_seed(c, seed: int) -> list[dict]:
    from peft import LoraConfig, get_peft_model

    from malora.peft_merge import merge_peft

    ce = torch.nn.functional.cross_entropy
    base_task, tasks = permuted_digits(seed, int(c.T))
    torch.manual_seed(seed)
    net = MLP()
    Xb, yb = torch.tensor(base_task.X, dtype=torch.float32), torch.tensor(base_task.y)
    _fit(list(net.parameters()), lambda: ce(net(Xb), yb) + 0.5 * float(c.weight_decay) *
         sum((p**2).sum() for p in net.parameters()), int(c.base_iters))
    lc = LoraConfig(r=int(c.rank), lora_alpha=int(c.rank), target_modules=["layer1"], lora_dropout=0.0)
    names = [f"task{t + 1}" for t in range(len(tasks))]
    pm = get_peft_model(net, lc, adapter_name=names[0])
    for n in names[1:]:
        pm.add_adapter(n, lc)
    lay = pm.base_model.model.layer1
    for n, task in zip(names, tasks):
        _train_adapter(pm, n, task, float(c.lam), int(c.lora_iters))
    with torch.no_grad():
        W1, b1 = lay.base_layer.weight.detach().clone(), lay.base_layer.bias.detach().clone()
        D = [lay.get_delta_weight(n).detach().double().numpy() for n in names]
    head = pm.base_model.model.head
    everyone = [base_task, *tasks]

    def accs(delta, split: str) -> list[float]:
        W = W1 + torch.as_tensor(delta, dtype=torch.float32)
        out = []
        for task in everyone:
            X = torch.tensor(getattr(task, f"X_{split}"), dtype=torch.float32)
            with torch.no_grad():
                z = head(torch.relu(X @ W.T + b1))
            out.append(float(np.mean(z.argmax(1).numpy() == getattr(task, f"y_{split}"))))
        return out

    cal = {n: (torch.tensor(t.X_val, dtype=torch.float32), torch.tensor(t.y_val)) for n, t in zip(names, tasks)}
    base_cal = (torch.tensor(base_task.X_val, dtype=torch.float32), torch.tensor(base_task.y_val))
    alpha, info = merge_peft(pm, names, cal, base_data=base_cal, log=True)
    merged = {"malora": sum(a * Dt for a, Dt in zip(alpha, D))}
    params = {"malora": {"alpha": [round(float(x), 4) for x in alpha]}}

    def score(delta):  # held-out only: min-task accuracy, ties broken by mean accuracy
        a = accs(delta, "val")
        return min(a) + 1e-3 * float(np.mean(a))

    for name in c.baselines:
        delta, meta = bl.tune(name, D, score, seed=seed)
        merged[name] = delta
        params[name] = meta["params"]
    own = [accs(np.zeros_like(D[0]), "test")[0]] + [accs(D[t], "test")[t + 1] for t in range(len(D))]
    rows = []
    for name, delta in merged.items():
        a = accs(delta, "test")
        rows.append({"exp": "C", "seed": seed, "method": name, "test_min_acc": min(a), "test_mean_acc": float(np.mean(a)),
                     **{f"acc_task{t}": v for t, v in enumerate(a)}, "own_min_acc": min(own),
                     "params": str(params[name]), "iterations": info["iterations"] if name == "malora" else None})
    log.info("Exp C seed %d: own-adapter accuracies %s; alpha %s", seed, np.round(own, 3), np.round(alpha, 3))
    return rows


def _train_adapter(pm, name: str, task, lam: float, iters: int) -> None:
    """Train adapter ``name`` of the MLP's layer 1 on ``task`` (head and base frozen), L-BFGS + factor penalty."""
    pm.set_adapter(name)
    lay = pm.base_model.model.layer1
    A, B = lay.lora_A[name].weight, lay.lora_B[name].weight
    X, y = torch.tensor(task.X, dtype=torch.float32), torch.tensor(task.y)
    _fit([A, B], lambda: torch.nn.functional.cross_entropy(pm(X), y) + 0.5 * lam * ((A**2).sum() + (B**2).sum()),
         iters)
