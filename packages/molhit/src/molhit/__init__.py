"""molhit — MolHIT: hierarchical discrete diffusion for molecular graphs (Jung et al., arXiv 2602.17602)."""

from molhit.baselines import AbsorbingDiffusion, MarginalDiffusion
from molhit.data import graphs_from_smiles, load_moses, read_smiles_file
from molhit.diffusion import DiscreteDiffusion, HierarchicalDiffusion
from molhit.encoding import AtomEncoding, AtomToken, decoupled_encoding, digress_encoding
from molhit.metrics import moses_metrics
from molhit.model import GraphTransformer, MolHIT

__all__ = [
    "AbsorbingDiffusion", "AtomEncoding", "AtomToken", "DiscreteDiffusion", "GraphTransformer",
    "HierarchicalDiffusion", "MarginalDiffusion", "MolHIT", "decoupled_encoding", "digress_encoding",
    "graphs_from_smiles", "load_moses", "moses_metrics", "read_smiles_file",
]
__version__ = "0.2.0"
