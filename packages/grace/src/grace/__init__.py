"""grace — GRACE: global concept decomposition of vision-language embeddings."""

from grace.baselines import SAEConcepts, SpLiCE, admm_nonneg_lasso
from grace.clip import TinyCLIP, embed_images, train_clip
from grace.decomposer import GRACE, geometry_loss
from grace.dictionary import ConceptDictionary
from grace.metrics import evaluate, load_embeddings, remove_concepts
from grace.world import CompositionalWorld, Tokenizer

__all__ = ["GRACE", "CompositionalWorld", "ConceptDictionary", "SAEConcepts", "SpLiCE", "TinyCLIP", "Tokenizer",
           "admm_nonneg_lasso", "embed_images", "evaluate", "geometry_loss", "load_embeddings", "remove_concepts",
           "train_clip"]
__version__ = "0.1.0"
