"""Plots: the only module that imports matplotlib."""

from __future__ import annotations

import numpy as np

from paperworks.plotting import savefig, use_style


def plot_scaling(records, ratio, path):
    """GETO-LP's wall time and peak memory vs N (log-log; 2D grids as dots, 3D as squares), with the
    entropic baselines' times and the full LP's measured rounds at the ratio grid."""
    plt = use_style()
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6))
    for ax, attr, label in ((axes[0], "wall_s", "wall time (s)"), (axes[1], "peak_mb", "peak memory (MiB)")):
        for d, marker in ((2, "o"), (3, "s")):
            recs = [r for r in records if len(r["shape"]) == d and r["geto"].ok and getattr(r["geto"], attr)]
            if recs:
                ax.plot([r["row"]["N"] for r in recs], [getattr(r["geto"], attr) for r in recs], marker=marker,
                        label=f"GETO-LP ({d}D grids)")
        regs = sorted({reg for r in records for reg in r["entropic"]})
        if attr == "wall_s":
            for reg in regs:
                pts = [(r["row"]["N"], r["entropic"][reg][0].wall_s) for r in records
                       if reg in r["entropic"] and r["entropic"][reg][0].ok]
                if pts:
                    ax.plot(*zip(*pts), marker="^", ls="--", label=f"entropic reg={reg:g}")
        if ratio is not None:
            key = {"wall_s": "wall", "peak_mb": "peak_mb"}[attr]
            for name in ["geto", *ratio["fulls"]]:
                vals = ratio["runs"][key][name]
                if vals:
                    ax.plot([ratio["n"] ** 2] * len(vals), vals, marker="x" if name == "geto" else "D", ls="none",
                            label=f"{'GETO-LP' if name == 'geto' else name.replace('full_lp', 'full LP (POT)')}, "
                                  "fresh-process rounds")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("grid points N")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    return savefig(fig, path)


def plot_matched(ratio, path):
    """GETO-LP's barycenter beside the entropic ones of decreasing reg (true-cost excess in the titles)."""
    plt = use_style()
    n = ratio["n"]
    em = ratio["entropic_matched"]
    panels = [(np.asarray(ratio["geto_nu"]).reshape(n, n), "GETO-LP (exact)")]
    if ratio.get("entropic_matched_nu") is not None:
        panels.append((np.asarray(ratio["entropic_matched_nu"]).reshape(n, n),
                       f"entropic reg={em['reg']:g}\ncost +{100 * em['excess']:.2f}%"))
    fig, axes = plt.subplots(1, len(panels), figsize=(2.2 * len(panels), 2.4))
    for ax, (img, title) in zip(np.atleast_1d(axes), panels):
        _show(ax, img, title)
    return savefig(fig, path)


def _show(ax, img, title):
    ax.imshow(np.asarray(img), cmap="magma", interpolation="nearest")
    ax.set_title(title, fontsize=8)
    ax.axis("off")


def plot_barycenters(records, path):
    """Inputs and barycenters (GETO-LP, entropic) on the largest grid where GETO-LP finished."""
    rec = next((r for r in reversed(records) if r["geto"].ok and len(r["shape"]) == 2 and r["entropic"]), None)
    plt = use_style()
    if rec is None:
        fig, ax = plt.subplots()
        ax.text(0.5, 0.5, "GETO-LP did not finish", ha="center")
        return savefig(fig, path)
    n = rec["shape"][0]
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
