"""The CL streams: every method on every task stream, accuracy matrices and CL metrics per seed."""

from __future__ import annotations

import logging

import numpy as np
import torch

from m2le.baselines import accuracy, joint_training, make_learner
from m2le.data import class_tasks, domain_tasks, gaussian_tasks, pretrain
from m2le.metrics import cl_metrics

log = logging.getLogger("m2le")


def lora_config(rank: int):
    from peft import LoraConfig

    return LoraConfig(r=int(rank), lora_alpha=int(rank), target_modules=["fc1", "fc2"], lora_dropout=0.0)


def streams(cfg, seed: int) -> list[tuple[str, list]]:
    s = cfg.streams
    out = []
    if s.domain.enabled:
        out.append(("domain", domain_tasks(seed, T=int(s.domain.T))))
    if s["class"].enabled:
        out.append(("class", class_tasks(seed, T=int(s["class"].T))))
    if s.gauss.enabled:
        for ov in s.gauss.overlaps:
            out.append((f"gauss_ov{float(ov):g}", gaussian_tasks(seed, T=int(s.gauss.T), overlap=float(ov))))
    return out


def run_stream(method: str, base, tasks, cfg, seed: int, extra: dict | None = None) -> dict:
    """Learn the tasks in order; the learning rate is chosen on task 1's validation split from the grid."""
    tr = cfg.train
    lc = lora_config(tr.rank)
    kw = dict(damping=float(tr.damping), epsilon=float(tr.epsilon), ewc_lambda=float(tr.ewc_lambda), seed=seed)
    T = len(tasks)
    A = np.zeros((T, T))
    pre = np.zeros(T)
    learner, lr = None, None
    for i, task in enumerate(tasks):
        loader = task.loader(batch_size=int(tr.batch_size), seed=seed * 100 + i)
        if i == 0:  # the grid: the best validation accuracy on the current (first) task
            best = None
            for cand in tr.lrs:
                ln = make_learner(method, base, lc, **kw)
                m = ln.learn_task(loader, epochs=int(tr.epochs), lr=float(cand))
                v = accuracy(m, task.X_val, task.y_val)
                if best is None or v > best[0]:
                    best = (v, float(cand), ln)
            _, lr, learner = best
        else:
            learner.learn_task(loader, epochs=int(tr.epochs), lr=lr)
        pre[i] = accuracy(learner.last_trained, task.X_test, task.y_test)
        for j in range(i + 1):
            A[i, j] = accuracy(learner.model, tasks[j].X_test, tasks[j].y_test)
    out = {"acc_matrix": A, "pre": pre, "lr": lr, "learner": learner}
    return out


def run_joint(base, tasks, cfg, seed: int) -> tuple[float, float]:
    tr = cfg.train
    best = None
    Xv = np.concatenate([t.X_val for t in tasks])
    yv = np.concatenate([t.y_val for t in tasks])
    for cand in tr.lrs:
        m = joint_training(base, lora_config(tr.rank), tasks, epochs=int(tr.epochs), lr=float(cand),
                           batch_size=int(tr.batch_size), seed=seed)
        v = accuracy(m, Xv, yv)
        if best is None or v > best[0]:
            best = (v, float(cand), m)
    m = best[2]
    return float(np.mean([accuracy(m, t.X_test, t.y_test) for t in tasks])), best[1]


def run_all(cfg, seeds) -> tuple[list[dict], dict]:
    """Rows (one per seed × stream × method) and the artefacts for the plots (seed 0's)."""
    from tqdm import tqdm

    rows, art = [], {"acc": {}, "m": {}, "alpha": {}, "pred_classes": {}}
    methods = list(cfg.methods)
    from paperworks import resolve_device

    device = resolve_device(str(cfg.device))
    for seed in seeds:
        torch.manual_seed(seed)
        base = pretrain(seed, epochs=int(cfg.pretrain_epochs)).to(device)
        for sname, tasks in streams(cfg, seed):
            for method in tqdm(methods, desc=f"seed {seed} {sname}", disable=None):
                if method == "joint":
                    fa, lr = run_joint(base, tasks, cfg, seed)
                    rows.append({"seed": seed, "stream": sname, "method": "joint", "final_acc": fa, "lr": lr})
                    continue
                r = run_stream(method, base, tasks, cfg, seed)
                met = cl_metrics(r["acc_matrix"], anytime=r["pre"])
                row = {"seed": seed, "stream": sname, "method": method, "lr": r["lr"], **met}
                ln = r["learner"]
                if sname == "class":  # no task ID: which of the 10 classes the final model predicts
                    X = np.concatenate([t.X_test for t in tasks])
                    with torch.no_grad():
                        pred = ln.model(torch.as_tensor(X).to(device)).argmax(1).cpu().numpy()
                    row["pred_classes"] = int(len(np.unique(pred)))
                rows.append(row)
                if seed == seeds[0]:
                    art["acc"][(sname, method)] = r["acc_matrix"]
                    if method in ("m2le", "fisher") and ln.modulations and ln.modulations[-1]:
                        mm = ln.modulations[-1]
                        if all(v is not None for v in mm.values()):
                            art["m"][(sname, method)] = {k: v.detach().cpu().numpy().ravel() for k, v in mm.items()}
                    if method == "scalar":
                        art["alpha"][sname] = [float(next(iter(m.values()))) for m in ln.modulations]
                log.info("seed %d %s %s final %.3f aaa %.3f", seed, sname, method, row.get("final_acc", np.nan),
                         row.get("aaa", np.nan))
    return rows, art
