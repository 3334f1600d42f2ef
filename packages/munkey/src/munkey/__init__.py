"""munkey — MUNKEY: unlearning by design, deleting instance keys from a memory-augmented ViT.

Laguna et al., "Rethinking Machine Unlearning: Models Designed to Forget via Key Deletion"
(arXiv 2603.15033). The architecture and objective are inferred from the abstract (no paper text
or code is public).
"""

from munkey.metrics import unlearning_metrics
from munkey.munkey import MUNKEY, DeletionRecord
from munkey.train import fit
from munkey.vit import ViT

__all__ = ["MUNKEY", "DeletionRecord", "ViT", "fit", "unlearning_metrics"]
__version__ = "0.1.0"
