"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_scaling(records, path):
    """Wall time and peak memory vs N (log-log); timeouts drawn as open markers at their lower bound (time only)."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    N = np.array([r["n"] ** 2 for r in records], dtype=float)
    series = {"GETO-LP": [r["geto"] for r in records], "full LP (POT)": [r["full"] for r in records]}
    regs = sorted({reg for r in records for reg in r["entropic"]})
    for reg in regs:
        series[f"entropic reg={reg:g}"] = [r["entropic"][reg][0] for r in records]
    for ax, attr, label in ((axes[0], "wall_s", "wall time (s)"), (axes[1], "peak_mb", "peak memory (MiB)")):
        if not any(getattr(m, attr) for ms in series.values() for m in ms):
            ax.text(0.5, 0.5, f"{label}: not measured", ha="center", transform=ax.transAxes)
            continue
        for name, ms in series.items():
            ok = np.array([m.status == "ok" and getattr(m, attr) is not None for m in ms])
            to = np.array([m.status == "timeout" and getattr(m, attr) is not None for m in ms])
            vals = np.array([getattr(m, attr) or np.nan for m in ms], dtype=float)
            line = ax.plot(N[ok], vals[ok], marker="o", label=name)[0]
            if to.any():
                ax.plot(N[to], vals[to], marker="o", ls="none", mfc="none", color=line.get_color(),
                        label=f"{name} (timeout, lower bound)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("grid points N")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    return savefig(fig, path)


def _show(ax, img, title):
    ax.imshow(np.asarray(img), cmap="magma", interpolation="nearest")
    ax.set_title(title, fontsize=8)
    ax.axis("off")


def plot_barycenters(records, path):
    """Inputs and barycenters (GETO-LP, entropic) on the largest grid where GETO-LP finished."""
    rec = next((r for r in reversed(records) if r["geto"].ok), None)
    plt = use_style()
    if rec is None:
        fig, ax = plt.subplots()
        ax.text(0.5, 0.5, "GETO-LP did not finish", ha="center")
        return savefig(fig, path)
    n = rec["n"]
    panels = [(h.reshape(n, n), f"input {m}") for m, h in enumerate(rec["h"])]
    panels.append((rec["geto"].value[0], "GETO-LP (exact)"))
    for reg, (e, tc) in rec["entropic"].items():
        if e.ok:
            panels.append((e.value, f"entropic {reg:g}\ncost +{100 * (tc / rec['geto_cost'] - 1):.1f}%"))
    fig, axes = plt.subplots(1, len(panels), figsize=(1.6 * len(panels), 1.9))
    for ax, (img, title) in zip(np.atleast_1d(axes), panels):
        _show(ax, img, title)
    return savefig(fig, path)


def plot_digits(res, path):
    """Digit inputs, their pixel mean, the entropic and the GETO-LP barycenter."""
    plt = use_style()
    inputs = res["inputs"][:6]
    panels = [(x, f"input {i}") for i, x in enumerate(inputs)]
    panels += [(res["mean"], "pixel mean"), (res["ibp"], "entropic"), (res["nu"], "GETO-LP")]
    fig, axes = plt.subplots(1, len(panels), figsize=(1.3 * len(panels), 1.7))
    for ax, (img, title) in zip(axes, panels):
        _show(ax, np.asarray(img).reshape(8, 8), title)
    return savefig(fig, path)


def plot_palette(res, path):
    """Each sample image, recoloured towards the barycenter palette of the two."""
    plt = use_style()
    names = res["names"]
    fig, axes = plt.subplots(2, len(names), figsize=(3.2 * len(names), 4.6))
    for j, k in enumerate(names):
        axes[0, j].imshow(res["images"][k])
        axes[0, j].set_title(k, fontsize=8)
        axes[1, j].imshow(res["recoloured"][k])
        axes[1, j].set_title(f"{k} → barycenter palette", fontsize=8)
        for i in range(2):
            axes[i, j].axis("off")
    return savefig(fig, path)


def plot_image(img, path):
    plt = use_style()
    fig, ax = plt.subplots(figsize=(3, 3))
    _show(ax, img, "GETO-LP barycenter")
    return savefig(fig, path)
