"""paperworks — the thin common package of the paperworks monorepo.

Seeding, device choice, results writing (``results.json`` with computed claim verdicts),
confidence intervals, thin metric wrappers, the Triton dispatcher, Agg plotting style,
Hydra glue and the report builder. Nothing paper-specific lives here.

Importing this package initialises no GPU, JAX or Triton: torch, triton and matplotlib
are imported only inside the functions that need them.
"""

from paperworks.device import resolve_device
from paperworks.results import (
    Claim,
    Estimate,
    atomic_write_text,
    compare,
    load_results,
    threshold_verdict,
    validate_results,
    write_metrics_csv,
    write_results,
)
from paperworks.seeding import seed_everything, seeds_of
from paperworks.stats import binomial_ci, bootstrap_ci, estimate, t_ci
from paperworks.triton_dispatch import dispatch, triton_enabled
from paperworks.utils import cache_dir, timer

__all__ = [
    "Claim",
    "Estimate",
    "atomic_write_text",
    "binomial_ci",
    "bootstrap_ci",
    "cache_dir",
    "compare",
    "dispatch",
    "estimate",
    "load_results",
    "resolve_device",
    "seed_everything",
    "seeds_of",
    "t_ci",
    "threshold_verdict",
    "timer",
    "triton_enabled",
    "validate_results",
    "write_metrics_csv",
    "write_results",
]
__version__ = "0.1.0"
