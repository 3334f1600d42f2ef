"""Plots: the only module that imports matplotlib."""

from driftbench.analysis import final_turns
from paperworks.plotting import savefig, use_style


def plot_by_turn(df, path):
    """Adherence and complexity by turn, one line per condition (mean over assistants, briefs, reps)."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for cond, g in df.groupby("condition", sort=False):
        m = g.groupby("turn")[["adherence", "complexity"]].mean()
        axes[0].plot(m.index, m["adherence"], marker="o", label=cond)
        axes[1].plot(m.index, m["complexity"], marker="o", label=cond)
    axes[0].set(xlabel="assistant turn", ylabel="adherence (0-4, rule checker)")
    axes[1].set(xlabel="assistant turn", ylabel="components")
    axes[0].legend(fontsize=7)
    return savefig(fig, path)


def plot_recall_vs_adherence(df, path):
    """Last-turn probe recall against adherence, one colour per assistant (jittered)."""
    import numpy as np

    plt = use_style()
    fig, ax = plt.subplots(figsize=(5, 4))
    last = final_turns(df[df.condition != "single_shot"])
    rng = np.random.default_rng(0)
    for model, g in last.groupby("model", sort=False):
        ax.scatter(g["adherence"] + rng.uniform(-0.2, 0.2, len(g)), g["recall"] + rng.uniform(-0.02, 0.02, len(g)),
                   s=6, alpha=0.4, label=model)
    ax.axhline(0.8, color="grey", lw=0.8)
    ax.axvline(2.5, color="grey", lw=0.8)
    ax.set(xlabel="adherence (last turn)", ylabel="restatement recall", title="KBV: upper left")
    ax.legend(fontsize=6, markerscale=2)
    return savefig(fig, path)
