"""The ``molsets`` (MOSES) metric code itself, loaded by path, to cross-check :mod:`molhit.metrics`.

``import moses`` fails on current RDKit/pandas, for three reasons, each shimmed here only while
the files load (``sys.modules`` and pandas are restored afterwards):

- ``moses/__init__.py`` imports every model (and their old dependencies): the packages
  ``moses`` and ``moses.metrics`` are stood in by empty package modules whose ``__path__`` is the
  vendored folder (``molhit/_vendor/moses``, molsets 0.3.1), so only the metric files and what
  *they* import are executed;
- ``moses/metrics/SA_Score/sascorer.py`` and ``NP_Score/npscorer.py`` import ``rdkit.six``
  (removed from RDKit): a stub ``rdkit.six`` with ``iteritems``;
- ``moses/metrics/utils.py`` calls ``DataFrame.append`` (removed in pandas 2) at import time to
  build its filter list: ``DataFrame.append`` is supplied by ``pd.concat`` during the load.

Nothing of MOSES is reimplemented: :func:`load` returns MOSES's own ``moses.metrics.metrics``
and ``moses.metrics.utils`` modules. The data set is never imported through them (MOSES's
``get_dataset`` is not called; the test set is passed in).
"""

from __future__ import annotations

import importlib
import sys
import types
from contextlib import contextmanager
from pathlib import Path

_CACHE: dict = {}


def _moses_dir() -> Path:
    from molhit.data import INSTALL, MOSES_DIR

    if not (MOSES_DIR / "metrics" / "metrics.py").exists():
        raise ImportError(f"MOSES's metric files are missing under {MOSES_DIR}: `{INSTALL}`")
    return MOSES_DIR


@contextmanager
def _shims(root: Path):
    import pandas as pd

    saved = {k: v for k, v in sys.modules.items() if k == "moses" or k.startswith("moses.") or k == "rdkit.six"}
    for k in saved:
        del sys.modules[k]
    for name, path in (("moses", root), ("moses.metrics", root / "metrics")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(path)]
        sys.modules[name] = pkg
    six = types.ModuleType("rdkit.six")
    six.iteritems = lambda d: iter(d.items())
    sys.modules["rdkit.six"] = six
    had_append = hasattr(pd.DataFrame, "append")
    if not had_append:
        pd.DataFrame.append = lambda self, other, sort=False: pd.concat([self, other], sort=sort)
    try:
        yield
    finally:
        if not had_append:
            del pd.DataFrame.append
        for k in [k for k in sys.modules if k == "moses" or k.startswith("moses.") or k == "rdkit.six"]:
            del sys.modules[k]
        sys.modules.update(saved)


def load() -> tuple[types.ModuleType, types.ModuleType]:
    """MOSES's ``(moses.metrics.metrics, moses.metrics.utils)`` modules, loaded from the installed files.

    Raises:
        ImportError: molsets is not installed, or its files do not load even with the shims.
    """
    if "mods" not in _CACHE:
        with _shims(_moses_dir()):
            metrics = importlib.import_module("moses.metrics.metrics")
            utils = importlib.import_module("moses.metrics.utils")
        _CACHE["mods"] = (metrics, utils)
    return _CACHE["mods"]


def moses_reference_metrics(gen, test, *, train=None) -> dict:
    """MOSES's own numbers for ``gen`` against ``test``, from its metric functions and classes.

    ``valid`` is MOSES's ``fraction_valid`` (parsable and sanitisable: a disconnected SMILES counts
    as valid, unlike our strict validity). The others are computed on the valid samples as MOSES
    does (``remove_invalid``): ``unique`` (``fraction_unique`` over all of them), ``SNN``,
    ``Frag``, ``Scaf`` (its ``SNNMetric``/``FragMetric``/``ScafMetric``), ``IntDiv``
    (``internal_diversity``, p = 1 and 2: ``intdiv``, ``intdiv2``), ``filters``
    (``fraction_passes_filters``), ``novelty`` and the per-molecule ``QED``/``SA`` means.
    """
    mm, mu = load()
    gen = [s if isinstance(s, str) else "" for s in gen]
    if not gen:
        raise ValueError("gen must hold at least one sample")
    out = {"valid": mm.fraction_valid(gen)}
    valid = mm.remove_invalid(gen, canonize=True)
    if not valid:
        return out
    mols = [mu.get_mol(s) for s in valid]
    test_mols = [mu.get_mol(s) for s in test]
    out["unique"] = mm.fraction_unique(valid, None)
    out["snn"] = float(mm.SNNMetric()(ref=test_mols, gen=mols))
    out["frag"] = float(mm.FragMetric()(ref=test_mols, gen=mols))
    out["scaf"] = float(mm.ScafMetric()(ref=test_mols, gen=mols))
    out["intdiv"] = float(mm.internal_diversity(mols))
    out["intdiv2"] = float(mm.internal_diversity(mols, p=2))
    out["filters"] = float(mm.fraction_passes_filters(mols))
    out["qed_mean"] = float(sum(mu.QED(m) for m in mols) / len(mols))
    out["sa_mean"] = float(sum(mu.SA(m) for m in mols) / len(mols))
    if train is not None:
        out["novelty"] = float(mm.novelty(mols, [mu.canonic_smiles(s) for s in train]))
    return out
