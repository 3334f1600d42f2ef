"""Plots: the only module that imports matplotlib."""

from collections import defaultdict

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_curves(curves, path, *, bpb_teacher=None):
    """Held-out-B bits per byte against training steps, one line per arm (mean over seeds)."""
    plt = use_style()
    fig, ax = plt.subplots()
    by = defaultdict(lambda: defaultdict(list))
    for c in curves:
        by[c["arm"]][c["step"]].append(c["bpb"])
    for arm, pts in sorted(by.items()):
        steps = sorted(pts)
        ax.plot(steps, [np.mean(pts[s]) for s in steps], label=arm)
    if bpb_teacher is not None:
        ax.axhline(bpb_teacher, color="k", ls="--", label="teacher (T_A)")
    ax.set_xlabel("training steps (AIM steps counted)")
    ax.set_ylabel("bits per byte, held-out B")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def plot_depth(rows, n_layers, path):
    """Recovery at the end of the budget against the AIM depth k."""
    import math

    plt = use_style()
    fig, ax = plt.subplots()
    ks, means = [], []
    for r_arm, k in [("MATT", math.ceil(n_layers / 3))] + [(f"MATT-k{k}", k) for k in range(1, n_layers + 1)]:
        v = [r["recovery"] for r in rows if r["arm"] == r_arm]
        if v and k not in ks:
            ks.append(k)
            means.append(np.mean(v))
    order = np.argsort(ks)
    ax.plot(np.array(ks)[order], np.array(means)[order], "o-")
    f = [r["recovery"] for r in rows if r["arm"] == "FOCUS+LM"]
    if f:
        ax.axhline(np.mean(f), color="gray", ls=":", label="no AIM (FOCUS+LM)")
        ax.legend()
    ax.set_xlabel("AIM depth k (first k layers)")
    ax.set_ylabel("recovery")
    return savefig(fig, path)
