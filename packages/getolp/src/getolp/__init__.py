"""GETO-LP: an exact fixed-support Wasserstein barycenter LP on grids with O(d M N^(1+1/d)) variables."""

from getolp.barycenter import (
    SolverError,
    axis_costs,
    dual_bound,
    fixed_support_barycenter,
    grid_cost_matrix,
    n_variables,
    recover_plans,
)

__all__ = [
    "SolverError",
    "axis_costs",
    "dual_bound",
    "fixed_support_barycenter",
    "grid_cost_matrix",
    "n_variables",
    "recover_plans",
]
__version__ = "0.2.0"
