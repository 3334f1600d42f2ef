"""mcr2opt — MCR² near its maximizers: error bound, PL and linear convergence of first-order methods."""

from mcr2opt.ascent import DivergenceError, ascend, linear_convergence, linear_rate, local_constants
from mcr2opt.geometry import subspace_geometry
from mcr2opt.maximizers import (
    closed_form_maximizer,
    critical_lam,
    distance_to_maximizers,
    hessian_spectrum,
    manifold_dimension,
)
from mcr2opt.network import FeatureMLP
from mcr2opt.objective import MCR2Loss, mcr2, value_and_grad

__all__ = [
    "DivergenceError",
    "FeatureMLP",
    "MCR2Loss",
    "ascend",
    "closed_form_maximizer",
    "critical_lam",
    "distance_to_maximizers",
    "hessian_spectrum",
    "linear_convergence",
    "linear_rate",
    "local_constants",
    "manifold_dimension",
    "mcr2",
    "subspace_geometry",
    "value_and_grad",
]
__version__ = "0.1.0"
