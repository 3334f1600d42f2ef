"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from paperworks.plotting import savefig, use_style


def fidelity(rows, path, source="structured"):
    rows = [r for r in rows if r.get("part") == "fidelity" and r.get("source") == source]
    if not rows:
        return None
    plt = use_style()
    budgets = sorted({r["budget"] for r in rows}, reverse=True)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    w = 0.8 / len(methods)
    for j, m in enumerate(methods):
        vals = [np.mean([r["rel_err"] for r in rows if r["method"] == m and r["budget"] == b]) for b in budgets]
        ax.bar(np.arange(len(budgets)) + j * w, vals, w, label=m)
    ax.set_xticks(np.arange(len(budgets)) + 0.4 - w / 2, [f"{int(100 * b)}% FLOPs" for b in budgets])
    ax.set_ylabel("relative output error")
    ax.set_title(f"fidelity at matched compute ({source} Q/K/V)")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def sweep(rows, path):
    rows = [r for r in rows if str(r.get("source", "")).startswith("sweep")]
    if not rows:
        return None
    plt = use_style()
    acc = defaultdict(list)
    for r in rows:
        acc[(r["method"], r["semantic"])].append(r["rel_err"])
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m in dict.fromkeys(r["method"] for r in rows):
        xs = sorted({s for (mm, s) in acc if mm == m})
        ax.plot(xs, [np.mean(acc[(m, x)]) for x in xs], marker="o", label=m)
    ax.set_xlabel("semantic-correspondence strength")
    ax.set_ylabel("relative output error")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def bench(rows, path):
    rows = [r for r in rows if r.get("part") == "bench" and r.get("device") == "cpu"]
    if not rows:
        return None
    plt = use_style()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ns = [r["N"] for r in rows]
    ax.loglog(ns, [r["dense_s"] for r in rows], marker="o", label="dense SDPA")
    ax.loglog(ns, [r["monarch_s"] for r in rows], marker="o", label="Monarch (torch reference)")
    ax.set_xlabel("tokens N")
    ax.set_ylabel("wall time (s)")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def dit(rows, path):
    """Rollout MSE and tracking error of every variant (mean over training seeds) and the trivial predictors."""
    rows = [r for r in rows if r.get("part") == "dit"]
    if not rows:
        return None
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key, label in zip(axes, ("rollout_mse", "track_err_px"), ("rollout MSE", "tracking error (px)")):
        have = [r for r in rows if key in r]
        names = list(dict.fromkeys(r["variant"] for r in have))
        ax.bar(names, [np.mean([r[key] for r in have if r["variant"] == n]) for n in names])
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=60, labelsize=6)
    return savefig(fig, path)


def all_plots(rows, out_dir):
    fidelity(rows, out_dir / "fidelity_structured.png")
    fidelity(rows, out_dir / "fidelity_random.png", source="random")
    fidelity(rows, out_dir / "fidelity_dit.png", source="dit")
    sweep(rows, out_dir / "semantic_sweep.png")
    bench(rows, out_dir / "bench.png")
    dit(rows, out_dir / "dit.png")
