"""Plots: the only module that imports matplotlib."""

from paperworks.plotting import savefig, use_style


def plot_mse(rows, path):
    plt = use_style()
    fig, ax = plt.subplots()
    ax.bar(["mean", "median"], [sum(r["mse_mean"] for r in rows) / len(rows),
                                sum(r["mse_median"] for r in rows) / len(rows)])
    ax.set_ylabel("MSE")
    return savefig(fig, path)
