"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import math

import numpy as np

from paperworks.plotting import savefig, use_style

COLORS = {"adamw": "tab:gray", "muon": "tab:blue", "graphmuon": "tab:red"}


def _ratio(a, b) -> float:
    return a / b if a is not None and b is not None else math.nan  # None: no seed reached the target


def _bars(table: dict, value, opts, ylabel: str):
    """Grouped bars, one group per regime and one bar per optimizer; ``value(row, opt)`` (nan if absent)."""
    plt = use_style()
    names = list(table)
    fig, ax = plt.subplots(figsize=(max(5.0, 0.8 * len(names)), 3.6))
    x = np.arange(len(names))
    w = 0.76 / len(opts)
    for i, opt in enumerate(opts):
        vals = [value(table[n], opt) if opt in table[n] else math.nan for n in names]
        ax.bar(x + (i - (len(opts) - 1) / 2) * w, vals, w, label=opt, color=COLORS[opt])
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    return fig, ax


def plot_speedups(table: dict, path):
    """Time-to-target speedup over AdamW per regime (Muon and GraphMuon; medians over seeds that reached it)."""
    fig, ax = _bars(table, lambda row, opt: _ratio(row["adamw"]["time_to_target"], row[opt]["time_to_target"]),
                    ("muon", "graphmuon"), "AdamW time-to-target / optimizer's")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(2.0, color="k", lw=0.8, ls="--", label="2× claim")
    ax.legend()
    return savefig(fig, path)


def plot_amplification(table: dict, path):
    """Median induced-update amplification per regime and optimizer."""
    fig, ax = _bars(table, lambda row, opt: row[opt]["amp"] if row[opt]["amp"] is not None else math.nan,
                    ("adamw", "muon", "graphmuon"), "amplification ‖XΔWᵀ‖op / (‖ΔW‖op ‖X‖F/√d)")
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
    fig, ax = _bars(table, lambda row, opt: float(np.median([len(w) for w in row[opt]["window"].values()])),
                    ("adamw", "muon", "graphmuon"), "grid points reaching the target")
    ax.legend()
    return savefig(fig, path)
