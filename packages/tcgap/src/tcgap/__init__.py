"""tcgap — the task-confusion gap in class-IL: the exp(−γ_min/8) bound and a Mahalanobis-margin diagnostic.

Public API (scikit-learn's idiom): five CF-free class-IL learners with ``fit`` (joint) / ``partial_fit``
(one task), :func:`gamma_min`, :func:`tc_gap`, :func:`fit_slope`, :func:`tail_index`.
"""

from tcgap.gap import fit_slope, tc_gap
from tcgap.learners import NCM, SLDA, FeCAM, RanPAC, TaskHeadCE
from tcgap.margin import gamma_min
from tcgap.schedule import TheoryScheduleCE
from tcgap.tail import tail_index

__all__ = ["NCM", "SLDA", "FeCAM", "RanPAC", "TaskHeadCE", "TheoryScheduleCE", "fit_slope", "gamma_min", "tail_index",
           "tc_gap"]
__version__ = "0.1.0"
