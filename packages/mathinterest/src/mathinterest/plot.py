"""Plots: the only module that imports matplotlib. Every figure is labelled "simulated"."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_histograms(study, path, *, n: int = 4, population: str = "imo"):
    """Judge (J1, J3) vs human rating histograms for ``n`` problems of a simulated study."""
    plt = use_style()
    humans = study.ratings()
    humans = humans[humans.population == population]
    j1, j3 = study.judge("J1"), study.judge("J3")
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 2.8), sharey=True)
    k = np.arange(1, 8)
    for ax, pid in zip(np.atleast_1d(axes), study.problem_ids[:n]):
        h = np.bincount(humans[humans.problem_id == pid].rating, minlength=8)[1:]
        ax.bar(k, h / h.sum(), color="0.75", label="people")
        for j, name, m in ((j1, "J1", "o-"), (j3, "J3", "s-")):
            row = j[(j.problem_id == pid) & (j.population == population)].iloc[0]
            ax.plot(k, [row[f"p{i}"] for i in k], m, label=name, ms=4)
        ax.set_title(f"{pid} ({population}, simulated)", fontsize=9)
        ax.set_xticks(k)
    np.atleast_1d(axes)[0].legend(fontsize=8)
    return savefig(fig, path)


def plot_w1(rows, path):
    """Mean per-problem W1 of each simulated judge against its human-vs-human baseline."""
    plt = use_style()
    judges = ["J1", "J2", "J3", "J4", "constant", "length", "blind"]
    w = [np.mean([r["w1"] for r in rows if r["judge"] == j]) for j in judges]
    hh = np.mean([r["w1_hh"] for r in rows])
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(judges, w, color="C0")
    ax.axhline(hh, color="C3", ls="--", label="human-vs-human")
    ax.set_ylabel("mean per-problem W1")
    ax.set_title("simulated judges vs people")
    ax.legend()
    return savefig(fig, path)
