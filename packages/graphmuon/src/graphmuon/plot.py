"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import math

import numpy as np

from paperworks.plotting import savefig, use_style

COLORS = {"adamw": "tab:gray", "muon": "tab:blue", "graphmuon": "tab:red"}


def _ratio(a, b) -> float:
    return a / b if a is not None and b is not None else math.nan  # None: no seed reached the target


def plot_speedups(table: dict, path):
    """Time-to-target speedup over AdamW per regime (Muon and GraphMuon; medians over seeds that reached it)."""
    plt = use_style()
    names = list(table)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(names)), 3.6))
    x = np.arange(len(names))
    for i, opt in enumerate(("muon", "graphmuon")):
        vals = [_ratio(table[n]["adamw"]["time_to_target"], table[n][opt]["time_to_target"]) if opt in table[n]
                else math.nan for n in names]
        ax.bar(x + (i - 0.5) * 0.38, vals, 0.38, label=opt, color=COLORS[opt])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(2.0, color="k", lw=0.8, ls="--", label="2× claim")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("AdamW time-to-target / optimizer's")
    ax.legend()
    return savefig(fig, path)


def plot_amplification(table: dict, path):
    """Median induced-update amplification per regime and optimizer."""
    plt = use_style()
    names = list(table)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(names)), 3.6))
    x = np.arange(len(names))
    for i, opt in enumerate(("adamw", "muon", "graphmuon")):
        vals = [table[n][opt]["amp"] if opt in table[n] and table[n][opt]["amp"] is not None else math.nan
                for n in names]
        ax.bar(x + (i - 1) * 0.27, vals, 0.27, label=opt, color=COLORS[opt])
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("amplification ‖XΔWᵀ‖op / (‖ΔW‖op ‖X‖F/√d)")
    ax.legend()
    return savefig(fig, path)


def plot_curves(curves: dict, targets: dict, path):
    """Validation accuracy against timed wall-clock (seed 0, chosen learning rate), one panel per regime."""
    plt = use_style()
    k = len(curves)
    cols = min(3, k)
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.6 * rows), squeeze=False, layout="constrained")
    for ax, (name, by_opt) in zip(axes.flat, curves.items()):
        for opt, c in by_opt.items():
            ax.plot(c["clock"], c["val"], label=opt, color=COLORS.get(opt))
        ax.axhline(targets[name], color="k", lw=0.7, ls="--")
        ax.set_title(name)
        ax.set_xlabel("timed seconds")
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    axes.flat[0].set_ylabel("validation accuracy")
    axes.flat[0].legend()
    return savefig(fig, path)


def plot_windows(table: dict, path):
    """Stable-LR window per regime: how many grid points reached the target (median over tuning seeds)."""
    plt = use_style()
    names = list(table)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(names)), 3.6))
    x = np.arange(len(names))
    for i, opt in enumerate(("adamw", "muon", "graphmuon")):
        vals = [float(np.median([len(w) for w in table[n][opt]["window"].values()])) if opt in table[n] else math.nan
                for n in names]
        ax.bar(x + (i - 1) * 0.27, vals, 0.27, label=opt, color=COLORS[opt])
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("grid points reaching the target")
    ax.legend()
    return savefig(fig, path)
