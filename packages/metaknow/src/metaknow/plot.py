"""Plots: the only module that imports matplotlib."""

from paperworks.plotting import savefig, use_style


def plot_coverage(rows, path):
    """Coverage of the prompt-clustered bootstrap CI per planted cell (standard mode)."""
    import pandas as pd

    plt = use_style()
    df = pd.DataFrame(rows)
    df = df[~df["shift_only"]]
    cov = df.assign(c=(df["lo"] <= df["truth"]) & (df["truth"] <= df["hi"])).groupby(["delta", "p_verbalize"])["c"].mean()
    fig, ax = plt.subplots()
    labels = [f"δ={d:g}\nv={v:g}" for d, v in cov.index]
    ax.bar(range(len(cov)), cov.to_numpy())
    ax.axhline(0.95, color="k", ls="--", lw=1)
    ax.set_xticks(range(len(cov)), labels, fontsize=7)
    ax.set_ylim(0.8, 1.0)
    ax.set_ylabel("CI coverage")
    return savefig(fig, path)
