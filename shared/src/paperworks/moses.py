"""The MOSES benchmark splits, shipped inside paperworks, and their reader.

The three CSVs (``train``, ``test``, ``test_scaffolds``; one ``SMILES`` column each) are unchanged
copies of the files in the ``molsets`` 0.3.1 wheel (MIT, Insilico Medicine; the licence sits beside
them in ``paperworks/data/moses/LICENSE``). ``molsets`` itself pins a ``pomegranate`` that does not
build on Python 3.11 and ``import moses`` fails on current RDKit, so the reader lives here, usable by
every molecular package without it. Nothing is downloaded.

``PAPERWORKS_MOSES_DIR`` (or ``root=``) points the reader at another folder holding the same file
names, e.g. a user's own copy of the release.
"""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import numpy as np

from paperworks.results import atomic_write_text
from paperworks.utils import cache_dir

SPLITS = {"train": "train.csv.gz", "test": "test.csv.gz", "test_scaffolds": "test_scaffolds.csv.gz"}
MOSES_DIR = Path(__file__).resolve().parent / "data" / "moses"
_REINSTALL = "pip install --force-reinstall paperworks"


def moses_path(split: str = "train", *, root=None) -> Path:
    """Path of one MOSES split's ``.csv.gz``.

    Args:
        split: ``"train"``, ``"test"`` or ``"test_scaffolds"``.
        root: a folder with the same file names; default ``PAPERWORKS_MOSES_DIR`` or the copy shipped here.

    Raises:
        ValueError: unknown split. FileNotFoundError: the file is not there.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    env = os.environ.get("PAPERWORKS_MOSES_DIR")
    base = Path(root) if root is not None else Path(env) if env else MOSES_DIR
    path = base / SPLITS[split]
    if not path.is_file():
        hint = f"reinstall paperworks (`{_REINSTALL}`)" if base == MOSES_DIR else "check root/PAPERWORKS_MOSES_DIR"
        raise FileNotFoundError(f"MOSES split {split!r} not found at {path}: {hint}")
    return path


def load_moses(split: str = "train", n: int | None = None, seed: int = 0, *, root=None) -> list[str]:
    """SMILES of a MOSES split, in file order; ``n`` draws a random subset without replacement.

    The draw depends only on ``(split, n, seed)`` (``numpy.random.default_rng(seed).choice``), and
    subsets of the shipped copy are cached under ``cache_dir("moses")`` (``PAPERWORKS_CACHE`` moves it).

    Raises:
        ValueError: unknown split, ``n < 1``, or a file without a ``SMILES`` column.
    """
    if n is not None:
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer or None, got {n!r}")
        n = int(n)
    path = moses_path(split, root=root)
    cache = None
    if n is not None and path.parent == MOSES_DIR:
        cache = cache_dir("moses") / f"{split}_{n}_{seed}.smi"
        if cache.exists():
            return cache.read_text().split()
    with gzip.open(path, "rt", newline="") as fh:
        rows = csv.reader(fh)
        header = next(rows, [])
        if "SMILES" not in header:
            raise ValueError(f"{path}: no SMILES column in the header {header!r}")
        col = header.index("SMILES")
        smiles = [r[col] for r in rows if len(r) > col and r[col]]
    if n is not None:
        idx = np.random.default_rng(seed).choice(len(smiles), size=min(n, len(smiles)), replace=False)
        smiles = [smiles[i] for i in idx]
        if cache is not None:
            atomic_write_text(cache, "\n".join(smiles) + "\n")
    return smiles


__all__ = ["MOSES_DIR", "SPLITS", "load_moses", "moses_path"]
