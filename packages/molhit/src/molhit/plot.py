"""Plots: the only module that imports matplotlib (RDKit's Cairo drawer for molecule grids)."""

from __future__ import annotations

import os
from pathlib import Path

from paperworks.plotting import savefig, use_style


def quality_novelty(rows, path):
    """Quality vs novelty over the temperature sweep (one line per process), plus the headline points (first seed)."""
    plt = use_style()
    fig, ax = plt.subplots()
    seed0 = min((r.get("seed", 0) for r in rows if r.get("table") == "generation"), default=0)
    rows = [r for r in rows if r.get("seed", 0) == seed0]   # one seed's points (the first)
    sweep = [r for r in rows if r.get("table") == "sweep"]
    for proc in sorted({r["process"] for r in sweep}):
        pts = sorted((r for r in sweep if r["process"] == proc), key=lambda r: r["temperature"])
        ax.plot([r.get("Novelty", float("nan")) for r in pts], [r["quality"] for r in pts], "o-", label=f"{proc} (sweep)")
        for r in pts:
            ax.annotate(f"T={r['temperature']:g}", (r.get("Novelty", 0), r["quality"]), fontsize=7)
    for r in (r for r in rows if r.get("table") == "generation"):
        ax.plot([r.get("Novelty", float("nan"))], [r["quality"]], "s", label=r["process"])
    ax.set_xlabel("novelty")
    ax.set_ylabel("quality (valid, unique, QED≥0.6, SA≤4)")
    ax.legend(fontsize=7)
    return savefig(fig, path)


def molecule_grid(smiles, path, *, n: int = 16, cols: int = 4, size: int = 200) -> Path:
    """A PNG grid of the first ``n`` valid molecules (RDKit Cairo drawer), written atomically."""
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    mols = [Chem.MolFromSmiles(s) for s in smiles if s][:n]
    mols = [m for m in mols if m is not None] or [Chem.MolFromSmiles("C")]
    rows = (len(mols) + cols - 1) // cols
    d2d = rdMolDraw2D.MolDraw2DCairo(cols * size, rows * size, size, size)
    d2d.DrawMolecules(mols)
    d2d.FinishDrawing()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(d2d.GetDrawingText())
    os.replace(tmp, path)
    return path
