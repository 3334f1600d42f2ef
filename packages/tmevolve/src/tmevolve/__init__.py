"""tmevolve — TMEvolve: concept-guided tumor-microenvironment evolution over WSI patch graphs for MIL."""

from tmevolve.baselines import (
    ABMILBaseline,
    ConceptBottleneckMIL,
    ConceptEdgeMIL,
    KMeansRegionMIL,
    MeanPoolMIL,
    PatchGCN,
    TransMILBaseline,
)
from tmevolve.data import SyntheticSlides, load_bags, make_bag, prototypes
from tmevolve.evolve import TMEvolve, TMEvolveConv, concept_scores
from tmevolve.graph import patch_graph
from tmevolve.train import cox_loss, discrete_survival_nll, evaluate, fit, loss_fn

__all__ = [
    "ABMILBaseline", "ConceptBottleneckMIL", "ConceptEdgeMIL", "KMeansRegionMIL", "MeanPoolMIL", "PatchGCN",
    "SyntheticSlides", "TMEvolve", "TMEvolveConv", "TransMILBaseline", "concept_scores", "cox_loss",
    "discrete_survival_nll", "evaluate", "fit", "load_bags", "loss_fn", "make_bag", "patch_graph", "prototypes",
]
__version__ = "0.1.0"
