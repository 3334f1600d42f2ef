"""Plots: the only module that imports matplotlib."""

from paperworks.plotting import savefig, use_style


def plot_coverage(rows, path, level=0.95):
    """Coverage (mean over entries) vs data size at ``level``: rows = behaviours, columns = targets."""
    plt = use_style()
    rows = [r for r in rows if r.get("part", "coverage") == "coverage" and r["level"] == level]
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


def plot_diagnosis(rows, path):
    """Coverage at 95% explained: per state against its visits; against the visits of the rewarding
    pair; along the behaviour-bias sweep (model-based percentile solid, plug-in CLT dashed)."""
    plt = use_style()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    per_state = [r for r in rows if r["part"] == "per_state"]
    behaviours = list(dict.fromkeys(r["behaviour"] for r in per_state))
    every = list(dict.fromkeys([*behaviours, *(r["behaviour"] for r in rows)]))
    colours = dict(zip(every, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    ax = axes[0]
    for beh in behaviours:
        sel = [r for r in per_state if r["behaviour"] == beh]
        ax.scatter([max(r["visits_mean"], 0.1) for r in sel], [r["model_percentile_V"] for r in sel], s=12,
                   color=colours[beh], label=beh)
    ax.set_xscale("log")
    ax.axhline(0.95, color="k", ls="--", lw=0.8)
    ax.set_xlabel("mean visits N(s) of the state")
    ax.set_ylabel("coverage of V(s) at 95%")
    ax.set_title("per state and cell")
    ax.legend(fontsize=7)
    ax = axes[1]
    labels = list(dict.fromkeys(r["reward_pair_visits"] for r in rows if r["part"] == "by_reward_visits"))
    for beh in behaviours:
        sel = [r for r in rows if r["part"] == "by_reward_visits" and r["behaviour"] == beh and r["n_datasets"] > 0]
        x = [labels.index(r["reward_pair_visits"]) for r in sel]
        ax.plot(x, [r["model_percentile"] for r in sel], marker="o", color=colours[beh], label=beh)
        ax.plot(x, [r["clt"] for r in sel], marker="x", ls="--", color=colours[beh])
    ax.set_xticks(range(len(labels)), labels)
    ax.axhline(0.95, color="k", ls="--", lw=0.8)
    ax.set_xlabel("visits of the rewarding pair (last cell, right) in the data set")
    ax.set_ylabel("coverage of V, Q at 95%")
    ax.set_title("against the rewarding pair's visits")
    ax = axes[2]
    sweep = [r for r in rows if r["part"] == "bias_sweep"]
    for beh in dict.fromkeys(r["behaviour"] for r in sweep):
        sel = sorted((r for r in sweep if r["behaviour"] == beh), key=lambda r: r["bias"])
        c = colours[beh]
        ax.plot([r["bias"] for r in sel], [r["model_percentile_V"] for r in sel], marker="o", color=c, label=beh)
        ax.plot([r["bias"] for r in sel], [r["clt_V"] for r in sel], marker="x", ls="--", color=c)
    ax.axhline(0.95, color="k", ls="--", lw=0.8)
    ax.set_xlabel("behaviour bias (probability of the favoured action)")
    ax.set_ylabel("coverage of V at 95%")
    ax.set_title("bias sweep, chains")
    if sweep:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return savefig(fig, path)


def plot_bench(rows, path):
    """Vectorised and per-replicate-loop bootstrap time (B replicates of V^π) against the number of states."""
    plt = use_style()
    fig, ax = plt.subplots()
    S = [r["n_states"] for r in rows]
    ax.plot(S, [r["vectorised_cpu_s"] for r in rows], marker="o", label="vectorised (V^π)")
    ax.plot(S, [r["vectorised_qstar_cpu_s"] for r in rows], marker="s", label="vectorised (Q*)")
    ax.plot(S, [r["loop_cpu_s"] for r in rows], marker="^", label="loop (V^π)")
    ax.set_xlabel("number of states")
    ax.set_ylabel("CPU seconds")
    ax.set_yscale("log")
    ax.legend()
    return savefig(fig, path)
