"""paperworks — the thin common package of the paperworks monorepo.

Seeding, device choice, results writing (``results.json`` with computed claim verdicts),
confidence intervals and verdict rules, the timing harness (:mod:`paperworks.bench`), the
Triton dispatcher, Agg plotting style, Hydra glue and results tables. Nothing paper-specific.

Importing this package initialises no GPU, JAX or Triton: torch, triton, matplotlib and
scikit-learn are imported only inside the functions that need them.
"""

from paperworks.device import resolve_device
from paperworks.results import (
    Claim,
    atomic_torch_save,
    atomic_write_text,
    load_results,
    validate_results,
    write_metrics_csv,
    write_results,
)
from paperworks.rules import compare, threshold_verdict
from paperworks.seeding import seed_everything, seeds_of
from paperworks.stats import (
    Estimate,
    binomial_ci,
    bootstrap_ci,
    censored_summary,
    estimate,
    log_t_ci,
    paired_difference,
    t_ci,
)
from paperworks.triton_dispatch import dispatch, triton_enabled
from paperworks.utils import cache_dir, check_float, check_int, timer

__all__ = [
    "Claim",
    "Estimate",
    "atomic_torch_save",
    "atomic_write_text",
    "binomial_ci",
    "bootstrap_ci",
    "cache_dir",
    "censored_summary",
    "check_float",
    "check_int",
    "compare",
    "dispatch",
    "estimate",
    "load_results",
    "log_t_ci",
    "paired_difference",
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
__version__ = "0.2.3"
