"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def _mean_by(rows, key, **match):
    sel = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    xs = sorted({r[key] for r in sel})
    return xs, sel


def plot_sweep(rows, path):
    plt = use_style()
    sweep = [r for r in rows if r["block"] == "sweep"]
    graphs = list(dict.fromkeys(r["graph"] for r in sweep))
    metrics = ["accuracy", "dishonesty_disagree", "agreement"]
    fig, axes = plt.subplots(len(graphs), len(metrics), figsize=(11, 3.2 * len(graphs)), squeeze=False)
    for gi, g in enumerate(graphs):
        for mi, m in enumerate(metrics):
            ax = axes[gi, mi]
            for pol in dict.fromkeys(r["policy"] for r in sweep if r["graph"] == g):
                sel = [r for r in sweep if r["graph"] == g and r["policy"] == pol]
                cs = sorted({r["conformity"] for r in sel})
                ys = [np.nanmean([r[m] for r in sel if r["conformity"] == c]) for c in cs]
                ax.plot(cs, ys, marker="o" if pol == "ippo_op" else None, lw=2.2 if pol == "ippo_op" else 1,
                        label=pol)
            ax.set_title(f"{g}: {m}")
            ax.set_xlabel("conformity c")
    axes[0, -1].legend(fontsize=7)
    return savefig(fig, path)


def plot_scale(rows, path):
    plt = use_style()
    sel = [r for r in rows if r["block"] == "scale"]
    ns = sorted({r["n_nodes"] for r in sel})
    fig, ax = plt.subplots()
    for r in sel:
        ax.scatter(r["n_nodes"], r["accuracy_drop"], color="0.6", s=10)
    ax.plot(ns, [np.mean([r["accuracy_drop"] for r in sel if r["n_nodes"] == n]) for n in ns], marker="o")
    ax.set_xscale("log")
    ax.set_xlabel("N (Barabási–Albert)")
    ax.set_ylabel("accuracy drop, low c − high c")
    return savefig(fig, path)


def plot_crossplay(xp, path):
    plt = use_style()
    fig, ax = plt.subplots()
    labels, vals = [], []
    for k in ("sp", "op"):
        for part in ("within", "cross"):
            labels.append(f"{k.upper()} {part}")
            vals.append(xp[k][part])
    ax.boxplot(vals)
    ax.set_xticks(range(1, len(labels) + 1), labels)
    ax.set_ylabel("mean return per agent")
    return savefig(fig, path)


def plot_attention(att, path):
    plt = use_style()
    fig, axes = plt.subplots(1, len(att), figsize=(4.5 * len(att), 3.4), squeeze=False)
    for ax, (g, r) in zip(axes[0], att.items()):
        scores, q = r["example"]
        ax.scatter(q, scores, s=10)
        ax.set_xlabel("planted signal accuracy q_j")
        ax.set_ylabel("learned attention score")
        ax.set_title(f"{g}: Spearman {np.mean(r['score']):.2f}")
    return savefig(fig, path)


def plot_curves(curves, cs, seeds, path):
    plt = use_style()
    curves = {g: c for g, c in curves.items() if c is not None}
    if not curves:
        return None
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.4), squeeze=False)
    grid = [(s, c) for s in seeds for c in cs]
    for ax, (g, cur) in zip(axes[0], curves.items()):
        for i, (s, c) in enumerate(grid):
            ax.plot(cur[i], color=f"C{cs.index(c)}", lw=0.8, label=f"c={c}" if s == seeds[0] else None)
        ax.set_title(g)
        ax.set_xlabel("PPO update")
        ax.set_ylabel("mean episode return")
    axes[0, 0].legend(fontsize=7)
    return savefig(fig, path)


def plot_bench(rows, path):
    plt = use_style()
    env = [r for r in rows if r["kind"] == "env"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    e = np.array([r["edges"] for r in env], float)
    t = np.array([r["step_s"] for r in env])
    axes[0].loglog(e, t, "o", label="jax (per round, all episodes)")
    ref = t[0] * e / e[0]
    axes[0].loglog(np.sort(e), np.sort(ref), "--", color="0.5", label="linear in edges")
    axes[0].set_xlabel("edges")
    axes[0].set_ylabel("seconds per round")
    axes[0].legend()
    axes[1].loglog([r["n_nodes"] for r in env], [r["agent_steps_per_s"] for r in env], "o-", label="jax")
    axes[1].loglog([r["n_nodes"] for r in env], [r["numpy_agent_steps_per_s"] for r in env], "s--", label="numpy")
    axes[1].set_xlabel("N")
    axes[1].set_ylabel("agent-steps / s")
    axes[1].legend()
    return savefig(fig, path)
