"""GraphMuon, a graph-aware Muon optimizer (orthogonalisation in the propagated-input metric).

The algorithm is reconstructed from the paper's abstract; see :mod:`graphmuon.optimizer`.

>>> opt = graphmuon.GraphMuon(model.parameters(), lr=0.01)   # doctest: +SKIP
>>> graphmuon.attach(model, opt)                             # doctest: +SKIP
"""

from graphmuon.capture import Recorder, attach, gcn_propagated_input, graph_weights
from graphmuon.diagnostics import amplification
from graphmuon.linalg import inverse_sqrt, newton_schulz, svd_polar
from graphmuon.optimizer import GraphMuon, graph_polar_direction

__all__ = [
    "GraphMuon",
    "Recorder",
    "amplification",
    "attach",
    "gcn_propagated_input",
    "graph_polar_direction",
    "graph_weights",
    "inverse_sqrt",
    "newton_schulz",
    "svd_polar",
]
__version__ = "0.1.0"
