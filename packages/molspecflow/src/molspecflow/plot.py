"""Plots: the only module that imports matplotlib."""

from paperworks.plotting import savefig, use_style


def plot_topk_vs_paired(series, fractions, path):
    """Retrieval top-1 against the paired fraction, one line per arm (values are Estimates)."""
    plt = use_style()
    fig, ax = plt.subplots()
    for name, ests in series.items():
        y = [e.value for e in ests]
        err = [[e.value - (e.lower if e.lower is not None else e.value) for e in ests],
               [(e.upper if e.upper is not None else e.value) - e.value for e in ests]]
        ax.errorbar(list(fractions), y, yerr=err, marker="o", capsize=3, label=name)
    ax.set_xlabel("paired fraction of the data")
    ax.set_ylabel("retrieval top-1 (64 formula-matched candidates)")
    ax.set_title("[simulated spectra] top-1 vs paired fraction")
    ax.legend()
    return savefig(fig, path)
