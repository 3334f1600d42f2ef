"""factlocus -- module roles in transformer factual recall under correlated fact distributions.

Fact worlds with collision axes, tiny Hugging Face recall models, and model-agnostic analyses
(held-out probes with control tasks, matched-counterfactual patching, edge path patching, causal
scrubbing) that run on any ``transformers`` causal LM through :class:`ModelAccess`.
"""

from factlocus.analysis import (
    all_edges,
    causal_scrub,
    chain_hypothesis,
    patch_heads,
    patch_modules,
    patch_modules_naive,
    patch_modules_per_module,
    path_patch,
    probe_modules,
    two_step_hypothesis,
)
from factlocus.capacity import capacity_load, crossover
from factlocus.data import (
    FactWorld,
    PromptSet,
    check_counterfactuals,
    counterfact_prompt_set,
    matched_counterfactuals,
    read_counterfact,
)
from factlocus.model import build_model, plant_recall_circuit, train_recall_model
from paperworks.lm import ModelAccess

__all__ = [
    "FactWorld",
    "ModelAccess",
    "PromptSet",
    "all_edges",
    "build_model",
    "capacity_load",
    "causal_scrub",
    "chain_hypothesis",
    "check_counterfactuals",
    "counterfact_prompt_set",
    "crossover",
    "matched_counterfactuals",
    "patch_heads",
    "patch_modules",
    "patch_modules_naive",
    "patch_modules_per_module",
    "path_patch",
    "plant_recall_circuit",
    "probe_modules",
    "read_counterfact",
    "train_recall_model",
    "two_step_hypothesis",
]
__version__ = "0.1.0"
