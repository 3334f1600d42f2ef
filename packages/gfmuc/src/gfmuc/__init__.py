"""gfmuc — GFM-UC: a graph foundation model for unified unsupervised graph clustering.

Every component is inferred from the paper's abstract (no paper text or code is public).
"""

from gfmuc.data import csbm, load_graph, motif_graphs
from gfmuc.encoder import SubgraphEncoder
from gfmuc.foundation import GFMUC
from gfmuc.scores import clustering_scores

__all__ = ["GFMUC", "SubgraphEncoder", "clustering_scores", "csbm", "load_graph", "motif_graphs"]
__version__ = "0.1.0"
