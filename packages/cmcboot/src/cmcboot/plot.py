"""Plots: the only module that imports matplotlib."""

from paperworks.plotting import savefig, use_style


def plot_coverage(rows, path, level=0.95):
    """Coverage (mean over entries) vs data size at ``level``: rows = behaviours, columns = targets."""
    plt = use_style()
    rows = [r for r in rows if r["level"] == level]
    targets = ["V", "Q", "Qstar"]
    behaviours = list(dict.fromkeys(r["behaviour"] for r in rows))
    methods = sorted({r["method"] for r in rows})
    sizes = sorted({(r["regime"], r["T"]) for r in rows}, key=lambda x: (x[0] != "chain", x[1]))
    labels = [f"n={t}" if reg == "chain" else f"T={t}" for reg, t in sizes]
    fig, axes = plt.subplots(len(behaviours), 3, figsize=(11, 2.8 * len(behaviours)), sharey=True, squeeze=False)
    for i, beh in enumerate(behaviours):
        for ax, tg in zip(axes[i], targets):
            for m in methods:
                ys = []
                for reg, t in sizes:
                    sel = [r["coverage_mean"] for r in rows if r["method"] == m and r["target"] == tg
                           and r["regime"] == reg and r["T"] == t and r["behaviour"] == beh]
                    ys.append(sel[0] if sel else float("nan"))
                ax.plot(range(len(sizes)), ys, marker="o", label=m, lw=1.2)
            ax.axhline(level, color="k", ls="--", lw=0.8)
            ax.set_xticks(range(len(sizes)), labels, rotation=30)
            ax.set_title(f"{tg}, {beh}")
        axes[i][0].set_ylabel(f"coverage at {level:.0%}")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return savefig(fig, path)


def plot_bench(rows, path):
    """Vectorised bootstrap time vs the number of states (and the loop's, scaled to the same B)."""
    plt = use_style()
    fig, ax = plt.subplots()
    S = [r["n_states"] for r in rows]
    ax.plot(S, [r["vectorised_cpu_s"] for r in rows], marker="o", label="vectorised (V^π)")
    ax.plot(S, [r["vectorised_with_qstar_cpu_s"] for r in rows], marker="s", label="vectorised (Q*)")
    ax.plot(S, [r["loop_per_replicate_cpu_s"] * r["n_boot"] for r in rows], marker="^", label="loop (V^π), scaled to B")
    ax.set_xlabel("number of states")
    ax.set_ylabel("CPU seconds")
    ax.set_yscale("log")
    ax.legend()
    return savefig(fig, path)
