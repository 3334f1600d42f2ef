"""entropyshap — a hierarchy of entropy-based Shapley games for multivariate predictive-uncertainty attribution.

Marginal (G1), ordered (G2) and joint (G3) entropy games over the input features, the cross-component
term (the Shapley value of the conditional total correlation) and the chain rule
``φ_joint = Σ_j φ_marg,j − φ_TC``. The game definitions are inferred from the paper's abstract.
"""

from entropyshap.explainer import EntropyExplainer, decompose
from entropyshap.models import ARGARCHSampler, GaussianMLP, LinearGaussianModel, SamplerModel, ngboost_predictor
from entropyshap.shapley import exact_shapley, permutation_shapley

__all__ = ["EntropyExplainer", "decompose", "LinearGaussianModel", "GaussianMLP", "ngboost_predictor",
           "SamplerModel", "ARGARCHSampler", "exact_shapley", "permutation_shapley"]
__version__ = "0.1.0"
