"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def _mean(rows, key, **f):
    v = [r[key] for r in rows if all(r.get(k) == x for k, x in f.items())]
    return float(np.mean(v)) if v else np.nan


def plot_all(rows, truth, out_dir):
    plt = use_style()
    e1 = [r for r in rows if r.get("exp") == "exp1"]
    if e1:
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        mults = sorted({r["mult"] for r in e1})
        for ls in sorted({r["lambda_star"] for r in e1}):
            for meth, style in (("meanfield", "-o"), ("gradient", "--s")):
                y = [_mean(e1, "j_gap", method=meth, lambda_star=ls, mult=m, schedule="linear") for m in mults]
                axes[0].plot([m * ls for m in mults], y, style, label=f"{meth}, λ*={ls:g}")
        axes[0].set(xlabel="sampler λ", ylabel="J-gap (under λ*)", title="Exp 1: gap vs λ")
        axes[0].legend(fontsize=7)
        for meth in sorted({r["method"] for r in e1 if r["mult"] == 1.0}):
            ns = sorted({r["n"] for r in e1 if r["method"] == meth and r["mult"] == 1.0})
            if len(ns) > 1:
                axes[1].plot(ns, [_mean(e1, "w1", method=meth, n=n, mult=1.0, schedule="linear") for n in ns], "-o",
                             label=meth)
        axes[1].set(xscale="log", xlabel="N", ylabel="W1 to μ*", title="Exp 1: W1 vs N")
        axes[1].legend(fontsize=7)
        savefig(fig, out_dir / "exp1.png")
    e2 = [r for r in rows if r.get("exp") == "exp2"]
    if e2:
        fig, ax = plt.subplots()
        for d in sorted({r["dim"] for r in e2}):
            ns = sorted({r["n"] for r in e2 if r["dim"] == d and r["method"] == "meanfield" and r["mult"] == 1.0})
            ax.plot(ns, [_mean(e2, "bures", dim=d, n=n, method="meanfield", mult=1.0) for n in ns], "-o", label=f"d={d}")
        ax.set(xscale="log", yscale="log", xlabel="N", ylabel="Bures–W2 to μ*", title="Exp 2: Bures vs N")
        ax.legend()
        savefig(fig, out_dir / "exp2.png")
