"""driftbench — Models Recall What They Violate: Constraint Adherence in Multi-Turn LLM Ideation.

DriftBench (Kruthof 2026, arXiv 2604.28031): multi-turn ideation under pressure, an out-of-context
restatement probe, judges and a negation-aware rule checker, knows-but-violates (KBV) analyses.
"""

from driftbench import run as _experiment  # noqa: F401  (the experiment module, loaded before the API name below)
from driftbench.analysis import cohen_kappa, complexity_slope, judge_validation, kbv_rate, summary
from driftbench.briefs import Brief, Constraint, load_briefs, synthetic_briefs
from driftbench.checker import RuleChecker
from driftbench.prompts import CONDITIONS
from driftbench.release import load_driftbench
from driftbench.runner import run
from driftbench.serve import serve
from driftbench.simulate import SimulatedAssistant, SimulatedJudge


def __getattr__(name):  # the chat backends import torch (via paperworks.lm): only when asked for
    if name in ("OpenAIChat", "HFChat"):
        from driftbench import backends

        return getattr(backends, name)
    raise AttributeError(f"module 'driftbench' has no attribute {name!r}")

__all__ = [
    "CONDITIONS",
    "Brief",
    "Constraint",
    "HFChat",
    "OpenAIChat",
    "RuleChecker",
    "SimulatedAssistant",
    "SimulatedJudge",
    "cohen_kappa",
    "complexity_slope",
    "judge_validation",
    "kbv_rate",
    "load_briefs",
    "load_driftbench",
    "run",
    "serve",
    "summary",
    "synthetic_briefs",
]
__version__ = "0.1.0"
