"""Agg plotting style. The only paperworks module that imports matplotlib (inside functions)."""

from __future__ import annotations

import os
from pathlib import Path

STYLE = {
    "figure.figsize": (5.0, 3.6),
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
    "legend.frameon": False,
}


def use_style():
    """Select the Agg backend and the house style; returns ``matplotlib.pyplot``."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(STYLE)
    return plt


def savefig(fig, path) -> Path:
    """Save ``fig`` as PNG atomically (temporary file, then ``os.replace``) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", bbox_inches="tight")
    os.replace(tmp, path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
