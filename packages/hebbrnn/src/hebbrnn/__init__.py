"""hebbrnn — Hebb-RNN: fast Hebbian plasticity and an orthogonal ordinal scaffold for hierarchical sequences.

Public API: :class:`HebbianRNNCell` (the plastic cell, factored or materialised), :class:`HebbRNN`
(the sequence model, optional predictive module), :class:`ControlRNN` (parameter-matched RNN/GRU/LSTM),
:class:`HierarchicalRecall` (the task), :func:`meta_train`, :func:`evaluate` and :func:`ordinal_geometry`.
"""

from hebbrnn.baselines import ControlRNN
from hebbrnn.cell import HebbianRNNCell
from hebbrnn.data import HierarchicalRecall
from hebbrnn.model import HebbRNN
from hebbrnn.train import evaluate, meta_train

__all__ = ["ControlRNN", "HebbRNN", "HebbianRNNCell", "HierarchicalRecall", "evaluate", "meta_train",
           "ordinal_geometry"]
__version__ = "0.1.0"


def __getattr__(name):  # the geometry pulls in scikit-learn: import it on first use
    if name == "ordinal_geometry":
        from hebbrnn.geometry import ordinal_geometry

        return ordinal_geometry
    raise AttributeError(f"module 'hebbrnn' has no attribute {name!r}")
