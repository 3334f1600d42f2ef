"""Plots: the only module that imports matplotlib."""

from collections import defaultdict

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_variance(rows, path):
    """Gradient variance (one curve for the three differentiators) and the policy's, and its cosine, vs n."""
    plt = use_style()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for L in sorted({r["L"] for r in rows}):
        rs = sorted((r for r in rows if r["L"] == L), key=lambda r: r["n"])
        ns = [r["n"] for r in rs]
        a.semilogy(ns, [r["var_gradient"] for r in rs], "o-", label=f"∂C (L={L})")
        a.semilogy(ns, [r["var_policy"] for r in rs], "s--", label=f"policy (L={L})")
        b.plot(ns, [r["cosine_mean"] for r in rs], "o-", label=f"L={L}")
    a.set_xlabel("qubits n")
    a.set_ylabel("variance over random circuits")
    a.legend(fontsize=6)
    b.axhline(0, color="k", lw=0.5)
    b.set_xlabel("qubits n")
    b.set_ylabel("cosine(policy mean, −∇C)")
    b.legend(fontsize=6)
    return savefig(fig, path)


def plot_accuracy(curves, path):
    """Mean test accuracy vs circuit evaluations, per method and circuit size."""
    plt = use_style()
    sizes = sorted({(c["n"], c["L"]) for c in curves})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.5 * len(sizes), 3.5), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        acc = defaultdict(list)
        for c in curves:
            if (c["n"], c["L"]) == size and c["method"] != "adam-adjoint":
                acc[c["method"]].append([(r["evaluations"], r["acc_test"]) for r in c["curve"]])
        for m, cs in acc.items():
            k = min(len(c) for c in cs)
            arr = np.array([c[:k] for c in cs])
            ax.plot(arr[0, :, 0], arr[:, :, 1].mean(0), label=m)
        ax.set_title(f"n={size[0]}, L={size[1]}")
        ax.set_xlabel("circuit evaluations")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=6)
    return savefig(fig, path)
