"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_accuracy(rows, path):
    plt = use_style()
    rs = [r for r in rows if r.get("part") == "train"]
    models = list(dict.fromkeys(r["model"] for r in rs))
    tests = [k[4:] for k in rs[0] if k.startswith("acc_")]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    w = 0.8 / len(models)
    for i, m in enumerate(models):
        vals = np.array([[r[f"acc_{t}"] for t in tests] for r in rs if r["model"] == m])
        ax.bar(np.arange(len(tests)) + i * w, vals.mean(0), w, yerr=vals.std(0), label=m, capsize=2)
    ax.set_xticks(np.arange(len(tests)) + 0.4 - w / 2, tests)
    ax.set_ylabel("recall accuracy")
    ax.legend(fontsize=7, ncol=2)
    return savefig(fig, path)


def plot_pca(S, g, loc, path):
    plt = use_style()
    keys = sorted({(a, b) for a, b in zip(g, loc)})
    means = np.array([S[(g == a) & (loc == b)].mean(0) for a, b in keys])
    mc = means - means.mean(0)
    _, _, vt = np.linalg.svd(mc, full_matrices=False)
    P = mc @ vt[:2].T
    fig, ax = plt.subplots()
    markers = "osD^v<>"
    for (a, b), p in zip(keys, P):
        ax.scatter(p[0], p[1], c=f"C{a}", marker=markers[b % len(markers)], s=50)
        ax.annotate(f"{a},{b}", p, fontsize=7)
    for a in sorted(set(g)):
        pts = np.array([p for (aa, _), p in zip(keys, P) if aa == a])
        ax.plot(pts[:, 0], pts[:, 1], c=f"C{a}", alpha=0.5)
    ax.set_xlabel("PC1")
    ax.set_ylabel("PC2")
    ax.set_title("delay states by (global, local) rank; colour: chunk")
    return savefig(fig, path)


def plot_angles(rows, path):
    plt = use_style()
    rs = [r for r in rows if r.get("part") == "train"]
    models = list(dict.fromkeys(r["model"] for r in rs))
    fig, ax = plt.subplots()
    for i, m in enumerate(models):
        a = [r["mean_angle"] for r in rs if r["model"] == m]
        n = [r["null_mean_angle"] for r in rs if r["model"] == m]
        ax.scatter([i - 0.1] * len(a), a, c="C0", label="trained" if i == 0 else None)
        ax.scatter([i + 0.1] * len(n), n, c="C7", marker="x", label="shuffled null" if i == 0 else None)
    ax.set_xticks(range(len(models)), models)
    ax.set_ylabel("mean principal angle (deg)")
    ax.legend()
    return savefig(fig, path)


def plot_all(rows, S, g, loc, out_dir: Path):
    out_dir = Path(out_dir)
    plot_accuracy(rows, out_dir / "accuracy.png")
    plot_pca(S, g, loc, out_dir / "pca_delay_states.png")
    plot_angles(rows, out_dir / "angles.png")
