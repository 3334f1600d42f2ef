"""matt — MATT: Model-Aware Tokenizer Transfer with Attention Influence Modeling (arXiv 2510.21954).

Move a causal LM to a new tokenizer: initialise the new embeddings (FOCUS-lite, FVT or random),
warm them up by matching the teacher's segment-level attention outputs in the first layers (AIM),
then train on language modelling; evaluate in bits per byte.
"""

from matt.aim import AIMLoss
from matt.align import AlignmentError, align_segments, identical_share
from matt.data import SyntheticLanguages, read_lines, train_bpe
from matt.init import focus_init, fvt_init, random_init
from matt.transfer import bits_per_byte, transfer

__all__ = [
    "AIMLoss",
    "AlignmentError",
    "SyntheticLanguages",
    "align_segments",
    "bits_per_byte",
    "focus_init",
    "fvt_init",
    "identical_share",
    "random_init",
    "read_lines",
    "train_bpe",
    "transfer",
]
__version__ = "0.1.0"
