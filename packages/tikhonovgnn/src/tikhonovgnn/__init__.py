"""The Tikhonov layer, a GNN layer interpretable by design (arXiv 2605.28578).

``R = (p(L) + Q)^{-1} Q``: positive node-importance scores ``q`` from a Q-network and a polynomial
``p ≥ 0`` on the Laplacian spectrum; ``Rx`` minimises ``(y-x)^T Q (y-x) + y^T p(L) y``.
"""

from tikhonovgnn.baselines import BASELINES, Baseline
from tikhonovgnn.explain import QExplainer
from tikhonovgnn.solve import CGError, normalized_laplacian
from tikhonovgnn.tikhonov import (
    BernsteinPolynomial,
    QNetwork,
    TikhonovGNN,
    TikhonovLayer,
    propagation_matrix,
    recover_explanation,
    tikhonov_objective,
)

__all__ = [
    "BASELINES",
    "Baseline",
    "BernsteinPolynomial",
    "CGError",
    "QExplainer",
    "QNetwork",
    "TikhonovGNN",
    "TikhonovLayer",
    "normalized_laplacian",
    "propagation_matrix",
    "recover_explanation",
    "tikhonov_objective",
]
__version__ = "0.2.0"
