"""groupfdr — grouped-feature FDR control: block Gaussian mirror statistics and Permutation-SHAP derivatives."""

from groupfdr.data import load_xy, simulate_sequences, simulate_var_groups
from groupfdr.mirror import BlockGaussianMirror, mirror_threshold
from groupfdr.neural import NeuralBlockMirror, hsic
from groupfdr.shapley import exact_group_shapley, group_permutation_shap

__all__ = ["BlockGaussianMirror", "NeuralBlockMirror", "exact_group_shapley", "group_permutation_shap", "hsic",
           "load_xy", "mirror_threshold", "simulate_sequences", "simulate_var_groups"]
__version__ = "0.1.0"
