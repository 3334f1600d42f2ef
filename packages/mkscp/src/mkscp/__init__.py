"""The Multivariate Kernel Score for multivariate conformal prediction (Meyer & Xu, arXiv 2604.21595)."""

from mkscp.base import BaseScore, UnboundedRegionWarning, conformal_quantile, min_calibration_size
from mkscp.baselines import (
    BonferroniScore,
    KDEScore,
    LocalMahalanobisScore,
    MahalanobisScore,
    MMDScore,
)
from mkscp.conformal import MultivariateConformalRegressor, make_score
from mkscp.metrics import coverage, worst_slab_coverage
from mkscp.mks import MKSScore
from mkscp.volume import region_volume, region_volumes

__all__ = [
    "BaseScore",
    "BonferroniScore",
    "KDEScore",
    "LocalMahalanobisScore",
    "MKSScore",
    "MMDScore",
    "MahalanobisScore",
    "MultivariateConformalRegressor",
    "UnboundedRegionWarning",
    "conformal_quantile",
    "coverage",
    "make_score",
    "min_calibration_size",
    "region_volume",
    "region_volumes",
    "worst_slab_coverage",
]
__version__ = "0.2.0"
